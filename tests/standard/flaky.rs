//! A provider for the tests that need one misbehaving on purpose: it panics, or takes its time,
//! when the end user's spec says so.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use service_provider::kube::Api;
use service_provider::kube::api::{ObjectMeta, Patch, PatchParams};
use service_provider::prelude::*;

/// A service that misbehaves on request.
#[service_provider(
    group = "flaky.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Flaky"
)]
pub(crate) struct FlakySpec {
    /// Panic in `create_or_update`.
    #[serde(default)]
    pub panic: bool,
    /// Seconds `create_or_update` takes, after it wrote the ConfigMap `started` into the MCP.
    #[serde(default)]
    pub delay_seconds: u64,
    /// Fail `create_or_update` with a transient error.
    #[serde(default)]
    pub fail: bool,
    /// Ask to be reconciled again after this many seconds once ready.
    #[serde(default)]
    pub requeue_seconds: u64,
}

impl Reconcile for Flaky {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        if self.spec.panic {
            panic!("{} was told to panic", cx.identity());
        }
        if self.spec.delay_seconds > 0 {
            let started = ConfigMap {
                metadata: ObjectMeta {
                    name: Some("started".into()),
                    namespace: Some("default".into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            Api::<ConfigMap>::namespaced(cx.mcp().client().clone(), "default")
                .patch(
                    "started",
                    &PatchParams::apply("flaky").force(),
                    &Patch::Apply(&started),
                )
                .await?;
            tokio::time::sleep(Duration::from_secs(self.spec.delay_seconds)).await;
        }
        if self.spec.fail {
            return Err(Error::transient_msg("flaky was told to fail"));
        }
        // An author's log line: the runtime's reconcile span adds which object it is about.
        tracing::info!("flaky is installed");
        if self.spec.requeue_seconds > 0 {
            return Ok(
                Outcome::ready().requeue_after(Duration::from_secs(self.spec.requeue_seconds))
            );
        }
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}
