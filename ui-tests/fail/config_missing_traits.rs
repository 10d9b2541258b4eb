use service_provider::prelude::*;

pub struct VeleroConfig {
    pub image_repository: String,
}

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    config = VeleroConfig,
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
