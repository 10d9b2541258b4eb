//! The unchanged Velero example serving three consumer workspaces: Ready with status visible
//! through each workspace URL, the worker's kubeconfig good in its own workspace only, the same
//! object name in every workspace without collisions, and a delete that leaves nothing behind.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::kube::Api;
use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
use service_provider::openmcp::{AccessRequest, ClusterRequest};
use service_provider::testing::{Tenant, TestError, eventually};
use service_provider::{Location, Mode, ResourcePhase};

use crate::support::{self, TIMEOUT, ready_condition};
use crate::velero::Velero;

/// Every workspace's object has this name: each workspace is a tenant of its own.
const NAME: &str = "velero";
const FINALIZER: &str = "velero.services.open-control-plane.io/finalizer";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_serves_three_workspaces_and_cleans_up() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Kcp])
        .start()
        .await?;
    let mut consumers = Vec::new();
    for team in ["team-a", "team-b", "team-c"] {
        let tenant = platform
            .create_kcp_tenant(
                &format!("root:{team}:{NAME}"),
                json!({ "version": "1.15.0" }),
            )
            .await?;
        assert_eq!(tenant.name(), NAME);
        consumers.push(tenant);
    }

    // Ready, with the status the tenant reads through the workspace URL.
    let mut worker_namespaces = HashSet::new();
    for ws in &consumers {
        let ready = ws.wait_ready().await?;
        let status = ready.status.as_ref().expect("status");
        assert_eq!(status.observed_generation, Some(1));
        assert_eq!(status.extra.installed_version.as_deref(), Some("1.15.0"));
        let (ok, reason, _) = ready_condition(&ready).unwrap();
        assert_eq!((ok.as_str(), reason.as_str()), ("True", "ReconcileSuccess"));
        assert!(
            ready
                .metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == FINALIZER)
        );
        let worker_ns = format!("velero-{}", ws.identity().stable_id());
        assert_eq!(
            status.extra.worker_namespace.as_deref(),
            Some(worker_ns.as_str())
        );
        // status.resources: Velero's API in the workspace, the worker on the workload cluster,
        // every one Ready.
        let mut listed: Vec<(String, String, Location, ResourcePhase)> = status
            .resources
            .iter()
            .map(|r| {
                let location = r.location.expect("a location");
                (r.kind.clone(), r.name.clone(), location, r.phase)
            })
            .collect();
        listed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let (mcp, wl, ok) = (
            Location::ManagedControlPlane,
            Location::WorkloadCluster,
            ResourcePhase::Ready,
        );
        let crd = |plural: &str| {
            (
                "CustomResourceDefinition".to_owned(),
                format!("{plural}.velero.io"),
                mcp,
                ok,
            )
        };
        assert_eq!(
            listed,
            vec![
                crd("backups"),
                crd("backupstoragelocations"),
                crd("restores"),
                crd("schedules"),
                ("Deployment".into(), "velero".into(), wl, ok),
                ("Namespace".into(), worker_ns.clone(), wl, ok),
                ("Secret".into(), "tenant-kubeconfig".into(), wl, ok),
            ]
        );
        worker_namespaces.insert(worker_ns);
        // Velero's API went into the workspace.
        let crds: Api<CustomResourceDefinition> = Api::all(ws.mcp().client());
        assert!(crds.get_opt("backups.velero.io").await?.is_some());
    }
    // kcp mode's controller is `<provider>-kcp` in controller-runtime's metrics; each Ready
    // object is due again at the poll interval (`requeue_after`), counted once it returned.
    let metrics = eventually(
        "kcp mode's reconciles to be counted",
        TIMEOUT,
        || async {
            let metrics = platform.metrics().ok()?;
            let requeued: f64 = metrics
                .lines()
                .find_map(|l| {
                    l.strip_prefix(
                        r#"controller_runtime_reconcile_total{controller="velero-kcp",result="requeue_after"} "#,
                    )
                })?
                .parse()
                .ok()?;
            (requeued >= 3.0).then_some(metrics)
        },
    )
    .await?;
    assert!(
        !metrics.contains(r#"controller="velero""#),
        "standard mode does not run here, so it has no series:\n{metrics}"
    );
    // The same object name in three workspaces: three tenants.
    assert_eq!(worker_namespaces.len(), 3);
    let source = platform.kcp_source().expect("kcp mode runs");
    assert_eq!(source.engaged(), 3);

    // The worker's kubeconfig (on the shared workload cluster) reaches its own workspace only.
    let workload = platform
        .workload_clusters()
        .into_iter()
        .next()
        .expect("a workload cluster");
    let kubeconfig_of = |ws: &Tenant<Velero>| {
        let ns = format!("velero-{}", ws.identity().stable_id());
        let secrets: Api<Secret> = Api::namespaced(workload.client(), &ns);
        async move {
            let secret = secrets
                .get("tenant-kubeconfig")
                .await
                .expect("the tenant kubeconfig Secret");
            String::from_utf8(secret.data.unwrap()["kubeconfig"].0.clone()).unwrap()
        }
    };
    let factory = service_provider_runtime::access::clients::ClientFactory::new();
    let own = kubeconfig_of(&consumers[0]).await;
    assert!(
        own.contains(&format!(
            "/clusters/{}",
            crate::workspace_cluster(&consumers[0])
        )),
        "points at its workspace"
    );
    let client = factory
        .client(own.as_bytes())
        .await
        .expect("the worker kubeconfig parses");
    Api::<CustomResourceDefinition>::all(client)
        .get("backups.velero.io")
        .await
        .expect("the worker's token works in its own workspace");
    for other in &consumers[1..] {
        let elsewhere = own.replace(
            &format!("/clusters/{}", crate::workspace_cluster(&consumers[0])),
            &format!("/clusters/{}", crate::workspace_cluster(other)),
        );
        let client = factory.client(elsewhere.as_bytes()).await.unwrap();
        let err = Api::<CustomResourceDefinition>::all(client)
            .get("backups.velero.io")
            .await
            .expect_err("the worker's token is refused in another workspace");
        assert!(
            matches!(&err, service_provider::kube::Error::Api(s) if s.code == 404 || s.code == 403),
            "{err}"
        );
    }

    // Access objects on the platform: one set per workspace, under `<cluster>_<namespace>`.
    let platform_client = platform.env().platform().client();
    let mut platform_namespaces = HashSet::new();
    for ws in &consumers {
        let ns = stable_mcp_namespace(NAME, &ws.identity().access_namespace()).unwrap();
        let wl = stable_request_name("velero", NAME, "wl").unwrap();
        let ar = Api::<AccessRequest>::namespaced(platform_client.clone(), &ns)
            .get(&wl)
            .await
            .expect("the workload AccessRequest");
        let labels = ar.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels.get("openmcp.cloud/onboarding-namespace"),
            Some(&format!("{}_default", crate::workspace_cluster(ws)))
        );
        platform_namespaces.insert(ns);
    }
    assert_eq!(platform_namespaces.len(), 3);

    // The runtime's ServiceAccount in every workspace, with its grants.
    for ws in &consumers {
        let sas: Api<ServiceAccount> = Api::namespaced(ws.mcp().client(), "openmcp-system");
        assert!(sas.get_opt("velero").await?.is_some());
    }

    // Delete in the first workspace: the author's delete ran, then workload access, then the
    // workspace credential, then the finalizer.
    let ws = &consumers[0];
    ws.delete().await?;
    ws.wait_gone().await?;
    let worker_ns = format!("velero-{}", ws.identity().stable_id());
    workload.wait_gone::<Namespace>(&worker_ns).await?;
    ws.mcp()
        .wait_gone::<CustomResourceDefinition>("backups.velero.io")
        .await?;
    let ns = stable_mcp_namespace(NAME, &ws.identity().access_namespace()).unwrap();
    let wl = stable_request_name("velero", NAME, "wl").unwrap();
    let ars: Api<AccessRequest> = Api::namespaced(platform_client.clone(), &ns);
    support::wait(&ars, &wl, |o: Option<&AccessRequest>| o.is_none()).await;
    let crs: Api<ClusterRequest> = Api::namespaced(platform_client, &ns);
    support::wait(&crs, &wl, |o: Option<&ClusterRequest>| o.is_none()).await;
    let admin = ws.mcp().client();
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "openmcp-system");
    assert!(
        sas.get_opt("velero").await.unwrap().is_none(),
        "the ServiceAccount is gone"
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    for name in [
        "openmcp:velero:workspace-admin",
        "openmcp:velero:token-minter",
    ] {
        assert!(
            bindings.get_opt(name).await.unwrap().is_none(),
            "{name} is gone"
        );
    }
    let roles: Api<ClusterRole> = Api::all(admin);
    assert!(
        roles
            .get_opt("openmcp:velero:token-minter")
            .await
            .unwrap()
            .is_none()
    );
    // The worker's old token stopped working.
    let client = factory.client(own.as_bytes()).await.unwrap();
    let err = Api::<CustomResourceDefinition>::all(client)
        .list(&Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, service_provider::kube::Error::Api(s) if s.code == 401),
        "{err}"
    );

    // The other tenants are untouched.
    for other in &consumers[1..] {
        assert!(support::ready(Some(&other.get().await?)));
        let sas: Api<ServiceAccount> = Api::namespaced(other.mcp().client(), "openmcp-system");
        assert!(sas.get_opt("velero").await?.is_some());
    }
    // One token per workspace so far.
    assert_eq!(source.credentials().minted(), 3);
    // Never refused anything it needs.
    assert_eq!(platform.env().forbidden_requests(), Vec::<String>::new());
    platform.stop().await;
    Ok(())
}
