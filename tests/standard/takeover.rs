//! Taking over a Go provider's platform: what service-provider-template's Go provider leaves behind
//! for three tenants — its CRDs (named as controller-gen names them), its ProviderConfig, its
//! AccessRequests and ClusterRequests with Go's names, labels, token spec and finalizer, its Lease
//! held by a Go replica, and Service API objects with the status the Go runtime wrote (one with a
//! phase the Rust runtime never writes) — then the Rust provider's `init` and `run`, started with
//! the openMCP operator's exact arguments and environment.
//!
//! The provider is declared like the template's Go provider (`cmd/service-provider-template/
//! main.go`: group `foo.services.open-control-plane.io`, kind `Foo`, a workload cluster, and the
//! token it asks for in both clusters, lines 346-364 and 382-400), not like the velero example:
//! service-provider-velero's Go grant (its `main.go` 409-465) lists exactly what its Go code
//! installs, which is not what our velero example installs, so the velero example declared with it
//! would be no faithful drop-in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use serde_json::{Value, json};
use service_provider::dev::{ControlPlaneRef, TestEnv};
use service_provider::kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use service_provider::kube::{Api, Resource};
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::openmcp::{
    AccessRequest, ClusterRequest, PermissionsRequest, RoleRef, ServiceProviderObject, TokenConfig,
};
use service_provider::prelude::*;
use service_provider::serde::Serialize;
use service_provider_runtime::openmcp::naming::request_labels;

use crate::process::{Deployed, Operated};
use crate::support::{self, TIMEOUT};
use service_provider::testing::eventually;

/// The template's Go provider, written with this framework.
#[service_provider(
    group = "foo.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Foo",
    workload_cluster = required,
    mcp_access = template_grant,
    workload_access = template_grant
)]
pub(crate) struct FooSpec {
    /// The template's example field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// What the template's Go provider asks for in the MCP and the workload cluster: every verb on
/// every resource, and a binding of the cluster's `cluster-admin`.
pub(crate) fn template_grant() -> TokenConfig {
    TokenConfig {
        permissions: vec![PermissionsRequest {
            rules: vec![PolicyRule {
                api_groups: Some(vec!["*".into()]),
                resources: Some(vec!["*".into()]),
                verbs: vec!["*".into()],
                ..Default::default()
            }],
            ..Default::default()
        }],
        role_refs: vec![RoleRef::cluster_role("cluster-admin")],
    }
}

impl Reconcile for Foo {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        // The adopted requests' credentials work in both clusters.
        for client in [cx.mcp().client(), cx.workload().client()] {
            Api::<Namespace>::all(client.clone())
                .list(&ListParams::default().limit(1))
                .await
                .map_err(Error::transient)?;
        }
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        Api::<Namespace>::all(cx.mcp().client().clone())
            .list(&ListParams::default().limit(1))
            .await
            .map_err(Error::transient)?;
        Ok(Deletion::done())
    }
}

/// The provider process the test starts: the Go provider's Lease name.
pub(crate) fn app() -> service_provider::App<Foo> {
    service_provider::App::new().leader_election_id(LEADER_ELECTION_ID)
}

const PROVIDER: &str = "foo";
const GROUP: &str = "foo.services.open-control-plane.io";
/// A LeaderElectionID in service-provider-velero's style. The template's own,
/// `github.com/openmcp-project/service-provider-template`, is no valid Lease name.
const LEADER_ELECTION_ID: &str = "services.open-control-plane.io.foo";
const GO_HOLDER: &str = "sp-foo-5b7f9c6d8-k4m2x_3c1e7a52-9d4b-4f0e-8a6c-2b5d7e9f1a3c";
const CLUSTER_ACCESS_FINALIZER: &str = "clusters.openmcp.cloud/clusteraccess";

/// controller-gen's CRD of the template's `Foo` (plural `foos`), as the Go `init` installed it.
fn go_foo_crd() -> CustomResourceDefinition {
    let condition = json!({
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": { "type": "string", "format": "date-time" },
            "message": { "type": "string", "maxLength": 32768 },
            "observedGeneration": { "type": "integer", "format": "int64", "minimum": 0 },
            "reason": { "type": "string", "maxLength": 1024, "minLength": 1 },
            "status": { "type": "string", "enum": ["True", "False", "Unknown"] },
            "type": { "type": "string", "maxLength": 316 },
        },
    });
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("foos.{GROUP}"),
            "labels": { "openmcp.cloud/cluster": "onboarding" },
            "annotations": { "controller-gen.kubebuilder.io/version": "v0.20.1" },
        },
        "spec": {
            "group": GROUP,
            "names": { "kind": "Foo", "listKind": "FooList", "plural": "foos", "singular": "foo" },
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": { "status": {} },
                "additionalPrinterColumns": [
                    { "jsonPath": ".status.phase", "name": "Phase", "type": "string" },
                    { "jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date" },
                ],
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": { "type": "string" },
                        "kind": { "type": "string" },
                        "metadata": { "type": "object" },
                        "spec": { "type": "object", "properties": { "foo": { "type": "string" } } },
                        "status": {
                            "type": "object",
                            "required": ["observedGeneration", "phase"],
                            "properties": {
                                "conditions": {
                                    "type": "array",
                                    "items": condition,
                                    "x-kubernetes-list-map-keys": ["type"],
                                    "x-kubernetes-list-type": "map",
                                },
                                "observedGeneration": { "type": "integer", "format": "int64" },
                                "phase": { "type": "string" },
                            },
                        },
                    },
                } },
            }],
        },
    }))
    .unwrap()
}

/// controller-gen's CRD of the template's ProviderConfig (cluster-scoped, `pollInterval`).
fn go_provider_config_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("providerconfigs.{GROUP}"),
            "labels": { "openmcp.cloud/cluster": "platform" },
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "ProviderConfig",
                "listKind": "ProviderConfigList",
                "plural": "providerconfigs",
                "singular": "providerconfig",
            },
            "scope": "Cluster",
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": { "type": "string" },
                        "kind": { "type": "string" },
                        "metadata": { "type": "object" },
                        "spec": { "type": "object", "properties": {
                            "pollInterval": { "type": "string" },
                        } },
                        "status": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                        },
                    },
                } },
            }],
        },
    }))
    .unwrap()
}

/// The template's token, as Go's JSON encoding writes a `TokenConfig`.
fn go_token() -> Value {
    json!({
        "permissions": [{ "rules": [{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }] }],
        "roleRefs": [{ "name": "cluster-admin", "kind": "ClusterRole" }],
    })
}

/// One tenant and the names of the requests the Go provider made for it.
struct Tenant {
    cp: ControlPlaneRef,
    /// The platform namespace of its requests (`StableMCPNamespace`).
    platform_ns: String,
    mcp_request: String,
    workload_request: String,
}

impl Tenant {
    fn new(namespace: &str, name: &str) -> Self {
        Tenant {
            cp: ControlPlaneRef::new(namespace, name),
            platform_ns: stable_mcp_namespace(name, namespace).unwrap(),
            mcp_request: stable_request_name(PROVIDER, name, "mcp").unwrap(),
            workload_request: stable_request_name(PROVIDER, name, "wl").unwrap(),
        }
    }

    /// Go's labels (`DefaultManagedLabelGenerator` with the template's onboarding labels, each
    /// value shortened to 63 characters; `request_labels` is checked against Go's vectors in the
    /// runtime's naming tests) for registration `id`.
    fn labels(&self, id: &str) -> Value {
        json!(request_labels(
            PROVIDER,
            &self.cp.namespace,
            &self.cp.name,
            id
        ))
    }

    /// What the Go provider's ClusterAccessReconciler created, in the order it creates them.
    async fn leave_go_requests(&self, env: &TestEnv) {
        let platform = env.platform().client();
        let crs: Api<ClusterRequest> = Api::namespaced(platform.clone(), &self.platform_ns);
        let ars: Api<AccessRequest> = Api::namespaced(platform.clone(), &self.platform_ns);
        let cr: ClusterRequest = serde_json::from_value(json!({
            "apiVersion": "clusters.openmcp.cloud/v1alpha1",
            "kind": "ClusterRequest",
            "metadata": {
                "name": self.workload_request,
                "namespace": self.platform_ns,
                "labels": self.labels("workload"),
                "finalizers": [CLUSTER_ACCESS_FINALIZER],
            },
            "spec": { "purpose": "workload" },
        }))
        .unwrap();
        crs.create(&PostParams::default(), &cr).await.unwrap();
        support::wait(
            &crs,
            &self.workload_request,
            |o: Option<&ClusterRequest>| o.is_some_and(ClusterRequest::is_granted),
        )
        .await;
        for (name, id, reference) in [
            (&self.mcp_request, "mcp", &self.cp.name),
            (&self.workload_request, "workload", &self.workload_request),
        ] {
            let ar: AccessRequest = serde_json::from_value(json!({
                "apiVersion": "clusters.openmcp.cloud/v1alpha1",
                "kind": "AccessRequest",
                "metadata": {
                    "name": name,
                    "namespace": self.platform_ns,
                    "labels": self.labels(id),
                    "finalizers": [CLUSTER_ACCESS_FINALIZER],
                },
                "spec": {
                    "requestRef": { "name": reference, "namespace": self.platform_ns },
                    "token": go_token(),
                },
            }))
            .unwrap();
            ars.create(&PostParams::default(), &ar).await.unwrap();
        }
        for name in [&self.mcp_request, &self.workload_request] {
            support::wait(&ars, name, |o: Option<&AccessRequest>| {
                o.is_some_and(AccessRequest::is_ready)
            })
            .await;
        }
    }

    /// The Service API object with the finalizer and the status the Go runtime wrote.
    async fn leave_go_object(&self, env: &TestEnv, phase: &str, ready: bool) {
        let resource = ApiResource::erase::<Foo>(&());
        let api: Api<DynamicObject> =
            Api::namespaced_with(env.onboarding().client(), &self.cp.namespace, &resource);
        let mut object = DynamicObject::new(&self.cp.name, &resource).within(&self.cp.namespace);
        object.metadata.finalizers = Some(vec![format!("{GROUP}/finalizer")]);
        object.data = json!({ "spec": { "foo": "bar" } });
        api.create(&PostParams::default(), &object).await.unwrap();
        // StatusReady / StatusProgressing of opencontrolplane-runtime's status.go.
        let (status, reason, message) = if ready {
            ("True", "ReconcileSuccess", "Domain Service is ready")
        } else {
            ("False", "ReconcileError", "cluster setup error")
        };
        let status = json!({ "status": {
            "observedGeneration": 1,
            "phase": phase,
            "conditions": [{
                "type": "Ready",
                "status": status,
                "observedGeneration": 1,
                "reason": reason,
                "message": message,
                "lastTransitionTime": "2026-11-30T08:00:00Z",
            }],
        } });
        api.patch_status(
            &self.cp.name,
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await
        .unwrap();
    }
}

/// What must not change when the requests are adopted: per request, its generation, spec,
/// finalizers and labels.
type Requests = Vec<RequestRow>;
/// One request: its name, generation, spec, finalizers and labels.
type RequestRow = (String, Option<i64>, Value, Value, Value);

async fn requests(env: &TestEnv) -> Requests {
    let selector = ListParams::default().labels(&format!("openmcp.cloud/managed-by={PROVIDER}"));
    let platform = env.platform().client();
    let mut all = Vec::new();
    for ar in Api::<AccessRequest>::all(platform.clone())
        .list(&selector)
        .await
        .unwrap()
    {
        all.push(request_row("AccessRequest", &ar));
    }
    for cr in Api::<ClusterRequest>::all(platform)
        .list(&selector)
        .await
        .unwrap()
    {
        all.push(request_row("ClusterRequest", &cr));
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// What the takeover must leave as it is of one request.
fn request_row<K: Resource + Serialize>(kind: &str, request: &K) -> RequestRow {
    let meta = request.meta();
    (
        format!("{kind} {}", meta.name.clone().unwrap_or_default()),
        meta.generation,
        json!(request)["spec"].clone(),
        json!(meta.finalizers),
        json!(meta.labels),
    )
}

/// Asserts that `now` holds the same requests as `then`, naming the first one that differs.
fn assert_unchanged(now: &Requests, then: &Requests, when: &str) {
    let names = |r: &Requests| r.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(now), names(then), "{when}: the same requests");
    for (now, then) in now.iter().zip(then) {
        assert_eq!(now, then, "{when}: {} changed", now.0);
    }
}

/// `service_provider_reconciles_total`, summed over its labels, from a metrics page.
fn reconciles(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("service_provider_reconciles_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_providers_tenants_are_taken_over_under_the_operators_command_line() {
    let long_namespace = format!("project-take--ws-{}", "n".repeat(23));
    let long_name = format!("tenant-{}", "l".repeat(56));
    assert_eq!((long_namespace.len(), long_name.len()), (40, 63));
    let tenants = [
        Tenant::new("project-take--ws-a", "alpha"),
        Tenant::new("project-take--ws-b", "beta"),
        Tenant::new(&long_namespace, &long_name),
    ];
    let mut builder = TestEnv::builder()
        .provider::<Foo>()
        .provider_initialized(false);
    for t in &tenants {
        builder = builder.control_plane(&t.cp.namespace, &t.cp.name);
    }
    support::logs();
    let env = builder
        .start()
        .await
        .expect("the simulated platform starts");
    assert_eq!(env.provider().unwrap().name(), PROVIDER);

    // ---- What the Go provider left.
    // Its init: the CRDs, and its kind in the ServiceProvider's status.
    let onboarding_crds: Api<CustomResourceDefinition> = Api::all(env.onboarding().client());
    onboarding_crds
        .create(&PostParams::default(), &go_foo_crd())
        .await
        .unwrap();
    Api::<CustomResourceDefinition>::all(env.platform().client())
        .create(&PostParams::default(), &go_provider_config_crd())
        .await
        .unwrap();
    let service_providers: Api<ServiceProviderObject> = Api::all(env.platform().client());
    service_providers
        .patch_status(
            PROVIDER,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": {
                "observedGeneration": 1,
                "phase": "Ready",
                "resources": [{ "group": GROUP, "version": "v1alpha1", "kind": "Foo" }],
            } })),
        )
        .await
        .unwrap();
    // The platform operator's ProviderConfig.
    let config_resource = ApiResource {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        api_version: format!("{GROUP}/v1alpha1"),
        kind: "ProviderConfig".into(),
        plural: "providerconfigs".into(),
    };
    let configs: Api<DynamicObject> = Api::all_with(env.platform().client(), &config_resource);
    let established = eventually("the Go CRDs to be served", TIMEOUT, || async {
        let mut config = DynamicObject::new(PROVIDER, &config_resource);
        config.data = json!({ "spec": { "pollInterval": "1m" } });
        configs.create(&PostParams::default(), &config).await.ok()
    })
    .await
    .unwrap();
    assert_eq!(established.metadata.name.as_deref(), Some(PROVIDER));
    // Its requests for the three tenants, granted by the platform; its objects, one of them
    // with a phase the Rust runtime never writes.
    for t in &tenants {
        t.leave_go_requests(&env).await;
    }
    tenants[0].leave_go_object(&env, "Ready", true).await;
    tenants[1].leave_go_object(&env, "Failed", false).await;
    tenants[2].leave_go_object(&env, "Ready", true).await;
    let go_requests = requests(&env).await;
    assert_eq!(go_requests.len(), 9, "three requests per tenant");
    // Its Lease, on the onboarding cluster in the provider's namespace, renewed by a Go replica
    // every RetryPeriod (2 s) with controller-runtime's 15 s lease duration.
    Api::<Namespace>::all(env.onboarding().client())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": env.pod_namespace() } }))
                .unwrap(),
        )
        .await
        .unwrap();
    let leases: Api<Lease> = Api::namespaced(env.onboarding().client(), env.pod_namespace());
    let now = || MicroTime(k8s_openapi::jiff::Timestamp::now());
    let go_lease: Lease = serde_json::from_value(json!({
        "metadata": { "name": LEADER_ELECTION_ID, "namespace": env.pod_namespace() },
        "spec": {
            "holderIdentity": GO_HOLDER,
            "leaseDurationSeconds": 15,
            "acquireTime": now(),
            "renewTime": now(),
            "leaseTransitions": 4,
        },
    }))
    .unwrap();
    leases
        .create(&PostParams::default(), &go_lease)
        .await
        .unwrap();
    let renewing = Arc::new(AtomicBool::new(true));
    let renewals = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let go_replica = tokio::spawn({
        let (leases, renewing, renewals) = (leases.clone(), renewing.clone(), renewals.clone());
        async move {
            while renewing.load(Ordering::SeqCst) {
                let mut lease = leases.get(LEADER_ELECTION_ID).await.unwrap();
                lease.spec.as_mut().unwrap().renew_time = Some(now());
                if leases
                    .replace(LEADER_ELECTION_ID, &PostParams::default(), &lease)
                    .await
                    .is_ok()
                {
                    renewals.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    });
    let objects: Vec<Api<Foo>> = tenants
        .iter()
        .map(|t| Api::namespaced(env.onboarding().client(), &t.cp.namespace))
        .collect();
    let mut go_objects = Vec::new();
    for (t, api) in tenants.iter().zip(&objects) {
        go_objects.push(api.get(&t.cp.name).await.expect("the Go object decodes"));
    }

    // ---- The Rust provider, as the operator starts it: the init Job, then a Deployment of two
    // replicas, with the platform cluster from KUBECONFIG.
    let operated = Operated::new("takeover", &env);
    let (status, stderr) = operated.init().await;
    assert_eq!(status.code(), Some(0), "init failed:\n{stderr}");
    // The Go CRD was found and updated, not joined by a second one for the same kind.
    let foo_crds: Vec<String> = onboarding_crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.spec.group == GROUP && c.spec.names.kind == "Foo")
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(foo_crds, [format!("foos.{GROUP}")]);

    let Deployed {
        mut process,
        metrics,
        ..
    } = operated.run("sp-foo-7d4c8b9f6-w5n3p", 2);

    // ---- It waits for the Lease: up, campaigning, and through two more Go renewals (longer
    // than its retry period) it has reconciled nothing and written nothing.
    eventually("the provider to campaign for the Lease", TIMEOUT, || {
        let logs = process.stderr();
        async move { logs.contains("campaigning for leadership").then_some(()) }
    })
    .await
    .unwrap();
    let seen = renewals.load(Ordering::SeqCst);
    eventually("two more renewals by the Go replica", TIMEOUT, || {
        let renewals = renewals.clone();
        async move { (renewals.load(Ordering::SeqCst) >= seen + 2).then_some(()) }
    })
    .await
    .unwrap();
    let page = support::http_get(metrics, "/metrics").await.unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert_eq!(
        reconciles(&page),
        0.0,
        "nothing reconciled while the Go replica leads:\n{page}"
    );
    for ((t, api), go) in tenants.iter().zip(&objects).zip(&go_objects) {
        let now = api.get(&t.cp.name).await.unwrap();
        assert_eq!(
            now.metadata.resource_version, go.metadata.resource_version,
            "{} untouched while the Go replica leads",
            t.cp.name
        );
    }
    assert_unchanged(
        &requests(&env).await,
        &go_requests,
        "while the Go replica leads",
    );
    let held = leases.get(LEADER_ELECTION_ID).await.unwrap().spec.unwrap();
    assert_eq!(held.holder_identity.as_deref(), Some(GO_HOLDER));

    // ---- The Go replica stops and releases its Lease as client-go does (ReleaseOnCancel): no
    // holder, a one-second duration.
    renewing.store(false, Ordering::SeqCst);
    go_replica.await.unwrap();
    let mut lease = leases.get(LEADER_ELECTION_ID).await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some(String::new());
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now());
    leases
        .replace(LEADER_ELECTION_ID, &PostParams::default(), &lease)
        .await
        .unwrap();

    // Every tenant Ready — the one the Go runtime left `Failed` too.
    for (t, api) in tenants.iter().zip(&objects) {
        support::wait(api, &t.cp.name, support::ready::<Foo>).await;
    }
    let ours = leases.get(LEADER_ELECTION_ID).await.unwrap().spec.unwrap();
    assert!(
        ours.holder_identity
            .as_deref()
            .is_some_and(|h| h.starts_with("sp-foo-7d4c8b9f6-w5n3p_")),
        "{ours:?}"
    );
    assert_eq!(ours.lease_transitions, Some(5));
    // Every request adopted as the Go provider left it: the same generation (no write the
    // operator would have to grant again), the same token, finalizer and labels; none added.
    assert_unchanged(&requests(&env).await, &go_requests, "after the takeover");
    for (t, api) in tenants.iter().zip(&objects) {
        let object = api.get(&t.cp.name).await.unwrap();
        assert_eq!(
            object.metadata.finalizers,
            Some(vec![format!("{GROUP}/finalizer")]),
            "the Go finalizer is the Rust one"
        );
    }

    // ---- One tenant deleted cleanly: the object goes (finalizer removed), its requests and
    // their credentials go, the others stay Ready.
    let gone = &tenants[2];
    objects[2]
        .delete(&gone.cp.name, &DeleteParams::default())
        .await
        .unwrap();
    support::wait(&objects[2], &gone.cp.name, |o: Option<&Foo>| o.is_none()).await;
    let ars: Api<AccessRequest> = Api::namespaced(env.platform().client(), &gone.platform_ns);
    let crs: Api<ClusterRequest> = Api::namespaced(env.platform().client(), &gone.platform_ns);
    let secrets: Api<Secret> = Api::namespaced(env.platform().client(), &gone.platform_ns);
    for name in [&gone.mcp_request, &gone.workload_request] {
        support::wait(&ars, name, |o: Option<&AccessRequest>| o.is_none()).await;
        support::wait(
            &secrets,
            &format!("{name}.kubeconfig"),
            |o: Option<&Secret>| o.is_none(),
        )
        .await;
    }
    support::wait(
        &crs,
        &gone.workload_request,
        |o: Option<&ClusterRequest>| o.is_none(),
    )
    .await;
    let others: Requests = go_requests
        .iter()
        .filter(|r| {
            ![&gone.mcp_request, &gone.workload_request]
                .iter()
                .any(|name| r.0.ends_with(&format!(" {name}")))
        })
        .cloned()
        .collect();
    assert_eq!(others.len(), 6);
    assert_unchanged(
        &requests(&env).await,
        &others,
        "after one tenant was deleted",
    );
    for (t, api) in tenants.iter().zip(&objects).take(2) {
        assert!(support::ready::<Foo>(
            api.get(&t.cp.name).await.ok().as_ref()
        ));
    }

    if let Ok(Some(status)) = process.child.try_wait() {
        panic!("run exited with {status}:\n{}", process.stderr());
    }
    process.terminate();
    let status = process.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{}", process.stderr());
}
