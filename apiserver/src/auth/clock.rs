//! The time token minting and validation use, replaceable so tests can let tokens expire
//! without waiting for them.

#[cfg(test)]
use std::sync::atomic::{AtomicI64, Ordering};

#[cfg(test)]
use k8s_openapi::jiff::SignedDuration;
use k8s_openapi::jiff::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// The wall clock plus an offset a test moves forward, so tokens expire on demand while time
/// still passes normally in between.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct ManualClock {
    offset_ms: AtomicI64,
}

#[cfg(test)]
impl ManualClock {
    /// A clock that starts at the wall clock's time.
    pub(crate) fn new() -> Self {
        ManualClock::default()
    }

    /// Moves this clock forward (or back, with a negative duration).
    pub(crate) fn advance(&self, by: SignedDuration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(if by.is_negative() {
            i64::MIN
        } else {
            i64::MAX
        });
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        let offset = SignedDuration::from_millis(self.offset_ms.load(Ordering::SeqCst));
        Timestamp::now()
            .checked_add(offset)
            .unwrap_or(Timestamp::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_jumps_ahead() {
        let clock = ManualClock::new();
        let before = clock.now();
        clock.advance(SignedDuration::from_hours(2));
        let jumped = clock.now().duration_since(before);
        assert!(jumped >= SignedDuration::from_hours(2), "{jumped:?}");
        assert!(
            jumped < SignedDuration::from_hours(2) + SignedDuration::from_secs(60),
            "{jumped:?}"
        );
    }
}
