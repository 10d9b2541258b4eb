use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    printcolumn(name = "Phase", type = "string", json_path = ".spec.version"),
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
