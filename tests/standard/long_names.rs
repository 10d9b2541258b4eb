//! Regressions of what landed from the drop-in issue: a tenant with a 63-character name in a long
//! namespace gets access (its request labels shortened as Go shortens them, so the API server
//! accepts them) and is deleted cleanly; a provider whose workload cluster is optional, with no
//! workload block in its ProviderConfig, still gets its `delete` called.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use service_provider::openmcp::AccessRequest;
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::prelude::*;
use service_provider::testing::TestError;
use service_provider_runtime::openmcp::naming::request_labels;

use crate::support;

/// Calls of `LongNamed::delete`.
static DELETED: AtomicUsize = AtomicUsize::new(0);

/// A provider with an optional workload cluster.
#[service_provider(
    group = "longnamed.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "LongNamed",
    workload_cluster = optional
)]
pub(crate) struct LongNamedSpec {
    /// Anything.
    #[serde(default)]
    pub value: String,
}

impl Reconcile for LongNamed {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        DELETED.fetch_add(1, Ordering::SeqCst);
        Ok(Deletion::done())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_named_tenant_gets_access_and_an_optional_workload_does_not_skip_delete()
-> Result<(), TestError> {
    // A 63-character name in a 63-character namespace; no workload block in the ProviderConfig.
    let namespace = format!("project-long--ws-{}", "n".repeat(46));
    let name = format!("tenant-{}", "l".repeat(56));
    assert_eq!((namespace.len(), name.len()), (63, 63));
    let platform = support::platform::<LongNamed>(json!({ "pollInterval": "1m" }))
        .start()
        .await?;
    let provider = platform.provider_name();
    let tenant = platform
        .create_tenant(&format!("{namespace}/{name}"), json!({}))
        .await?;
    tenant.wait_ready().await?;

    // The request carries Go's labels, every value at most 63 characters.
    let ar_key = format!(
        "{}/{}",
        stable_mcp_namespace(&name, &namespace).unwrap(),
        stable_request_name(provider, &name, "mcp").unwrap()
    );
    let ar: AccessRequest = platform.platform().get(&ar_key).await?;
    let labels = ar.metadata.labels.unwrap_or_default();
    for (key, value) in request_labels(provider, &namespace, &name, "mcp") {
        assert!(value.len() <= 63, "{key}={value}");
        assert_eq!(labels.get(&key), Some(&value), "label {key}");
    }

    // Deleted cleanly: `delete` runs (an optional workload cluster nobody asked for is not
    // "access already gone"), the access is given back, the finalizer goes.
    let before = DELETED.load(Ordering::SeqCst);
    tenant.delete().await?;
    tenant.wait_gone().await?;
    assert_eq!(DELETED.load(Ordering::SeqCst) - before, 1);
    platform
        .platform()
        .wait_gone::<AccessRequest>(&ar_key)
        .await?;
    platform.stop().await;
    Ok(())
}
