//! `config` and `status` types with serde renames: the JSON names, not the Rust ones, are checked
//! and generated.

use service_provider::prelude::*;

/// Backups.
#[service_provider(
    group = "backup.services.example.io",
    version = "v1alpha1",
    kind = "Backup",
    config = BackupConfig,
    status = BackupStatus,
    printcolumn(name = "Last", type = "date", json_path = ".status.lastBackupTime"),
    printcolumn(name = "Where", type = "string", json_path = ".spec.target_bucket"),
)]
#[serde(rename_all = "snake_case")]
pub struct BackupSpec {
    /// Bucket name.
    pub target_bucket: String,
}

/// Operator settings for backups.
#[api_type]
pub struct BackupConfig {
    /// Default bucket region.
    pub default_region: String,
    /// Upload concurrency.
    #[serde(rename = "uploadThreads")]
    pub threads: u8,
}

/// Backup status.
#[api_type]
#[derive(Default, PartialEq)]
pub struct BackupStatus {
    /// When the last backup finished.
    #[serde(rename = "lastBackupTime", default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

impl Reconcile for Backup {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<BackupStatus>, Error> {
        let _region: &str = &cx.config().default_region;
        Ok(Outcome::ready().with_status(BackupStatus { last: Some("2026-01-01T00:00:00Z".into()) }))
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion<BackupStatus>, Error> {
        Ok(Deletion::done())
    }
}

fn main() {
    use service_provider::serde_json::{json, to_value};
    let crd = to_value(service_provider::manifests::service_crd::<Backup>()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    assert!(schema["spec"]["properties"].get("target_bucket").is_some(), "the author's rename_all wins");
    assert!(schema["status"]["properties"].get("lastBackupTime").is_some());
    let config = to_value(service_provider::manifests::provider_config_crd::<Backup>()).unwrap();
    let spec = &config["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert!(spec.get("defaultRegion").is_some() && spec.get("uploadThreads").is_some() && spec.get("versions").is_some());
    let status = to_value(BackupStatus { last: Some("x".into()) }).unwrap();
    assert_eq!(status, json!({"lastBackupTime": "x"}));
}
