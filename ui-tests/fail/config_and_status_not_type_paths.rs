use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    config = "VeleroConfig",
    status = [u8; 4],
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
