use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec(pub String);

fn main() {}
