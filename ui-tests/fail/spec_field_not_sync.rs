use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
    pub counter: std::cell::Cell<u32>,
}

fn main() {}
