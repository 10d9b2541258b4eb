//! Velero backups for a tenant's control plane, in the workerless pattern: the Velero CRDs go
//! into the tenant's cluster (the MCP, or the kcp workspace), while the Velero server runs on a
//! shared workload cluster — one namespace per tenant, holding the tenant's kubeconfig and a
//! worker Deployment pointed at it (`install.rs`). Offered both on the onboarding cluster and in
//! kcp workspaces.
//!
//! ```sh
//! cargo run --example velero                  # dev: a simulated platform, kubeconfigs printed
//! cargo run --example velero -- manifests --output manifests/velero
//! cargo run --example velero -- run --kubeconfig platform.kubeconfig --provider-name velero
//! ```

use service_provider::prelude::*;

/// Velero backups for a tenant's control plane.
#[service_provider(
    group = "velero.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Velero",
    config = VeleroConfig,
    status = VeleroStatus,
    workload_cluster = required,
    kcp,
    // Removing Velero's CRDs would delete the end user's backups with them.
    deletion_guard(group = "velero.io", version = "v1", kind = "Backup"),
    shortnames = ["vel"],
    categories = ["openmcp"],
    printcolumn(name = "Version", type = "string", json_path = ".spec.version", description = "Requested Velero version"),
    printcolumn(name = "Installed", type = "string", json_path = ".status.installedVersion", priority = 1),
)]
pub struct VeleroSpec {
    /// Velero version; must be offered in ProviderConfig `spec.versions`.
    pub version: String,
    /// Velero plugins to install beside it, e.g. the one for the object store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<Plugin>,
}

/// A Velero plugin.
#[api_type]
pub struct Plugin {
    /// Plugin name, e.g. `velero-plugin-for-aws`.
    pub name: String,
    /// Plugin version.
    pub version: String,
}

/// What the platform operator configures for Velero, beside the versions on offer.
#[api_type]
pub struct VeleroConfig {
    /// Registry and repository the Velero images are pulled from, e.g. `docker.io/velero`;
    /// air-gapped platforms point it at a mirror.
    pub image_repository: String,
}

/// Velero's own status fields.
#[api_type]
#[derive(Default, PartialEq)]
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

mod install;

/// The provider binary: `init`, `run`, `manifests`, and `dev` with a sample a newcomer can read.
pub fn app() -> service_provider::App<Velero> {
    service_provider::App::new().dev_samples(
        service_provider::serde_json::json!({
            "imageRepository": "docker.io/velero",
            "versions": [{ "version": "1.16.1" }, { "version": "1.15.2" }],
        }),
        service_provider::serde_json::json!({ "version": "1.16.1" }),
    )
}

fn main() -> std::process::ExitCode {
    app().run()
}
