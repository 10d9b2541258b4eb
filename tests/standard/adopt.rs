//! What a Go provider left behind is adopted as it is, and one object the provider's type cannot
//! decode is reported on itself while every other object is served.
//!
//! Adoption: an MCP AccessRequest with Go's labels, finalizer and a permissions-only token that
//! grants what the provider declares is used without a write (same generation, no role reference
//! added); one that grants more than the provider declares is set to the declared grant, as Go's
//! `CreateOrUpdate` sets it — with the role reference removed, not kept beside the rules.

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider::kube::api::{
    ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use service_provider::openmcp::AccessRequest;
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::prelude::*;
use service_provider::testing::{TestError, eventually};
use service_provider_runtime::openmcp::naming::request_labels;

use crate::support;

/// A provider with the default (least-privilege) MCP grant.
#[service_provider(
    group = "adoptee.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Adoptee"
)]
pub(crate) struct AdopteeSpec {
    /// Anything.
    #[serde(default)]
    pub value: String,
}

impl Reconcile for Adoptee {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

const NAMESPACE: &str = "project-adopt--ws-a";

/// Creates the MCP AccessRequest a Go provider would have left for `tenant`, with `token`, and
/// waits until the platform granted it; returns it.
async fn go_access_request(
    env: &service_provider::dev::TestEnv,
    tenant: &str,
    token: serde_json::Value,
) -> (Api<AccessRequest>, AccessRequest) {
    let provider = env.provider().expect("a provider").name().to_owned();
    let platform_ns = stable_mcp_namespace(tenant, NAMESPACE).unwrap();
    let name = stable_request_name(&provider, tenant, "mcp").unwrap();
    let go_ar: AccessRequest = serde_json::from_value(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "AccessRequest",
        "metadata": {
            "name": name,
            "namespace": platform_ns,
            "labels": request_labels(&provider, NAMESPACE, tenant, "mcp"),
            "finalizers": ["clusters.openmcp.cloud/clusteraccess"],
        },
        "spec": {
            "requestRef": { "name": tenant, "namespace": platform_ns },
            "token": token,
        },
    }))
    .unwrap();
    let ars: Api<AccessRequest> = Api::namespaced(env.platform().client(), &platform_ns);
    ars.create(&PostParams::default(), &go_ar)
        .await
        .expect("the Go provider's AccessRequest");
    let granted = support::wait(&ars, &name, |o: Option<&AccessRequest>| {
        o.is_some_and(AccessRequest::is_ready)
    })
    .await
    .unwrap();
    (ars, granted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_access_request_is_adopted_without_a_write_and_never_widens_the_grant()
-> Result<(), TestError> {
    const SAME: &str = "tenant-same";
    const WIDER: &str = "tenant-wider";
    let platform = support::platform::<Adoptee>(json!({ "pollInterval": "1m" }))
        .start()
        .await?;
    // The ControlPlanes first: the Go provider's requests live in their platform namespaces,
    // and are there before the tenants' objects.
    let env = platform.env();
    for tenant in [SAME, WIDER] {
        env.create_control_plane(NAMESPACE, tenant).await?;
    }
    // The declared grant, written Go's way: keys in another order, an empty resourceNames list.
    let (same_ars, same) = go_access_request(
        env,
        SAME,
        json!({ "permissions": [{ "rules": [
            { "verbs": ["*"], "resources": ["*"], "apiGroups": ["*"], "resourceNames": [] },
        ] }] }),
    )
    .await;
    // More than declared: the same rules plus the cluster's cluster-admin.
    let (wider_ars, wider) = go_access_request(
        env,
        WIDER,
        json!({
            "permissions": [{ "rules": [{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }] }],
            "roleRefs": [{ "name": "cluster-admin", "kind": "ClusterRole" }],
        }),
    )
    .await;

    for tenant in [SAME, WIDER] {
        platform
            .create_tenant(&format!("{NAMESPACE}/{tenant}"), json!({}))
            .await?
            .wait_ready()
            .await?;
    }

    // Adopted as it was: no write, so the same generation and resourceVersion.
    let name = same.metadata.name.clone().unwrap();
    let adopted = same_ars.get(&name).await.unwrap();
    // The spec first: should the generation ever move, this says whether a writer changed the
    // spec or the server bumped it without a change.
    assert_eq!(adopted.spec, same.spec);
    assert_eq!(adopted.metadata.generation, same.metadata.generation);
    assert!(
        adopted
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "clusters.openmcp.cloud/clusteraccess")
    );
    // The wider one now asks for exactly the declared grant — the role reference is gone — and
    // the platform granted that (a new generation, observed).
    let name = wider.metadata.name.clone().unwrap();
    let before = wider.metadata.generation;
    let narrowed = support::wait(&wider_ars, &name, move |o: Option<&AccessRequest>| {
        o.is_some_and(|ar| ar.is_ready() && ar.metadata.generation > before)
    })
    .await
    .unwrap();
    let token = narrowed.spec.token.expect("a token");
    assert!(token.role_refs.is_empty(), "{token:?}");
    assert_eq!(token, <Adoptee as ServiceProvider>::mcp_access());
    platform.stop().await;
    Ok(())
}

/// One object the provider's type cannot decode (written under an older, looser schema) is
/// reported in its own status while ten others reach Ready; before, it failed every list of
/// the watch and nothing was reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_undecodable_object_is_reported_on_itself_and_the_rest_reach_ready()
-> Result<(), TestError> {
    const NS: &str = "project-bad--ws-a";
    let names: Vec<String> = (0..11).map(|i| format!("tenant-{i}")).collect();
    let mut platform = support::platform::<Adoptee>(json!({ "pollInterval": "1m" }))
        .modes([Mode::Standard])
        .start_without_provider()
        .await?;

    // An older schema that took anything in `spec`, and an object written under it.
    let crds: Api<CustomResourceDefinition> = Api::all(platform.onboarding().client());
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
    platform
        .env()
        .create_control_plane(&bad.namespace, &bad.name)
        .await?;
    // kube-apiserver swaps a CRD's schema a moment after the CRD changes: until then the
    // create is still checked against the old one (422).
    let resource = ApiResource::erase::<Adoptee>(&());
    let objects: Api<DynamicObject> =
        Api::namespaced_with(platform.onboarding().client(), NS, &resource);
    eventually("the looser schema to take it", support::TIMEOUT, || async {
        let mut object = DynamicObject::new(&bad.name, &resource).within(NS);
        object.data = json!({ "spec": { "value": 42 } });
        objects.create(&PostParams::default(), &object).await.ok()
    })
    .await
    .expect("the looser schema takes it");
    let mut good = Vec::new();
    for name in &names[1..] {
        good.push(
            platform
                .create_tenant(&format!("{NS}/{name}"), json!({ "value": "ok" }))
                .await?,
        );
    }

    platform.start_provider().await?;
    for tenant in &good {
        tenant.wait_ready().await?;
    }
    // The broken one says why, on itself (read untyped: it does not decode).
    let resource = ApiResource::erase::<Adoptee>(&());
    let raw: Api<DynamicObject> =
        Api::namespaced_with(platform.onboarding().client(), NS, &resource);
    let reported = eventually("the broken object's status", support::TIMEOUT, || async {
        let o = raw.get(&names[0]).await.ok()?;
        let conditions = o.data["status"]["conditions"].as_array()?;
        conditions
            .iter()
            .any(|c| c["reason"] == "InvalidObject")
            .then_some(o)
    })
    .await
    .unwrap();
    let condition = &reported.data["status"]["conditions"][0];
    assert_eq!(condition["status"], "False");
    assert!(
        condition["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot be read")),
        "{condition}"
    );
    assert_eq!(reported.data["status"]["phase"], "Progressing");
    // And as a Warning Event about it.
    let events: Api<Event> = Api::namespaced(platform.onboarding().client(), NS);
    eventually("the InvalidObject Event", support::TIMEOUT, || async {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("InvalidObject")
                    && e.type_.as_deref() == Some("Warning")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(&names[0])
            })
    })
    .await
    .unwrap();
    // No access was ordered for it.
    let provider = platform.provider_name().to_owned();
    let ars: Api<AccessRequest> = Api::namespaced(
        platform.platform().client(),
        &stable_mcp_namespace(&names[0], NS).unwrap(),
    );
    assert!(
        ars.get_opt(&stable_request_name(&provider, &names[0], "mcp").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    platform.stop().await;
    Ok(())
}
