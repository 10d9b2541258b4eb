use service_provider::prelude::*;

#[service_provider(
    group = "velero",
    version = "v1.0",
    kind = "velero",
    kcp = "yes",
    printcolumn(name = "Phase", type = "str", json_path = "spec.version"),
    shortname = "vel",
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
