//! The smallest declaration: group, version and kind; an empty spec.

use service_provider::prelude::*;

/// Nothing to configure.
#[service_provider(group = "minimal.services.example.io", version = "v1", kind = "Minimal")]
pub struct MinimalSpec {}

impl Reconcile for Minimal {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {
    let info = Minimal::INFO;
    assert_eq!(
        (info.group, info.version, info.kind, info.plural, info.kcp),
        ("minimal.services.example.io", "v1", "Minimal", "minimals", false)
    );
    assert_eq!(info.finalizer(), "minimal.services.example.io/finalizer");
    let manifests = service_provider::manifests::<Minimal>();
    let paths: Vec<&str> = manifests.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["onboarding/crd.yaml", "onboarding/clusterrole.yaml", "platform/crd.yaml", "platform/clusterrole.yaml"]);
    // The ProviderConfig type exists, cluster-scoped, with only the common fields.
    let config: MinimalProviderConfig = service_provider::serde_json::from_value(service_provider::serde_json::json!({
        "apiVersion": "minimal.services.example.io/v1",
        "kind": "ProviderConfig",
        "metadata": {"name": "minimal"},
        "spec": {"versions": [{"version": "1.0"}]},
    }))
    .unwrap();
    assert_eq!(config.spec.common.poll_interval.to_string(), "1m");
}
