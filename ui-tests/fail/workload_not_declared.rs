use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
}

impl Reconcile for Velero {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let _workload = cx.workload();
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {}
