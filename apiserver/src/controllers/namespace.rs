//! Namespace lifecycle: a namespace being deleted loses all its content, then its `kubernetes`
//! finalizer, and then it is gone.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::shard::Shard;
use crate::storage::{self, DeleteOptions, Deleted};
use crate::store::{Event, EventType, StoreKey, WatchFilter};

/// Empties and finalizes namespaces being deleted.
#[derive(Default)]
pub(crate) struct NamespaceController {
    pending: BTreeSet<(Arc<str>, String)>,
}

pub(crate) fn start(shard: &Arc<Shard>) {
    let filter = WatchFilter {
        resource: Some(StoreKey::new("", "namespaces")),
        ..Default::default()
    };
    super::spawn(shard, filter, NamespaceController::default());
}

/// Deletes what is in a namespace; returns true when it is empty and finalized.
fn finalize(shard: &Shard, cluster: &Arc<str>, ns: &str) -> bool {
    let api = shard.api(cluster);
    let namespaces = storage::core("namespaces");
    let Ok(obj) = api.get(&namespaces, "", ns) else {
        return true;
    };
    if !obj.deleting {
        return true;
    }
    let mut remaining = 0;
    let mut seen: HashSet<StoreKey> = HashSet::new();
    for info in shard.registry().all(cluster) {
        if !info.namespaced || !info.stores_objects() || !seen.insert(info.store.clone()) {
            continue;
        }
        let Some(info) = shard.registry().by_store(cluster, &info.store) else {
            continue;
        };
        for o in api.list(&info, Some(ns)) {
            match api.delete(&info, ns, &o.key.name, &DeleteOptions::default()) {
                Ok(Deleted::Gone(_)) => {}
                Err(e) if e.code == 404 => {}
                _ => remaining += 1,
            }
        }
    }
    if remaining > 0 {
        return false;
    }
    let r = api.modify(&namespaces, "", ns, Some("finalize"), |v| {
        let fins = v
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !fins.iter().any(|f| f == "kubernetes") {
            return Ok(false);
        }
        let rest: Vec<Value> = fins.into_iter().filter(|f| f != "kubernetes").collect();
        v["spec"]["finalizers"] = json!(rest);
        Ok(true)
    });
    r.is_ok() || r.is_err_and(|e| e.code == 404)
}

impl super::Reconciler for NamespaceController {
    fn event(&mut self, shard: &Shard, ev: &Event) {
        if ev.kind == EventType::Deleted || !ev.object.deleting {
            return;
        }
        let key = (
            ev.object.key.cluster.clone(),
            ev.object.key.name.to_string(),
        );
        if !finalize(shard, &key.0, &key.1) {
            self.pending.insert(key);
        }
    }

    fn tick(&mut self, shard: &Shard) -> bool {
        let pending = std::mem::take(&mut self.pending);
        for (cluster, ns) in pending {
            if !finalize(shard, &cluster, &ns) {
                self.pending.insert((cluster, ns));
            }
        }
        !self.pending.is_empty()
    }
}
