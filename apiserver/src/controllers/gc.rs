//! Garbage collection through ownerReferences: dependents of a deleted owner are deleted
//! (background), deleted first (foreground, `foregroundDeletion` finalizer) or orphaned (`orphan`
//! finalizer), as kube-controller-manager's garbage collector does.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::split_api_version;
use crate::shard::Shard;
use crate::storage::{DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation};
use crate::store::{Event, EventType, ObjKey, StoreKey, StoredObject, WatchFilter};

type Node = (StoreKey, ObjKey);

/// The dependency graph of one shard.
#[derive(Default)]
pub(crate) struct GarbageCollector {
    /// (cluster, uid) → where the object is.
    uids: HashMap<(Arc<str>, Box<str>), Node>,
    /// (cluster, owner uid) → dependents.
    dependents: HashMap<(Arc<str>, Box<str>), HashSet<Node>>,
    /// Owners waiting for their dependents (foreground) or for orphaning.
    pending_owners: BTreeSet<Node>,
    /// Dependents whose owners may be gone.
    pending_dependents: BTreeSet<Node>,
}

pub(crate) fn start(shard: &Arc<Shard>) {
    super::spawn(shard, WatchFilter::default(), GarbageCollector::default());
}

impl GarbageCollector {
    fn index(&mut self, store: &StoreKey, obj: &StoredObject, prev: Option<&StoredObject>) {
        let cluster = &obj.key.cluster;
        if let Some(p) = prev {
            for o in p.owners.iter() {
                if let Some(set) = self.dependents.get_mut(&(cluster.clone(), o.uid.clone())) {
                    set.remove(&(store.clone(), p.key.clone()));
                }
            }
        }
        self.uids.insert(
            (cluster.clone(), obj.uid.clone()),
            (store.clone(), obj.key.clone()),
        );
        for o in obj.owners.iter() {
            self.dependents
                .entry((cluster.clone(), o.uid.clone()))
                .or_default()
                .insert((store.clone(), obj.key.clone()));
        }
    }

    fn unindex(&mut self, store: &StoreKey, obj: &StoredObject) {
        let cluster = &obj.key.cluster;
        self.uids.remove(&(cluster.clone(), obj.uid.clone()));
        for o in obj.owners.iter() {
            let k = (cluster.clone(), o.uid.clone());
            if let Some(set) = self.dependents.get_mut(&k) {
                set.remove(&(store.clone(), obj.key.clone()));
                if set.is_empty() {
                    self.dependents.remove(&k);
                }
            }
        }
    }

    fn owner_exists(
        &self,
        shard: &Shard,
        cluster: &Arc<str>,
        dependent_ns: &str,
        o: &crate::store::OwnerRef,
    ) -> Option<bool> {
        if self.uids.contains_key(&(cluster.clone(), o.uid.clone())) {
            return Some(true);
        }
        let (group, _) = split_api_version(&o.api_version);
        // An owner of a kind nobody serves cannot be verified; leave the dependent alone.
        let info = shard.registry().lookup_kind(cluster, group, &o.kind)?;
        let ns = if info.namespaced { dependent_ns } else { "" };
        let found = shard
            .store()
            .get(&info.store, &ObjKey::new(cluster.clone(), ns, &o.name));
        Some(found.is_some_and(|f| f.uid == o.uid))
    }

    /// Deletes a dependent whose owners are all gone; drops references to missing owners when some
    /// remain. Returns false to retry later.
    fn process_dependent(&mut self, shard: &Shard, node: &Node) -> bool {
        let Some(obj) = shard.store().get(&node.0, &node.1) else {
            return true;
        };
        if obj.owners.is_empty() || obj.deleting {
            return true;
        }
        let cluster = &obj.key.cluster;
        let mut gone = Vec::new();
        let mut alive = 0;
        for o in obj.owners.iter() {
            match self.owner_exists(shard, cluster, &obj.key.namespace, o) {
                Some(false) => gone.push(o.uid.clone()),
                _ => alive += 1,
            }
        }
        if gone.is_empty() {
            return true;
        }
        let Some(info) = shard.registry().by_store(cluster, &node.0) else {
            return true;
        };
        let api = shard.api(cluster);
        if alive == 0 {
            let r = api.delete(
                &info,
                &obj.key.namespace,
                &obj.key.name,
                &DeleteOptions {
                    propagation: Some(Propagation::Background),
                    precondition: crate::store::Precondition {
                        uid: Some(obj.uid.to_string()),
                        rv: None,
                    },
                },
            );
            return r.is_ok() || r.is_err_and(|e| e.code == 404 || e.code == 409);
        }
        let r = api.modify(&info, &obj.key.namespace, &obj.key.name, None, |v| {
            remove_owner_refs(v, &gone)
        });
        r.is_ok() || r.is_err_and(|e| e.code == 404)
    }

    /// Handles an owner being deleted with the foreground or orphan policy. Returns false while it
    /// has to wait.
    fn process_owner(&mut self, shard: &Shard, node: &Node) -> bool {
        let Some(obj) = shard.store().get(&node.0, &node.1) else {
            return true;
        };
        if !obj.deleting {
            return true;
        }
        let v = obj.value();
        let fins = crate::meta::finalizers(&v);
        let cluster = obj.key.cluster.clone();
        let api = shard.api(&cluster);
        let deps: Vec<Node> = self
            .dependents
            .get(&(cluster.clone(), obj.uid.clone()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let Some(info) = shard.registry().by_store(&cluster, &node.0) else {
            return true;
        };
        let release = |fin: &str| {
            let r = api.modify(&info, &obj.key.namespace, &obj.key.name, None, |v| {
                let fs = crate::meta::finalizers(v);
                if !fs.iter().any(|f| f == fin) {
                    return Ok(false);
                }
                let rest: Vec<String> = fs.into_iter().filter(|f| f != fin).collect();
                crate::meta::set_meta(v, "finalizers", Some(json!(rest)));
                Ok(true)
            });
            r.is_ok() || r.is_err_and(|e| e.code == 404)
        };
        if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
            for (store, key) in &deps {
                let Some(dinfo) = shard.registry().by_store(&cluster, store) else {
                    continue;
                };
                let uid = obj.uid.clone();
                let _ = api.modify(&dinfo, &key.namespace, &key.name, None, |v| {
                    remove_owner_refs(v, std::slice::from_ref(&uid))
                });
            }
            return release(ORPHAN_FINALIZER);
        }
        if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
            let mut blocking = 0;
            for (store, key) in &deps {
                let Some(dep) = shard.store().get(store, key) else {
                    continue;
                };
                let Some(dinfo) = shard.registry().by_store(&cluster, store) else {
                    continue;
                };
                if dep.owners.iter().any(|o| o.uid == obj.uid && o.block) {
                    blocking += 1;
                }
                if !dep.deleting {
                    let _ = api.delete(
                        &dinfo,
                        &key.namespace,
                        &key.name,
                        &DeleteOptions {
                            propagation: Some(Propagation::Foreground),
                            precondition: Default::default(),
                        },
                    );
                }
            }
            if blocking > 0 {
                return false;
            }
            return release(FOREGROUND_FINALIZER);
        }
        true
    }
}

fn remove_owner_refs(v: &mut Value, uids: &[Box<str>]) -> crate::error::ApiResult<bool> {
    let Some(refs) = v
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
    else {
        return Ok(false);
    };
    let kept: Vec<Value> = refs
        .iter()
        .filter(|r| {
            !uids
                .iter()
                .any(|u| r.get("uid").and_then(Value::as_str) == Some(u))
        })
        .cloned()
        .collect();
    if kept.len() == refs.len() {
        return Ok(false);
    }
    crate::meta::set_meta(
        v,
        "ownerReferences",
        if kept.is_empty() {
            None
        } else {
            Some(json!(kept))
        },
    );
    Ok(true)
}

impl super::Reconciler for GarbageCollector {
    fn event(&mut self, _shard: &Shard, ev: &Event) {
        let node = (ev.resource.clone(), ev.object.key.clone());
        match ev.kind {
            EventType::Deleted => {
                self.unindex(&ev.resource, &ev.object);
                let deps: Vec<Node> = self
                    .dependents
                    .get(&(ev.object.key.cluster.clone(), ev.object.uid.clone()))
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default();
                self.pending_dependents.extend(deps);
                // A deleted dependent may unblock its foreground-deleting owners.
                for o in ev.object.owners.iter() {
                    if let Some(owner) = self
                        .uids
                        .get(&(ev.object.key.cluster.clone(), o.uid.clone()))
                    {
                        self.pending_owners.insert(owner.clone());
                    }
                }
            }
            _ => {
                self.index(&ev.resource, &ev.object, ev.prev.as_deref());
                if ev.object.deleting && ev.object.has_finalizers {
                    self.pending_owners.insert(node.clone());
                }
                if !ev.object.owners.is_empty() {
                    self.pending_dependents.insert(node);
                }
                if ev.object.deleting {
                    for o in ev.object.owners.iter() {
                        if let Some(owner) = self
                            .uids
                            .get(&(ev.object.key.cluster.clone(), o.uid.clone()))
                        {
                            self.pending_owners.insert(owner.clone());
                        }
                    }
                }
            }
        }
    }

    fn tick(&mut self, shard: &Shard) -> bool {
        for node in std::mem::take(&mut self.pending_dependents) {
            if !self.process_dependent(shard, &node) {
                self.pending_dependents.insert(node);
            }
        }
        for node in std::mem::take(&mut self.pending_owners) {
            if !self.process_owner(shard, &node) {
                self.pending_owners.insert(node);
            }
        }
        !self.pending_dependents.is_empty() || !self.pending_owners.is_empty()
    }

    fn resync(&mut self) {
        *self = GarbageCollector::default();
    }
}
