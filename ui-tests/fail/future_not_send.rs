use std::rc::Rc;

use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
}

impl Reconcile for Velero {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        let local = Rc::new(self.spec.version.clone());
        std::future::ready(()).await;
        drop(local);
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {}
