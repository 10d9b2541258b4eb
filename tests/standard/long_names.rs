//! Regressions of what landed from the drop-in issue: a tenant with a 63-character name in a long
//! namespace gets access (its request labels shortened as Go shortens them, so the API server
//! accepts them) and is deleted cleanly; a provider whose workload cluster is optional, with no
//! workload block in its ProviderConfig, still gets its `delete` called.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider::kube::api::DeleteParams;
use service_provider::openmcp::AccessRequest;
use service_provider::openmcp::naming::{
    request_labels, stable_mcp_namespace, stable_request_name,
};
use service_provider::prelude::*;

use crate::common;

/// Calls of `LongNamed::delete`.
static DELETED: AtomicUsize = AtomicUsize::new(0);

/// A provider with an optional workload cluster.
#[service_provider(
    group = "longnamed.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "LongNamed",
    workload_cluster = optional
)]
pub struct LongNamedSpec {
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
async fn a_long_named_tenant_gets_access_and_an_optional_workload_does_not_skip_delete() {
    // A 63-character name in a 63-character namespace; no workload block in the ProviderConfig.
    let namespace = format!("project-long--ws-{}", "n".repeat(46));
    let name = format!("tenant-{}", "l".repeat(56));
    assert_eq!((namespace.len(), name.len()), (63, 63));
    let env =
        common::env::<LongNamed>(json!({ "pollInterval": "1m" }), &[(&namespace, &name)]).await;
    let provider = env.provider().expect("a provider").name().to_owned();

    let runtime = common::start::<LongNamed>(&env, |_| {}).await;
    let cp = ControlPlaneRef::new(&namespace, &name);
    common::create::<LongNamed>(&env, &cp, json!({})).await;
    let objects = common::objects::<LongNamed>(&env, &cp);
    common::wait(&objects, &name, common::ready::<LongNamed>).await;

    // The request carries Go's labels, every value at most 63 characters.
    let platform_ns = stable_mcp_namespace(&name, &namespace).unwrap();
    let ar_name = stable_request_name(&provider, &name, "mcp").unwrap();
    let ars = Api::<AccessRequest>::namespaced(env.platform().client(), &platform_ns);
    let ar = ars.get(&ar_name).await.expect("the tenant's AccessRequest");
    let labels = ar.metadata.labels.unwrap_or_default();
    for (key, value) in request_labels(&provider, &namespace, &name, "mcp") {
        assert!(value.len() <= 63, "{key}={value}");
        assert_eq!(labels.get(&key), Some(&value), "label {key}");
    }

    // Deleted cleanly: `delete` runs (an optional workload cluster nobody asked for is not
    // "access already gone"), the access is given back, the finalizer goes.
    let before = DELETED.load(Ordering::SeqCst);
    objects
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    common::wait(&objects, &name, |o: Option<&LongNamed>| o.is_none()).await;
    assert_eq!(DELETED.load(Ordering::SeqCst) - before, 1);
    common::wait(&ars, &ar_name, |o: Option<&AccessRequest>| o.is_none()).await;
    common::stop(runtime).await;
}
