//! Every option of the attribute at once.

use service_provider::prelude::*;

/// The facade under another path, as after `service-provider = { package = ..., ... }` renaming.
mod facade {
    pub use service_provider::*;
}

/// All the options.
#[service_provider(
    group = "every.services.example.io",
    version = "v2beta3",
    kind = "Everything",
    plural = "everythings",
    singular = "everything",
    shortnames = ["ev", "evy"],
    categories("openmcp", "all-services"),
    config = crate::EverythingConfig,
    status = EverythingStatus,
    workload_cluster = optional,
    mcp_access = cluster_admin,
    workload_access = grants::workload,
    kcp = true,
    printcolumn(name = "Size", type = "integer", json_path = ".spec.size", description = "How big", format = "int32", priority = 0),
    printcolumn(name = "Owner", type_ = "string", json_path = ".metadata.labels.owner"),
    printcolumn(name = "Seen", type = "date", json_path = ".status.lastSeen", priority = 1),
    deletion_guard(group = "velero.io", version = "v1", kind = "Backup"),
    deletion_guard(version = "v1", kind = "ConfigMap", namespace = "team", labels = "app=db", plural = "configmaps"),
    crate = "crate::facade",
)]
pub struct EverythingSpec {
    /// How big.
    pub size: i32,
}

/// What the provider asks for in the workload cluster.
mod grants {
    /// Deployments only.
    pub fn workload() -> service_provider::openmcp::TokenConfig {
        service_provider::openmcp::TokenConfig::default()
    }
}

/// Operator settings.
#[api_type(crate = "crate::facade")]
pub struct EverythingConfig {
    /// A mirror.
    pub mirror: Option<String>,
}

/// Extra status.
#[api_type(crate = "crate::facade")]
#[derive(Default, PartialEq)]
pub struct EverythingStatus {
    /// When it was last seen.
    pub last_seen: Option<String>,
}

impl Reconcile for Everything {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<EverythingStatus>, Error> {
        let _maybe: Option<&ClusterAccess> = cx.workload();
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion<EverythingStatus>, Error> {
        Ok(Deletion::done())
    }
}

fn main() {
    use service_provider::kube::CustomResourceExt;
    use service_provider::WorkloadCluster;
    use service_provider::__private::runtime::tenant::WorkloadAccess;

    assert_eq!(<Everything as ServiceProvider>::INFO.kcp, true);
    assert_eq!(<<Everything as ServiceProvider>::WorkloadCluster as WorkloadAccess>::MODE, WorkloadCluster::Optional);
    assert_eq!(Everything::mcp_access().role_refs[0].name, "cluster-admin");
    assert!(Everything::workload_access().permissions.is_empty());
    let guards = <Everything as ServiceProvider>::DELETION_GUARDS;
    assert_eq!(guards.len(), 2);
    assert_eq!((guards[0].group, guards[0].plural, guards[0].namespace), ("velero.io", "backups", None));
    assert_eq!(guards[0].api_version(), "velero.io/v1");
    assert_eq!((guards[1].group, guards[1].namespace, guards[1].labels), ("", Some("team"), Some("app=db")));
    assert_eq!(guards[1].api_version(), "v1");
    let crd = service_provider::manifests::service_crd::<Everything>();
    let names = &crd.spec.names;
    assert_eq!(names.short_names.as_deref(), Some(&["ev".to_owned(), "evy".to_owned()][..]));
    assert_eq!(names.categories.as_deref(), Some(&["openmcp".to_owned(), "all-services".to_owned()][..]));
    assert_eq!(Everything::shortnames(), ["ev", "evy"]);
    let columns: Vec<&str> = crd.spec.versions[0].additional_printer_columns.as_ref().unwrap().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(columns, ["Size", "Owner", "Seen", "Phase", "Ready", "Age"]);
    let manifests = service_provider::manifests::<Everything>();
    let kcp = manifests.iter().filter(|m| m.path.starts_with("kcp/")).count();
    assert_eq!(kcp, 4);
}
