//! A status the Go runtime wrote never strands a tenant (issue 22): Go's `status.resources[].phase`
//! values (`Progressing`, `Unknown`, …) are accepted by the CRD and read; a status the provider
//! cannot read at all is treated as absent and rewritten; and only an unreadable *spec* makes an
//! object `InvalidObject` — whose deletion still gives its access back and removes the finalizer.
//!
//! Go's writes are replayed as Go sends them: a JSON merge patch of the status subresource
//! (`client.MergeFrom`, opencontrolplane-runtime `pkg/serviceprovider/apireconciler.go`), with
//! service-provider-velero v1.1.2's status shape (`api/v1alpha1/velero_types.go`).

use serde_json::{Value, json};
use service_provider::k8s_openapi::api::events::v1::Event;
use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::openmcp::{AccessRequest, ClusterRequest};
use service_provider::testing::{Tenant, TestError, TestPlatform, eventually};
use service_provider::{Mode, ResourcePhase};

use crate::support;
use crate::velero::Velero;

/// Go's `InstancePhase` constants (service-provider-velero `api/v1alpha1/velero_types.go:33-39`).
const GO_RESOURCE_PHASES: [&str; 6] = [
    "Pending",
    "Progressing",
    "Ready",
    "Failed",
    "Terminating",
    "Unknown",
];

/// A Velero platform whose ProviderConfig polls every `poll`.
async fn platform(poll: &str) -> Result<TestPlatform<Velero>, TestError> {
    let mut config = crate::velero_config();
    config["pollInterval"] = json!(poll);
    support::platform::<Velero>(config)
        .modes([Mode::Standard])
        .start()
        .await
}

/// The status service-provider-velero writes while its worker Deployment waits for pods
/// (`internal/controller/velero_controller.go` `CreateOrUpdate` → `StatusProgressing`,
/// `resultsToResources`; `pkg/deployment/deployment.go:129-154`): the `TypedObjectReference`
/// without `apiGroup`, one entry per phase value Go has.
fn go_status(generation: i64, worker_ns: &str) -> Value {
    let resources: Vec<Value> = GO_RESOURCE_PHASES
        .iter()
        .enumerate()
        .map(|(i, phase)| {
            json!({
                "kind": "Deployment",
                "name": format!("velero-{i}"),
                "namespace": worker_ns,
                "phase": phase,
                "message": "Waiting for all pods to become ready.",
                "location": if i % 2 == 0 { "WorkloadCluster" } else { "ManagedControlPlane" },
            })
        })
        .collect();
    json!({ "status": {
        "observedGeneration": generation,
        "phase": "Progressing",
        "conditions": [{
            "type": "Ready",
            "status": "False",
            "observedGeneration": generation,
            "lastTransitionTime": "2026-12-04T10:00:00Z",
            "reason": "Reconciling",
            "message": "Reconcile in progress",
        }],
        "resources": resources,
    } })
}

/// The untyped API of Velero objects in `tenant`'s namespace: what an undecodable object is
/// read and written with.
fn raw(platform: &TestPlatform<Velero>, tenant: &Tenant<Velero>) -> Api<DynamicObject> {
    Api::namespaced_with(
        platform.onboarding().client(),
        tenant.namespace(),
        &ApiResource::erase::<Velero>(&()),
    )
}

/// Replaces one property of the Velero CRD's schema, as a looser CRD (Go's controller-gen one,
/// an older version) would have it: anything goes under it.
async fn loosen(platform: &TestPlatform<Velero>, property: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(platform.onboarding().client());
    let name = format!(
        "{}.{}",
        <Velero as service_provider::kube::Resource>::plural(&()),
        <Velero as service_provider::kube::Resource>::group(&())
    );
    let patch = json!([{
        "op": "replace",
        "path": format!("/spec/versions/0/schema/openAPIV3Schema/properties/{property}"),
        "value": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
    }]);
    crds.patch(
        &name,
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(patch).expect("a JSON patch")),
    )
    .await
    .expect("the looser schema");
}

/// The tenant's AccessRequests (MCP and workload) and its workload ClusterRequest, as
/// `namespace/name` keys on the platform cluster.
fn access_keys(tenant: &Tenant<Velero>) -> (Vec<String>, String) {
    let ns = stable_mcp_namespace(tenant.name(), tenant.namespace()).expect("a namespace");
    let key = |suffix| {
        format!(
            "{ns}/{}",
            stable_request_name("velero", tenant.name(), suffix).expect("a name")
        )
    };
    (vec![key("mcp"), key("wl")], key("wl"))
}

/// Waits until every access object of `tenant` is gone from the platform cluster.
async fn access_given_back(
    platform: &TestPlatform<Velero>,
    tenant: &Tenant<Velero>,
) -> Result<(), TestError> {
    let (access_requests, cluster_request) = access_keys(tenant);
    for ar in &access_requests {
        platform.platform().wait_gone::<AccessRequest>(ar).await?;
    }
    platform
        .platform()
        .wait_gone::<ClusterRequest>(&cluster_request)
        .await
}

/// Whether an Event says `reason` about `tenant`'s object.
async fn has_event(tenant: &Tenant<Velero>, reason: &str) -> Result<bool, TestError> {
    let events: Vec<Event> = tenant.events().await?;
    Ok(events.iter().any(|e| e.reason.as_deref() == Some(reason)))
}

/// (d) Our CRD takes every status write of the Go provider — each `InstancePhase`, both
/// locations, Go's `Progressing` phase and condition — where its enums answered 422; and the
/// typed object reads it back value for value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crd_accepts_a_go_status_write_and_the_typed_object_reads_it() -> Result<(), TestError>
{
    let platform = platform("1m").await?;
    let tenant = platform
        .create_tenant("project-go--ws-a/tenant-d", json!({ "version": "1.15.0" }))
        .await?;
    let ready = tenant.wait_ready().await?;
    let generation = ready.metadata.generation.unwrap_or(1);

    let worker_ns = format!("velero-{}", tenant.identity().stable_id());
    let written = tenant
        .api()
        .patch_status(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(go_status(generation, &worker_ns)),
        )
        .await
        .expect("the CRD accepts Go's status write");
    let status = written.status.expect("a status");
    let phases: Vec<&str> = status.resources.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(phases, GO_RESOURCE_PHASES);
    assert_eq!(status.resources[1].phase, ResourcePhase::Progressing);
    assert_eq!(
        status.phase.map(|p| p.as_str()),
        Some("Progressing"),
        "Go's top-level phase"
    );
    // And as the provider's cache reads it: the object is still its typed self.
    let read = tenant.get().await?;
    assert_eq!(read.status.map(|s| s.resources.len()), Some(6));
    platform.stop().await;
    Ok(())
}

/// (a) A Ready tenant whose status Go rewrites with `resources[].phase: Progressing` stays
/// reconciled: no `InvalidObject`, and the next reconcile (the ProviderConfig's poll) writes the
/// runtime's own status back, Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_tenant_with_a_go_written_status_is_reconciled_back_to_ready()
-> Result<(), TestError> {
    let platform = platform("2s").await?;
    let tenant = platform
        .create_tenant("project-go--ws-a/tenant-a", json!({ "version": "1.15.0" }))
        .await?;
    let ready = tenant.wait_ready().await?;
    let generation = ready.metadata.generation.unwrap_or(1);
    let ours = ready.status.clone().expect("a status").resources;
    assert!(!ours.is_empty(), "the runtime reports the managed objects");

    let worker_ns = format!("velero-{}", tenant.identity().stable_id());
    tenant
        .api()
        .patch_status(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(go_status(generation, &worker_ns)),
        )
        .await
        .expect("the CRD accepts Go's status write");

    let rewritten = tenant
        .wait_until("to have the runtime's own status again", |o| {
            o.status.as_ref().is_some_and(|s| {
                s.phase.map(|p| p.as_str()) == Some("Ready")
                    && s.condition("Ready")
                        .is_some_and(|c| c.status == "True" && c.reason == "ReconcileSuccess")
                    && s.resources.iter().all(|r| r.phase == ResourcePhase::Ready)
            })
        })
        .await?;
    let status = rewritten.status.expect("a status");
    assert_eq!(status.observed_generation, Some(generation));
    let members = |resources: &[service_provider::ManagedResource]| -> Vec<String> {
        resources.iter().map(|r| r.describe()).collect()
    };
    assert_eq!(
        members(&status.resources),
        members(&ours),
        "Go's entries are replaced by the runtime's"
    );
    assert!(!has_event(&tenant, "InvalidObject").await?);
    platform.stop().await;
    Ok(())
}

/// (b) A status the provider cannot read at all (written under a looser schema) is treated as
/// absent: the object is reconciled, its status replaced whole; and an object deleted while its
/// status is unreadable is let go — access given back, finalizer removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_status_is_rewritten_and_does_not_hold_a_deletion() -> Result<(), TestError> {
    let platform = platform("1m").await?;
    let tenant = platform
        .create_tenant("project-go--ws-b/tenant-b", json!({ "version": "1.15.0" }))
        .await?;
    tenant.wait_ready().await?;
    loosen(&platform, "status").await;
    let raw = raw(&platform, &tenant);
    let garbage = json!({ "status": {
        "observedGeneration": "three",
        "phase": ["Ready"],
        "resources": "none",
        "foreign": { "written": "by someone else" },
    } });
    // kube-apiserver swaps a CRD's schema a moment after the CRD changes: until then the write
    // is still checked against the old one (422).
    eventually("the looser schema to take it", support::TIMEOUT, || async {
        raw.patch_status(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(&garbage),
        )
        .await
        .ok()
    })
    .await?;
    // The object still reads: with no status (or, had a poll come first, the rewritten one).
    let read = tenant.get().await?.status.unwrap_or_default();
    assert!(
        read == Default::default() || read.phase.map(|p| p.as_str()) == Some("Ready"),
        "{read:?}"
    );

    // Any reconcile rewrites it: here one the end user asks for.
    tenant
        .api()
        .patch(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": {
                "openmcp.cloud/operation": "reconcile",
            } } })),
        )
        .await
        .expect("the annotation is set");
    let replaced = eventually(
        "the unreadable status to be replaced",
        support::TIMEOUT,
        || async {
            let o = raw.get(tenant.name()).await.ok()?;
            let status = &o.data["status"];
            (status["phase"] == "Ready" && status["observedGeneration"].is_i64())
                .then(|| status.clone())
        },
    )
    .await?;
    assert!(
        replaced.get("foreign").is_none(),
        "replaced whole: {replaced}"
    );
    assert!(replaced["resources"].is_array(), "{replaced}");

    // Unreadable again, then deleted: the provider lets it go.
    raw.patch_status(
        tenant.name(),
        &PatchParams::default(),
        &Patch::Merge(&garbage),
    )
    .await
    .expect("the looser schema takes it");
    tenant.delete().await?;
    platform
        .onboarding()
        .wait_gone::<Velero>(&format!("{}/{}", tenant.namespace(), tenant.name()))
        .await?;
    access_given_back(&platform, &tenant).await?;
    assert!(!has_event(&tenant, "InvalidObject").await?);
    platform.stop().await;
    Ok(())
}

/// (c) A spec the provider cannot read makes the object `InvalidObject` (reported on itself, not
/// reconciled); deleting it still gives its access back and removes the finalizer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_spec_is_reported_and_its_deletion_still_gives_access_back()
-> Result<(), TestError> {
    let platform = platform("1m").await?;
    let tenant = platform
        .create_tenant("project-go--ws-c/tenant-c", json!({ "version": "1.15.0" }))
        .await?;
    tenant.wait_ready().await?;
    let (access_requests, _) = access_keys(&tenant);
    for ar in &access_requests {
        platform.platform().get::<AccessRequest>(ar).await?;
    }
    loosen(&platform, "spec").await;
    let raw = raw(&platform, &tenant);
    // As above: written once kube-apiserver checks with the looser schema.
    eventually("the looser schema to take it", support::TIMEOUT, || async {
        raw.patch(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "version": 42 } })),
        )
        .await
        .ok()
    })
    .await?;
    let reported = eventually("the InvalidObject condition", support::TIMEOUT, || async {
        let o = raw.get(tenant.name()).await.ok()?;
        let conditions = o.data["status"]["conditions"].as_array()?;
        conditions
            .iter()
            .any(|c| c["type"] == "Ready" && c["reason"] == "InvalidObject")
            .then_some(o)
    })
    .await?;
    assert_eq!(
        reported.metadata.finalizers,
        Some(vec![
            "velero.services.open-control-plane.io/finalizer".to_owned()
        ])
    );

    raw.delete(tenant.name(), &DeleteParams::default())
        .await
        .expect("the end user deletes it");
    platform
        .onboarding()
        .wait_gone::<Velero>(&format!("{}/{}", tenant.namespace(), tenant.name()))
        .await?;
    access_given_back(&platform, &tenant).await?;
    platform.stop().await;
    Ok(())
}
