use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub enum VeleroSpec {
    Small,
    Large,
}

fn main() {}
