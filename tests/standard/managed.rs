//! Managed resources through the External Secrets Operator example: Ready only after the
//! simulated HelmRelease is, `status.resources` with every object, pull-secret copies that follow
//! the ProviderConfig, a failing HelmRelease's reason on the object, a dependency that never gets
//! ready holding back what needs it, and a delete in reverse order that orphans ESO's namespace
//! and gives the access back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use serde_json::json;
use service_provider::Mode;
use service_provider::dev::{ClusterHandle, ControlPlaneRef};
use service_provider::flux::{HelmRelease, OCIRepository};
use service_provider::kube::api::{DeleteParams, Patch, PatchParams};
use service_provider::kube::runtime::watcher;
use service_provider::kube::{Api, ResourceExt};
use service_provider::openmcp::AccessRequest;
use service_provider::openmcp::naming::stable_mcp_namespace;
use service_provider::testing::{TestError, TestPlatform};
use service_provider::{Identity, Location, ManagedResource, ResourcePhase};
use service_provider_apiserver::LoggedRequest;
use service_provider_runtime::dev::flux::FAIL_INSTALL_ANNOTATION;

use crate::eso::ExternalSecretsOperator;
use crate::support::{self, TIMEOUT};

const NAMESPACE: &str = "project-e--ws-s";
const NAME: &str = "tenant-e";

fn config(chart_url: &str) -> serde_json::Value {
    json!({
        "chartURL": chart_url,
        "chartPullSecret": "chart-creds",
        "imagePullSecrets": [{ "name": "regcred" }, { "name": "mirror" }],
        "helmValues": { "installCRDs": true },
        "pollInterval": "1m",
    })
}

/// The platform with the provider running and the pull secrets its ProviderConfig names.
async fn platform(chart_url: &str) -> Result<TestPlatform<ExternalSecretsOperator>, TestError> {
    let platform = support::platform::<ExternalSecretsOperator>(config(chart_url))
        .modes([Mode::Standard])
        .start()
        .await?;
    for name in ["chart-creds", "regcred", "mirror"] {
        platform
            .pull_secret(name, "registry.test", "robot", name)
            .await?;
    }
    Ok(platform)
}

/// The Service API objects in the tenant's namespace, watched from before the tenant exists.
fn objects(platform: &TestPlatform<ExternalSecretsOperator>) -> Api<ExternalSecretsOperator> {
    Api::namespaced(platform.onboarding().client(), NAMESPACE)
}

fn resources(eso: &ExternalSecretsOperator) -> Vec<ManagedResource> {
    eso.status
        .as_ref()
        .map(|s| s.resources.clone())
        .unwrap_or_default()
}

fn reason(eso: &ExternalSecretsOperator) -> Option<(String, String)> {
    let ready = eso.status.as_ref()?.condition("Ready")?;
    Some((ready.reason.clone(), ready.message.clone()))
}

/// Waits for the object to satisfy `check`, returning it.
async fn wait_for(
    api: &Api<ExternalSecretsOperator>,
    check: impl Fn(&ExternalSecretsOperator) -> bool + Send + Sync + 'static,
) -> ExternalSecretsOperator {
    support::wait(api, NAME, move |o: Option<&ExternalSecretsOperator>| {
        o.is_some_and(&check)
    })
    .await
    .expect("the object exists")
}

fn is_ready(o: &ExternalSecretsOperator) -> bool {
    support::ready(Some(o))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eso_installs_through_flux_and_uninstalls_in_reverse() -> Result<(), TestError> {
    let chart_url = "oci://registry.test/charts/external-secrets";
    let platform = platform(chart_url).await?;
    let env = platform.env();
    let cp = ControlPlaneRef::new(NAMESPACE, NAME);
    let api = objects(&platform);
    let provider = platform.provider_name().to_owned();
    let copy = |source: &str| format!("{provider}-{source}");

    // Every status the object goes through, in order.
    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let watch = {
        let (api, seen) = (api.clone(), seen.clone());
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
            while let Some(Ok(event)) = stream.next().await {
                if let watcher::Event::Apply(o) | watcher::Event::InitApply(o) = event
                    && let Some(r) = reason(&o)
                {
                    let mut seen = seen.lock().unwrap();
                    if seen.last() != Some(&r) {
                        seen.push(r);
                    }
                }
            }
        })
    };
    platform
        .create_tenant(
            &format!("{NAMESPACE}/{NAME}"),
            json!({ "version": "0.10.0" }),
        )
        .await?;
    let ready = wait_for(&api, is_ready).await;

    // Ready only after the HelmRelease was: the object waited for it, and it is Ready now.
    let workload = env
        .workload_clusters()
        .into_iter()
        .next()
        .expect("a workload cluster");
    let flux_ns = format!("eso-{}", Identity::standard(NAMESPACE, NAME).stable_id());
    let releases: Api<HelmRelease> = Api::namespaced(workload.client(), &flux_ns);
    let release = releases
        .get("external-secrets")
        .await
        .expect("the HelmRelease");
    let release_ready = release.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.reason.clone())
    });
    assert_eq!(release_ready.as_deref(), Some("InstallSucceeded"));
    watch.abort();
    let seen = seen.lock().unwrap().clone();
    let waited = seen.iter().position(|(r, _)| r == "WaitingForHelmRelease");
    let became_ready = seen.iter().position(|(r, _)| r == "ReconcileSuccess");
    assert!(
        matches!((waited, became_ready), (Some(w), Some(r)) if w < r),
        "the object waited for the HelmRelease before it was Ready: {seen:?}"
    );
    // The HelmRelease installs into the tenant's cluster with its kubeconfig.
    let spec = &release.spec;
    assert_eq!(spec.target_namespace.as_deref(), Some("external-secrets"));
    assert_eq!(
        spec.kube_config
            .as_ref()
            .and_then(|k| k.secret_ref.as_ref())
            .map(|s| s.name.as_str()),
        Some("external-secrets-kubeconfig")
    );
    assert_eq!(
        spec.values
            .as_ref()
            .map(|v| v["global"]["imagePullSecrets"].clone()),
        Some(json!([{ "name": copy("regcred") }, { "name": copy("mirror") }]))
    );
    let repo: Api<OCIRepository> = Api::namespaced(workload.client(), &flux_ns);
    let repo = repo
        .get("external-secrets")
        .await
        .expect("the OCIRepository");
    assert_eq!(
        repo.spec.secret_ref.as_ref().map(|s| s.name.as_str()),
        Some(copy("chart-creds").as_str())
    );

    // status.resources: every object, Ready, with its location.
    let listed: Vec<(String, String, Location, ResourcePhase)> = resources(&ready)
        .into_iter()
        .map(|r| (r.kind, r.name, r.location.expect("a location"), r.phase))
        .collect();
    let mcp = Location::ManagedControlPlane;
    let wl = Location::WorkloadCluster;
    let ok = ResourcePhase::Ready;
    for expected in [
        ("Namespace", "external-secrets".to_owned(), mcp),
        ("Secret", copy("regcred"), mcp),
        ("Secret", copy("mirror"), mcp),
        ("Namespace", flux_ns.clone(), wl),
        ("Secret", "external-secrets-kubeconfig".to_owned(), wl),
        ("Secret", copy("chart-creds"), wl),
        ("OCIRepository", "external-secrets".to_owned(), wl),
        ("HelmRelease", "external-secrets".to_owned(), wl),
    ] {
        assert!(
            listed.contains(&(expected.0.into(), expected.1.clone(), expected.2, ok)),
            "{expected:?} listed Ready in {listed:?}"
        );
    }
    assert_eq!(listed.len(), 8, "{listed:?}");

    // A pull secret the ProviderConfig no longer lists loses its copy.
    let tenant = env.mcp(&cp).expect("the MCP cluster");
    let copies: Api<Secret> = Api::namespaced(tenant.client(), "external-secrets");
    assert!(copies.get_opt(&copy("mirror")).await.unwrap().is_some());
    let mut narrower = config(chart_url);
    narrower["imagePullSecrets"] = json!([{ "name": "regcred" }]);
    platform.set_provider_config(&narrower).await?;
    let mirror = copy("mirror");
    let pruned = wait_for(&api, move |o| {
        !resources(o).iter().any(|r| r.name == mirror) && is_ready(o)
    })
    .await;
    assert!(copies.get_opt(&copy("mirror")).await.unwrap().is_none());
    assert!(copies.get_opt(&copy("regcred")).await.unwrap().is_some());
    assert_eq!(resources(&pruned).len(), 7);

    // A HelmRelease that fails shows its reason on the object.
    releases
        .patch(
            "external-secrets",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": {
                FAIL_INSTALL_ANNOTATION: "values don't meet the specifications of the schema(s)"
            } } })),
        )
        .await
        .expect("the fault is injected");
    // Nothing watches the workload cluster's objects: the end user asks for a reconcile.
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(
            json!({ "metadata": { "annotations": { "openmcp.cloud/operation": "reconcile" } } }),
        ),
    )
    .await
    .expect("a reconcile is asked for");
    let failing = wait_for(&api, |o| {
        reason(o).is_some_and(|(r, _)| r == "HelmReleaseFailed")
    })
    .await;
    let (_, message) = reason(&failing).expect("a reason");
    assert!(
        message.contains("InstallFailed: values don't meet the specifications"),
        "{message}"
    );
    assert!(
        resources(&failing)
            .iter()
            .any(|r| r.kind == "HelmRelease" && r.phase == ResourcePhase::Failed)
    );

    // Delete: the objects go in reverse order, ESO's namespace stays without its set label, and
    // the access is given back after — in the order the servers answered the requests.
    let clusters = [tenant.clone(), workload.clone(), env.platform().clone()];
    for cluster in &clusters {
        cluster.counters().start_log();
    }
    api.delete(NAME, &DeleteParams::default())
        .await
        .expect("the delete is accepted");
    support::wait(&api, NAME, |o: Option<&ExternalSecretsOperator>| {
        o.is_none()
    })
    .await;
    let namespaces: Api<Namespace> = Api::all(workload.client());
    tokio::time::timeout(TIMEOUT, async {
        while namespaces.get_opt(&flux_ns).await.ok().flatten().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the tenant's namespace on the workload cluster goes");
    let deletes = deletes_in_order(&clusters);
    let at = |resource: &str, name: &str| {
        deletes
            .iter()
            .position(|(r, n)| r == resource && n == name)
            .unwrap_or_else(|| panic!("{resource} {name} deleted: {deletes:?}"))
    };
    let release_at = at("helmreleases", "external-secrets");
    let repo_at = at("ocirepositories", "external-secrets");
    let kubeconfig_at = at("secrets", "external-secrets-kubeconfig");
    assert!(release_at < repo_at, "{deletes:?}");
    assert!(repo_at < at("secrets", &copy("chart-creds")), "{deletes:?}");
    assert!(release_at < kubeconfig_at, "{deletes:?}");
    assert!(kubeconfig_at < at("namespaces", &flux_ns), "{deletes:?}");
    // The HelmRelease needed the pull-secret copies in the tenant's cluster: they go after it.
    assert!(release_at < at("secrets", &copy("regcred")), "{deletes:?}");
    // ESO's namespace is never deleted.
    assert!(
        !deletes
            .iter()
            .any(|(r, n)| r == "namespaces" && n == "external-secrets"),
        "{deletes:?}"
    );
    // The access goes only once every member is gone.
    let last_member = [
        release_at,
        repo_at,
        kubeconfig_at,
        at("secrets", &copy("chart-creds")),
        at("secrets", &copy("regcred")),
        at("namespaces", &flux_ns),
    ]
    .into_iter()
    .max()
    .expect("members deleted");
    let first_access = deletes
        .iter()
        .position(|(r, _)| r == "accessrequests")
        .unwrap_or_else(|| panic!("the access is given back: {deletes:?}"));
    assert!(last_member < first_access, "{deletes:?}");

    let eso_ns = Api::<Namespace>::all(tenant.client())
        .get("external-secrets")
        .await
        .expect("ESO's namespace stays in the tenant's cluster");
    assert!(
        !eso_ns
            .labels()
            .contains_key("applyset.kubernetes.io/part-of")
    );
    assert!(copies.get_opt(&copy("regcred")).await.unwrap().is_none());
    let platform_ns = stable_mcp_namespace(NAME, NAMESPACE).unwrap();
    let ars: Api<AccessRequest> = Api::namespaced(env.platform().client(), &platform_ns);
    assert!(
        ars.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    platform.stop().await;
    Ok(())
}

/// The first delete request of each object on these clusters, as (resource, name), in the
/// order the servers answered them (the embedded servers' request logs).
fn deletes_in_order(clusters: &[ClusterHandle]) -> Vec<(String, String)> {
    let mut log: Vec<LoggedRequest> = Vec::new();
    for cluster in clusters {
        let label = cluster.counter_label();
        // Clusters sharing a server share its log: each entry once.
        for entry in cluster.counters().log() {
            if entry.cluster == label && !log.iter().any(|e| e.sequence == entry.sequence) {
                log.push(entry);
            }
        }
    }
    log.sort_by_key(|e| e.sequence);
    let mut deletes: Vec<(String, String)> = Vec::new();
    for entry in log {
        let object = (entry.resource, entry.name);
        if entry.verb == "delete" && !deletes.contains(&object) {
            deletes.push(object);
        }
    }
    deletes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_that_never_gets_ready_holds_back_what_needs_it() -> Result<(), TestError> {
    // No path after the host: the OCIRepository fails, so the HelmRelease is never applied.
    let platform = platform("oci://registry.test").await?;
    let api = objects(&platform);
    platform
        .create_tenant(
            &format!("{NAMESPACE}/{NAME}"),
            json!({ "version": "0.10.0" }),
        )
        .await?;
    let held = wait_for(&api, |o| {
        reason(o).is_some_and(|(r, _)| r == "OCIRepositoryFailed")
    })
    .await;
    let (_, message) = reason(&held).expect("a reason");
    assert!(message.contains("URLInvalid"), "{message}");
    let release = resources(&held)
        .into_iter()
        .find(|r| r.kind == "HelmRelease")
        .expect("the HelmRelease is listed");
    assert_eq!(release.phase, ResourcePhase::Pending);
    assert!(
        release
            .message
            .as_deref()
            .is_some_and(|m| m.contains("waiting for OCIRepository")),
        "{release:?}"
    );
    let workload = platform
        .env()
        .workload_clusters()
        .into_iter()
        .next()
        .expect("a workload cluster");
    let flux_ns = format!("eso-{}", Identity::standard(NAMESPACE, NAME).stable_id());
    let releases: Api<HelmRelease> = Api::namespaced(workload.client(), &flux_ns);
    assert!(
        releases
            .get_opt("external-secrets")
            .await
            .unwrap()
            .is_none()
    );
    platform.stop().await;
    Ok(())
}
