//! The decisions of the reconcile algorithm, as pure functions: from what a reconcile found (the
//! object, the ProviderConfig, the state of each access, the author's outcome) to the status it
//! reports, the Event that goes with it, and when the object is due again.
//!
//! Nothing here talks to a cluster; [`Reconciler`](super::reconciler::Reconciler) gathers the
//! facts, asks these functions what follows, and carries it out. Every branch of the algorithm in
//! README "Running a provider" is a unit test below.

use std::time::Duration;

use crate::access::AccessState;
use crate::error::Error;
use crate::ops::metrics::ReconcileResult;
use crate::outcome::{DEFAULT_WAIT, State};
use crate::platform::ConfigState;
use crate::queue::Requeue;
use crate::status::resources::{ManagedResource, ResourcePhase};
use crate::status::write::{
    self as status, REASON_CLEANUP, REASON_DENIED, REASON_ERROR, REASON_INVALID, REASON_PANICKED,
    REASON_TIMED_OUT, REASON_WAITING, Report,
};
use crate::tenant::ClusterAccess;

/// Re-check interval while a managed object is pending: a safety net, since the runtime
/// watches each object a set waits for (`waits`) and reconciles when it changes.
pub(crate) const RESOURCE_RECHECK: Duration = Duration::from_secs(30);
/// Re-check interval of a held deletion guard when there is no poll interval.
const GUARD_RECHECK: Duration = Duration::from_secs(60);

/// What the reconcile decided when it stops: the status to report (if any), how it ended, and
/// when the object is due again.
#[derive(Debug)]
pub(crate) struct Decision<X> {
    /// The status to write; `None` writes nothing.
    pub report: Option<Report<X>>,
    /// How the reconcile ended, for the metrics.
    pub result: ReconcileResult,
    /// When the object is due again.
    pub requeue: Requeue,
}

impl<X> Decision<X> {
    fn new(report: Option<Report<X>>, result: ReconcileResult, requeue: Requeue) -> Self {
        Decision {
            report,
            result,
            requeue,
        }
    }
}

/// The timings the decisions depend on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// The ProviderConfig's poll interval; `None` when it is zero (no periodic reconcile).
    pub poll: Option<Duration>,
    /// How long access may take before the object says `WaitingForAccess`.
    pub access_status_after: Duration,
    /// Re-check interval while access is pending or being given back.
    pub access_recheck: Duration,
}

/// Which path of the algorithm a decision is on: the status phase is `Progressing` on the create
/// path and `Terminating` on the delete path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// `create_or_update` and what leads to it.
    Create,
    /// `delete` and giving the access back.
    Delete,
}

impl Path {
    fn report<X>(self, reason: impl Into<String>, message: impl Into<String>) -> Report<X> {
        match self {
            Path::Create => Report::progressing(reason, message),
            Path::Delete => Report::terminating(reason, message),
        }
    }
}

/// The ProviderConfig is not usable: say so and wait for it to change (its watch brings every
/// object back), as Go's `StatusProgressing(obj, ReconcileError, "No ProviderConfig found")`.
pub(crate) fn config_unusable<X, C>(
    state: ConfigState<C>,
    provider_name: &str,
    path: Path,
) -> Decision<X> {
    let message = match state {
        ConfigState::Deleting => format!("ProviderConfig {provider_name} is marked for deletion"),
        ConfigState::Invalid(message) => message,
        ConfigState::Ready(_) | ConfigState::Missing | ConfigState::Unknown => {
            "No ProviderConfig found".to_owned()
        }
    };
    Decision::new(
        Some(path.report(REASON_ERROR, message).warning()),
        ReconcileResult::skipped,
        Requeue::Never,
    )
}

/// The mode does not serve the object (kcp: another object serves its workspace): say why and
/// wait until something triggers it again.
pub(crate) fn refused<X>(reason: String, message: String) -> Decision<X> {
    Decision::new(
        Some(Report::progressing(reason, message)),
        ReconcileResult::skipped,
        Requeue::Never,
    )
}

/// The access every cluster of the tenant is reached with, once all of it is granted; otherwise
/// what the reconcile does while it is not.
///
/// `states` are in order (the tenant's own cluster first); the first that is not granted decides.
/// `waited` is how long the object has waited for access so far.
#[expect(
    clippy::result_large_err,
    reason = "one Decision per reconcile, handed straight to the caller; boxing it buys nothing"
)]
pub(crate) fn access<X>(
    states: Vec<Result<AccessState, Error>>,
    waited: Duration,
    timing: Timing,
    path: Path,
) -> Result<Vec<ClusterAccess>, Decision<X>> {
    let mut granted = Vec::with_capacity(states.len());
    for state in states {
        match state {
            Ok(AccessState::Ready(access)) => granted.push(access),
            Ok(AccessState::Waiting { message }) => {
                return Err(match path {
                    Path::Create => waiting_for_access(message, waited, timing),
                    Path::Delete => cleanup(timing),
                });
            }
            Ok(AccessState::Denied { message }) => {
                return Err(match path {
                    Path::Create => Decision::new(
                        Some(Report::progressing(REASON_DENIED, message).warning()),
                        ReconcileResult::waiting,
                        timing.poll.map_or(Requeue::Never, Requeue::After),
                    ),
                    // Access the platform refused can have installed nothing; the delete path
                    // asks `cleanup_access` instead.
                    Path::Delete => cleanup(timing),
                });
            }
            Err(err) => {
                let context = match path {
                    Path::Create => "cluster setup error",
                    Path::Delete => "cluster cleanup error",
                };
                return Err(failed(&err.context(context), path, timing));
            }
        }
    }
    Ok(granted)
}

/// On the delete path: whether the author's `delete` can run with the access there is, or the
/// deletion goes straight to giving the access back (the platform refused some of it, so nothing
/// was installed through it), or it waits.
pub(crate) enum CleanupAccess {
    /// Every cluster is reachable: run `delete`.
    Delete(Vec<ClusterAccess>),
    /// Some access was refused: skip `delete`.
    Skip,
}

/// [`access`] for the delete path: a refusal skips the author's `delete` instead of waiting.
#[expect(
    clippy::result_large_err,
    reason = "one Decision per reconcile, handed straight to the caller; boxing it buys nothing"
)]
pub(crate) fn cleanup_access<X>(
    states: Vec<Result<AccessState, Error>>,
    timing: Timing,
) -> Result<CleanupAccess, Decision<X>> {
    let mut granted = Vec::with_capacity(states.len());
    let mut refused = false;
    for state in states {
        match state {
            Ok(AccessState::Ready(access)) => granted.push(access),
            Ok(AccessState::Denied { .. }) => refused = true,
            Ok(AccessState::Waiting { .. }) => return Err(cleanup(timing)),
            Err(err) => {
                return Err(failed(
                    &err.context("cluster cleanup error"),
                    Path::Delete,
                    timing,
                ));
            }
        }
    }
    Ok(if refused {
        CleanupAccess::Skip
    } else {
        CleanupAccess::Delete(granted)
    })
}

/// Access is not granted yet. The status says so only once the wait is noticeable, so a grant
/// that arrives quickly never shows up as `WaitingForAccess`; the request watches bring the object
/// back as soon as something changes.
fn waiting_for_access<X>(message: String, waited: Duration, timing: Timing) -> Decision<X> {
    if waited >= timing.access_status_after {
        let recheck = timing
            .poll
            .unwrap_or(timing.access_recheck)
            .min(timing.access_recheck);
        Decision::new(
            Some(Report::progressing(REASON_WAITING, message)),
            ReconcileResult::waiting,
            Requeue::After(recheck),
        )
    } else {
        Decision::new(
            None,
            ReconcileResult::waiting,
            Requeue::After(timing.access_status_after - waited),
        )
    }
}

/// Access is being given back (or is not there to give back yet): `Reconciling`, "cluster
/// cleanup", as Go reports it.
pub(crate) fn cleanup<X>(timing: Timing) -> Decision<X> {
    Decision::new(
        Some(Report::terminating(REASON_CLEANUP, "cluster cleanup")),
        ReconcileResult::deleting,
        Requeue::After(timing.access_recheck),
    )
}

/// A failure: invalid input is reported and not retried until something changes (or the poll
/// interval); anything else is retried with backoff.
pub(crate) fn failed<X>(err: &Error, path: Path, timing: Timing) -> Decision<X> {
    if err.is_invalid_input() {
        let reason = err.reason().unwrap_or(REASON_INVALID);
        Decision::new(
            Some(path.report(reason, err.message()).warning()),
            ReconcileResult::invalid,
            timing.poll.map_or(Requeue::Never, Requeue::After),
        )
    } else {
        let reason = err.reason().unwrap_or(REASON_ERROR);
        Decision::new(
            Some(path.report(reason, err.message()).warning()),
            ReconcileResult::error,
            Requeue::Backoff,
        )
    }
}

/// The author's code panicked: a failed reconcile, retried with backoff.
pub(crate) fn panicked<X>(function: &str, payload: &str, path: Path) -> Decision<X> {
    let message = format!("{function} panicked: {payload}");
    Decision::new(
        Some(path.report(REASON_PANICKED, message).warning()),
        ReconcileResult::panic,
        Requeue::Backoff,
    )
}

/// The author's code ran past the reconcile timeout and was cancelled.
pub(crate) fn timed_out<X>(function: &str, limit: Duration, path: Path) -> Decision<X> {
    let message = format!(
        "{function} did not finish within {} (the reconcile timeout) and was cancelled; retrying with backoff",
        crate::duration::Duration(limit)
    );
    Decision::new(
        Some(path.report(REASON_TIMED_OUT, message).warning()),
        ReconcileResult::timeout,
        Requeue::Backoff,
    )
}

/// The requeue `create_or_update` asked for, brought forward to when a member asked to be looked
/// at again (a worker's token to renew), however long the poll interval.
pub(crate) fn with_revisit(
    asked: Option<Duration>,
    revisit: Option<Duration>,
    timing: Timing,
) -> Option<Duration> {
    match (asked, revisit) {
        (Some(asked), Some(revisit)) => Some(asked.min(revisit)),
        (None, Some(revisit)) => Some(timing.poll.map_or(revisit, |poll| poll.min(revisit))),
        (asked, None) => asked,
    }
}

/// What `create_or_update`'s outcome makes of the object: Ready only when the author says so and
/// every managed object is ready too.
pub(crate) fn created<X>(
    state: State,
    requeue: Option<Duration>,
    extra: Option<X>,
    resources: Option<Vec<ManagedResource>>,
    timing: Timing,
) -> Decision<X> {
    let held = resources.as_deref().and_then(status::held_up_by);
    let pending = resources
        .as_deref()
        .is_some_and(|r| r.iter().any(|r| r.phase == ResourcePhase::Pending));
    let failed = resources
        .as_deref()
        .is_some_and(|r| r.iter().any(|r| r.phase == ResourcePhase::Failed));
    let requeue = requeue.or_else(|| pending.then_some(RESOURCE_RECHECK));
    match (state, held) {
        // `Done` and `Blocked` are `delete`'s; `create_or_update`'s type cannot carry them.
        (State::Ready | State::Done, None) => Decision::new(
            Some(Report::ready().with_extra(extra).with_resources(resources)),
            ReconcileResult::ready,
            requeue
                .or(timing.poll)
                .map_or(Requeue::Never, Requeue::After),
        ),
        (State::Ready | State::Done, Some((reason, message)))
        | (State::Progressing { reason, message } | State::Blocked { reason, message }, _) => {
            let report = Report::progressing(reason, message)
                .with_extra(extra)
                .with_resources(resources);
            // Waiting is the normal course of an install; a managed object that failed is not.
            let report = if failed { report.warning() } else { report };
            Decision::new(
                Some(report),
                ReconcileResult::progressing,
                Requeue::After(requeue.unwrap_or(DEFAULT_WAIT)),
            )
        }
    }
}

/// What `delete`'s outcome makes of the deletion: `None` when it is done and the access can be
/// given back; otherwise the status that says what it waits for.
pub(crate) fn deleted<X>(
    state: State,
    requeue: Option<Duration>,
    extra: Option<X>,
    resources: Option<Vec<ManagedResource>>,
) -> Option<Decision<X>> {
    // Managed objects still going hold the deletion, named in the status.
    let held = resources.as_deref().and_then(status::held_up_by);
    let (state, requeue) = match (state, held) {
        (State::Done | State::Ready, Some((reason, message))) => (
            State::Progressing { reason, message },
            requeue.or(Some(RESOURCE_RECHECK)),
        ),
        (state, _) => (state, requeue),
    };
    let requeue = Requeue::After(requeue.unwrap_or(DEFAULT_WAIT));
    match state {
        State::Done | State::Ready => None,
        State::Blocked { reason, message } => Some(Decision::new(
            Some(
                Report::terminating(reason.clone(), message.clone())
                    .with_extra(extra)
                    .with_blocked(reason, message),
            ),
            ReconcileResult::deleting,
            requeue,
        )),
        State::Progressing { reason, message } => Some(Decision::new(
            Some(
                Report::terminating(reason, message)
                    .with_extra(extra)
                    .with_resources(resources),
            ),
            ReconcileResult::deleting,
            requeue,
        )),
    }
}

/// A deletion guard holds the deletion (`reason`, `message` from the guard): the watch on the
/// guarded kind brings the tenant back as its objects go, so the re-check is only a safety net,
/// at the poll interval.
pub(crate) fn guarded<X>(reason: String, message: String, timing: Timing) -> Decision<X> {
    Decision::new(
        Some(Report::terminating(reason.clone(), message.clone()).with_blocked(reason, message)),
        ReconcileResult::deleting,
        Requeue::After(timing.poll.unwrap_or(GUARD_RECHECK)),
    )
}

/// Access that is still being given back holds the deletion; `None` once all of it is gone.
pub(crate) fn released<X>(gone: bool, timing: Timing) -> Option<Decision<X>> {
    (!gone).then(|| cleanup(timing))
}

/// The deletion finished: access given back, finalizer removed.
pub(crate) fn finished<X>() -> Decision<X> {
    Decision::new(None, ReconcileResult::deleted, Requeue::Never)
}

/// The payload of a panic, as text.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Phase;
    use crate::status::resources::Location;
    use crate::status::write::{MESSAGE_READY, REASON_SUCCESS};

    const TIMING: Timing = Timing {
        poll: Some(Duration::from_secs(60)),
        access_status_after: Duration::from_secs(2),
        access_recheck: Duration::from_secs(30),
    };
    const NO_POLL: Timing = Timing {
        poll: None,
        ..TIMING
    };

    /// A cluster the plan only hands on; its client is never called. Building one spawns the
    /// client's buffer task, hence the runtime.
    fn cluster() -> ClusterAccess {
        static RUNTIME: std::sync::LazyLock<tokio::runtime::Runtime> =
            std::sync::LazyLock::new(|| {
                tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("a test runtime")
            });
        let _entered = RUNTIME.enter();
        ClusterAccess::new(
            kube::Client::new(
                tower::service_fn(|_req: http::Request<kube::client::Body>| async {
                    Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("offline"))
                }),
                "default",
            ),
            b"kubeconfig".to_vec(),
            None,
        )
    }

    fn waiting(message: &str) -> Result<AccessState, Error> {
        Ok(AccessState::Waiting {
            message: message.to_owned(),
        })
    }

    fn denied(message: &str) -> Result<AccessState, Error> {
        Ok(AccessState::Denied {
            message: message.to_owned(),
        })
    }

    fn member(phase: ResourcePhase) -> ManagedResource {
        ManagedResource {
            api_group: Some("apps".to_owned()),
            kind: "Deployment".to_owned(),
            name: "velero".to_owned(),
            namespace: Some("velero".to_owned()),
            phase,
            message: None,
            location: Some(Location::WorkloadCluster),
        }
    }

    fn report(decision: &Decision<()>) -> &Report<()> {
        decision.report.as_ref().expect("a status report")
    }

    #[test]
    fn a_missing_config_is_reported_and_not_retried() {
        let d: Decision<()> =
            config_unusable::<(), ()>(ConfigState::Missing, "velero", Path::Create);
        assert_eq!(report(&d).phase, Phase::Progressing);
        assert_eq!(report(&d).reason, REASON_ERROR);
        assert_eq!(report(&d).message, "No ProviderConfig found");
        assert_eq!(d.requeue, Requeue::Never);
        let d: Decision<()> =
            config_unusable::<(), ()>(ConfigState::Deleting, "velero", Path::Delete);
        assert_eq!(report(&d).phase, Phase::Terminating);
        assert_eq!(
            report(&d).message,
            "ProviderConfig velero is marked for deletion"
        );
        let d: Decision<()> =
            config_unusable::<(), ()>(ConfigState::Invalid("bad".into()), "velero", Path::Create);
        assert_eq!(report(&d).message, "bad");
    }

    #[test]
    fn a_refused_object_says_why_and_waits() {
        let d: Decision<()> = refused("WorkspaceServed".into(), "by a/b".into());
        assert_eq!(report(&d).reason, "WorkspaceServed");
        assert!(!report(&d).warning);
        assert_eq!(
            (d.result, d.requeue),
            (ReconcileResult::skipped, Requeue::Never)
        );
    }

    #[test]
    fn granted_access_is_handed_on_in_order() {
        let granted = access::<()>(
            vec![
                Ok(AccessState::Ready(cluster())),
                Ok(AccessState::Ready(cluster())),
            ],
            Duration::ZERO,
            TIMING,
            Path::Create,
        )
        .expect("all granted");
        assert_eq!(granted.len(), 2);
        let none = access::<()>(Vec::new(), Duration::ZERO, TIMING, Path::Create)
            .expect("nothing to wait for");
        assert!(none.is_empty());
    }

    #[test]
    fn a_short_wait_for_access_writes_no_status() {
        let d = access::<()>(
            vec![Ok(AccessState::Ready(cluster())), waiting("pending")],
            Duration::from_millis(500),
            TIMING,
            Path::Create,
        )
        .expect_err("waiting");
        assert!(d.report.is_none());
        assert_eq!(d.result, ReconcileResult::waiting);
        assert_eq!(d.requeue, Requeue::After(Duration::from_millis(1500)));
    }

    #[test]
    fn a_noticeable_wait_for_access_says_so_and_rechecks() {
        let d = access::<()>(
            vec![waiting("AccessRequest pending")],
            Duration::from_secs(3),
            TIMING,
            Path::Create,
        )
        .expect_err("waiting");
        assert_eq!(report(&d).reason, REASON_WAITING);
        assert_eq!(report(&d).message, "AccessRequest pending");
        assert!(!report(&d).warning, "waiting is the normal course");
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(30)));
        let short_poll = Timing {
            poll: Some(Duration::from_secs(5)),
            ..TIMING
        };
        let d = access::<()>(
            vec![waiting("x")],
            Duration::from_secs(3),
            short_poll,
            Path::Create,
        )
        .expect_err("waiting");
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(5)));
    }

    #[test]
    fn denied_access_is_a_warning_retried_at_the_poll_interval() {
        let d = access::<()>(
            vec![denied("no quota")],
            Duration::ZERO,
            TIMING,
            Path::Create,
        )
        .expect_err("denied");
        assert_eq!(report(&d).reason, REASON_DENIED);
        assert!(report(&d).warning);
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(60)));
        let d = access::<()>(
            vec![denied("no quota")],
            Duration::ZERO,
            NO_POLL,
            Path::Create,
        )
        .expect_err("denied");
        assert_eq!(d.requeue, Requeue::Never);
    }

    #[test]
    fn an_access_error_fails_with_backoff_and_context() {
        let d = access::<()>(
            vec![Err(Error::transient_msg("boom"))],
            Duration::ZERO,
            TIMING,
            Path::Create,
        )
        .expect_err("failed");
        assert_eq!(report(&d).reason, REASON_ERROR);
        assert!(
            report(&d).message.contains("cluster setup error"),
            "{}",
            report(&d).message
        );
        assert_eq!(d.requeue, Requeue::Backoff);
        assert_eq!(d.result, ReconcileResult::error);
    }

    #[test]
    fn on_the_delete_path_refused_access_skips_delete_and_pending_access_waits() {
        assert!(matches!(
            cleanup_access::<()>(
                vec![Ok(AccessState::Ready(cluster())), denied("gone")],
                TIMING
            ),
            Ok(CleanupAccess::Skip)
        ));
        assert!(matches!(
            cleanup_access::<()>(vec![Ok(AccessState::Ready(cluster()))], TIMING),
            Ok(CleanupAccess::Delete(granted)) if granted.len() == 1
        ));
        let d = cleanup_access::<()>(vec![waiting("x")], TIMING)
            .err()
            .expect("waits");
        assert_eq!(report(&d).phase, Phase::Terminating);
        assert_eq!(report(&d).reason, REASON_CLEANUP);
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(30)));
        let d = cleanup_access::<()>(vec![Err(Error::transient_msg("boom"))], TIMING)
            .err()
            .expect("fails");
        assert!(report(&d).message.contains("cluster cleanup error"));
        assert_eq!(report(&d).phase, Phase::Terminating);
    }

    #[test]
    fn invalid_input_is_reported_and_retried_only_at_the_poll_interval() {
        let err = Error::invalid_input("version 9 is not offered");
        let d: Decision<()> = failed(&err, Path::Create, TIMING);
        assert_eq!(report(&d).reason, REASON_INVALID);
        assert!(report(&d).warning);
        assert_eq!(d.result, ReconcileResult::invalid);
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(60)));
        let d: Decision<()> = failed(&err, Path::Delete, NO_POLL);
        assert_eq!(report(&d).phase, Phase::Terminating);
        assert_eq!(d.requeue, Requeue::Never);
        let d: Decision<()> = failed(&err.with_reason("VersionNotOffered"), Path::Create, TIMING);
        assert_eq!(report(&d).reason, "VersionNotOffered");
    }

    #[test]
    fn a_transient_error_backs_off() {
        let d: Decision<()> = failed(&Error::transient_msg("flaky"), Path::Create, TIMING);
        assert_eq!(
            (d.result, d.requeue),
            (ReconcileResult::error, Requeue::Backoff)
        );
        assert_eq!(report(&d).message, "flaky");
    }

    #[test]
    fn a_panic_and_a_timeout_fail_with_backoff() {
        let d: Decision<()> = panicked("create_or_update", "oops", Path::Create);
        assert_eq!(report(&d).reason, REASON_PANICKED);
        assert_eq!(report(&d).message, "create_or_update panicked: oops");
        assert_eq!(
            (d.result, d.requeue),
            (ReconcileResult::panic, Requeue::Backoff)
        );
        let d: Decision<()> = timed_out("delete", Duration::from_secs(5), Path::Delete);
        assert_eq!(report(&d).reason, REASON_TIMED_OUT);
        assert_eq!(report(&d).phase, Phase::Terminating);
        assert!(
            report(&d)
                .message
                .starts_with("delete did not finish within 5s")
        );
        assert_eq!(d.result, ReconcileResult::timeout);
        assert_eq!(panic_message(&"text"), "text");
        assert_eq!(panic_message(&String::from("owned")), "owned");
        assert_eq!(panic_message(&42_u8), "a non-string panic payload");
    }

    #[test]
    fn ready_is_requeued_at_the_poll_interval_or_when_the_author_says() {
        let d: Decision<()> = created(State::Ready, None, None, None, TIMING);
        assert_eq!(report(&d).reason, REASON_SUCCESS);
        assert_eq!(report(&d).message, MESSAGE_READY);
        assert_eq!(
            (d.result, d.requeue),
            (
                ReconcileResult::ready,
                Requeue::After(Duration::from_secs(60))
            )
        );
        let d: Decision<()> = created(State::Ready, None, None, None, NO_POLL);
        assert_eq!(d.requeue, Requeue::Never);
        let d: Decision<()> = created(
            State::Ready,
            Some(Duration::from_secs(7)),
            None,
            None,
            TIMING,
        );
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(7)));
    }

    #[test]
    fn a_pending_managed_object_holds_ready_back_without_a_warning() {
        let resources = vec![member(ResourcePhase::Ready), member(ResourcePhase::Pending)];
        let d: Decision<()> = created(State::Ready, None, None, Some(resources), TIMING);
        assert_eq!(report(&d).phase, Phase::Progressing);
        assert_eq!(report(&d).reason, "WaitingForDeployment");
        assert!(!report(&d).warning);
        assert_eq!(d.requeue, Requeue::After(RESOURCE_RECHECK));
        assert_eq!(report(&d).resources.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn a_failed_managed_object_is_a_warning() {
        let d: Decision<()> = created(
            State::Ready,
            None,
            None,
            Some(vec![member(ResourcePhase::Failed)]),
            TIMING,
        );
        assert_eq!(report(&d).reason, "DeploymentFailed");
        assert!(report(&d).warning);
        assert_eq!(d.requeue, Requeue::After(DEFAULT_WAIT));
    }

    #[test]
    fn progressing_keeps_the_authors_reason_and_waits_ten_seconds_by_default() {
        let state = State::Progressing {
            reason: "Installing".into(),
            message: "chart".into(),
        };
        let d: Decision<()> = created(state.clone(), None, None, None, TIMING);
        assert_eq!(report(&d).reason, "Installing");
        assert!(!report(&d).warning);
        assert_eq!(
            (d.result, d.requeue),
            (ReconcileResult::progressing, Requeue::After(DEFAULT_WAIT))
        );
        let d: Decision<()> = created(state, Some(Duration::from_secs(1)), None, None, TIMING);
        assert_eq!(d.requeue, Requeue::After(Duration::from_secs(1)));
    }

    #[test]
    fn done_goes_on_to_give_access_back() {
        assert!(deleted::<()>(State::Done, None, None, None).is_none());
        assert!(
            deleted::<()>(
                State::Done,
                None,
                None,
                Some(vec![member(ResourcePhase::Ready)])
            )
            .is_none()
        );
    }

    #[test]
    fn blocked_says_deletion_blocked_and_retries() {
        let state = State::Blocked {
            reason: "BackupsPresent".into(),
            message: "delete your backups".into(),
        };
        let d = deleted::<()>(state, None, None, None).expect("held");
        assert_eq!(report(&d).phase, Phase::Terminating);
        assert_eq!(
            report(&d).blocked,
            Some((
                "BackupsPresent".to_owned(),
                "delete your backups".to_owned()
            ))
        );
        assert_eq!(
            (d.result, d.requeue),
            (ReconcileResult::deleting, Requeue::After(DEFAULT_WAIT))
        );
    }

    #[test]
    fn a_held_guard_blocks_and_rechecks_only_as_a_safety_net() {
        let d = guarded::<()>("UserResourcesPresent".into(), "2 Backup".into(), TIMING);
        assert_eq!(report(&d).phase, Phase::Terminating);
        assert_eq!(report(&d).reason, "UserResourcesPresent");
        assert_eq!(
            report(&d).blocked,
            Some(("UserResourcesPresent".to_owned(), "2 Backup".to_owned()))
        );
        assert_eq!(d.result, ReconcileResult::deleting);
        assert_eq!(d.requeue, Requeue::After(TIMING.poll.unwrap()));
        assert_eq!(
            guarded::<()>("R".into(), "m".into(), NO_POLL).requeue,
            Requeue::After(GUARD_RECHECK)
        );
    }

    #[test]
    fn managed_objects_still_going_hold_the_deletion() {
        let d = deleted::<()>(
            State::Done,
            None,
            None,
            Some(vec![member(ResourcePhase::Terminating)]),
        )
        .expect("held");
        assert_eq!(report(&d).reason, "WaitingForDeploymentDeletion");
        assert_eq!(d.requeue, Requeue::After(RESOURCE_RECHECK));
        assert!(report(&d).blocked.is_none());
    }

    #[test]
    fn a_revisit_brings_the_requeue_forward_but_never_past_the_poll() {
        let minutes = |m: u64| Some(Duration::from_secs(m * 60));
        let poll = TIMING.poll;
        assert_eq!(with_revisit(None, None, TIMING), None);
        assert_eq!(with_revisit(minutes(5), None, TIMING), minutes(5));
        assert_eq!(with_revisit(minutes(5), minutes(40), TIMING), minutes(5));
        assert_eq!(with_revisit(minutes(50), minutes(40), TIMING), minutes(40));
        // Without an explicit requeue, the poll still comes first when it is sooner.
        assert_eq!(
            with_revisit(None, minutes(40), TIMING),
            poll.min(minutes(40))
        );
        assert_eq!(with_revisit(None, minutes(40), NO_POLL), minutes(40));
    }

    #[test]
    fn access_being_given_back_holds_the_finalizer() {
        let d = released::<()>(false, TIMING).expect("held");
        assert_eq!(report(&d).reason, REASON_CLEANUP);
        assert_eq!(report(&d).message, "cluster cleanup");
        assert!(released::<()>(true, TIMING).is_none());
        let d: Decision<()> = finished();
        assert!(d.report.is_none());
        assert_eq!(
            (d.result, d.requeue),
            (ReconcileResult::deleted, Requeue::Never)
        );
    }
}
