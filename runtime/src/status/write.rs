//! What the runtime writes into a Service API object's status, and whether it needs writing.
//!
//! Reasons and messages follow the Go runtime (`StatusReady`: `ReconcileSuccess`, "Domain Service
//! is ready"; `ReconcileError` for failures; `Terminating` while deleting), so dashboards and
//! tests written against Go providers keep working. A condition keeps its `lastTransitionTime`
//! while its status does not change, as `meta.SetStatusCondition` does; a status equal to the
//! old one is not written at all.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Map, Value};

use crate::status::resources::{ManagedResource, ResourcePhase};
use crate::status::{ExtraStatus, Phase, ServiceStatus};

/// Type of the condition that summarises an object.
pub(crate) const READY: &str = "Ready";
/// Type of the condition set while the author's `delete` refuses to finish.
pub(crate) const DELETION_BLOCKED: &str = "DeletionBlocked";

/// Reason: the service is ready (Go `StatusReady`).
pub(crate) const REASON_SUCCESS: &str = "ReconcileSuccess";
/// Message of a ready object (Go `StatusReady`).
pub(crate) const MESSAGE_READY: &str = "Domain Service is ready";
/// Reason: something failed and is retried (Go `reasonReconcileError`).
pub(crate) const REASON_ERROR: &str = "ReconcileError";
/// Reason: the end user's object or the ProviderConfig asks for something that cannot work.
pub(crate) const REASON_INVALID: &str = "InvalidUserInput";
/// Reason: the object cannot be decoded into the provider's type (e.g. an older schema).
pub(crate) const REASON_INVALID_OBJECT: &str = "InvalidObject";
/// Reason: the author's code panicked.
pub(crate) const REASON_PANICKED: &str = "ReconcilePanicked";
/// Reason: the author's code did not finish within the reconcile timeout.
pub(crate) const REASON_TIMED_OUT: &str = "ReconcileTimedOut";
/// Reason: the tenant's cluster access is not granted yet.
pub(crate) const REASON_WAITING: &str = "WaitingForAccess";
/// Reason: the platform refused the tenant's cluster access.
pub(crate) const REASON_DENIED: &str = "AccessDenied";
/// Reason while access is given back during deletion (Go: `Reconciling`, "cluster cleanup").
pub(crate) const REASON_CLEANUP: &str = "Reconciling";

/// One status the runtime reports: the phase and the `Ready` condition, optionally with the
/// author's extra fields and a `DeletionBlocked` condition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Report<X> {
    /// The phase.
    pub phase: Phase,
    /// Whether `Ready` is `True`.
    pub ready: bool,
    /// Reason of `Ready`.
    pub reason: String,
    /// Message of `Ready`.
    pub message: String,
    /// New extra status; `None` keeps what is there.
    pub extra: Option<X>,
    /// `Some((reason, message))` sets `DeletionBlocked=True`; `None` removes it.
    pub blocked: Option<(String, String)>,
    /// New `status.resources`; `None` keeps what is there.
    pub resources: Option<Vec<ManagedResource>>,
    /// Whether a change of `Ready` to this report is a `Warning` Event (a failure) rather than a
    /// `Normal` one (the ordinary course: waiting, progressing, terminating).
    pub warning: bool,
}

impl<X> Report<X> {
    /// `Ready=True`, phase Ready.
    pub(crate) fn ready() -> Self {
        Self::new(Phase::Ready, true, REASON_SUCCESS, MESSAGE_READY)
    }

    /// `Ready=False`, phase Progressing.
    pub(crate) fn progressing(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(Phase::Progressing, false, reason, message)
    }

    /// `Ready=False`, phase Terminating.
    pub(crate) fn terminating(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(Phase::Terminating, false, reason, message)
    }

    fn new(
        phase: Phase,
        ready: bool,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Report {
            phase,
            ready,
            reason: reason.into(),
            message: message.into(),
            extra: None,
            blocked: None,
            resources: None,
            warning: false,
        }
    }

    /// Marks the report as a failure, recorded as a `Warning` Event when `Ready` changes to it.
    pub(crate) fn warning(mut self) -> Self {
        self.warning = true;
        self
    }

    /// With the author's extra status.
    pub(crate) fn with_extra(mut self, extra: Option<X>) -> Self {
        self.extra = extra;
        self
    }

    /// With the managed objects' statuses (`None` keeps what is there).
    pub(crate) fn with_resources(mut self, resources: Option<Vec<ManagedResource>>) -> Self {
        if resources.is_some() {
            self.resources = resources;
        }
        self
    }

    /// With `DeletionBlocked=True`.
    pub(crate) fn with_blocked(mut self, reason: String, message: String) -> Self {
        self.blocked = Some((reason, message));
        self
    }
}

/// The status `report` makes of `old` for an object at `generation`.
pub(crate) fn apply<X: ExtraStatus>(
    old: Option<&ServiceStatus<X>>,
    generation: Option<i64>,
    report: Report<X>,
    now: Timestamp,
) -> ServiceStatus<X> {
    let mut status = old.cloned().unwrap_or_default();
    status.observed_generation = generation;
    status.phase = Some(report.phase);
    set_condition(
        &mut status.conditions,
        READY,
        report.ready,
        &report.reason,
        &report.message,
        generation,
        now,
    );
    match report.blocked {
        Some((reason, message)) => set_condition(
            &mut status.conditions,
            DELETION_BLOCKED,
            true,
            &reason,
            &message,
            generation,
            now,
        ),
        None => status.conditions.retain(|c| c.type_ != DELETION_BLOCKED),
    }
    if let Some(extra) = report.extra {
        status.extra = extra;
    }
    if let Some(resources) = report.resources {
        status.resources = resources;
    }
    status
}

/// The (reason, message) of the first managed object that is not ready, which holds the Service
/// API object back: `WaitingFor<Kind>` while it is pending or going, `<Kind>Failed` when it
/// reports a failure; the message names it, its cluster, and what it says.
pub(crate) fn held_up_by(resources: &[ManagedResource]) -> Option<(String, String)> {
    let first = resources
        .iter()
        .find(|r| r.phase == ResourcePhase::Failed)
        .or_else(|| resources.iter().find(|r| r.phase != ResourcePhase::Ready))?;
    let reason = match first.phase {
        ResourcePhase::Failed => format!("{}Failed", first.kind),
        ResourcePhase::Terminating => format!("WaitingFor{}Deletion", first.kind),
        _ => format!("WaitingFor{}", first.kind),
    };
    let message = match &first.message {
        Some(m) if !m.is_empty() => format!("{}: {m}", first.describe()),
        _ => format!("{} is not ready", first.describe()),
    };
    Some((reason, message))
}

/// `meta.SetStatusCondition`: replaces the condition of `type_`, keeping its
/// `lastTransitionTime` unless its status changes.
pub(crate) fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" };
    let transition = conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    let condition = Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation: generation,
        last_transition_time: transition,
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => *existing = condition,
        None => conditions.push(condition),
    }
}

/// The `Ready` condition's (status, reason), to tell transitions from repetitions.
pub(crate) fn ready_state<X>(status: Option<&ServiceStatus<X>>) -> Option<(String, String)> {
    status
        .and_then(|s| s.condition(READY))
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// Writes `new` into the status subresource of `name` through `api` when it differs from `old`:
/// a JSON merge patch of the difference, as Go's `client.MergeFrom` sends it. The one status
/// write of the runtime, for the Service API objects and the ProviderConfig alike. `Ok(None)`
/// when nothing changed, so nothing was written.
///
/// With no old status, or an empty one — which is also what a status the runtime could not read
/// decodes to ([`ServiceStatus`]'s `Deserialize`) — the whole status is replaced (a JSON patch
/// `add /status`): a merge patch would keep the unreadable fields the runtime does not write
/// itself, the object would stay unreadable, and every reconcile would write again.
pub(crate) async fn patch_status<K, S>(
    api: &kube::Api<K>,
    name: &str,
    old: Option<&S>,
    new: &S,
) -> Result<Option<K>, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    S: serde::Serialize + Default + PartialEq,
{
    let Some(patch) = status_patch(old, new).map_err(kube::Error::SerdeError)? else {
        return Ok(None);
    };
    api.patch_status(name, &kube::api::PatchParams::default(), &patch)
        .await
        .map(Some)
}

/// The patch [`patch_status`] sends; `None` when nothing changed.
pub(crate) fn status_patch<S>(
    old: Option<&S>,
    new: &S,
) -> Result<Option<kube::api::Patch<Value>>, serde_json::Error>
where
    S: serde::Serialize + Default + PartialEq,
{
    let new_value = serde_json::to_value(new)?;
    match old.filter(|old| **old != S::default()) {
        None => {
            if old.is_some() && *new == S::default() {
                return Ok(None);
            }
            let replace: json_patch::Patch = serde_json::from_value(serde_json::json!([
                { "op": "add", "path": "/status", "value": new_value }
            ]))?;
            Ok(Some(kube::api::Patch::Json(replace)))
        }
        Some(old) => {
            let old = serde_json::to_value(old)?;
            Ok(merge_patch(&old, &new_value)
                .map(|diff| kube::api::Patch::Merge(serde_json::json!({ "status": diff }))))
        }
    }
}

/// A JSON merge patch (RFC 7386) that turns `old` into `new`; `None` when they are equal.
/// Removed keys become `null`, arrays are replaced whole: what Go's `client.MergeFrom` sends.
pub(crate) fn merge_patch(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, new_value) in new {
                match old.get(key) {
                    Some(old_value) => {
                        if let Some(diff) = merge_patch(old_value, new_value) {
                            patch.insert(key.clone(), diff);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), new_value.clone());
                    }
                }
            }
            for key in old.keys() {
                if !new.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::NoStatus;
    use serde_json::json;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    #[test]
    fn ready_then_ready_again_changes_nothing() {
        let first = apply::<NoStatus>(None, Some(1), Report::ready(), t(100));
        assert_eq!(first.phase, Some(Phase::Ready));
        assert_eq!(first.observed_generation, Some(1));
        let ready = first.condition(READY).unwrap();
        assert_eq!(
            (
                ready.status.as_str(),
                ready.reason.as_str(),
                ready.message.as_str()
            ),
            ("True", REASON_SUCCESS, MESSAGE_READY)
        );
        let again = apply(Some(&first), Some(1), Report::ready(), t(200));
        assert_eq!(
            first, again,
            "lastTransitionTime is kept while the status holds"
        );
    }

    #[test]
    fn a_new_generation_or_failure_changes_the_status() {
        let first = apply::<NoStatus>(None, Some(1), Report::ready(), t(100));
        let next = apply(Some(&first), Some(2), Report::ready(), t(200));
        assert_ne!(first, next);
        assert_eq!(
            next.condition(READY).unwrap().last_transition_time,
            Time(t(100))
        );
        let failed = apply(
            Some(&next),
            Some(2),
            Report::progressing(REASON_ERROR, "boom"),
            t(300),
        );
        let ready = failed.condition(READY).unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(ready.last_transition_time, Time(t(300)));
        assert_eq!(failed.phase, Some(Phase::Progressing));
    }

    #[test]
    fn blocked_deletion_adds_and_removes_its_condition() {
        let blocked = apply::<NoStatus>(
            None,
            Some(3),
            Report::terminating("UserResourcesPresent", "2 backups left")
                .with_blocked("UserResourcesPresent".into(), "2 backups left".into()),
            t(1),
        );
        assert_eq!(blocked.phase, Some(Phase::Terminating));
        assert_eq!(blocked.condition(DELETION_BLOCKED).unwrap().status, "True");
        let unblocked = apply(
            Some(&blocked),
            Some(3),
            Report::terminating(REASON_CLEANUP, "cluster cleanup"),
            t(2),
        );
        assert!(unblocked.condition(DELETION_BLOCKED).is_none());
    }

    #[test]
    fn a_status_that_was_absent_or_unreadable_is_replaced_whole() {
        let ready = apply::<NoStatus>(None, Some(1), Report::ready(), t(1));
        // Unreadable reads as empty: replaced, so no field of it survives the write.
        for old in [None, Some(ServiceStatus::default())] {
            let Some(kube::api::Patch::Json(patch)) = status_patch(old.as_ref(), &ready).unwrap()
            else {
                panic!("a JSON patch for {old:?}");
            };
            assert_eq!(
                serde_json::to_value(&patch).unwrap(),
                json!([{ "op": "add", "path": "/status", "value": serde_json::to_value(&ready).unwrap() }])
            );
        }
        // A status it read is patched with the difference only.
        let progressing = apply(
            Some(&ready),
            Some(1),
            Report::progressing(REASON_ERROR, "boom"),
            t(2),
        );
        let Some(kube::api::Patch::Merge(diff)) = status_patch(Some(&ready), &progressing).unwrap()
        else {
            panic!("a merge patch");
        };
        assert_eq!(diff["status"]["phase"], "Progressing");
        assert!(diff["status"].get("observedGeneration").is_none(), "{diff}");
        assert!(status_patch(Some(&ready), &ready).unwrap().is_none());
    }

    #[test]
    fn merge_patch_is_minimal_and_nulls_removed_keys() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2]});
        let new = json!({"a": 1, "b": {"c": 5}, "e": [1]});
        assert_eq!(
            merge_patch(&old, &new),
            Some(json!({"b": {"c": 5, "d": null}, "e": [1]}))
        );
        assert_eq!(merge_patch(&old, &old), None);
    }
}
