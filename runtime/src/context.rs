//! What the runtime hands to `create_or_update` and `delete`: the configuration, the clusters and
//! who the tenant is, identical in standard and kcp mode.

use std::sync::Arc;

use crate::events::ObjectEvents;
use crate::provider_config::ProviderConfigResource;
use crate::reconcile::{ServiceProvider, WorkloadCluster};
use crate::resources::apply::{ApplySet, Location, ResourceSink};
use crate::tenant::{ClusterAccess, Identity, Mode};

/// Type-level form of [`WorkloadCluster`]: decides what `Context::workload` returns.
pub trait WorkloadAccess: Send + Sync + 'static {
    /// The value form.
    const MODE: WorkloadCluster;
    /// What `Context::workload` returns.
    type Access<'a>;
    /// Picks the access from what the runtime ordered.
    #[doc(hidden)]
    fn select(access: Option<&ClusterAccess>) -> Self::Access<'_>;
}

/// Marker types for [`WorkloadAccess`], named in `#[service_provider]` output.
pub mod workload {
    use super::{ClusterAccess, WorkloadAccess, WorkloadCluster};

    /// `workload_cluster = none` (the default).
    pub struct NotDeclared;
    /// `workload_cluster = optional`.
    pub struct Optional;
    /// `workload_cluster = required`.
    pub struct Required;

    /// Implemented for the workload-cluster modes in which `Context::workload` exists.
    #[diagnostic::on_unimplemented(
        message = "this provider declares no workload cluster, so its Context has none",
        note = "add `workload_cluster = required` (or `optional`) to `#[service_provider(...)]`"
    )]
    pub trait Declared: WorkloadAccess {}

    impl WorkloadAccess for NotDeclared {
        const MODE: WorkloadCluster = WorkloadCluster::None;
        type Access<'a> = ();
        fn select(_: Option<&ClusterAccess>) {}
    }

    impl WorkloadAccess for Optional {
        const MODE: WorkloadCluster = WorkloadCluster::Optional;
        type Access<'a> = Option<&'a ClusterAccess>;
        fn select(access: Option<&ClusterAccess>) -> Option<&ClusterAccess> {
            access
        }
    }
    impl Declared for Optional {}

    impl WorkloadAccess for Required {
        const MODE: WorkloadCluster = WorkloadCluster::Required;
        type Access<'a> = &'a ClusterAccess;
        fn select(access: Option<&ClusterAccess>) -> &ClusterAccess {
            access.expect("the runtime builds a Context for a provider that requires a workload cluster only once that cluster's access is granted")
        }
    }
    impl Declared for Required {}
}

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
}

impl<P: ServiceProvider> Context<P> {
    /// Assembles a context; fails when a workload cluster is required but missing.
    pub fn new(
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
        })
    }

    /// Events written by [`events`](Self::events) go to `events`.
    pub fn with_events(mut self, events: ObjectEvents) -> Self {
        self.events = events;
        self
    }

    /// Server-side applies made through [`apply_set`](Self::apply_set) use `field_manager`
    /// (the runtime sets the provider name).
    pub fn with_field_manager(mut self, field_manager: &str) -> Self {
        self.field_manager = Arc::from(field_manager);
        self
    }

    /// The provider's own namespace on the platform cluster (`POD_NAMESPACE`), where the
    /// Secrets the ProviderConfig names live (the runtime sets it).
    pub fn with_provider_namespace(mut self, namespace: &str) -> Self {
        self.provider_namespace = Arc::from(namespace);
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

    /// A set of objects to apply into `cluster` as a whole: objects an earlier apply of the set
    /// `name` installed and this one omits are deleted. The inventory is the ConfigMap `name` in
    /// the namespace `default` of that cluster (see [`ApplySet::inventory_namespace`]); make
    /// `name` unique per tenant when several tenants share the cluster. Its members are reported
    /// in `status.resources`.
    pub fn apply_set(&self, cluster: &ClusterAccess, name: impl Into<String>) -> ApplySet {
        ApplySet::new(
            cluster.client().clone(),
            name,
            "default",
            self.field_manager.to_string(),
        )
        .located(self.location_of(cluster))
        .report_to(self.resources.clone())
    }

    /// The tenant's resource set `name` across its clusters: the tenant's control plane (the
    /// default for [`ApplySet::add`]) and, when the provider has one, the workload cluster
    /// ([`ApplySet::add_to`] with [`Location::WorkloadCluster`]). Objects are applied in
    /// dependency order once what they depend on is ready, pruned when they leave the set, and
    /// deleted in reverse order by [`ApplySet::delete`]; the runtime writes every member into
    /// `status.resources` and keeps the object `Progressing` until all are ready.
    ///
    /// The inventories are the ConfigMap `<name>-<tenant id>` in the namespace `default` of each
    /// cluster, so tenants sharing a workload cluster never share a set.
    pub fn resource_set(&self, name: &str) -> ApplySet {
        let name = format!("{name}-{}", self.identity.stable_id());
        let mut set = ApplySet::new(
            self.mcp.client().clone(),
            name,
            "default",
            self.field_manager.to_string(),
        )
        .report_to(self.resources.clone());
        if let Some(workload) = &self.workload {
            set = set.with_cluster(
                Location::WorkloadCluster,
                workload.client().clone(),
                "default",
            );
        }
        set
    }
}
