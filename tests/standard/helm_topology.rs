//! `examples/cert-manager` with the author's test kit, in both modes: the chart goes where each
//! part of it can run (whole into an MCP; its CRDs into a kcp workspace and its controllers onto
//! the workload cluster), pull secrets follow the pods, the chart's tag is written the way its
//! registry tags it, the platform's CA bundle is copied and mounted where the pods run, an end
//! user's Certificate holds the uninstall. A chart that would put
//! workloads into a workspace is invalid input, and the simulated Flux fails such a release as
//! Helm would against kcp.

use std::time::{Duration, Instant};

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use service_provider::flux::{HelmRelease, OCIRepository};
use service_provider::k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use service_provider::k8s_openapi::api::rbac::v1::ClusterRole;
use service_provider::kube::Api;
use service_provider::prelude::*;
use service_provider::testing::{Cluster, Tenant, TestError, TestPlatform, reason};
use service_provider::{ChartKind, HelmChart, HelmInstall};

use crate::cert_manager::{CertManager, DEFAULT_CHART};
use crate::support;

/// The end user's object the uninstall waits for (the real CRD's schema is far larger).
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cert-manager.io",
    version = "v1",
    kind = "Certificate",
    namespaced
)]
pub(crate) struct CertificateSpec {
    #[serde(default)]
    secret_name: String,
}

/// A CA certificate as a platform operator would put it into the ConfigMap.
const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBcorporate\n-----END CERTIFICATE-----\n";

const KINDS_ANNOTATION: &str = "service-provider.openmcp.cloud/chart-kinds";

/// The tenant's namespace on the workload cluster, holding its Flux objects.
fn flux_namespace(tenant: &Tenant<CertManager>) -> String {
    format!("cert-manager-{}", tenant.identity().stable_id())
}

fn kinds(release: &HelmRelease) -> &str {
    release
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(KINDS_ANNOTATION))
        .map(String::as_str)
        .unwrap_or_default()
}

/// The pull secret copies in `namespace` of `cluster`.
async fn pull_copies(cluster: &Cluster, namespace: &str) -> Result<Vec<String>, TestError> {
    Ok(cluster
        .list::<Secret>(Some(namespace))
        .await?
        .into_iter()
        .filter(|s| s.type_.as_deref() == Some("kubernetes.io/dockerconfigjson"))
        .map(|s| s.metadata.name.unwrap_or_default())
        .collect())
}

/// cert-manager in both modes, with the pull secret its ProviderConfig names; the CA bundle it
/// names is left to the test ([`ca_bundle`]).
pub(crate) async fn platform() -> Result<TestPlatform<CertManager>, TestError> {
    let platform = support::platform::<CertManager>(json!({
        "versions": [{ "version": "1.17.2" }],
        "imagePullSecrets": [{ "name": "regcred" }],
        "caBundleRef": { "name": "corporate-ca", "key": "ca.crt" },
        "pollInterval": "10m",
    }))
    .modes([Mode::Standard, Mode::Kcp])
    .timeout(Duration::from_secs(60))
    .start()
    .await?;
    platform
        .pull_secret("regcred", "registry.test", "robot", "s3cret")
        .await?;
    Ok(platform)
}

/// The CA bundle the ProviderConfig names, as the platform operator creates it.
pub(crate) async fn ca_bundle(platform: &TestPlatform<CertManager>) -> Result<(), TestError> {
    let mut bundle = ConfigMap::default();
    bundle.metadata.name = Some("corporate-ca".into());
    bundle.metadata.namespace = Some(platform.env().pod_namespace().to_owned());
    bundle.data = Some([("ca.crt".to_owned(), CA.to_owned())].into());
    platform.platform().create(&bundle).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_part_of_the_chart_goes_where_it_can_run_in_both_modes() -> Result<(), TestError> {
    let platform = platform().await?;
    let standard = platform
        .create_tenant("certs", json!({ "version": "1.17.2" }))
        .await?;
    // The CA bundle the ProviderConfig names does not exist yet: the object says which, and
    // goes on once the operator creates it.
    let waiting = standard
        .wait_until("to name the missing CA bundle", |o| {
            support::ready_condition(o)
                .is_some_and(|(_, _, message)| message.contains("caBundleRef"))
        })
        .await?;
    let (_, _, message) = support::ready_condition(&waiting).unwrap();
    assert!(message.contains("ConfigMap corporate-ca"), "{message}");
    ca_bundle(&platform).await?;
    let kcp = platform
        .create_kcp_tenant("certs", json!({ "version": "1.17.2" }))
        .await?;
    standard.wait_ready().await?;
    kcp.wait_ready().await?;

    // Standard mode: one release of the whole chart into the MCP, pods pulling with the copy
    // beside them; the chart comes from its well-known home, tagged as jetstack tags it.
    let workload = standard.workload().await?;
    let flux = flux_namespace(&standard);
    let releases = workload.list::<HelmRelease>(Some(&flux)).await?;
    assert_eq!(releases.len(), 1, "{releases:?}");
    let release = &releases[0];
    assert!(release.spec.kube_config.is_some());
    assert_eq!(
        release.spec.target_namespace.as_deref(),
        Some("cert-manager")
    );
    assert!(
        kinds(release).contains("apps/v1/Deployment"),
        "{}",
        kinds(release)
    );
    let source: OCIRepository = workload.get(&format!("{flux}/cert-manager")).await?;
    assert_eq!(source.spec.url, DEFAULT_CHART);
    assert_eq!(
        source.spec.reference.and_then(|r| r.tag).as_deref(),
        Some("v1.17.2")
    );
    assert_eq!(pull_copies(standard.mcp(), "cert-manager").await?.len(), 1);
    let ca_copy = release.spec.values.as_ref().unwrap()["volumes"][0]["configMap"]["name"]
        .as_str()
        .expect("the CA bundle is mounted")
        .to_owned();
    let copy: ConfigMap = standard
        .mcp()
        .get(&format!("cert-manager/{ca_copy}"))
        .await?;
    assert_eq!(copy.data.unwrap()["ca.crt"], CA);

    // kcp mode: the CRDs into the workspace, the controllers onto the workload cluster in the
    // tenant's namespace, reaching the workspace through the tenant kubeconfig Secret there.
    let workload = kcp.workload().await?;
    let flux = flux_namespace(&kcp);
    let api: HelmRelease = workload.get(&format!("{flux}/cert-manager")).await?;
    assert!(api.spec.kube_config.is_some());
    assert_eq!(
        kinds(&api),
        "apiextensions.k8s.io/v1/CustomResourceDefinition,rbac.authorization.k8s.io/v1/ClusterRole"
    );
    let running: HelmRelease = workload
        .get(&format!("{flux}/cert-manager-workload"))
        .await?;
    assert!(
        running.spec.kube_config.is_none(),
        "onto the workload cluster itself"
    );
    assert_eq!(
        running.spec.target_namespace.as_deref(),
        Some(flux.as_str())
    );
    assert!(kinds(&running).contains("apps/v1/Deployment"));
    // The controllers reach the workspace with credentials of their own: a ServiceAccount
    // there with cert-manager's rules only, not the provider's access.
    let values = running.spec.values.clone().unwrap_or_default();
    assert_eq!(values["volumes"][1]["secret"]["secretName"], "cert-manager");
    assert_eq!(
        values["webhook"]["extraArgs"][0],
        "--kubeconfig=/etc/cert-manager/tenant/kubeconfig"
    );
    let credentials: Secret = workload.get(&format!("{flux}/cert-manager")).await?;
    let expires = credentials.metadata.annotations.as_ref().unwrap()
        ["service-provider.openmcp.cloud/token-expires"]
        .clone();
    assert!(!expires.is_empty());
    let worker = service_provider_runtime::access::clients::ClientFactory::new()
        .client(&credentials.data.unwrap()["kubeconfig"].0)
        .await
        .expect("the worker's kubeconfig is usable");
    Api::<Secret>::namespaced(worker.clone(), "cert-manager")
        .list(&Default::default())
        .await
        .expect("the worker may read Secrets");
    let denied = Api::<ClusterRole>::all(worker)
        .list(&Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&denied, kube::Error::Api(s) if s.code == 403),
        "and nothing beyond its rules: {denied}"
    );
    assert!(
        kcp.mcp()
            .get_opt::<ServiceAccount>("cert-manager/cert-manager")
            .await?
            .is_some()
    );
    assert_eq!(pull_copies(&workload, &flux).await?.len(), 1);
    assert!(
        workload
            .get_opt::<ConfigMap>(&format!("{flux}/{ca_copy}"))
            .await?
            .is_some()
    );
    assert!(pull_copies(kcp.mcp(), "cert-manager").await?.is_empty());

    // Had a release put the controllers into the workspace, Flux would have failed it: the
    // workspace serves no apps/v1.
    let mut probe = HelmRelease::new("probe", api.spec.clone());
    probe.metadata.namespace = Some(flux.clone());
    probe.metadata.annotations =
        Some([(KINDS_ANNOTATION.to_owned(), "apps/v1/Deployment".to_owned())].into());
    workload.create(&probe).await?;
    let failed = workload
        .wait_for(&format!("{flux}/probe"), |r: &HelmRelease| {
            ready_message(r).is_some_and(|(status, _)| status == "False")
        })
        .await?;
    let (_, message) = ready_message(&failed).unwrap();
    assert!(
        message.contains("no matches for kind \"Deployment\" in version \"apps/v1\""),
        "{message}"
    );
    workload
        .delete::<HelmRelease>(&format!("{flux}/probe"))
        .await?;

    // An end user's Certificate holds the uninstall in both modes; it goes on once it is gone.
    // Its releases went with it.
    for tenant in [&standard, &kcp] {
        let workload = tenant.workload().await?;
        let release = format!("{}/cert-manager", flux_namespace(tenant));
        let seconds = held_until_the_certificate_goes(tenant).await?;
        println!(
            "{:?}: CertManager gone {seconds:.2} s after the last Certificate was deleted",
            tenant.mode()
        );
        // Gone, or gone with the workload cluster the platform released with the last tenant.
        workload.wait_gone::<HelmRelease>(&release).await?;
    }
    platform.stop().await;
    Ok(())
}

fn ready_message(release: &HelmRelease) -> Option<(String, String)> {
    let conditions = &release.status.as_ref()?.conditions;
    let ready = conditions.iter().find(|c| c.type_ == "Ready")?;
    Some((ready.status.clone(), ready.message.clone()))
}

/// Blocks `tenant`'s deletion with a Certificate, deletes it, and returns the seconds from its
/// deletion to the CertManager object gone.
async fn held_until_the_certificate_goes(tenant: &Tenant<CertManager>) -> Result<f64, TestError> {
    let cluster = tenant.mcp();
    cluster.install_crd::<Certificate>().await?;
    let mut certificate = Certificate::new("web", CertificateSpec::default());
    certificate.metadata.namespace = Some("default".into());
    cluster.create(&certificate).await?;
    tenant.delete().await?;
    let blocked = tenant
        .wait_until("to be blocked by the Certificate", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.condition(reason::DELETION_BLOCKED))
                .is_some_and(|c| c.status == "True")
        })
        .await?;
    let message = &blocked
        .status
        .as_ref()
        .and_then(|s| s.condition(reason::DELETION_BLOCKED))
        .expect("the condition waited for")
        .message;
    assert!(message.contains("default/web"), "{message}");
    cluster.delete::<Certificate>("default/web").await?;
    let released = Instant::now();
    tenant.wait_gone().await?;
    Ok(released.elapsed().as_secs_f64())
}

/// A provider that installs a chart with workloads without saying where they run.
#[service_provider(
    group = "unsplit.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Unsplit",
    workload_cluster = required,
    kcp
)]
pub(crate) struct UnsplitSpec {}

impl Reconcile for Unsplit {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let mut set = cx.resource_set("unsplit");
        cx.helm_release(
            &mut set,
            HelmInstall {
                name: "unsplit".into(),
                namespace: format!("unsplit-{}", cx.identity().stable_id()),
                target_namespace: "unsplit".into(),
                chart: HelmChart {
                    url: "oci://registry.test/charts/unsplit".into(),
                    version: Some("1.0.0".into()),
                    ..Default::default()
                },
                installs: vec![
                    ChartKind::new("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                    ChartKind::new("apps/v1", "Deployment"),
                ],
                ..Default::default()
            },
        )
        .await?;
        set.apply().await?;
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        cx.resource_set("unsplit").delete().await?;
        Ok(Deletion::done())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_whose_workloads_would_land_in_a_workspace_is_invalid_input()
-> Result<(), TestError> {
    let platform = support::platform::<Unsplit>(json!({ "pollInterval": "10m" }))
        .modes([Mode::Kcp])
        .start()
        .await?;
    let tenant = platform.create_kcp_tenant("unsplit", json!({})).await?;
    let refused = tenant
        .wait_until("to refuse the chart", |o| {
            support::ready_condition(o).is_some_and(|(_, why, _)| why == reason::INVALID_USER_INPUT)
        })
        .await?;
    let (status, _, message) = support::ready_condition(&refused).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains("apps/v1/Deployment") && message.contains("kcp_split"),
        "{message}"
    );
    // Nothing half-done: no Flux object was written.
    let workload = tenant.workload().await?;
    assert!(workload.list::<HelmRelease>(None).await?.is_empty());
    tenant.delete().await?;
    tenant.wait_gone().await?;
    platform.stop().await;
    Ok(())
}
