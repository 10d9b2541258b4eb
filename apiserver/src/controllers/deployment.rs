//! Deployments: no pods run here, but when a cluster's switch is on the status is filled as if every
//! replica had become Available, so providers that wait for their worker can be tested.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::shard::Shard;
use crate::storage;
use crate::store::{Event, EventType, StoreKey, WatchFilter};

/// Fills Deployment status when the shard's switch is on.
pub(crate) struct DeploymentController;

pub(crate) fn start(shard: &Arc<Shard>) {
    let filter = WatchFilter {
        resource: Some(StoreKey::new("apps", "deployments")),
        ..Default::default()
    };
    super::spawn(shard, filter, DeploymentController);
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

fn reconcile(shard: &Shard, cluster: &Arc<str>, ns: &str, name: &str) {
    if !shard.deployments_available() {
        return;
    }
    let info = storage::builtin("apps", "v1", "deployments");
    let _ = shard
        .api(cluster)
        .modify(&info, ns, name, Some("status"), |d| {
            if d.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(false);
            }
            let want = available_status(d);
            let cur = d.get("status").cloned().unwrap_or(Value::Null);
            let same = [
                "observedGeneration",
                "replicas",
                "availableReplicas",
                "readyReplicas",
            ]
            .iter()
            .all(|f| cur.get(f) == want.get(f))
                && cur.pointer("/conditions/0/status") == want.pointer("/conditions/0/status");
            if same {
                return Ok(false);
            }
            d["status"] = want;
            Ok(true)
        });
}

/// Applies the switch to every Deployment of the shard.
pub(crate) fn resync(shard: &Shard) {
    let mut all = Vec::new();
    shard.store().scan(
        &StoreKey::new("apps", "deployments"),
        None,
        None,
        None,
        |o| {
            all.push(o.key.clone());
            true
        },
    );
    for k in all {
        reconcile(shard, &k.cluster, &k.namespace, &k.name);
    }
}

impl super::Reconciler for DeploymentController {
    fn event(&mut self, shard: &Shard, ev: &Event) {
        if ev.kind == EventType::Deleted {
            return;
        }
        let k = &ev.object.key;
        reconcile(shard, &k.cluster, &k.namespace, &k.name);
    }
}
