//! Velero backups for a tenant's control plane, installed on a workload cluster and offered both
//! on the onboarding cluster and in kcp workspaces.
//!
//! ```sh
//! cargo run --example velero -- manifests --output manifests/velero
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
}

// Until the runtime drives providers, these bodies only resolve what would be installed; the
// installation into the workload cluster follows with the runtime's server-side-apply helper.
impl Reconcile for Velero {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
        let offered = cx.common().resolve_version(&self.spec.version)?;
        let tag = offered.chart_version.as_deref().unwrap_or(&offered.version);
        let image = format!(
            "{}/velero:{tag}",
            cx.config().image_repository.trim_end_matches('/')
        );
        let _workload = cx.workload();
        Ok(Outcome::ready().with_status(VeleroStatus {
            installed_version: Some(offered.version.clone()),
            image: Some(image),
        }))
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
        Ok(Outcome::done())
    }
}

fn main() -> std::process::ExitCode {
    service_provider::run::<Velero>()
}
