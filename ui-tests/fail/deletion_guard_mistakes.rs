use service_provider::prelude::*;

#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    deletion_guard(group = "velero.io", version = "v1"),
    deletion_guard(group = "velero.io", version = "1", kind = "backup"),
    deletion_guard(group = "Velero.IO", version = "v1", kind = "Backup", namespce = "velero"),
    deletion_guard = "Backup",
)]
pub struct VeleroSpec {
    pub version: String,
}

fn main() {}
