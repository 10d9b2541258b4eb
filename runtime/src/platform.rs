//! The provider's view of the platform cluster, shared by every mode: its ProviderConfig, the
//! Secrets and ConfigMaps the ProviderConfig refers to, and its access requests, each from a
//! watch that re-triggers the affected Service API objects.
//!
//! - The ProviderConfig named like the provider (`--provider-name`) is watched by name. Every
//!   change to it — and to a Secret or ConfigMap in the provider's namespace that it names —
//!   re-reconciles every object of every mode (the Go runtime's hot reload, `openmcp.md` §4). It
//!   is read as untyped JSON first, so a ProviderConfig that does not parse is reported (in its
//!   own status and in every object's) instead of breaking the watch.
//! - AccessRequests and ClusterRequests labelled `openmcp.cloud/managed-by=<provider>` are cached
//!   for [`AccessManager`]; a change re-triggers the owning object (from the `onboarding-name`
//!   and `-namespace` labels).
//! - Secrets are watched metadata-only: a change to one that holds a tenant kubeconfig drops the
//!   cached client and re-triggers the tenant.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::core::DeserializeGuard;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::access::clients::ClientFactory;
use crate::access::{AccessManager, KubeconfigStore};
use crate::cache::{Cache, Change, ObjectKey, WatchHealth, compact_meta, reflect};
use crate::openmcp::clusters::RequestStatus;
use crate::openmcp::constants::{
    MANAGED_BY_LABEL, MANAGED_PURPOSE_LABEL, ONBOARDING_NAME_LABEL, ONBOARDING_NAMESPACE_LABEL,
};
use crate::openmcp::naming::label_value;
use crate::openmcp::{AccessRequest, ClusterRequest};
use crate::provider::ServiceProvider;
use crate::provider_config::ProviderConfigStatus;
use crate::queue::Triggers;
use crate::referenced::Referenced;
use crate::status::write::{patch_status, set_condition};

/// Where the ProviderConfig stands.
#[derive(Debug)]
pub enum ConfigState<C> {
    /// Not read yet.
    Unknown,
    /// There is no ProviderConfig named like the provider.
    Missing,
    /// It is being deleted.
    Deleting,
    /// It does not parse; the message says why.
    Invalid(String),
    /// Usable.
    Ready(Arc<C>),
}

impl<C> Clone for ConfigState<C> {
    fn clone(&self) -> Self {
        match self {
            ConfigState::Unknown => ConfigState::Unknown,
            ConfigState::Missing => ConfigState::Missing,
            ConfigState::Deleting => ConfigState::Deleting,
            ConfigState::Invalid(m) => ConfigState::Invalid(m.clone()),
            ConfigState::Ready(c) => ConfigState::Ready(c.clone()),
        }
    }
}

struct ConfigSlot<C> {
    state: ConfigState<C>,
    /// The object as last seen, for its status.
    raw: Option<DynamicObject>,
    /// Every string in its spec: the names a Secret or ConfigMap must have to be "referenced".
    references: HashSet<String>,
}

/// The platform cluster as the provider sees it. Cheap to share (`Arc`).
pub struct Platform<P: ServiceProvider> {
    client: kube::Client,
    provider_name: String,
    pod_namespace: String,
    pod_name: Option<String>,
    config: RwLock<ConfigSlot<P::ProviderConfig>>,
    access: Arc<AccessManager>,
    triggers: Triggers,
    factory: ClientFactory,
    config_synced: Cache<String, DynamicObject>,
    /// Secrets and ConfigMaps of the provider's namespace, read once per version.
    referenced: Arc<Referenced>,
    /// The modes this replica leads.
    leading: std::sync::Mutex<HashSet<crate::tenant::Mode>>,
}

impl<P: ServiceProvider> std::fmt::Debug for Platform<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Platform")
            .field("provider_name", &self.provider_name)
            .field("pod_namespace", &self.pod_namespace)
            .finish_non_exhaustive()
    }
}

impl<P: ServiceProvider> Platform<P> {
    /// The platform view of provider `provider_name` running in `pod_namespace`; nothing is read
    /// until [`run`](Self::run).
    pub fn new(
        client: kube::Client,
        provider_name: &str,
        pod_namespace: &str,
        pod_name: Option<String>,
        triggers: Triggers,
        factory: ClientFactory,
    ) -> Arc<Self> {
        let access = Arc::new(AccessManager::new(
            client.clone(),
            provider_name,
            Cache::new(),
            Cache::new(),
            KubeconfigStore::new(client.clone(), factory.clone()),
        ));
        Arc::new(Platform {
            client,
            provider_name: provider_name.to_owned(),
            pod_namespace: pod_namespace.to_owned(),
            pod_name,
            config: RwLock::new(ConfigSlot {
                state: ConfigState::Unknown,
                raw: None,
                references: HashSet::new(),
            }),
            access,
            triggers,
            factory,
            config_synced: Cache::new(),
            referenced: Arc::default(),
            leading: std::sync::Mutex::new(HashSet::new()),
        })
    }

    /// A client for the platform cluster.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The provider name (`--provider-name`).
    pub fn provider_name(&self) -> &str {
        &self.provider_name
    }

    /// The namespace the provider runs in (`POD_NAMESPACE`).
    pub fn pod_namespace(&self) -> &str {
        &self.pod_namespace
    }

    /// Secrets and ConfigMaps of the provider's namespace, read once per version.
    pub(crate) fn referenced_objects(&self) -> &Arc<Referenced> {
        &self.referenced
    }

    /// The pod the provider runs in (`POD_NAME`), when known.
    pub fn pod_name(&self) -> Option<&str> {
        self.pod_name.as_deref()
    }

    /// Access requests of this provider.
    pub fn access(&self) -> &Arc<AccessManager> {
        &self.access
    }

    /// Builds clients from kubeconfigs over shared connection pools.
    pub fn client_factory(&self) -> &ClientFactory {
        &self.factory
    }

    /// Where the ProviderConfig stands.
    pub fn config(&self) -> ConfigState<P::ProviderConfig> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .state
            .clone()
    }

    /// The triggers of every mode's queue.
    pub fn triggers(&self) -> &Triggers {
        &self.triggers
    }

    /// Whether every watch delivered its first complete list.
    pub fn is_synced(&self) -> bool {
        self.config_synced.is_synced()
            && self.access.access_requests().is_synced()
            && self.access.cluster_requests().is_synced()
    }

    /// Waits until every watch delivered its first complete list.
    pub async fn wait_synced(&self) {
        self.config_synced.wait_synced().await;
        self.access.access_requests().wait_synced().await;
        self.access.cluster_requests().wait_synced().await;
    }

    /// Tells the platform view whether this replica leads `mode`; only a replica that leads
    /// some mode writes the ProviderConfig's status.
    pub fn set_leader(self: &Arc<Self>, mode: crate::tenant::Mode, leader: bool) {
        let became = {
            let mut leading = self.leading.lock().unwrap_or_else(|e| e.into_inner());
            let was = !leading.is_empty();
            if leader {
                leading.insert(mode);
            } else {
                leading.remove(&mode);
            }
            !was && !leading.is_empty()
        };
        if became {
            let this = self.clone();
            tokio::spawn(async move { this.write_config_status().await });
        }
    }

    fn is_leader(&self) -> bool {
        !self
            .leading
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Runs every watch until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let tasks = futures::future::join5(
            self.clone().watch_config(),
            self.clone().watch_access_requests(),
            self.clone().watch_cluster_requests(),
            self.clone().watch_secrets(),
            self.clone().watch_config_maps(),
        );
        tokio::select! {
            _ = tasks => {}
            _ = shutdown.cancelled() => {}
        }
    }

    async fn watch_config(self: Arc<Self>) {
        let resource = ApiResource::erase::<P::ProviderConfig>(&());
        let api: Api<DeserializeGuard<DynamicObject>> =
            Api::all_with(self.client.clone(), &resource);
        let config =
            watcher::Config::default().fields(&format!("metadata.name={}", self.provider_name));
        let stream = watcher(api, config).default_backoff();
        let name = self.provider_name.clone();
        let this = self.clone();
        reflect(
            stream,
            self.config_synced.clone(),
            move |o: &DeserializeGuard<DynamicObject>| o.meta().name.clone().filter(|n| *n == name),
            compact_meta,
            move |_, change| this.config_changed(change),
            // A DynamicObject always decodes; its content is checked in `parse_config`.
            |_, _| {},
        )
        .await;
    }

    fn config_changed(self: &Arc<Self>, change: Change<'_, DynamicObject>) {
        let old_generation = change.old.and_then(|o| o.metadata.generation);
        let (state, references) = match change.new {
            None => (ConfigState::Missing, HashSet::new()),
            Some(raw) => parse_config::<P>(raw),
        };
        let meaningful = match (change.old, change.new) {
            (Some(old), Some(new)) => {
                old_generation != new.metadata.generation
                    || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
                    || old.metadata.labels != new.metadata.labels
                    || old.metadata.annotations != new.metadata.annotations
            }
            _ => true,
        };
        {
            let mut slot = self.config.write().unwrap_or_else(|e| e.into_inner());
            slot.state = state;
            slot.references = references;
            slot.raw = change.new.map(|o| (**o).clone());
        }
        if meaningful {
            tracing::info!(provider_config = %self.provider_name, "ProviderConfig changed; reconciling every object");
            self.triggers.trigger_all();
            if self.is_leader() {
                let this = self.clone();
                tokio::spawn(async move { this.write_config_status().await });
            }
        }
    }

    /// Writes the ProviderConfig's `Ready` condition when it changed.
    async fn write_config_status(&self) {
        let (raw, state) = {
            let slot = self.config.read().unwrap_or_else(|e| e.into_inner());
            (slot.raw.clone(), slot.state.clone())
        };
        let Some(raw) = raw else { return };
        let (ok, reason, message) = match &state {
            ConfigState::Ready(_) => (true, "Valid", "the ProviderConfig is valid".to_owned()),
            ConfigState::Invalid(message) => (false, "InvalidProviderConfig", message.clone()),
            _ => return,
        };
        let old: ProviderConfigStatus = raw
            .data
            .get("status")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default();
        let mut new = old.clone();
        new.observed_generation = raw.metadata.generation;
        set_condition(
            &mut new.conditions,
            crate::status::write::READY,
            ok,
            reason,
            &message,
            raw.metadata.generation,
            k8s_openapi::jiff::Timestamp::now(),
        );
        let resource = ApiResource::erase::<P::ProviderConfig>(&());
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        if let Err(err) = patch_status(&api, &self.provider_name, Some(&old), &new).await {
            tracing::debug!(error = %err, "could not write the ProviderConfig status");
        }
    }

    async fn watch_access_requests(self: Arc<Self>) {
        let api: Api<DeserializeGuard<AccessRequest>> = Api::all(self.client.clone());
        let config = watcher::Config::default().labels(&format!(
            "{MANAGED_BY_LABEL}={}",
            label_value(&self.provider_name)
        ));
        let stream = watcher(api, config).default_backoff();
        let this = self.clone();
        reflect(
            stream,
            self.access.access_requests().clone(),
            ObjectKey::of,
            trim_access_request,
            move |_, change| {
                let object = change.new.or(change.old);
                if change.new.is_none()
                    && let Some(old) = change.old
                    && let Some(secret) = old.status.as_ref().and_then(|s| s.secret_ref.as_ref())
                {
                    let namespace = old.namespace().unwrap_or_default();
                    this.access
                        .kubeconfigs()
                        .forget(&ObjectKey::new(namespace, &secret.name));
                }
                if let Some(owner) = object.and_then(|o| this.access.owner_of(o.meta())) {
                    tracing::debug!(object = %owner, "AccessRequest changed");
                    this.triggers.trigger(owner);
                }
            },
            // Its tenant finds it unreadable in the cache and says so in its status.
            {
                let this = self.clone();
                move |_, invalid| {
                    if let Some(owner) = invalid.and_then(|o| this.access.owner_of(&o.metadata)) {
                        this.triggers.trigger(owner);
                    }
                }
            },
        )
        .await;
    }

    async fn watch_cluster_requests(self: Arc<Self>) {
        let api: Api<DeserializeGuard<ClusterRequest>> = Api::all(self.client.clone());
        let config = watcher::Config::default().labels(&format!(
            "{MANAGED_BY_LABEL}={}",
            label_value(&self.provider_name)
        ));
        let stream = watcher(api, config).default_backoff();
        let this = self.clone();
        reflect(
            stream,
            self.access.cluster_requests().clone(),
            ObjectKey::of,
            trim_request_meta,
            move |_, change| {
                if let Some(owner) = change
                    .new
                    .or(change.old)
                    .and_then(|o| this.access.owner_of(o.meta()))
                {
                    tracing::debug!(object = %owner, "ClusterRequest changed");
                    this.triggers.trigger(owner);
                }
            },
            {
                let this = self.clone();
                move |_, invalid| {
                    if let Some(owner) = invalid.and_then(|o| this.access.owner_of(&o.metadata)) {
                        this.triggers.trigger(owner);
                    }
                }
            },
        )
        .await;
    }

    fn referenced(&self, namespace: Option<&str>, name: &str) -> bool {
        namespace == Some(self.pod_namespace.as_str())
            && self
                .config
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .references
                .contains(name)
    }

    async fn watch_secrets(self: Arc<Self>) {
        let api: Api<PartialObjectMeta<Secret>> = Api::all(self.client.clone());
        let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        let mut references = ReferenceVersions::default();
        let mut health = WatchHealth::new("Secret");
        while let Some(event) = stream.next().await {
            let Some((object, seen)) = seen_object(event, &mut health) else {
                continue;
            };
            let Some(key) = ObjectKey::of(&object) else {
                continue;
            };
            if key.namespace == self.pod_namespace {
                let version = object.meta().resource_version.as_deref();
                self.referenced.saw(
                    <Secret as k8s_openapi::Resource>::KIND,
                    &key.name,
                    version.filter(|_| seen != Seen::Deleted),
                );
            }
            let owner = match seen {
                Seen::Deleted => self.access.kubeconfigs().deleted(&key),
                _ => self
                    .access
                    .kubeconfigs()
                    .changed(&key, object.meta().resource_version.as_deref()),
            };
            if let Some(owner) = owner {
                tracing::debug!(object = %owner, "Secret changed");
                self.triggers.trigger(owner);
            }
            if self.referenced(Some(&key.namespace), &key.name)
                && references.changed(&key.name, &object, seen)
            {
                tracing::info!(secret = %key, "a Secret the ProviderConfig refers to changed; reconciling every object");
                self.triggers.trigger_all();
            }
        }
    }

    async fn watch_config_maps(self: Arc<Self>) {
        let api: Api<PartialObjectMeta<ConfigMap>> =
            Api::namespaced(self.client.clone(), &self.pod_namespace);
        let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        let mut references = ReferenceVersions::default();
        let mut health = WatchHealth::new("ConfigMap");
        while let Some(event) = stream.next().await {
            let Some((object, seen)) = seen_object(event, &mut health) else {
                continue;
            };
            let name = object.name_any();
            let version = object.meta().resource_version.as_deref();
            self.referenced.saw(
                <ConfigMap as k8s_openapi::Resource>::KIND,
                &name,
                version.filter(|_| seen != Seen::Deleted),
            );
            if self.referenced(object.meta().namespace.as_deref(), &name)
                && references.changed(&name, &object, seen)
            {
                tracing::info!(config_map = %name, "a ConfigMap the ProviderConfig refers to changed; reconciling every object");
                self.triggers.trigger_all();
            }
        }
    }
}

/// How a watch event delivered an object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Part of a (re-)list.
    Listed,
    /// Created or changed.
    Changed,
    /// Deleted.
    Deleted,
}

fn seen_object<K>(
    event: Result<watcher::Event<K>, watcher::Error>,
    health: &mut WatchHealth,
) -> Option<(K, Seen)> {
    if event.is_ok() {
        health.succeeded();
    }
    match event {
        Ok(watcher::Event::Apply(o)) => Some((o, Seen::Changed)),
        Ok(watcher::Event::InitApply(o)) => Some((o, Seen::Listed)),
        Ok(watcher::Event::Delete(o)) => Some((o, Seen::Deleted)),
        Ok(_) => None,
        Err(err) => {
            health.failed(&err);
            None
        }
    }
}

/// The versions of referenced Secrets or ConfigMaps, to tell a change from a re-list.
#[derive(Default)]
struct ReferenceVersions {
    versions: std::collections::HashMap<String, Option<String>>,
}

impl ReferenceVersions {
    /// Records the object; true when it is a change worth re-reconciling for: created, changed
    /// or deleted while we watched, or found changed by a re-list.
    fn changed<K: Resource>(&mut self, name: &str, object: &K, seen: Seen) -> bool {
        let version = match seen {
            Seen::Deleted => None,
            _ => object.meta().resource_version.clone(),
        };
        let previous = self.versions.insert(name.to_owned(), version.clone());
        match (seen, previous) {
            (_, Some(previous)) => previous != version,
            (Seen::Listed, None) => false,
            (_, None) => true,
        }
    }
}

/// Reads a ProviderConfig, and the names it refers to.
fn parse_config<P: ServiceProvider>(
    raw: &DynamicObject,
) -> (ConfigState<P::ProviderConfig>, HashSet<String>) {
    let mut references = HashSet::new();
    if let Some(spec) = raw.data.get("spec") {
        collect_strings(spec, &mut references);
    }
    if raw.metadata.deletion_timestamp.is_some() {
        return (ConfigState::Deleting, references);
    }
    let parsed = serde_json::to_value(raw).and_then(serde_json::from_value::<P::ProviderConfig>);
    let state = match parsed {
        Ok(config) => ConfigState::Ready(Arc::new(config)),
        Err(err) => ConfigState::Invalid(format!(
            "ProviderConfig {} is invalid: {err}",
            raw.metadata.name.as_deref().unwrap_or_default()
        )),
    };
    (state, references)
}

/// Every string value (not key) in `value` that could be an object name.
fn collect_strings(value: &serde_json::Value, out: &mut HashSet<String>) {
    match value {
        serde_json::Value::String(s) if !s.is_empty() && s.len() <= 253 => {
            out.insert(s.clone());
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// What the caches keep of a request's metadata: one AccessRequest (and for a workload cluster
/// one ClusterRequest) per tenant, so every field counts. The runtime reads the name, the
/// resourceVersion, the generation, the deletion timestamp, the finalizers and the four labels
/// it sets itself (adoption and the owning tenant); it writes back with merge patches only, so
/// nothing dropped here is ever written away.
fn trim_request_meta<K: Resource>(request: &mut K) {
    compact_meta(request);
    let meta = request.meta_mut();
    meta.annotations = None;
    meta.owner_references = None;
    meta.uid = None;
    meta.creation_timestamp = None;
    if let Some(labels) = meta.labels.as_mut() {
        labels.retain(|label, _| REQUEST_LABELS_READ.contains(&label.as_str()));
    }
}

/// The labels of a request the runtime reads: those it sets itself.
const REQUEST_LABELS_READ: [&str; 4] = [
    MANAGED_BY_LABEL,
    MANAGED_PURPOSE_LABEL,
    ONBOARDING_NAME_LABEL,
    ONBOARDING_NAMESPACE_LABEL,
];

/// What the cache keeps of an AccessRequest: [`trim_request_meta`], the spec without spare
/// list room, and the conditions only while they can explain a request that is not granted.
fn trim_access_request(request: &mut AccessRequest) {
    trim_request_meta(request);
    if let Some(token) = request.spec.token.as_mut() {
        token.permissions.shrink_to_fit();
        for permissions in &mut token.permissions {
            permissions.rules.shrink_to_fit();
        }
        token.role_refs.shrink_to_fit();
    }
    if let Some(status) = request.status.as_mut()
        && status.is_granted()
    {
        status.common.conditions = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_request_keeps_what_the_runtime_reads() {
        let mut request: AccessRequest = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "velero--t--mcp",
                "namespace": "mcp--x",
                "uid": "8f4e2a7c-0000-0000-0000-000000000000",
                "resourceVersion": "42",
                "generation": 2,
                "creationTimestamp": "2026-12-02T10:00:00Z",
                "finalizers": ["clusters.openmcp.cloud/clusteraccess"],
                "labels": {
                    "openmcp.cloud/managed-by": "velero",
                    "openmcp.cloud/managed-purpose": "p",
                    "openmcp.cloud/onboarding-name": "t",
                    "openmcp.cloud/onboarding-namespace": "project-x--ws-y",
                    "clusters.openmcp.cloud/provider": "gardener",
                    "clusters.openmcp.cloud/profile": "default",
                },
            },
            "spec": { "requestRef": { "name": "t", "namespace": "mcp--x" }, "token": {} },
            "status": { "phase": "Granted", "observedGeneration": 2, "secretRef": { "name": "s" } },
        }))
        .unwrap();
        trim_access_request(&mut request);
        let labels: Vec<&str> = request.labels().keys().map(String::as_str).collect();
        assert_eq!(labels.len(), 4, "{labels:?}");
        assert!(REQUEST_LABELS_READ.iter().all(|l| labels.contains(l)));
        assert_eq!(
            request.labels()[ONBOARDING_NAME_LABEL],
            "t",
            "the owner is found from the labels"
        );
        assert!(request.is_ready());
        assert_eq!(request.resource_version().as_deref(), Some("42"));
        assert_eq!(request.finalizers().len(), 1);
        assert!(request.metadata.uid.is_none() && request.metadata.creation_timestamp.is_none());
    }

    #[test]
    fn collects_every_string_in_the_spec() {
        let spec = serde_json::json!({
            "imagePullSecrets": [{"name": "pull"}],
            "caBundleRef": {"name": "ca", "key": "ca.crt"},
            "pollInterval": "1m",
            "replicas": 2,
        });
        let mut out = HashSet::new();
        collect_strings(&spec, &mut out);
        for name in ["pull", "ca", "ca.crt", "1m"] {
            assert!(out.contains(name), "{name}");
        }
    }
}
