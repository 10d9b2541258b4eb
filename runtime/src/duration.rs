//! Durations written the way Kubernetes and Go write them (`30s`, `1m`, `1h30m`, `500ms`).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration that serializes as a Go duration string, e.g. the ProviderConfig `pollInterval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

/// Why a string is not a duration.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid duration {input:?}: {reason}; write it like 30s, 1m, 1h30m or 500ms")]
pub struct ParseDurationError {
    input: String,
    reason: &'static str,
}

impl Duration {
    /// A duration of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Duration(std::time::Duration::from_secs(secs))
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        d.0
    }
}

impl FromStr for Duration {
    type Err = ParseDurationError;

    /// Parses what Go's `time.ParseDuration` takes, except negative durations: a sequence of
    /// decimal numbers, each with an optional fraction and a unit (`ns`, `us`, `µs`, `ms`, `s`,
    /// `m`, `h`), with kube's `metav1.Duration` parser ([`kube::core::Duration`]).
    ///
    /// kube's parser panics where Go returns an error (a sign inside the string multiplies by a
    /// negative number; a term beyond `u64::MAX` seconds overflows) and takes `""` for zero, so
    /// those inputs are refused before it sees them; to keep every sum in range, so are strings
    /// longer than 64 bytes and numbers with more than 15 digits before the point.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseDurationError {
            input: input.to_owned(),
            reason,
        };
        if input.is_empty() {
            return Err(err("it is empty"));
        }
        if input.starts_with('-') {
            return Err(err("it is negative"));
        }
        if input.len() > 64 {
            return Err(err("it is too long"));
        }
        let mut integer_digits = 0;
        let mut after_point = false;
        for c in input.chars() {
            match c {
                '0' if integer_digits == 0 => {}
                '0'..='9' if !after_point => integer_digits += 1,
                '0'..='9' => {}
                '.' => after_point = true,
                '-' | '+' => return Err(err("write it without a sign")),
                _ => (integer_digits, after_point) = (0, false),
            }
            if integer_digits > 15 {
                return Err(err("it is too long"));
            }
        }
        let parsed: kube::core::Duration = input.parse().map_err(|e| match e {
            kube::core::duration::ParseError::InvalidUnit => err("unknown unit"),
            kube::core::duration::ParseError::NoUnit => err("a number has no unit"),
            _ => err("a number is malformed"),
        })?;
        let parsed = std::time::Duration::from(parsed);
        if parsed.as_nanos() > i64::MAX as u128 {
            return Err(err("it is too long"));
        }
        Ok(Duration(parsed))
    }
}

impl fmt::Display for Duration {
    /// Formats like Go's `time.Duration.String` for whole units (`1h30m0s` is written `1h30m`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.is_zero() {
            return f.write_str("0s");
        }
        if d.subsec_nanos() != 0 && d.as_secs() == 0 {
            let nanos = d.subsec_nanos();
            return if nanos.is_multiple_of(1_000_000) {
                write!(f, "{}ms", nanos / 1_000_000)
            } else if nanos.is_multiple_of(1_000) {
                write!(f, "{}us", nanos / 1_000)
            } else {
                write!(f, "{nanos}ns")
            };
        }
        let secs = d.as_secs();
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if m > 0 {
            write!(f, "{m}m")?;
        }
        if s > 0 || d.subsec_nanos() != 0 {
            if d.subsec_nanos() != 0 {
                let frac = format!("{:09}", d.subsec_nanos());
                write!(f, "{s}.{}s", frac.trim_end_matches('0'))?;
            } else {
                write!(f, "{s}s")?;
            }
        }
        Ok(())
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$",
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let cases = [
            ("0", 0),
            ("1m", 60_000),
            ("30s", 30_000),
            ("1h30m", 5_400_000),
            ("500ms", 500),
            ("1.5s", 1_500),
            ("2h0m0s", 7_200_000),
        ];
        for (input, millis) in cases {
            let d: Duration = input.parse().unwrap();
            assert_eq!(d.0.as_millis(), millis, "{input}");
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        for input in [
            "",
            "10",
            "1x",
            "m",
            "-1s",
            "1 m",
            "+-1s",
            "1h-1m",
            "9999999999999999999h",
            "2562048h",
        ] {
            assert!(input.parse::<Duration>().is_err(), "{input}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for input in ["1m", "30s", "1h30m", "500ms", "1.5s", "0s", "1h0m1s"] {
            let d: Duration = input.parse().unwrap();
            let again: Duration = d.to_string().parse().unwrap();
            assert_eq!(d, again, "{input} -> {d}");
        }
        assert_eq!(Duration::from_secs(60).to_string(), "1m");
    }
}
