//! What the runtime hands to `create_or_update` and `delete`: the configuration, the clusters and
//! who the tenant is, identical in standard and kcp mode.

use std::sync::Arc;

use crate::events::ObjectEvents;
use crate::provider::ServiceProvider;
use crate::provider_config::ProviderConfigResource;
use crate::referenced::Referenced;
use crate::status::resources::{Location, ResourceSink};
use crate::tenant::WorkloadCluster;
use crate::tenant::{ClusterAccess, Identity, Mode, WorkloadAccess, workload};

/// Why a [`Context`] could not be built.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ContextError(String);

/// Everything `create_or_update` and `delete` get besides the object itself.
pub struct Context<P: ServiceProvider> {
    provider_config: Arc<P::ProviderConfig>,
    mcp: ClusterAccess,
    workload: Option<ClusterAccess>,
    platform: kube::Client,
    identity: Identity,
    events: ObjectEvents,
    field_manager: Arc<str>,
    provider_namespace: Arc<str>,
    resources: ResourceSink,
    /// The runtime's copies of the Secrets and ConfigMaps in the provider's namespace.
    referenced: Option<Arc<Referenced>>,
}

impl<P: ServiceProvider> Context<P> {
    /// Assembles a context; fails when a workload cluster is required but missing.
    pub(crate) fn new(
        provider_config: Arc<P::ProviderConfig>,
        mcp: ClusterAccess,
        workload: Option<ClusterAccess>,
        platform: kube::Client,
        identity: Identity,
    ) -> Result<Self, ContextError> {
        if <P::WorkloadCluster as WorkloadAccess>::MODE == WorkloadCluster::Required
            && workload.is_none()
        {
            return Err(ContextError(format!(
                "{} requires a workload cluster, but no workload access was given for {identity}",
                P::INFO.kind
            )));
        }
        Ok(Context {
            provider_config,
            mcp,
            workload,
            platform,
            identity,
            events: ObjectEvents::disabled(),
            field_manager: Arc::from(P::INFO.group),
            provider_namespace: Arc::from("default"),
            resources: ResourceSink::default(),
            referenced: None,
        })
    }

    /// Events written by [`events`](Self::events) go to `events`.
    pub(crate) fn with_events(mut self, events: ObjectEvents) -> Self {
        self.events = events;
        self
    }

    /// Server-side applies made through [`apply_set`](Self::apply_set) use `field_manager`
    /// (the runtime sets the provider name).
    pub(crate) fn with_field_manager(mut self, field_manager: &str) -> Self {
        self.field_manager = Arc::from(field_manager);
        self
    }

    /// The provider's own namespace on the platform cluster (`POD_NAMESPACE`), where the
    /// Secrets the ProviderConfig names live (the runtime sets it).
    pub(crate) fn with_provider_namespace(mut self, namespace: &str) -> Self {
        self.provider_namespace = Arc::from(namespace);
        self
    }

    /// Secrets and ConfigMaps of the provider's namespace are read through `referenced` (the
    /// runtime's, which reads each once per version).
    pub(crate) fn with_referenced(mut self, referenced: Arc<Referenced>) -> Self {
        self.referenced = Some(referenced);
        self
    }

    /// The Secret or ConfigMap `name` in the provider's namespace on the platform cluster
    /// (what the ProviderConfig names: pull secrets, a CA bundle).
    pub(crate) async fn provider_namespace_object<K>(
        &self,
        name: &str,
    ) -> Result<Option<K>, kube::Error>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
        K: k8s_openapi::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        K: Send + Sync + 'static,
    {
        let api: kube::Api<K> =
            kube::Api::namespaced(self.platform.clone(), self.provider_namespace());
        match &self.referenced {
            Some(referenced) => referenced.get(&api, name).await,
            None => api.get_opt(name).await,
        }
    }

    /// This reconcile's sets report to `sink` (the runtime's, which sees the tenant's members
    /// through watches).
    pub(crate) fn with_resource_sink(mut self, sink: ResourceSink) -> Self {
        self.resources = sink;
        self
    }

    /// The provider's own namespace on the platform cluster, where the Secrets the
    /// ProviderConfig names (pull secrets, chart pull secrets) live.
    pub fn provider_namespace(&self) -> &str {
        &self.provider_namespace
    }

    /// Where this reconcile's resource sets report their members; the runtime writes them into
    /// `status.resources` and derives the object's readiness from them.
    pub fn resources(&self) -> &ResourceSink {
        &self.resources
    }

    /// The whole ProviderConfig object.
    pub fn provider_config(&self) -> &P::ProviderConfig {
        &self.provider_config
    }

    /// The author's `config` fields of the ProviderConfig.
    pub fn config(&self) -> &P::Config {
        self.provider_config.config()
    }

    /// The ProviderConfig fields every provider has (`versions`, `pollInterval`, …).
    pub fn common(&self) -> &crate::ProviderConfigCommon {
        self.provider_config.common()
    }

    /// The tenant's cluster: the MCP cluster in standard mode, the kcp workspace in kcp mode.
    pub fn mcp(&self) -> &ClusterAccess {
        &self.mcp
    }

    /// The workload cluster: `&ClusterAccess` for `workload_cluster = required`,
    /// `Option<&ClusterAccess>` for `optional`; absent (a compile error) otherwise.
    pub fn workload(&self) -> <P::WorkloadCluster as WorkloadAccess>::Access<'_>
    where
        P::WorkloadCluster: workload::Declared,
    {
        <P::WorkloadCluster as WorkloadAccess>::select(self.workload.as_ref())
    }

    /// A client for the platform cluster, where ProviderConfig and access objects live.
    pub fn platform(&self) -> &kube::Client {
        &self.platform
    }

    /// Who the tenant is.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Standard or kcp.
    pub fn mode(&self) -> Mode {
        self.identity.mode()
    }

    /// Kubernetes Events about the object being reconciled, e.g.
    /// `cx.events().normal("Installed", "Velero 1.16 runs").await`.
    pub fn events(&self) -> &ObjectEvents {
        &self.events
    }

    /// The field manager of the provider's server-side applies.
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    /// `<provider>-<name>`, shortened with a hash to 63 characters: the name of an object the
    /// provider keeps where other providers keep theirs (copies in a shared namespace,
    /// cluster-scoped RBAC in the tenant's cluster), so they never collide.
    pub fn provider_prefixed_name(&self, name: &str) -> Result<String, crate::error::Error> {
        crate::openmcp::naming::shorten_to_x_characters(
            &format!("{}-{name}", self.field_manager()),
            crate::openmcp::naming::K8S_MAX_NAME_LENGTH,
        )
        .map_err(|e| {
            crate::error::Error::invalid_input(format!("naming the provider's {name}: {e}"))
        })
    }

    /// Where `cluster` is, for `status.resources`: the tenant's control plane, the workload
    /// cluster, or (anything else) the platform cluster.
    pub fn location_of(&self, cluster: &ClusterAccess) -> Location {
        if std::ptr::eq(cluster, &self.mcp) {
            Location::ManagedControlPlane
        } else if self
            .workload
            .as_ref()
            .is_some_and(|w| std::ptr::eq(cluster, w))
        {
            Location::WorkloadCluster
        } else {
            Location::PlatformCluster
        }
    }

    /// The workload cluster, when the provider has one for this tenant.
    pub(crate) fn workload_access(&self) -> Option<&ClusterAccess> {
        self.workload.as_ref()
    }
}
