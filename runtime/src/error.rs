//! The error a provider author returns: invalid input (reported, not retried) or a transient
//! failure (retried with backoff).

use std::error::Error as StdError;
use std::fmt;

/// Why a reconcile failed.
///
/// `?` makes a [transient](Error::transient) one of any standard error (`kube::Error`,
/// `serde_json::Error`, `std::io::Error`, …), of an `anyhow::Error` and of a `String` message, so
/// the usual `client.get(..).await?` retries with exponential backoff. Return [`Error::invalid_input`] when the
/// end user or the platform operator must change something: it is reported in the object's status
/// and not retried until the object or the ProviderConfig changes.
pub struct Error {
    kind: ErrorKind,
    message: String,
    reason: Option<String>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

/// The two kinds of failure the runtime treats differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The object or the ProviderConfig asks for something that cannot work; retrying won't help.
    InvalidInput,
    /// Something failed that may work on a later attempt.
    Transient,
}

impl Error {
    /// The end user's object or the operator's ProviderConfig is wrong; `message` says what to fix.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::InvalidInput,
            message: message.into(),
            reason: None,
            source: None,
        }
    }

    /// A failure worth retrying.
    pub fn transient(source: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        let source = source.into();
        Error {
            kind: ErrorKind::Transient,
            message: source.to_string(),
            reason: None,
            source: Some(source),
        }
    }

    /// A failure worth retrying, described by a message only.
    pub fn transient_msg(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Transient,
            message: message.into(),
            reason: None,
            source: None,
        }
    }

    /// Prefixes the message with what was being done, e.g. `"installing the Velero CRDs"`.
    pub fn context(mut self, doing: impl fmt::Display) -> Self {
        self.message = format!("{doing}: {}", self.message);
        self
    }

    /// Sets the `reason` of the `Ready` condition (UpperCamelCase, e.g. `ChartNotFound`).
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Which kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True for [`ErrorKind::InvalidInput`].
    pub fn is_invalid_input(&self) -> bool {
        self.kind == ErrorKind::InvalidInput
    }

    /// The message, including any context.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The condition reason set with [`Error::with_reason`].
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The underlying error, when there is one.
    pub fn source(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

// Everything that converts into a boxed error: every `std::error::Error + Send + Sync`, and also
// `anyhow::Error` (which is not a `std::error::Error` itself, so a bound on that trait would
// leave out authors who use anyhow in their helpers), `String` and `&str`.
impl<E: Into<Box<dyn StdError + Send + Sync + 'static>>> From<E> for Error {
    fn from(err: E) -> Self {
        Error::transient(err)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("reason", &self.reason)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_mark_makes_transient_errors() {
        fn fails() -> Result<(), Error> {
            let _: i32 = "x".parse()?;
            Ok(())
        }
        let err = fails().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Transient);
        assert!(err.source().is_some());
    }

    #[test]
    fn question_mark_takes_the_errors_authors_meet() {
        fn kube() -> Result<(), Error> {
            Err(kube::Error::LinesCodecMaxLineLengthExceeded)?
        }
        fn json() -> Result<(), Error> {
            let _: i32 = serde_json::from_str("{")?;
            Ok(())
        }
        fn anyhow() -> Result<(), Error> {
            Err(anyhow::anyhow!("the registry said no"))?
        }
        fn io() -> Result<(), Error> {
            Err(std::io::Error::other("disk full"))?
        }
        for (err, message) in [
            (kube().unwrap_err(), "newline"),
            (json().unwrap_err(), "expected i32"),
            (anyhow().unwrap_err(), "the registry said no"),
            (io().unwrap_err(), "disk full"),
        ] {
            assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
            assert!(err.message().contains(message), "{err}");
        }
    }

    #[test]
    fn context_prefixes_the_message() {
        let err = Error::invalid_input("no such version").context("resolving spec.version");
        assert_eq!(err.to_string(), "resolving spec.version: no such version");
        assert!(err.is_invalid_input());
    }
}
