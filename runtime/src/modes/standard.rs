//! Standard mode: Service API objects on the onboarding cluster, tenants reached through an
//! AccessRequest for their ControlPlane's MCP cluster.
//!
//! One watch over every namespace of the onboarding cluster fills the cache and triggers a key
//! when something a reconcile depends on changed — generation (spec), labels, annotations,
//! finalizers, deletion — but not when only `.status` changed (our own status writes would
//! otherwise trigger the next reconcile, forever), and not for the echo of our own writes.

use std::sync::Arc;

use kube::core::DeserializeGuard;
use kube::core::error_boundary::InvalidObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};

use crate::access::{AccessState, Registration};
use crate::cache::{Cache, Change, reflect};
use crate::controller::Source;
use crate::controller::reconciler::access_error;
use crate::error::Error;
use crate::events::EventRecorder;
use crate::platform::Platform;
use crate::queue::Triggers;
use crate::reconcile::{ServiceProvider, compact_object};
use crate::tenant::{Identity, Mode};

/// The standard-mode source. Cheap to share (`Arc`).
pub struct Standard<P: ServiceProvider> {
    onboarding: kube::Client,
    objects: Cache<Identity, P>,
    platform: Arc<Platform<P>>,
    events: EventRecorder,
    mcp: Registration,
}

impl<P: ServiceProvider> Standard<P> {
    /// The source for objects on the onboarding cluster reached with `onboarding`.
    pub fn new(onboarding: kube::Client, platform: Arc<Platform<P>>) -> Arc<Self> {
        let events = EventRecorder::new(
            onboarding.clone(),
            platform.provider_name(),
            platform.pod_name().map(str::to_owned),
        );
        Arc::new(Standard {
            onboarding,
            objects: Cache::new(),
            platform,
            events,
            mcp: Registration::mcp(P::mcp_access()),
        })
    }

    /// The object cache.
    pub fn objects(&self) -> &Cache<Identity, P> {
        &self.objects
    }

    /// Watches the Service API objects until the watch ends (never, unless the client's runtime
    /// stops), triggering keys on `triggers`.
    pub async fn run(self: Arc<Self>, triggers: Triggers) {
        let api: Api<DeserializeGuard<P>> = Api::all(self.onboarding.clone());
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let invalid_triggers = triggers.clone();
        reflect(
            stream,
            self.objects.clone(),
            identity_of,
            compact_object,
            move |id, change| {
                if needs_reconcile(&change) {
                    tracing::debug!(object = %id, "object changed");
                    triggers.trigger(id.clone());
                }
            },
            // The reconcile reports it on the object (or forgets it once it is gone).
            move |id, _| invalid_triggers.trigger(id.clone()),
        )
        .await;
    }
}

/// A standard-mode object's identity.
pub(crate) fn identity_of<K: Resource>(object: &K) -> Option<Identity> {
    let meta = object.meta();
    Some(Identity::standard(
        meta.namespace.clone()?,
        meta.name.clone()?,
    ))
}

/// Whether a change is worth a reconcile: anything but a change of `.status` alone.
pub(crate) fn needs_reconcile<K: Resource>(change: &Change<'_, K>) -> bool {
    let (Some(old), Some(new)) = (change.old, change.new) else {
        return true;
    };
    let (old, new) = (old.meta(), new.meta());
    old.generation != new.generation
        || old.labels != new.labels
        || old.annotations != new.annotations
        || old.finalizers != new.finalizers
        || old.deletion_timestamp != new.deletion_timestamp
        || old.uid != new.uid
}

impl<P: ServiceProvider> Source<P> for Standard<P> {
    fn mode(&self) -> Mode {
        Mode::Standard
    }

    fn get(&self, id: &Identity) -> Option<Arc<P>> {
        self.objects.get(id)
    }

    fn keys(&self) -> Vec<Identity> {
        let mut keys = self.objects.keys();
        keys.extend(self.objects.invalid_keys());
        keys
    }

    fn len(&self) -> usize {
        self.objects.len()
    }

    fn invalid(&self, id: &Identity) -> Option<Arc<InvalidObject>> {
        self.objects.invalid(id)
    }

    fn observe(&self, id: &Identity, mut object: P) {
        compact_object(&mut object);
        self.objects.insert_if_newer(id.clone(), Arc::new(object));
    }

    fn api(&self, id: &Identity) -> Api<P> {
        Api::namespaced(self.onboarding.clone(), &id.namespace)
    }

    fn events(&self, _id: &Identity) -> EventRecorder {
        self.events.clone()
    }

    async fn tenant_access(&self, id: &Identity, _object: &P) -> Result<AccessState, Error> {
        self.platform
            .access()
            .ensure(&self.mcp, id)
            .await
            .map_err(access_error)
    }

    fn tenant_released(&self, id: &Identity) -> Result<bool, Error> {
        self.platform
            .access()
            .released(&self.mcp, id)
            .map_err(access_error)
    }

    async fn release_tenant(&self, id: &Identity) -> Result<bool, Error> {
        self.platform
            .access()
            .teardown(&self.mcp, id)
            .await
            .map_err(access_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(generation: i64, status_only: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                generation: Some(generation),
                resource_version: Some(status_only.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn status_only_changes_do_not_trigger() {
        let (a, b, c) = (cm(1, "1"), cm(1, "2"), cm(2, "3"));
        assert!(!needs_reconcile(&Change {
            old: Some(&a),
            new: Some(&b)
        }));
        assert!(needs_reconcile(&Change {
            old: Some(&b),
            new: Some(&c)
        }));
        assert!(needs_reconcile(&Change {
            old: None,
            new: Some(&a)
        }));
        assert!(needs_reconcile(&Change {
            old: Some(&a),
            new: None
        }));
    }
}
