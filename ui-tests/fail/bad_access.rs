use service_provider::prelude::*;

// A quoted role name is not a grant; a workload grant needs a workload cluster.
#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    mcp_access = "cluster-admin",
    workload_access = cluster_admin,
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
