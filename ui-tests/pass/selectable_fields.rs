//! `selectable` (kube-derive's `selectable`) lists the fields a field selector may name, in the
//! CRD's `selectableFields` and the kcp APIResourceSchema: a spec field by its JSON name, checked
//! at compile time, or a status path.

use service_provider::prelude::*;

/// Backups.
#[service_provider(
    group = "backup.services.example.io",
    version = "v1alpha1",
    kind = "Backup",
    status = BackupStatus,
    kcp,
    selectable = ".spec.bucketName",
    selectable = [".spec.region", ".status.lastResult"],
)]
pub struct BackupSpec {
    /// Where backups go.
    pub bucket_name: String,
    /// The bucket's region.
    pub region: String,
}

/// Backup status.
#[api_type]
#[derive(Default, PartialEq)]
pub struct BackupStatus {
    /// How the last backup ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<String>,
}

impl Reconcile for Backup {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome<BackupStatus>, Error> {
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion<BackupStatus>, Error> {
        Ok(Deletion::done())
    }
}

fn main() {
    use service_provider::serde_json::{json, to_value};
    let crd = to_value(service_provider::manifests::service_crd::<Backup>()).unwrap();
    let selectable = &crd["spec"]["versions"][0]["selectableFields"];
    let expected = json!([
        {"jsonPath": ".spec.bucketName"},
        {"jsonPath": ".spec.region"},
        {"jsonPath": ".status.lastResult"},
    ]);
    assert_eq!(selectable, &expected);
    let schema = to_value(service_provider::manifests::api_resource_schema::<Backup>()).unwrap();
    assert_eq!(&schema["spec"]["versions"][0]["selectableFields"], &expected);
}
