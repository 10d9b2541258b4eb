//! What a reconcile achieved, as the author reports it.

use std::time::Duration;

use crate::status::NoStatus;

/// The result of `create_or_update` or `delete` when nothing failed.
///
/// The runtime turns it into the object's `phase`, its `Ready` condition and the next reconcile
/// time; the author never writes status or finalizers.
#[derive(Clone, Debug, PartialEq)]
#[must_use = "return the Outcome from create_or_update or delete"]
pub struct Outcome<S = NoStatus> {
    state: State,
    requeue_after: Option<Duration>,
    status: Option<S>,
}

/// Where the object stands after a reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
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
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

impl<S> Outcome<S> {
    fn new(state: State) -> Self {
        Outcome {
            state,
            requeue_after: None,
            status: None,
        }
    }

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

    /// Deletion finished.
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

    /// Reconcile again after `after`, instead of the default for this outcome.
    pub fn requeue_after(mut self, after: Duration) -> Self {
        self.requeue_after = Some(after);
        self
    }

    /// Sets the author's extra status fields.
    pub fn with_status(mut self, status: S) -> Self {
        self.status = Some(status);
        self
    }

    /// Where the object stands.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The requested requeue interval, if any.
    pub fn requeue(&self) -> Option<Duration> {
        self.requeue_after
    }

    /// The author's extra status, if set.
    pub fn status(&self) -> Option<&S> {
        self.status.as_ref()
    }

    /// Splits the outcome into its parts.
    pub fn into_parts(self) -> (State, Option<Duration>, Option<S>) {
        (self.state, self.requeue_after, self.status)
    }
}
