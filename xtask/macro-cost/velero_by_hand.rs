//! The velero example written by hand with kube-derive instead of `#[service_provider]`.
//!
//! It is the baseline of `cargo xtask macro-cost` (same types, same reconcile, no macro) and the
//! reference the generated CRDs are compared with in `tests/macro`. Keep it in step with
//! `examples/velero/main.rs`: the reconcile is the same file, `examples/velero/install.rs`.

use service_provider::kube::CustomResource;
use service_provider::prelude::*;
use service_provider::schemars::JsonSchema;
use service_provider::serde::{Deserialize, Serialize};
use service_provider::{ProviderConfigCommon, ProviderInfo, ServiceStatus};
use service_provider_runtime::ProviderConfigStatus;

/// Velero backups for a tenant's control plane.
// clippy reads the two `printcolumn(type_ = "string", ...)` as one attribute written twice.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[kube(
    group = "velero.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Velero",
    plural = "veleroes",
    singular = "velero",
    namespaced,
    status = "ServiceStatus<VeleroStatus>",
    shortname = "vel",
    category = "openmcp",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.version",
        description = "Requested Velero version"
    ),
    printcolumn(
        name = "Installed",
        type_ = "string",
        json_path = ".status.installedVersion",
        priority = 1
    ),
    doc = "Velero backups for a tenant's control plane.",
    crates(
        kube_core = "service_provider::kube::core",
        kube = "service_provider::kube",
        k8s_openapi = "service_provider::k8s_openapi",
        schemars = "service_provider::schemars",
        serde = "service_provider::serde",
        serde_json = "service_provider::serde_json"
    )
)]
#[serde(crate = "service_provider::serde", rename_all = "camelCase")]
#[schemars(crate = "service_provider::schemars")]
pub struct VeleroSpec {
    /// Velero version; must be offered in ProviderConfig `spec.versions`.
    pub version: String,
    /// Velero plugins to install beside it, e.g. the one for the object store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<Plugin>,
}

/// A Velero plugin.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(crate = "service_provider::serde", rename_all = "camelCase")]
#[schemars(crate = "service_provider::schemars")]
pub struct Plugin {
    /// Plugin name, e.g. `velero-plugin-for-aws`.
    pub name: String,
    /// Plugin version.
    pub version: String,
}

/// What the platform operator configures for Velero, beside the versions on offer.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(crate = "service_provider::serde", rename_all = "camelCase")]
#[schemars(crate = "service_provider::schemars")]
pub struct VeleroConfig {
    /// Registry and repository the Velero images are pulled from, e.g. `docker.io/velero`;
    /// air-gapped platforms point it at a mirror.
    pub image_repository: String,
}

/// Velero's own status fields.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(crate = "service_provider::serde", rename_all = "camelCase")]
#[schemars(crate = "service_provider::schemars")]
pub struct VeleroStatus {
    /// The Velero version running for this tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// The Velero server image, with its tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The tenant's namespace on the workload cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_namespace: Option<String>,
}

/// Spec of VeleroProviderConfig: the fields every ProviderConfig has and the `config` fields of Velero.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[kube(
    group = "velero.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "ProviderConfig",
    root = "VeleroProviderConfig",
    plural = "providerconfigs",
    singular = "providerconfig",
    status = "ProviderConfigStatus",
    doc = "ProviderConfig of the Velero service provider: the platform operator's settings, one cluster-scoped object on the platform cluster named like the provider.",
    crates(
        kube_core = "service_provider::kube::core",
        kube = "service_provider::kube",
        k8s_openapi = "service_provider::k8s_openapi",
        schemars = "service_provider::schemars",
        serde = "service_provider::serde",
        serde_json = "service_provider::serde_json"
    )
)]
#[serde(crate = "service_provider::serde")]
#[schemars(crate = "service_provider::schemars")]
pub struct VeleroProviderConfigSpec {
    /// The fields every ProviderConfig has: versions, pollInterval, imagePullSecrets, caBundleRef, kcp, workloadCluster.
    #[serde(flatten)]
    pub common: ProviderConfigCommon,
    /// The provider's own fields.
    #[serde(flatten)]
    pub config: VeleroConfig,
}

impl ServiceProvider for Velero {
    type ExtraStatus = VeleroStatus;
    type Config = VeleroConfig;
    type ProviderConfig = VeleroProviderConfig;
    type WorkloadCluster = service_provider_runtime::tenant::workload::Required;
    const INFO: ProviderInfo = ProviderInfo {
        group: "velero.services.open-control-plane.io",
        version: "v1alpha1",
        kind: "Velero",
        plural: "veleroes",
        kcp: true,
    };
}

impl service_provider_runtime::ProviderConfigResource for VeleroProviderConfig {
    type Config = VeleroConfig;
    fn common(&self) -> &ProviderConfigCommon {
        &self.spec.common
    }
    fn config(&self) -> &VeleroConfig {
        &self.spec.config
    }
}

#[path = "../../examples/velero/install.rs"]
mod install;

#[allow(dead_code)]
fn main() -> std::process::ExitCode {
    service_provider::run::<Velero>()
}
