use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "1.0", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
