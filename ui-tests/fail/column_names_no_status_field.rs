use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    status = VeleroStatus,
    printcolumn(name = "Backups", type = "integer", json_path = ".status.backupCount"),
)]
pub struct VeleroSpec {
    pub version: String,
}

#[api_type]
#[derive(Default, PartialEq)]
pub struct VeleroStatus {
    pub backups: u32,
}

#[service_provider(
    group = "hello.services.example.io",
    version = "v1",
    kind = "Hello",
    printcolumn(name = "Greeted", type = "string", json_path = ".status.greeted"),
)]
pub struct HelloSpec {}

fn main() {}
