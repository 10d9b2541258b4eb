use service_provider::prelude::*;

#[service_provider(group = "velero", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
