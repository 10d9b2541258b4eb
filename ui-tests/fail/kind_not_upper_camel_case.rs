use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "velero_backup")]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
