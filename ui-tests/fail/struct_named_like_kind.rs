use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct Velero {
    pub version: String,
}

fn main() {}
