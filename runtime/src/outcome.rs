//! What a reconcile achieved, as the author reports it: [`Outcome`] from `create_or_update`,
//! [`Deletion`] from `delete`.

use std::marker::PhantomData;
use std::time::Duration;

use crate::status::NoStatus;

/// The result of `create_or_update` (as `Outcome<S>`) or of `delete` (as [`Deletion<S>`]) when
/// nothing failed.
///
/// The runtime turns it into the object's `phase`, its `Ready` condition and the next reconcile
/// time; the author never writes status or finalizers. The second parameter says which function
/// it belongs to, so `create_or_update` cannot return "done" and `delete` cannot return "ready":
/// [`ready`](Outcome::ready) and [`progressing`](Outcome::progressing) exist only on
/// `Outcome<S, Apply>`, [`done`](Outcome::done) and [`blocked`](Outcome::blocked) only on
/// `Outcome<S, Delete>`.
#[derive(Clone, Debug, PartialEq)]
#[must_use = "return the Outcome from create_or_update or delete"]
pub struct Outcome<S = NoStatus, Op = Apply> {
    state: State,
    requeue_after: Option<Duration>,
    status: Option<S>,
    op: PhantomData<fn() -> Op>,
}

/// What `delete` returns: [`Deletion::done`] or [`Deletion::blocked`].
pub type Deletion<S = NoStatus> = Outcome<S, Delete>;

/// Marks the [`Outcome`] of `create_or_update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apply {}

/// Marks the [`Outcome`] of `delete` (see [`Deletion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delete {}

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

impl<S, Op> Outcome<S, Op> {
    fn new(state: State) -> Self {
        Outcome {
            state,
            requeue_after: None,
            status: None,
            op: PhantomData,
        }
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

    /// True for [`ready`](Outcome::ready) and [`done`](Outcome::done): nothing left to wait for.
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

    /// Splits the outcome into its parts.
    pub(crate) fn into_parts(self) -> (State, Option<Duration>, Option<S>) {
        (self.state, self.requeue_after, self.status)
    }
}

impl<S> Outcome<S, Apply> {
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
}

impl<S> Outcome<S, Delete> {
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
}
