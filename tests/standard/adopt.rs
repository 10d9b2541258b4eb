//! What a Go provider left behind is adopted as it is: an AccessRequest with Go's labels,
//! finalizer and a permissions-only token is used without a write (same generation, no role
//! reference added); a provider whose workload cluster is optional, with no workload block in
//! its ProviderConfig, still gets its `delete` called; a tenant with a 63-character name in a
//! long namespace gets access (its labels shortened as Go shortens them) and is deleted cleanly.

use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider::kube::api::{
    ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams,
};
use service_provider::openmcp::AccessRequest;
use service_provider::openmcp::naming::{
    request_labels, stable_mcp_namespace, stable_request_name,
};
use service_provider::prelude::*;

use crate::common;

/// Calls of `Adoptee::delete`.
static DELETED: AtomicUsize = AtomicUsize::new(0);

/// A provider with an optional workload cluster and the default (least-privilege) MCP grant.
#[service_provider(
    group = "adoptee.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Adoptee",
    workload_cluster = optional
)]
pub struct AdopteeSpec {
    /// Anything.
    #[serde(default)]
    pub value: String,
}

impl Reconcile for Adoptee {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        DELETED.fetch_add(1, Ordering::SeqCst);
        Ok(Deletion::done())
    }
}

const NAMESPACE: &str = "project-adopt--ws-a";
const GO_TENANT: &str = "tenant-go";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_access_request_is_adopted_and_an_optional_workload_does_not_skip_delete() {
    // No workload block in the ProviderConfig.
    let long_namespace = format!("project-long--ws-{}", "n".repeat(46));
    let long_name = format!("tenant-{}", "l".repeat(56));
    let env = common::env::<Adoptee>(
        json!({ "pollInterval": "1m" }),
        &[(NAMESPACE, GO_TENANT), (&long_namespace, &long_name)],
    )
    .await;
    let provider = env.provider().expect("a provider").name().to_owned();

    // The MCP AccessRequest a Go provider created for GO_TENANT: Go's labels, finalizer and a
    // permissions-only token written in its own way (keys in another order, an empty
    // resourceNames list).
    let platform_ns = stable_mcp_namespace(GO_TENANT, NAMESPACE).unwrap();
    let ar_name = stable_request_name(&provider, GO_TENANT, "mcp").unwrap();
    let go_ar: AccessRequest = serde_json::from_value(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "AccessRequest",
        "metadata": {
            "name": ar_name,
            "namespace": platform_ns,
            "labels": request_labels(&provider, NAMESPACE, GO_TENANT, "mcp"),
            "finalizers": ["clusters.openmcp.cloud/clusteraccess"],
        },
        "spec": {
            "requestRef": { "name": GO_TENANT, "namespace": platform_ns },
            "token": { "permissions": [{ "rules": [
                { "verbs": ["*"], "resources": ["*"], "apiGroups": ["*"], "resourceNames": [] },
            ] }] },
        },
    }))
    .unwrap();
    let ars: Api<AccessRequest> = Api::namespaced(env.platform().client(), &platform_ns);
    ars.create(&PostParams::default(), &go_ar)
        .await
        .expect("the Go provider's AccessRequest");
    let granted = common::wait(&ars, &ar_name, |o: Option<&AccessRequest>| {
        o.is_some_and(AccessRequest::is_ready)
    })
    .await
    .unwrap();
    let generation = granted.metadata.generation;

    let runtime = common::start::<Adoptee>(&env, |_| {}).await;
    let go_cp = ControlPlaneRef::new(NAMESPACE, GO_TENANT);
    let long_cp = ControlPlaneRef::new(&long_namespace, &long_name);
    for cp in [&go_cp, &long_cp] {
        common::create::<Adoptee>(&env, cp, json!({})).await;
    }
    let objects = common::objects::<Adoptee>(&env, &go_cp);
    common::wait(&objects, GO_TENANT, common::ready::<Adoptee>).await;
    let long_objects = common::objects::<Adoptee>(&env, &long_cp);
    common::wait(&long_objects, &long_name, common::ready::<Adoptee>).await;

    // Adopted as it was: no write, so the same generation, and no role reference added.
    let adopted = ars.get(&ar_name).await.unwrap();
    assert_eq!(adopted.metadata.generation, generation);
    let token = adopted.spec.token.expect("a token");
    assert!(token.role_refs.is_empty(), "{token:?}");
    assert!(
        adopted
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "clusters.openmcp.cloud/clusteraccess")
    );

    // The long tenant's request carries labels the API server accepts (at most 63 characters).
    let long_ns = stable_mcp_namespace(&long_name, &long_namespace).unwrap();
    let long_ar = Api::<AccessRequest>::namespaced(env.platform().client(), &long_ns)
        .get(&stable_request_name(&provider, &long_name, "mcp").unwrap())
        .await
        .expect("the long tenant's AccessRequest");
    let labels = long_ar.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels,
        request_labels(&provider, &long_namespace, &long_name, "mcp")
            .into_iter()
            .chain(
                labels
                    .clone()
                    .into_iter()
                    .filter(|(k, _)| !k.starts_with("openmcp.cloud/"))
            )
            .collect()
    );
    assert!(labels["openmcp.cloud/managed-purpose"].len() <= 63);

    // Both are deleted cleanly: `delete` runs (no workload block is not "access gone"), the
    // access is given back, the finalizer goes.
    let before = DELETED.load(Ordering::SeqCst);
    objects
        .delete(GO_TENANT, &DeleteParams::default())
        .await
        .unwrap();
    long_objects
        .delete(&long_name, &DeleteParams::default())
        .await
        .unwrap();
    common::wait(&objects, GO_TENANT, |o: Option<&Adoptee>| o.is_none()).await;
    common::wait(&long_objects, &long_name, |o: Option<&Adoptee>| o.is_none()).await;
    assert_eq!(DELETED.load(Ordering::SeqCst) - before, 2);
    common::wait(&ars, &ar_name, |o: Option<&AccessRequest>| o.is_none()).await;
    let long_ars = Api::<AccessRequest>::namespaced(env.platform().client(), &long_ns);
    common::wait(
        &long_ars,
        &stable_request_name(&provider, &long_name, "mcp").unwrap(),
        |o: Option<&AccessRequest>| o.is_none(),
    )
    .await;
    common::stop(runtime).await;
}

/// One object the provider's type cannot decode (written under an older, looser schema) is
/// reported in its own status while ten others reach Ready; before, it failed every list of
/// the watch and nothing was reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_undecodable_object_is_reported_on_itself_and_the_rest_reach_ready() {
    const NS: &str = "project-bad--ws-a";
    let names: Vec<String> = (0..11).map(|i| format!("tenant-{i}")).collect();
    let cps: Vec<(&str, &str)> = names.iter().map(|n| (NS, n.as_str())).collect();
    let env = common::env::<Adoptee>(json!({ "pollInterval": "1m" }), &cps).await;

    // An older schema that took anything in `spec`, and an object written under it.
    let crds: Api<CustomResourceDefinition> = Api::all(env.onboarding().client());
    let crd_name = format!(
        "{}.{}",
        <Adoptee as service_provider::kube::Resource>::plural(&()),
        <Adoptee as service_provider::kube::Resource>::group(&())
    );
    crds.patch(
        &crd_name,
        &PatchParams::default(),
        &Patch::<()>::Json(
            serde_json::from_value(json!([{
                "op": "replace",
                "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec",
                "value": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
            }]))
            .unwrap(),
        ),
    )
    .await
    .expect("the looser schema");
    let bad = ControlPlaneRef::new(NS, &names[0]);
    common::create::<Adoptee>(&env, &bad, json!({ "value": 42 })).await;
    for name in &names[1..] {
        common::create::<Adoptee>(
            &env,
            &ControlPlaneRef::new(NS, name),
            json!({ "value": "ok" }),
        )
        .await;
    }

    let runtime = common::start::<Adoptee>(&env, |_| {}).await;
    let objects = common::objects::<Adoptee>(&env, &bad);
    for name in &names[1..] {
        common::wait(&objects, name, common::ready::<Adoptee>).await;
    }
    // The broken one says why, on itself (read untyped: it does not decode).
    let resource = ApiResource::erase::<Adoptee>(&());
    let raw: Api<DynamicObject> = Api::namespaced_with(env.onboarding().client(), NS, &resource);
    let reported = common::eventually("the broken object's status", common::TIMEOUT, || async {
        let o = raw.get(&names[0]).await.ok()?;
        let conditions = o.data["status"]["conditions"].as_array()?;
        conditions
            .iter()
            .any(|c| c["reason"] == "InvalidObject")
            .then_some(o)
    })
    .await;
    let condition = &reported.data["status"]["conditions"][0];
    assert_eq!(condition["status"], "False");
    assert!(
        condition["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot be read")),
        "{condition}"
    );
    assert_eq!(reported.data["status"]["phase"], "Progressing");
    // No access was ordered for it.
    let provider = env.provider().expect("a provider").name().to_owned();
    let ars: Api<AccessRequest> = Api::namespaced(
        env.platform().client(),
        &stable_mcp_namespace(&names[0], NS).unwrap(),
    );
    assert!(
        ars.get_opt(&stable_request_name(&provider, &names[0], "mcp").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    common::stop(runtime).await;
}
