//! A Velero object from create to delete: Ready with observedGeneration, the CRDs in the MCP, the
//! worker on the workload cluster, a spec change re-installed, and a delete that leaves nothing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::Identity;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider::kube::api::{DeleteParams, Patch, PatchParams};
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::openmcp::{AccessRequest, ClusterRequest};

use crate::common::{self, TIMEOUT};
use crate::velero::Velero;

const NAMESPACE: &str = "project-a--ws-b";
const NAME: &str = "tenant-a";
/// A second tenant on the same workload cluster, which stays: uninstalling one tenant must not
/// touch the other (and keeps the shared workload cluster alive to look at).
const OTHER: &str = "tenant-b";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_installs_updates_and_uninstalls() {
    let env = common::env::<Velero>(
        common::velero_config(),
        &[(NAMESPACE, NAME), (NAMESPACE, OTHER)],
    )
    .await;
    let cp = ControlPlaneRef::new(NAMESPACE, NAME);
    let runtime = common::start::<Velero>(&env, |_| {}).await;
    common::create::<Velero>(
        &env,
        &ControlPlaneRef::new(NAMESPACE, OTHER),
        json!({ "version": "1.15.0" }),
    )
    .await;

    common::create::<Velero>(&env, &cp, json!({ "version": "1.15.0" })).await;
    let veleros = common::objects::<Velero>(&env, &cp);
    let ready = common::wait(&veleros, NAME, common::ready::<Velero>)
        .await
        .expect("exists");
    let status = ready.status.as_ref().expect("status");
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(status.extra.installed_version.as_deref(), Some("1.15.0"));
    let condition = status.condition("Ready").expect("Ready condition");
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "ReconcileSuccess")
    );
    assert!(
        ready
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "velero.services.open-control-plane.io/finalizer")
    );

    // The Velero API is in the tenant's MCP cluster.
    let mcp = env.mcp(&cp).expect("the MCP cluster");
    let crds: Api<CustomResourceDefinition> = Api::all(mcp.client());
    for crd in [
        "backups.velero.io",
        "restores.velero.io",
        "schedules.velero.io",
        "backupstoragelocations.velero.io",
    ] {
        assert!(
            crds.get_opt(crd).await.unwrap().is_some(),
            "{crd} in the MCP"
        );
    }

    // The worker runs on the workload cluster, in the tenant's namespace, with a kubeconfig that
    // reaches the MCP.
    let identity = Identity::standard(NAMESPACE, NAME);
    let worker_ns = format!("velero-{}", identity.stable_id());
    assert_eq!(
        status.extra.worker_namespace.as_deref(),
        Some(worker_ns.as_str())
    );
    let workload = env
        .workload_clusters()
        .into_iter()
        .next()
        .expect("a workload cluster");
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), &worker_ns);
    let deployment = deployments
        .get("velero")
        .await
        .expect("the worker Deployment");
    let image = |d: &Deployment| {
        d.spec.template.spec.as_ref().unwrap().containers[0]
            .image
            .clone()
            .unwrap()
    };
    assert_eq!(image(&deployment), "registry.test/velero/velero:1.15.0");
    let secret = Api::<Secret>::namespaced(workload.client(), &worker_ns)
        .get("tenant-kubeconfig")
        .await
        .expect("the tenant kubeconfig Secret");
    let kubeconfig = &secret.data.as_ref().unwrap()["kubeconfig"].0;
    let tenant = service_provider_runtime::access::clients::ClientFactory::new()
        .client(kubeconfig)
        .await
        .expect("the tenant kubeconfig parses");
    Api::<CustomResourceDefinition>::all(tenant)
        .get("backups.velero.io")
        .await
        .expect("the worker's kubeconfig reaches the MCP");

    // Access objects, named and labelled as the Go runtime names them.
    let platform_ns = stable_mcp_namespace(NAME, NAMESPACE).unwrap();
    let ars: Api<AccessRequest> = Api::namespaced(env.platform().client(), &platform_ns);
    let mcp_ar = ars
        .get(&stable_request_name("velero", NAME, "mcp").unwrap())
        .await
        .expect("MCP AccessRequest");
    let labels = mcp_ar.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("openmcp.cloud/managed-by").map(String::as_str),
        Some("velero")
    );
    assert_eq!(
        labels
            .get("openmcp.cloud/managed-purpose")
            .map(String::as_str),
        Some("project-a--ws-b.tenant-a.mcp")
    );
    assert_eq!(
        mcp_ar.spec.request_ref.as_ref().map(|r| r.name.as_str()),
        Some(NAME)
    );
    let crs: Api<ClusterRequest> = Api::namespaced(env.platform().client(), &platform_ns);
    let wl = stable_request_name("velero", NAME, "wl").unwrap();
    assert_eq!(
        crs.get(&wl)
            .await
            .expect("workload ClusterRequest")
            .spec
            .purpose,
        "workload"
    );
    ars.get(&wl).await.expect("workload AccessRequest");

    // A spec change is re-installed and tracked by generation.
    veleros
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "version": "1.16.1" } })),
        )
        .await
        .unwrap();
    let updated = common::wait(&veleros, NAME, |o: Option<&Velero>| {
        common::ready(o) && o.is_some_and(|o| o.metadata.generation == Some(2))
    })
    .await
    .unwrap();
    assert_eq!(
        updated
            .status
            .as_ref()
            .unwrap()
            .extra
            .installed_version
            .as_deref(),
        Some("1.16.1")
    );
    assert_eq!(
        image(&deployments.get("velero").await.unwrap()),
        "registry.test/velero/velero:v1.16.1"
    );

    // Delete: the author's delete ran (worker and CRDs gone), access given back, object gone.
    common::wait(&veleros, OTHER, common::ready::<Velero>).await;
    let other_ns = format!(
        "velero-{}",
        Identity::standard(NAMESPACE, OTHER).stable_id()
    );
    veleros
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    common::wait(&veleros, NAME, |o: Option<&Velero>| o.is_none()).await;
    let namespaces: Api<Namespace> = Api::all(workload.client());
    common::wait(&namespaces, &worker_ns, |o: Option<&Namespace>| o.is_none()).await;
    for crd in ["backups.velero.io", "schedules.velero.io"] {
        common::wait(&crds, crd, |o: Option<&CustomResourceDefinition>| {
            o.is_none()
        })
        .await;
    }
    for name in [
        stable_request_name("velero", NAME, "mcp").unwrap(),
        wl.clone(),
    ] {
        common::wait(&ars, &name, |o: Option<&AccessRequest>| o.is_none()).await;
    }
    common::wait(&crs, &wl, |o: Option<&ClusterRequest>| o.is_none()).await;
    // The other tenant keeps its worker.
    assert!(
        namespaces.get_opt(&other_ns).await.unwrap().is_some(),
        "the other tenant's worker namespace stays"
    );
    Api::<Deployment>::namespaced(workload.client(), &other_ns)
        .get("velero")
        .await
        .expect("the other tenant's worker stays");

    assert_eq!(
        common::forbidden(env.platform().counters()),
        Vec::<String>::new()
    );
    assert_eq!(
        common::forbidden(env.onboarding().counters()),
        Vec::<String>::new()
    );
    let _ = TIMEOUT;
    common::stop(runtime).await;
}
