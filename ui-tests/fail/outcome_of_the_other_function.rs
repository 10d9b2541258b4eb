//! `create_or_update` cannot say "done" and `delete` cannot say "ready": the two functions return
//! different types, so the mix-up is a compile error rather than a warning at run time.

use service_provider::prelude::*;

/// Nothing to configure.
#[service_provider(group = "mixed.services.example.io", version = "v1", kind = "Mixed")]
pub struct MixedSpec {}

impl Reconcile for Mixed {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::done())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::ready())
    }
}

fn main() {}
