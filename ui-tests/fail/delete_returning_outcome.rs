//! A provider written against the earlier `delete`, which returned an `Outcome` (and said
//! `Outcome::done()`): `delete` now returns a `Deletion`. The errors name `Deletion`, and the
//! note on `Outcome::done` says what to write instead.

use service_provider::prelude::*;

#[service_provider(
    group = "external-secrets.services.example.io",
    version = "v1alpha1",
    kind = "ExternalSecrets",
    status = ExternalSecretsStatus,
)]
pub struct ExternalSecretsSpec {
    pub version: String,
}

#[api_type]
#[derive(Default, PartialEq)]
pub struct ExternalSecretsStatus {
    pub installed_version: Option<String>,
}

impl Reconcile for ExternalSecrets {
    async fn create_or_update(
        &self,
        _cx: &Context<Self>,
    ) -> Result<Outcome<ExternalSecretsStatus>, Error> {
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Outcome<ExternalSecretsStatus>, Error> {
        Ok(Outcome::done())
    }
}

fn main() {}
