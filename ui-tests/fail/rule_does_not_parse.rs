//! A validation rule that is not CEL is refused while compiling, on the rule, with the CEL
//! parser's message, rather than when the CRD is applied.

use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1alpha1", kind = "Velero")]
pub struct VeleroSpec {
    #[x_kube(validation = Rule::new("self.startsWith('1.' ").message("only 1.x"))]
    pub version: String,
    #[x_kube(validation = Rule::new("size(self) < 10").message(Message::Expression("'at most ' + ")))]
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
