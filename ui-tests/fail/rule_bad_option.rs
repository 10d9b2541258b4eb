//! Mistakes in how a rule is written: an unknown `Rule` method, a reason kube-apiserver does not
//! accept, `optional_old_self` on a rule without `oldSelf`, a field path that is not a path, a
//! multi-line message, and an `x_kube` key other than `validation`.

use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1alpha1", kind = "Velero")]
pub struct VeleroSpec {
    #[x_kube(validation = Rule::new("self == oldSelf").mesage("version is immutable"))]
    pub version: String,
    #[x_kube(validation = Rule::new("size(self) > 0").reason(Reason::FieldValueMissing))]
    pub region: String,
    #[x_kube(validation = Rule::new("size(self) > 0").optional_old_self(true))]
    pub bucket: String,
    #[x_kube(validation = Rule::new("size(self) > 0").field_path("name"))]
    pub name: String,
    #[x_kube(validation = Rule::new("self > 0").message("must be\npositive"))]
    pub replicas: u32,
    #[x_kube(merge_strategy = ListMerge::Atomic)]
    pub plugins: Vec<String>,
}

impl Reconcile for Velero {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {}
