//! What a service provider is to the runtime: the trait `#[service_provider]` implements, with
//! the provider's names, types and the access it asks for.

use std::fmt::Debug;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::NamespaceResourceScope;
use kube::core::object::HasStatus;
use kube::{CustomResourceExt, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::provider_config::{ProviderConfigFields, ProviderConfigResource};
use crate::status::{ExtraStatus, ServiceStatus};

/// Static facts about a provider, written by `#[service_provider]` from its attribute.
///
/// Everything the runtime derives from them (finalizer, manifests, RBAC, access object names) is
/// computed in the runtime, so the macro stays a thin translation of the attribute.
#[derive(Clone, Copy, Debug)]
pub struct ProviderInfo {
    /// API group of the Service API and the ProviderConfig, e.g. `velero.services.open-control-plane.io`.
    pub group: &'static str,
    /// API version, e.g. `v1alpha1`.
    pub version: &'static str,
    /// Kind of the Service API, e.g. `Velero`.
    pub kind: &'static str,
    /// Lower-case plural of the Service API, e.g. `veleroes`.
    pub plural: &'static str,
    /// Whether the provider also serves tenants in kcp workspaces.
    pub kcp: bool,
}

impl ProviderInfo {
    /// The finalizer the runtime puts on every Service API object: `<group>/finalizer`, as the Go
    /// runtime does.
    pub fn finalizer(&self) -> String {
        format!("{}/finalizer", self.group)
    }

    /// `<group>/<version>`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// Name of the provider's APIExport when the ProviderConfig names none: the API group.
    pub fn default_api_export_name(&self) -> &'static str {
        self.group
    }
}

/// A served version of the Service API besides the hub, written by `#[service_provider]` from a
/// `served_version(...)` option; see [`crate::conversion`].
#[derive(Clone, Copy, Debug)]
pub struct ServedVersion {
    /// The version's name, e.g. `v1alpha1`.
    pub name: &'static str,
    /// Whether objects are stored at this version rather than at the hub's.
    pub storage: bool,
    /// The CRD kube-derive generates for this version alone (its schema, columns, deprecation).
    pub crd: fn() -> CustomResourceDefinition,
    /// How its spec converts to and from the hub's; `None` when it has the hub's spec type.
    pub conversion: Option<SpecConversion>,
}

/// Converting a version's spec to and from the hub's, as JSON.
#[derive(Clone, Copy, Debug)]
pub struct SpecConversion {
    /// This version's spec → the hub's.
    pub to_hub: fn(Value) -> Result<Value, String>,
    /// The hub's spec → this version's.
    pub from_hub: fn(Value) -> Result<Value, String>,
}

/// What the AccessRequest for a tenant's cluster asks for: the author's [`ServiceProvider::mcp_access`]
/// and, for each deletion guard it does not already grant, `list` and `watch` of the guarded kind,
/// which the runtime needs to tell whether the guard holds.
pub(crate) fn mcp_token<P: ServiceProvider>() -> crate::openmcp::TokenConfig {
    let mut token = P::mcp_access();
    for guard in P::DELETION_GUARDS {
        token.grant_unless_granted(guard.group, guard.plural, &["list", "watch"]);
    }
    token
}

/// Trims a Service API object for a cache: [`compact_meta`](crate::cache::compact_meta), and
/// no spare room in the status conditions (deserialized with room for four; one cached object per
/// tenant object, so that is hundreds of bytes each).
pub(crate) fn compact_object<P: ServiceProvider>(object: &mut P) {
    crate::cache::compact_meta(object);
    if let Some(status) = object.status_mut() {
        status.conditions.shrink_to_fit();
    }
}

/// A Service API type: the resource a tenant creates to ask for the service.
///
/// Implemented by `#[service_provider]`; never by hand. The supertraits are what kube-derive's
/// `CustomResource` generates for the annotated struct.
pub trait ServiceProvider:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + HasStatus<Status = ServiceStatus<<Self as ServiceProvider>::ExtraStatus>>
    + CustomResourceExt
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The author's extra status fields (`status = T` in the attribute), or [`crate::NoStatus`].
    type ExtraStatus: ExtraStatus;
    /// The author's ProviderConfig fields (`config = T` in the attribute), or
    /// [`crate::provider_config::NoConfig`].
    type Config: ProviderConfigFields;
    /// The generated cluster-scoped `ProviderConfig` resource of this provider's group.
    type ProviderConfig: ProviderConfigResource<Config = Self::Config>;
    /// Whether the provider uses a workload cluster (`workload_cluster = …` in the attribute), as
    /// a type so that `Context::workload` exists only for providers that declared one.
    type WorkloadCluster: crate::tenant::WorkloadAccess;

    /// Static facts from the attribute.
    const INFO: ProviderInfo;

    /// The kinds whose objects in the tenant's cluster hold the uninstall (`deletion_guard(...)`
    /// in the attribute): while any exists, `delete` is not called and the object says
    /// `DeletionBlocked`. See [`DeletionGuard`](crate::DeletionGuard).
    const DELETION_GUARDS: &'static [crate::DeletionGuard] = &[];

    /// The Service API's served versions besides [`INFO.version`](ProviderInfo::version), the hub
    /// the reconciler sees (`served_version(...)` in the attribute). See [`crate::conversion`].
    const SERVED_VERSIONS: &'static [ServedVersion] = &[];

    /// What the runtime's AccessRequest asks for in every tenant's MCP cluster (`mcp_access = …`
    /// in the attribute); [`TokenConfig::least_privilege`](crate::openmcp::TokenConfig::least_privilege) unless declared. Applied on every
    /// reconcile as the Go runtime applies its `TokenConfig`; a request that already grants the
    /// same (compared as sets, not as text) is left alone.
    fn mcp_access() -> crate::openmcp::TokenConfig {
        crate::openmcp::TokenConfig::least_privilege()
    }

    /// What the runtime's AccessRequest asks for in the workload cluster (`workload_access = …`
    /// in the attribute); [`TokenConfig::least_privilege`](crate::openmcp::TokenConfig::least_privilege) unless declared.
    fn workload_access() -> crate::openmcp::TokenConfig {
        crate::openmcp::TokenConfig::least_privilege()
    }
}
