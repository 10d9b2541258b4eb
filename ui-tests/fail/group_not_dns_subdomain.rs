use service_provider::prelude::*;

#[service_provider(group = "Velero_Services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
