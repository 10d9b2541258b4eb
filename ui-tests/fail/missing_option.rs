use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io")]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
