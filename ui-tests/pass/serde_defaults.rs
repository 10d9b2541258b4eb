//! `#[serde(default)]` and `#[serde(default = "path")]` values are the CRD's `default`s, so the API
//! server fills them in when the end user leaves the field out, as the provider would read it;
//! a field skipped when it holds its default (`skip_serializing_if`) gets none.

use service_provider::prelude::*;

/// Backups.
#[service_provider(group = "backup.services.example.io", version = "v1alpha1", kind = "Backup", config = BackupConfig)]
pub struct BackupSpec {
    /// Days a backup is kept.
    #[serde(default = "default_retention")]
    pub retention_days: u32,
    /// Whether backups are encrypted.
    #[serde(default)]
    pub encrypted: bool,
    /// The schedule.
    #[serde(default)]
    pub schedule: Schedule,
    /// Extra labels, none by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

fn default_retention() -> u32 {
    30
}

/// When backups run.
#[api_type]
#[derive(PartialEq)]
pub struct Schedule {
    /// A cron expression.
    pub cron: String,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule { cron: "0 3 * * *".into() }
    }
}

/// Operator settings.
#[api_type]
pub struct BackupConfig {
    /// Upload concurrency.
    #[serde(default = "default_threads")]
    pub upload_threads: u8,
}

fn default_threads() -> u8 {
    4
}

impl Reconcile for Backup {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {
    use service_provider::serde_json::{Value, json, to_value};
    let crd = to_value(service_provider::manifests::service_crd::<Backup>()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["retentionDays"]["default"], json!(30), "{spec:#}");
    assert_eq!(spec["encrypted"]["default"], json!(false));
    assert_eq!(spec["schedule"]["default"], json!({"cron": "0 3 * * *"}));
    assert_eq!(spec["labels"]["default"], Value::Null, "skipped when empty: no default");
    let config = to_value(service_provider::manifests::provider_config_crd::<Backup>()).unwrap();
    let spec = &config["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["uploadThreads"]["default"], json!(4), "{spec:#}");
}
