use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    config = VeleroConfig,
    status = VeleroStatus,
)]
pub struct VeleroSpec {
    pub version: String,
}

#[api_type]
pub struct VeleroConfig {
    pub poll_interval: String,
}

#[api_type]
#[derive(Default, PartialEq)]
pub struct VeleroStatus {
    pub phase: String,
}

fn main() {}
