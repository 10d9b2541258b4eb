//! Standard mode: Service API objects on the onboarding cluster, tenants reached through an
//! AccessRequest for their ControlPlane's MCP cluster.
//!
//! One watch over every namespace of the onboarding cluster fills the cache and triggers a key
//! when something a reconcile depends on changed — generation (spec), labels, annotations,
//! finalizers, deletion — but not when only `.status` changed (our own status writes would
//! otherwise trigger the next reconcile, forever), and not for the echo of our own writes.

use std::sync::Arc;

use kube::core::DeserializeGuard;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};

use crate::access::Registration;
use crate::cache::{Cache, needs_reconcile, reflect};
use crate::controller::source::{Invalid, PlatformAccess, Resolved, Source, Tenant, Writer};
use crate::events::EventRecorder;
use crate::platform::Platform;
use crate::provider::{ServiceProvider, compact_object};
use crate::queue::Triggers;
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
            mcp: Registration::mcp(crate::provider::mcp_token::<P>()),
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

impl<P: ServiceProvider> Source<P> for Standard<P> {
    fn mode(&self) -> Mode {
        Mode::Standard
    }

    fn resolve(&self, id: &Identity) -> Resolved<P> {
        let writer = || Writer {
            api: Api::namespaced(self.onboarding.clone(), &id.namespace),
            events: self.events.clone(),
        };
        let access = || {
            Box::new(PlatformAccess::new(
                self.platform.access().clone(),
                self.mcp.clone(),
                id.clone(),
            ))
        };
        let Some(object) = self.objects.get(id) else {
            return match self.objects.invalid(id) {
                Some(invalid) => Resolved::Invalid(Invalid {
                    object: invalid,
                    writer: Some(writer()),
                    access: access(),
                }),
                None => Resolved::Gone,
            };
        };
        Resolved::Found(Tenant {
            object,
            writer: Some(writer()),
            admission: Ok(()),
            access: access(),
        })
    }

    fn keys(&self) -> Vec<Identity> {
        let mut keys = self.objects.keys();
        keys.extend(self.objects.invalid_keys());
        keys
    }

    fn len(&self) -> usize {
        self.objects.len()
    }

    fn observe(&self, id: &Identity, mut object: P) {
        compact_object(&mut object);
        self.objects.insert_if_newer(id.clone(), Arc::new(object));
    }
}
