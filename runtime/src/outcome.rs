//! What a reconcile achieved, as the author reports it: [`Outcome`] from `create_or_update`,
//! [`Deletion`] from `delete`.

use std::time::Duration;

use crate::status::NoStatus;

/// What `create_or_update` returns when nothing failed: [`Outcome::ready`] or
/// [`Outcome::progressing`].
///
/// The runtime turns it into the object's `phase`, its `Ready` condition and the next reconcile
/// time; the author never writes status or finalizers. `delete` returns the other type,
/// [`Deletion`], so `create_or_update` cannot say "done" and `delete` cannot say "ready", and a
/// mix-up names the type to write.
#[derive(Clone, Debug, PartialEq)]
#[must_use = "return the Outcome from create_or_update"]
pub struct Outcome<S = NoStatus> {
    state: State,
    requeue_after: Option<Duration>,
    status: Option<S>,
}

/// What `delete` returns when nothing failed: [`Deletion::done`] or [`Deletion::blocked`].
///
/// Declared `async fn delete(&self, cx: &Context<Self>) -> Result<Deletion<S>, Error>`, where `S`
/// is the provider's `status` type ([`NoStatus`] when it declares none).
#[derive(Clone, Debug, PartialEq)]
#[must_use = "return the Deletion from delete"]
pub struct Deletion<S = NoStatus> {
    state: State,
    requeue_after: Option<Duration>,
    status: Option<S>,
}

/// Where the object stands after a reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// `create_or_update`: the service is installed and ready.
    Ready,
    /// `create_or_update`: not ready yet; check again soon.
    Progressing {
        /// UpperCamelCase reason for the `Ready=False` condition.
        reason: String,
        /// What is happening, for the end user.
        message: String,
    },
    /// `delete`: everything is removed; access can be given back and the finalizer removed.
    Done,
    /// `delete`: removal cannot finish yet, e.g. the end user still has backups in the cluster.
    Blocked {
        /// UpperCamelCase reason for the `DeletionBlocked` condition.
        reason: String,
        /// What the end user must do to unblock it.
        message: String,
    },
}

/// Re-check interval after `progressing` or `blocked` when the author gives none.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The methods both types have, written once.
macro_rules! common {
    ($ty:ident, $finished:literal) => {
        impl<S> $ty<S> {
            fn new(state: State) -> Self {
                $ty {
                    state,
                    requeue_after: None,
                    status: None,
                }
            }

            /// Reconcile again after `after`, instead of the default for this result.
            pub fn requeue_after(mut self, after: Duration) -> Self {
                self.requeue_after = Some(after);
                self
            }

            /// Sets the author's extra status fields.
            pub fn with_status(mut self, status: S) -> Self {
                self.status = Some(status);
                self
            }

            #[doc = concat!("True for [`", $finished, "`](Self::", $finished, "): nothing left to wait for.")]
            pub fn is_finished(&self) -> bool {
                matches!(self.state, State::Ready | State::Done)
            }

            /// The requested requeue interval, if any.
            pub fn requeue(&self) -> Option<Duration> {
                self.requeue_after
            }

            /// The author's extra status, if set.
            pub fn status(&self) -> Option<&S> {
                self.status.as_ref()
            }

            /// Splits the result into its parts.
            pub(crate) fn into_parts(self) -> (State, Option<Duration>, Option<S>) {
                (self.state, self.requeue_after, self.status)
            }
        }
    };
}

common!(Outcome, "ready");
common!(Deletion, "done");

impl<S> Outcome<S> {
    /// The service is installed and ready. Reconciled again at the ProviderConfig poll interval.
    pub fn ready() -> Self {
        Self::new(State::Ready)
    }

    /// Not ready yet: reported as `phase: Progressing` with `Ready=False`, and reconciled again
    /// after [`requeue_after`](Self::requeue_after) (10 s unless set).
    pub fn progressing(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(State::Progressing {
            reason: reason.into(),
            message: message.into(),
        })
    }

    // `done` and `blocked` belong to `Deletion`. These exist so that code written against the
    // earlier API, where `delete` returned an `Outcome`, is told what to write instead of only
    // that no such function exists: the deprecation note says it, and the `Deletion` they return
    // makes the type mismatch name `Deletion`.

    #[doc(hidden)]
    #[deprecated(
        note = "`done` is a `Deletion`, which `delete` returns: declare `async fn delete(&self, cx: &Context<Self>) -> Result<Deletion<S>, Error>` and return `Ok(Deletion::done())`"
    )]
    pub fn done() -> Deletion<S> {
        Deletion::done()
    }

    #[doc(hidden)]
    #[deprecated(
        note = "`blocked` is a `Deletion`, which `delete` returns: declare `async fn delete(&self, cx: &Context<Self>) -> Result<Deletion<S>, Error>` and return `Ok(Deletion::blocked(reason, message))`"
    )]
    pub fn blocked(reason: impl Into<String>, message: impl Into<String>) -> Deletion<S> {
        Deletion::blocked(reason, message)
    }
}

impl<S> Deletion<S> {
    /// Deletion finished: the runtime gives the cluster access back and removes the finalizer.
    pub fn done() -> Self {
        Self::new(State::Done)
    }

    /// Deletion cannot proceed yet; reported with a `DeletionBlocked` condition and retried after
    /// [`requeue_after`](Self::requeue_after) (10 s unless set).
    pub fn blocked(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(State::Blocked {
            reason: reason.into(),
            message: message.into(),
        })
    }

    // The mirror image of `Outcome::done`: `create_or_update`'s states, for code that mixed
    // the two up.

    #[doc(hidden)]
    #[deprecated(
        note = "`ready` is an `Outcome`, which `create_or_update` returns; `delete` returns `Ok(Deletion::done())` when everything is removed"
    )]
    pub fn ready() -> Outcome<S> {
        Outcome::ready()
    }

    #[doc(hidden)]
    #[deprecated(
        note = "`progressing` is an `Outcome`, which `create_or_update` returns; `delete` returns `Ok(Deletion::blocked(reason, message))` while removal cannot finish"
    )]
    pub fn progressing(reason: impl Into<String>, message: impl Into<String>) -> Outcome<S> {
        Outcome::progressing(reason, message)
    }
}
