//! A struct-level rule may name only fields the struct has, by their JSON names: `self.<field>`
//! and `oldSelf.<field>` are checked against the serialized names (after `rename_all` and
//! `rename`), and so is the head of `field_path`. A rule on a field of the author's own type is
//! checked by the compiler against that type's fields.

use service_provider::prelude::*;

#[service_provider(group = "backup.services.example.io", version = "v1alpha1", kind = "Backup")]
#[x_kube(validation = Rule::new("self.retention_days <= self.maxRetentionDays").field_path(".retention"))]
pub struct BackupSpec {
    pub retention_days: u32,
    pub max_retention_days: u32,
    #[x_kube(validation = "self.threads > 0")]
    pub upload: Option<Upload>,
}

#[api_type]
#[x_kube(validation = "self.uploadThreads == oldSelf.threads")]
pub struct Upload {
    #[serde(rename = "uploadThreads")]
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

fn main() {}
