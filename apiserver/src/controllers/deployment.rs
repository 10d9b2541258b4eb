//! Workloads (Deployments, StatefulSets, DaemonSets, Jobs): no pods run here, but when a cluster's
//! switch is on the status is filled as if every replica had become available (a Job as if it had
//! completed), so providers that wait for their workers can be tested.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::shard::Shard;
use crate::storage;
use crate::store::{Event, EventType, StoreKey, WatchFilter};

/// Fills workload status when the shard's switch is on.
pub(crate) struct DeploymentController(Workload);

/// (group, version, plural) of a workload kind.
pub(crate) type Workload = (&'static str, &'static str, &'static str);

/// The workload kinds the switch covers: (group, version, plural).
pub const WORKLOADS: &[Workload] = &[
    ("apps", "v1", "deployments"),
    ("apps", "v1", "statefulsets"),
    ("apps", "v1", "daemonsets"),
    ("batch", "v1", "jobs"),
];

pub(crate) fn start(shard: &Arc<Shard>) {
    for &w in WORKLOADS {
        let filter = WatchFilter {
            resource: Some(StoreKey::new(w.0, w.2)),
            ..Default::default()
        };
        super::spawn(shard, filter, DeploymentController(w));
    }
}

/// `lastTransitionTime` of a condition that is already true, else now (so a status that is
/// written again keeps its times).
fn since(obj: &Value, ty: &str) -> Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter().find(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(crate::meta::now_rfc3339()))
}

/// The revision name kube-controller-manager gives a StatefulSet's or DaemonSet's template
/// (`<name>-<hash>`): here a hash of the template, so a changed template is a new revision.
fn revision(obj: &Value) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    obj.pointer("/spec/template")
        .map(Value::to_string)
        .unwrap_or_default()
        .hash(&mut h);
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    format!("{name}-{:08x}", h.finish() as u32)
}

/// The status a StatefulSet reaches with every replica ready (what `kubectl rollout status`
/// waits for: observed generation, ready replicas, current revision = update revision).
fn statefulset_status(s: &Value) -> Value {
    let replicas = s
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = s
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let rev = revision(s);
    json!({
        "observedGeneration": generation,
        "replicas": replicas,
        "readyReplicas": replicas,
        "currentReplicas": replicas,
        "updatedReplicas": replicas,
        "availableReplicas": replicas,
        "currentRevision": rev,
        "updateRevision": rev,
        "collisionCount": 0,
    })
}

/// The status a DaemonSet reaches on a one-node cluster with its pod available.
fn daemonset_status(d: &Value) -> Value {
    let generation = d
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    json!({
        "observedGeneration": generation,
        "currentNumberScheduled": 1,
        "desiredNumberScheduled": 1,
        "numberMisscheduled": 0,
        "numberReady": 1,
        "numberAvailable": 1,
        "updatedNumberScheduled": 1,
    })
}

/// The status of a Job whose pods all succeeded: `SuccessCriteriaMet` and `Complete`, as
/// kube-controller-manager writes them since 1.31.
fn job_status(j: &Value) -> Value {
    let completions = j
        .pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let start = j
        .pointer("/status/startTime")
        .cloned()
        .unwrap_or_else(|| json!(crate::meta::now_rfc3339()));
    let done = since(j, "Complete");
    json!({
        "startTime": start,
        "completionTime": done,
        "succeeded": completions,
        "active": 0,
        "ready": 0,
        "terminating": 0,
        "uncountedTerminatedPods": {},
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
             "message": "Reached expected number of succeeded pods",
             "lastProbeTime": since(j, "SuccessCriteriaMet"), "lastTransitionTime": since(j, "SuccessCriteriaMet")},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached",
             "message": "Reached expected number of succeeded pods",
             "lastProbeTime": done, "lastTransitionTime": done},
        ],
    })
}

/// The status kube-controller-manager would converge to with every pod available.
fn available_status(d: &Value) -> Value {
    let replicas = d
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = d
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let name = d
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let old_conditions = d
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let since = |ty: &str| {
        old_conditions
            .iter()
            .find(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(crate::meta::now_rfc3339()))
    };
    let mut status = json!({
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastUpdateTime": since("Available"), "lastTransitionTime": since("Available")},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": format!("ReplicaSet \"{name}\" has successfully progressed."),
             "lastUpdateTime": since("Progressing"), "lastTransitionTime": since("Progressing")},
        ],
    });
    if replicas == 0 {
        for f in ["readyReplicas", "availableReplicas", "updatedReplicas"] {
            if let Some(o) = status.as_object_mut() {
                o.remove(f);
            }
        }
    }
    status
}

/// The fields whose equality means the status is already what the switch would write.
fn settled(plural: &str) -> &'static [&'static str] {
    match plural {
        "deployments" => &[
            "observedGeneration",
            "replicas",
            "availableReplicas",
            "readyReplicas",
        ],
        "statefulsets" => &[
            "observedGeneration",
            "replicas",
            "readyReplicas",
            "updateRevision",
        ],
        "daemonsets" => &["observedGeneration", "numberAvailable"],
        _ => &["succeeded", "completionTime"],
    }
}

fn reconcile(shard: &Shard, cluster: &Arc<str>, workload: Workload, ns: &str, name: &str) {
    if !shard.deployments_available() {
        return;
    }
    let (group, version, plural) = workload;
    let info = storage::builtin(group, version, plural);
    let _ = shard
        .api(cluster)
        .modify(&info, ns, name, Some("status"), |d| {
            let Some(want) = available_workload_status(plural, d) else {
                return Ok(false);
            };
            d["status"] = want;
            Ok(true)
        });
}

/// The status kube-controller-manager would write, with kubelet running every pod, for the
/// workload `obj` of the kind `plural` (one of [`WORKLOADS`]): every replica available, a Job
/// complete. `None` when `obj` has it already, is being deleted, or is a suspended Job. The
/// real-backend stand-ins write the same status through the API.
pub fn available_workload_status(plural: &str, obj: &Value) -> Option<Value> {
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    // A suspended Job does not run.
    if plural == "jobs" && obj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let want = match plural {
        "deployments" => available_status(obj),
        "statefulsets" => statefulset_status(obj),
        "daemonsets" => daemonset_status(obj),
        _ => job_status(obj),
    };
    let cur = obj.get("status").cloned().unwrap_or(Value::Null);
    let same = settled(plural).iter().all(|f| cur.get(f) == want.get(f))
        && cur.pointer("/conditions/0/status") == want.pointer("/conditions/0/status");
    (!same).then_some(want)
}

/// Applies the switch to every workload of the shard.
pub(crate) fn resync(shard: &Shard) {
    for &(group, version, plural) in WORKLOADS {
        let mut all = Vec::new();
        shard
            .store()
            .scan(&StoreKey::new(group, plural), None, None, None, |o| {
                all.push(o.key.clone());
                true
            });
        for k in all {
            reconcile(
                shard,
                &k.cluster,
                (group, version, plural),
                &k.namespace,
                &k.name,
            );
        }
    }
}

impl super::Reconciler for DeploymentController {
    fn event(&mut self, shard: &Shard, ev: &Event) {
        if ev.kind == EventType::Deleted {
            return;
        }
        let k = &ev.object.key;
        reconcile(shard, &k.cluster, self.0, &k.namespace, &k.name);
    }
}
