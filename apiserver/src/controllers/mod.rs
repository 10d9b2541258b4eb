//! In-process controllers: ordinary tasks reacting to store changes, as kube-controller-manager and
//! the apiextensions controllers would. They act through [`crate::storage::ClusterApi`], so they get
//! the same semantics (finalizers, admission, resourceVersions) as API clients.

pub(crate) mod crd;
pub(crate) mod deployment;
pub(crate) mod gc;
pub(crate) mod namespace;
pub(crate) mod rbac;
pub(crate) mod serviceaccount;

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::registry::ResourceInfo;
use crate::shard::Shard;
use crate::store::{Event, WatchFilter, WatchStart};

/// Starts every controller of a shard. Watches are registered before this returns, so no change
/// made afterwards is missed.
pub(crate) fn start(shard: &Arc<Shard>) {
    namespace::start(shard);
    gc::start(shard);
    deployment::start(shard);
    serviceaccount::start(shard);
    crd::start(shard);
    shard.add_admission_plugin(Arc::new(crd::TerminatingCrdAdmission));
    shard.add_admission_plugin(Arc::new(rbac::EscalationAdmission));
}

/// Synchronous follow-up of a committed write that must be visible before the request returns
/// (a created CRD is served at once; a created RoleBinding authorizes at once).
pub(crate) fn after_write(shard: &Shard, cluster: &Arc<str>, info: &ResourceInfo, ev: &Event) {
    if info.strategy == crate::registry::Strategy::Crd {
        crd::register(shard, cluster, ev);
    }
    if info.group == "rbac.authorization.k8s.io" {
        rbac::written(shard, cluster, info, ev);
    }
}

/// A controller's reaction to events, with a periodic `tick` for retrying pending work.
pub(crate) trait Reconciler: Send + 'static {
    /// Handles one event.
    fn event(&mut self, shard: &Shard, ev: &Event);
    /// Retries pending work; returns true while work is pending (ticks continue quickly).
    fn tick(&mut self, _shard: &Shard) -> bool {
        false
    }
    /// The watch restarts from the current state (all objects are replayed as ADDED).
    fn resync(&mut self) {}
}

/// Runs a reconciler on a watch of the shard. The task holds only a weak reference, so dropping the
/// shard ends it (its watch channel closes).
pub(crate) fn spawn(shard: &Arc<Shard>, filter: WatchFilter, mut r: impl Reconciler) {
    let weak: Weak<Shard> = Arc::downgrade(shard);
    let Ok(mut stream) = shard.store().watch(filter.clone(), WatchStart::Now) else {
        return;
    };
    for ev in std::mem::take(&mut stream.backlog) {
        r.event(shard, &ev);
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(
            "no tokio runtime: controllers of shard {} do not run",
            shard.name()
        );
        return;
    };
    handle.spawn(async move {
        let mut pending = false;
        loop {
            let next = if pending {
                tokio::time::timeout(Duration::from_millis(50), stream.rx.recv())
                    .await
                    .ok()
            } else {
                Some(stream.rx.recv().await)
            };
            let Some(shard) = weak.upgrade() else { return };
            match next {
                Some(Some(ev)) => {
                    r.event(&shard, &ev);
                    while let Ok(ev) = stream.rx.try_recv() {
                        r.event(&shard, &ev);
                    }
                }
                // The shard dropped its watchers (fault injection): re-register and resync.
                Some(None) => match shard.store().watch(filter.clone(), WatchStart::Now) {
                    Ok(s) => {
                        stream = s;
                        r.resync();
                        for ev in std::mem::take(&mut stream.backlog) {
                            r.event(&shard, &ev);
                        }
                    }
                    Err(_) => return,
                },
                None => {}
            }
            pending = r.tick(&shard);
        }
    });
}
