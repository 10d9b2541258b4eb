//! CEL validation rules in kube-derive's syntax, on spec fields, on the spec struct, on the
//! `config` type and on an `#[api_type]` inside the spec, land as `x-kubernetes-validations`
//! where each applies, in the CRDs and in the kcp APIResourceSchema; a field's rules join those
//! its type declares on itself.

use service_provider::prelude::*;

/// Backups.
#[service_provider(
    group = "backup.services.example.io",
    version = "v1alpha1",
    kind = "Backup",
    config = BackupConfig,
    kcp,
)]
#[x_kube(validation = Rule::new("self.retentionDays <= self.maxRetentionDays").message("retentionDays must not exceed maxRetentionDays").field_path(".retentionDays"))]
pub struct BackupSpec {
    /// Where backups go; fixed once set.
    #[x_kube(validation = Rule::new("self == oldSelf").message("bucket is immutable").reason(Reason::FieldValueForbidden))]
    pub bucket: String,
    /// Days a backup is kept.
    #[x_kube(validation = "self >= 1", validation = ("self <= 3650", "at most ten years"))]
    pub retention_days: u32,
    /// The longest retention the end user allows.
    pub max_retention_days: u32,
    /// A schedule, optional. The field's rule is added to the rules `Schedule` declares on itself,
    /// and its `self.every` is checked against `Schedule`'s fields by the compiler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("!has(self.every) || self.every.endsWith('h')").message("every is in hours"))]
    pub schedule: Option<Schedule>,
}

/// When backups run.
#[api_type]
#[x_kube(validation = Rule::new("has(self.cron) != has(self.every)").message(Message::Expression("'set cron or every, not ' + (has(self.cron) ? 'both' : 'neither')")))]
pub struct Schedule {
    /// A cron expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = "self.split(' ').size() == 5")]
    pub cron: Option<String>,
    /// An interval such as `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
}

/// Operator settings for backups.
#[api_type]
#[x_kube(validation = "self.uploadThreads <= 64")]
pub struct BackupConfig {
    /// Upload concurrency.
    #[serde(rename = "uploadThreads")]
    #[x_kube(validation = Rule::new("self > 0").message("at least one upload thread"))]
    pub threads: u8,
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
    let rules = |schema: &Value| schema["x-kubernetes-validations"].clone();

    let crd = to_value(service_provider::manifests::service_crd::<Backup>()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        rules(spec),
        json!([{"rule": "self.retentionDays <= self.maxRetentionDays", "message": "retentionDays must not exceed maxRetentionDays", "fieldPath": ".retentionDays"}])
    );
    let fields = &spec["properties"];
    assert_eq!(
        rules(&fields["bucket"]),
        json!([{"rule": "self == oldSelf", "message": "bucket is immutable", "reason": "FieldValueForbidden"}])
    );
    assert_eq!(
        rules(&fields["retentionDays"]),
        json!([{"rule": "self >= 1"}, {"rule": "self <= 3650", "message": "at most ten years"}])
    );
    assert_eq!(rules(&fields["maxRetentionDays"]), Value::Null);
    let schedule = &fields["schedule"];
    assert_eq!(
        rules(schedule),
        json!([
            {"rule": "has(self.cron) != has(self.every)", "messageExpression": "'set cron or every, not ' + (has(self.cron) ? 'both' : 'neither')"},
            {"rule": "!has(self.every) || self.every.endsWith('h')", "message": "every is in hours"},
        ]),
        "{schedule:#}"
    );
    assert_eq!(
        rules(&schedule["properties"]["cron"]),
        json!([{"rule": "self.split(' ').size() == 5"}]),
        "{schedule:#}"
    );

    // The config's rules sit on the ProviderConfig's spec, where its fields are flattened.
    let config = to_value(service_provider::manifests::provider_config_crd::<Backup>()).unwrap();
    let spec = &config["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(rules(spec), json!([{"rule": "self.uploadThreads <= 64"}]), "{spec:#}");
    assert_eq!(
        rules(&spec["properties"]["uploadThreads"]),
        json!([{"rule": "self > 0", "message": "at least one upload thread"}])
    );

    // kcp serves the same schema.
    let schema = to_value(service_provider::manifests::api_resource_schema::<Backup>()).unwrap();
    let spec = &schema["spec"]["versions"][0]["schema"]["properties"]["spec"];
    assert_eq!(rules(&spec["properties"]["bucket"])[0]["rule"], "self == oldSelf");
}
