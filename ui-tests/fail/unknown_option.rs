use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    workload_clusters = required,
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
