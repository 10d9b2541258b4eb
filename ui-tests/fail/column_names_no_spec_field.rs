use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    printcolumn(name = "Version", type = "string", json_path = ".spec.verison"),
    printcolumn(name = "Image", type = "string", json_path = ".spec.image_repository"),
)]
pub struct VeleroSpec {
    pub version: String,
    pub image_repository: String,
}

fn main() {}
