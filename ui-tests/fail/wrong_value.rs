use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    workload_cluster = requried,
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
