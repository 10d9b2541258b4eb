//! README's "Writing a provider" example and its "Managed resources" lines, as an author copies
//! them, compiled in this binary; `readme.rs` checks that README still says exactly this. Below
//! the copy: what README leaves to the author (the objects to install), so that the copy
//! compiles as it stands.

use service_provider::Location;
use service_provider::prelude::*;

/// Velero backups for a tenant's control plane.
#[service_provider(
    group = "velero.services.open-control-plane.io", // required: a DNS subdomain with a dot
    version = "v1alpha1",                             // required: v1, v1alpha1, v2beta3, ...
    kind = "Velero",                                  // required: UpperCamelCase
    config = VeleroConfig,        // the platform operator's fields, merged into ProviderConfig.spec
    status = VeleroStatus,        // extra status fields beside observedGeneration, phase, conditions
    workload_cluster = required,  // none (default) | optional | required
    mcp_access = least_privilege, // the AccessRequests' token (default) | cluster_admin | a fn
    kcp,                          // also serve tenants in kcp workspaces
    shortnames = ["vel"],         // optional, like categories = ["openmcp"]
    printcolumn(name = "Version", type = "string", json_path = ".spec.version"),
)]
pub struct VeleroSpec {
    /// Velero version; must be offered in ProviderConfig `spec.versions`.
    pub version: String,
}

/// Types used in the spec, `config` and `status` get their derives from `#[api_type]`.
#[api_type]
pub struct VeleroConfig {
    /// Where the images come from.
    pub image_repository: String,
}

#[api_type]
#[derive(Default, PartialEq)]
pub struct VeleroStatus {
    /// The running version.
    pub installed_version: Option<String>,
}

impl Reconcile for Velero {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
        let offered = cx.common().resolve_version(&self.spec.version)?;
        // What to install, declared; the runtime applies it (see "Managed resources").
        let mut set = cx.resource_set("velero");
        set.add(&backups_crd())?;                                    // into the tenant's cluster
        set.add_to(Location::WorkloadCluster, &server(offered))?;   // onto the workload cluster
        set.apply().await?;
        Ok(Outcome::ready())
    }
    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion<VeleroStatus>, Error> {
        cx.resource_set("velero").delete().await?;
        Ok(Deletion::done())
    }
}

fn main() -> std::process::ExitCode {
    service_provider::run::<Velero>()
}

// What README's example leaves to the author.

use service_provider::k8s_openapi::api::apps::v1::Deployment;
use service_provider::k8s_openapi::api::core::v1::Namespace;
use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use service_provider::kube::api::ObjectMeta;

fn backups_crd() -> CustomResourceDefinition {
    CustomResourceDefinition::default()
}

fn server(_offered: &service_provider::VersionSpec) -> Deployment {
    Deployment::default()
}

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// README's "Managed resources" lines, in a function that gives them the names they use.
async fn managed_resources(cx: &Context<Velero>, ns: String, deployment: Deployment) -> Result<(), Error> {
let mut set = cx.resource_set("external-secrets");
set.add(&namespace("external-secrets"))?.orphan();          // stays on delete: end-user data
let pulls = cx.image_pull_secrets(&mut set, Location::WorkloadCluster, &ns).await?;
set.add_to(Location::WorkloadCluster, &deployment)?.depends_on(&pulls.members[0]);
set.apply().await?;                                           // in create_or_update
cx.resource_set("external-secrets").delete().await?;          // in delete
    Ok(())
}
