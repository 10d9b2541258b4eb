use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero", kind = "Backup")]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
