//! A Velero object from create to delete: Ready with observedGeneration, the CRDs in the MCP, the
//! worker on the workload cluster, a spec change re-installed, and a delete that leaves nothing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::Mode;
use service_provider::kube::Api;
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::openmcp::{AccessRequest, ClusterRequest};
use service_provider::testing::TestError;

use crate::support;
use crate::velero::Velero;

const NAMESPACE: &str = "project-a--ws-b";
const NAME: &str = "tenant-a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_installs_updates_and_uninstalls() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Standard])
        .start()
        .await?;
    // A second tenant on the same workload cluster, which stays: uninstalling one tenant must
    // not touch the other (and keeps the shared workload cluster alive to look at).
    let other = platform
        .create_tenant(
            &format!("{NAMESPACE}/tenant-b"),
            json!({ "version": "1.15.0" }),
        )
        .await?;
    let tenant = platform
        .create_tenant(
            &format!("{NAMESPACE}/{NAME}"),
            json!({ "version": "1.15.0" }),
        )
        .await?;

    let ready = tenant.wait_ready().await?;
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
    let mcp = tenant.mcp();
    for crd in [
        "backups.velero.io",
        "restores.velero.io",
        "schedules.velero.io",
        "backupstoragelocations.velero.io",
    ] {
        mcp.get::<CustomResourceDefinition>(crd).await?;
    }

    // The worker runs on the workload cluster, in the tenant's namespace, with a kubeconfig that
    // reaches the MCP.
    let worker_ns = format!("velero-{}", tenant.identity().stable_id());
    assert_eq!(
        status.extra.worker_namespace.as_deref(),
        Some(worker_ns.as_str())
    );
    let workload = tenant.workload().await?;
    let worker = format!("{worker_ns}/velero");
    let image = |d: &Deployment| {
        d.spec.template.spec.as_ref().unwrap().containers[0]
            .image
            .clone()
            .unwrap()
    };
    assert_eq!(
        image(&workload.get(&worker).await?),
        "registry.test/velero/velero:1.15.0"
    );
    let secret: Secret = workload
        .get(&format!("{worker_ns}/tenant-kubeconfig"))
        .await?;
    let kubeconfig = &secret.data.as_ref().unwrap()["kubeconfig"].0;
    let tenant_client = service_provider_runtime::access::clients::ClientFactory::new()
        .client(kubeconfig)
        .await
        .expect("the tenant kubeconfig parses");
    Api::<CustomResourceDefinition>::all(tenant_client)
        .get("backups.velero.io")
        .await
        .expect("the worker's kubeconfig reaches the MCP");

    // Access objects, named and labelled as the Go runtime names them.
    let requests = platform.platform();
    let platform_ns = stable_mcp_namespace(NAME, NAMESPACE).unwrap();
    let mcp_ar = format!(
        "{platform_ns}/{}",
        stable_request_name("velero", NAME, "mcp").unwrap()
    );
    let wl = format!(
        "{platform_ns}/{}",
        stable_request_name("velero", NAME, "wl").unwrap()
    );
    let ar: AccessRequest = requests.get(&mcp_ar).await?;
    let labels = ar.metadata.labels.clone().unwrap_or_default();
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
        ar.spec.request_ref.as_ref().map(|r| r.name.as_str()),
        Some(NAME)
    );
    assert_eq!(
        requests.get::<ClusterRequest>(&wl).await?.spec.purpose,
        "workload"
    );
    requests.get::<AccessRequest>(&wl).await?;

    // A spec change is re-installed and tracked by generation.
    tenant.set_spec(json!({ "version": "1.16.1" })).await?;
    let updated = tenant.wait_ready().await?;
    assert_eq!(updated.metadata.generation, Some(2));
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
        image(&workload.get(&worker).await?),
        "registry.test/velero/velero:v1.16.1"
    );

    // Delete: the author's delete ran (worker and CRDs gone), access given back, object gone.
    other.wait_ready().await?;
    let other_ns = format!("velero-{}", other.identity().stable_id());
    tenant.delete().await?;
    tenant.wait_gone().await?;
    workload.wait_gone::<Namespace>(&worker_ns).await?;
    for crd in ["backups.velero.io", "schedules.velero.io"] {
        mcp.wait_gone::<CustomResourceDefinition>(crd).await?;
    }
    for name in [&mcp_ar, &wl] {
        requests.wait_gone::<AccessRequest>(name).await?;
    }
    requests.wait_gone::<ClusterRequest>(&wl).await?;
    // The other tenant keeps its worker.
    assert!(
        workload.get_opt::<Namespace>(&other_ns).await?.is_some(),
        "the other tenant's worker namespace stays"
    );
    workload
        .get::<Deployment>(&format!("{other_ns}/velero"))
        .await?;

    assert_eq!(platform.env().forbidden_requests(), Vec::<String>::new());
    platform.stop().await;
    Ok(())
}
