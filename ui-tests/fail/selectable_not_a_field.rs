//! A selectable field names a field of the spec by its JSON name, at most eight, and not
//! metadata (name and namespace are always selectable).

use service_provider::prelude::*;

#[service_provider(
    group = "backup.services.example.io",
    version = "v1alpha1",
    kind = "Backup",
    selectable = [".spec.bucket_name", ".metadata.labels", "spec.region"],
)]
pub struct BackupSpec {
    pub bucket_name: String,
    pub region: String,
}

fn main() {}
