//! End-to-end tests of kcp mode against the embedded control plane: the unchanged Velero example
//! serving consumer workspaces through its APIExport's virtual workspace, under only its generated
//! RBAC (the platform identity and the provider-workspace ClusterRole the test environment gives
//! it). The tests check what end users and platform operators see: status through the workspace
//! URL, objects in the workspaces and on the workload cluster, access objects, credentials.

#[path = "../../examples/velero/main.rs"]
#[allow(dead_code, unreachable_pub)] // a binary's `pub` items, here in a module
mod velero;

mod binding;
mod classic;
mod config;
mod faults;
mod lifecycle;
mod replicas;
mod schema;
mod singleton;
mod supplied;
// Shared with the other end-to-end binary, which uses other parts of it.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;
mod tokens;

/// The logical cluster name of a kcp tenant's workspace.
pub(crate) fn workspace_cluster<P: service_provider::Reconcile>(
    tenant: &service_provider::testing::Tenant<P>,
) -> &str {
    tenant.identity().cluster.as_deref().expect("a kcp tenant")
}

/// The ProviderConfig spec every Velero test starts from.
pub(crate) fn velero_config() -> serde_json::Value {
    serde_json::json!({
        "imageRepository": "registry.test/velero",
        "versions": [{ "version": "1.15.0" }, { "version": "1.16.1" }],
        "pollInterval": "1m",
    })
}
