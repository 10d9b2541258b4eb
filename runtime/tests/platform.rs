//! The simulated openMCP platform (`dev` feature) against the embedded control plane: what a
//! provider and an end user observe on the platform, onboarding, MCP and workload clusters.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use service_provider_apiserver::{FaultRule, conditions, wait_for};
use service_provider_runtime::dev::{ClusterHandle, Hosting, TestEnv};
use service_provider_runtime::openmcp::constants::{
    CLUSTER_ACCESS_FINALIZER, MCP_FINALIZER, PROFILE_LABEL, PROVIDER_LABEL,
    REQUEST_FINALIZER_ON_CLUSTER_PREFIX,
};
use service_provider_runtime::openmcp::naming::stable_mcp_namespace;
use service_provider_runtime::openmcp::{
    AccessRequest, AccessRequestSpec, Cluster, ClusterRequest, ClusterRequestSpec, ControlPlane,
    ObjectReference, PermissionsRequest, RoleRef, TokenConfig,
};

const TIMEOUT: Duration = Duration::from_secs(30);

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A provider type written by hand, as `#[service_provider]` would generate it: the Service API
/// `Foo` and its ProviderConfig.
mod foo {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use service_provider_runtime::{
        NoConfig, ProviderConfigCommon, ProviderConfigStatus, ProviderInfo, ServiceProvider,
        ServiceStatus,
    };

    /// A test service.
    #[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug)]
    #[kube(
        group = "foo.services.open-control-plane.io",
        version = "v1alpha1",
        kind = "Foo",
        plural = "foos",
        namespaced,
        status = "ServiceStatus"
    )]
    pub(crate) struct FooSpec {
        /// Requested version.
        pub version: String,
    }

    /// ProviderConfig of Foo.
    #[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug)]
    #[kube(
        group = "foo.services.open-control-plane.io",
        version = "v1alpha1",
        kind = "ProviderConfig",
        root = "FooProviderConfig",
        plural = "providerconfigs",
        status = "ProviderConfigStatus"
    )]
    pub(crate) struct FooProviderConfigSpec {
        /// The common fields.
        #[serde(flatten)]
        pub common: ProviderConfigCommon,
    }

    impl ServiceProvider for Foo {
        type ExtraStatus = service_provider_runtime::NoStatus;
        type Config = NoConfig;
        type ProviderConfig = FooProviderConfig;
        type WorkloadCluster = service_provider_runtime::tenant::workload::NotDeclared;
        const INFO: ProviderInfo = ProviderInfo {
            group: "foo.services.open-control-plane.io",
            version: "v1alpha1",
            kind: "Foo",
            plural: "foos",
            kcp: true,
        };
    }

    impl service_provider_runtime::ProviderConfigResource for FooProviderConfig {
        type Config = NoConfig;
        fn common(&self) -> &ProviderConfigCommon {
            &self.spec.common
        }
        fn config(&self) -> &NoConfig {
            static NONE: NoConfig = NoConfig {};
            &NONE
        }
    }
}

/// A client from a kubeconfig (what a provider does with a granted Secret).
async fn client_from(kubeconfig: &str) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    Ok(kube::Client::try_from(config)?)
}

fn status_code<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> Option<u16> {
    match r {
        Err(kube::Error::Api(s)) => Some(s.code),
        _ => None,
    }
}

/// An AccessRequest for the cluster of ClusterRequest `cr`, with token permissions.
fn access_request(name: &str, ns: &str, cr: &str, token: TokenConfig) -> AccessRequest {
    let mut ar = AccessRequest::new(
        name,
        AccessRequestSpec {
            request_ref: Some(ObjectReference {
                name: cr.into(),
                namespace: ns.into(),
            }),
            token: Some(token),
            ..Default::default()
        },
    );
    ar.metadata.namespace = Some(ns.into());
    ar
}

fn rule(
    groups: &[&str],
    resources: &[&str],
    verbs: &[&str],
) -> k8s_openapi::api::rbac::v1::PolicyRule {
    serde_json::from_value(json!({"apiGroups": groups, "resources": resources, "verbs": verbs}))
        .expect("a PolicyRule")
}

async fn wait_granted(
    api: &Api<AccessRequest>,
    name: &str,
) -> Result<AccessRequest, Box<dyn std::error::Error>> {
    let ar = wait_for(api, name, TIMEOUT, |o: Option<&AccessRequest>| {
        o.is_some_and(AccessRequest::is_ready)
    })
    .await?
    .ok_or("granted AccessRequest vanished")?;
    Ok(ar)
}

fn phase_of<K: serde::Serialize>(o: &K) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| {
            v.pointer("/status/phase")
                .and_then(|p| p.as_str())
                .map(String::from)
        })
        .unwrap_or_default()
}

fn granted_condition<K: serde::Serialize>(o: &K) -> (String, String) {
    let v = serde_json::to_value(o).unwrap_or_default();
    let c = v
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Granted").cloned())
        .unwrap_or_default();
    (
        c["reason"].as_str().unwrap_or_default().to_string(),
        c["message"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test]
async fn a_control_plane_gets_its_namespace_cluster_request_and_mcp_cluster() -> TestResult {
    let env = TestEnv::builder().control_planes(1).start().await?;
    let cp = env.control_planes()[0].clone();
    let platform = env.platform().client();
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;

    // The tenant namespace on the platform cluster, labelled as the ControlPlane controller does.
    let tenant_ns = Api::<Namespace>::all(platform.clone()).get(&ns).await?;
    assert_eq!(
        tenant_ns
            .labels()
            .get("core.open-control-plane.io/mcp-name"),
        Some(&cp.name)
    );
    assert_eq!(
        tenant_ns
            .labels()
            .get("core.open-control-plane.io/mcp-namespace"),
        Some(&cp.namespace)
    );
    assert_eq!(
        tenant_ns
            .labels()
            .get("openmcp.cloud/managed-by")
            .map(String::as_str),
        Some("ManagedControlPlane")
    );

    // The ClusterRequest named like the ControlPlane, purpose mcp, granted.
    let cr = Api::<ClusterRequest>::namespaced(platform.clone(), &ns)
        .get(&cp.name)
        .await?;
    assert_eq!(cr.spec.purpose, "mcp");
    assert_eq!(cr.spec.wait_for_cluster_deletion, Some(true));
    assert!(cr.is_granted(), "{:?}", cr.status);
    assert!(
        cr.finalizers()
            .iter()
            .any(|f| f == CLUSTER_ACCESS_FINALIZER)
    );
    let cluster_ref = cr
        .status
        .as_ref()
        .and_then(|s| s.cluster.clone())
        .ok_or("no cluster")?;

    // The Cluster object, held by the request, pointing at the MCP cluster.
    let cluster = Api::<Cluster>::namespaced(platform.clone(), &cluster_ref.namespace)
        .get(&cluster_ref.name)
        .await?;
    assert_eq!(cluster.spec.purposes, vec!["mcp".to_string()]);
    assert!(cluster.name_any().starts_with("mcp-"));
    let holder = format!(
        "{REQUEST_FINALIZER_ON_CLUSTER_PREFIX}{}",
        cr.uid().unwrap_or_default()
    );
    assert!(
        cluster.finalizers().contains(&holder),
        "{:?}",
        cluster.finalizers()
    );
    assert_eq!(cluster.tenancy_count(), 1);
    let mcp = env.mcp(&cp).ok_or("no MCP cluster")?;
    assert_eq!(
        cluster.status.as_ref().and_then(|s| s.api_server.clone()),
        Some(mcp.url())
    );

    // The ControlPlane is Ready and carries the controller's finalizers.
    let cpo = Api::<ControlPlane>::namespaced(env.onboarding().client(), &cp.namespace)
        .get(&cp.name)
        .await?;
    assert_eq!(phase_of(&cpo), "Ready");
    assert!(cpo.finalizers().iter().any(|f| f == MCP_FINALIZER));
    assert!(
        cpo.finalizers()
            .iter()
            .any(|f| f == &format!("request.clusters.openmcp.cloud/{}", cp.name))
    );

    // The MCP cluster is a cluster of its own: what is created there stays there.
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("only-in-the-mcp".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(mcp.client(), "default")
        .create(&PostParams::default(), &cm)
        .await?;
    // Counted for this cluster only, though logical clusters share one server.
    assert_eq!(mcp.requests("create", "configmaps"), 1);
    for other in [env.platform(), env.onboarding()] {
        let found = Api::<ConfigMap>::namespaced(other.client(), "default")
            .get_opt("only-in-the-mcp")
            .await?;
        assert!(found.is_none(), "visible on {}", other.name());
    }

    // The written kubeconfigs work.
    let dir = std::env::temp_dir().join(format!("sp-platform-kubeconfigs-{}", std::process::id()));
    let files = env.write_kubeconfigs(&dir)?;
    let mcp_file = files
        .iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("mcp-"))
        })
        .ok_or("no MCP kubeconfig written")?;
    let from_file = client_from(&std::fs::read_to_string(mcp_file)?).await?;
    Api::<ConfigMap>::namespaced(from_file, "default")
        .get("only-in-the-mcp")
        .await?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[tokio::test]
async fn an_access_request_gets_a_kubeconfig_with_exactly_the_requested_permissions() -> TestResult
{
    let env = TestEnv::builder().control_planes(2).start().await?;
    let (cp, other_cp) = (
        env.control_planes()[0].clone(),
        env.control_planes()[1].clone(),
    );
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
    let platform = env.platform().client();
    let ars = Api::<AccessRequest>::namespaced(platform.clone(), &ns);

    let token = TokenConfig {
        permissions: vec![
            PermissionsRequest {
                namespace: "team".into(),
                rules: vec![rule(&[""], &["configmaps"], &["get", "list", "create"])],
                ..Default::default()
            },
            PermissionsRequest {
                rules: vec![rule(&[""], &["namespaces"], &["get"])],
                ..Default::default()
            },
        ],
        role_refs: vec![RoleRef::cluster_role("view")],
    };
    ars.create(
        &PostParams::default(),
        &access_request("velero--cp-0--mcp", &ns, &cp.name, token),
    )
    .await?;
    let ar = wait_granted(&ars, "velero--cp-0--mcp").await?;

    // As openmcp-operator fills them in.
    assert_eq!(
        ar.labels().get(PROVIDER_LABEL).map(String::as_str),
        Some("embedded")
    );
    assert!(ar.labels().contains_key(PROFILE_LABEL));
    assert!(
        ar.finalizers()
            .iter()
            .any(|f| f == CLUSTER_ACCESS_FINALIZER)
    );
    let cr = Api::<ClusterRequest>::namespaced(platform.clone(), &ns)
        .get(&cp.name)
        .await?;
    let granted_cluster = cr.status.and_then(|s| s.cluster).ok_or("no cluster")?;
    assert_eq!(ar.spec.cluster_ref.as_ref(), Some(&granted_cluster));

    // The Secret.
    let secret_name = ar
        .status
        .as_ref()
        .and_then(|s| s.secret_ref.clone())
        .ok_or("no secretRef")?
        .name;
    let secret = Api::<Secret>::namespaced(platform.clone(), &ns)
        .get(&secret_name)
        .await?;
    let data: BTreeMap<String, String> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect();
    for key in [
        "kubeconfig",
        "host",
        "ca.crt",
        "token",
        "expirationTimestamp",
        "creationTimestamp",
    ] {
        assert!(
            data.contains_key(key),
            "Secret lacks {key}: {:?}",
            data.keys()
        );
    }
    let mcp = env.mcp(&cp).ok_or("no MCP")?;
    assert_eq!(data["host"], mcp.url());
    let expires: i64 = data["expirationTimestamp"].parse()?;
    let created: i64 = data["creationTimestamp"].parse()?;
    assert!(expires > created, "{expires} <= {created}");

    // The kubeconfig works against the MCP cluster, with the granted permissions only.
    let tenant = client_from(&data["kubeconfig"]).await?;
    let team = Api::<ConfigMap>::namespaced(tenant.clone(), "team");
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("installed".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    team.create(&PostParams::default(), &cm).await?;
    assert!(
        Api::<ConfigMap>::namespaced(mcp.client(), "team")
            .get_opt("installed")
            .await?
            .is_some()
    );
    Api::<Namespace>::all(tenant.clone()).get("team").await?;
    // `view` lets it list pods, but nothing lets it delete configmaps, create them elsewhere,
    // or read Secrets.
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(tenant.clone(), "default")
        .list(&ListParams::default())
        .await?;
    assert_eq!(
        status_code(team.delete("installed", &DeleteParams::default()).await),
        Some(403)
    );
    assert_eq!(
        status_code(
            Api::<ConfigMap>::namespaced(tenant.clone(), "default")
                .create(&PostParams::default(), &cm)
                .await
        ),
        Some(403)
    );
    assert_eq!(
        status_code(
            Api::<Secret>::namespaced(tenant.clone(), "team")
                .list(&ListParams::default())
                .await
        ),
        Some(403)
    );

    // The same token is worth nothing on another tenant's MCP cluster.
    let other = env.mcp(&other_cp).ok_or("no second MCP")?;
    let elsewhere = other.client_for(&data["token"])?;
    let code = status_code(
        Api::<ConfigMap>::namespaced(elsewhere, "default")
            .list(&ListParams::default())
            .await,
    );
    assert!(
        matches!(code, Some(401 | 403 | 404)),
        "foreign token answered {code:?}"
    );
    Ok(())
}

#[tokio::test]
async fn deleting_an_access_request_revokes_its_token() -> TestResult {
    let env = TestEnv::builder().control_planes(1).start().await?;
    let cp = env.control_planes()[0].clone();
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
    let platform = env.platform().client();
    let ars = Api::<AccessRequest>::namespaced(platform.clone(), &ns);
    let token = TokenConfig {
        role_refs: vec![RoleRef::cluster_role("cluster-admin")],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("p--cp-0--mcp", &ns, &cp.name, token),
    )
    .await?;
    let ar = wait_granted(&ars, "p--cp-0--mcp").await?;
    let secret_name = ar
        .status
        .and_then(|s| s.secret_ref)
        .ok_or("no secretRef")?
        .name;
    let secret = Api::<Secret>::namespaced(platform.clone(), &ns)
        .get(&secret_name)
        .await?;
    let kubeconfig = String::from_utf8(secret.data.unwrap_or_default()["kubeconfig"].0.clone())?;
    let tenant = client_from(&kubeconfig).await?;
    Api::<Secret>::all(tenant.clone())
        .list(&ListParams::default())
        .await?;
    let mcp = env.mcp(&cp).ok_or("no MCP")?;
    let sas = Api::<ServiceAccount>::namespaced(mcp.client(), "accessrequests");
    let granted_sa =
        ListParams::default().labels("accessrequest.clusters.openmcp.cloud/name=p--cp-0--mcp");
    assert_eq!(sas.list(&granted_sa).await?.items.len(), 1);

    ars.delete("p--cp-0--mcp", &DeleteParams::default()).await?;
    wait_for(&ars, "p--cp-0--mcp", TIMEOUT, conditions::gone()).await?;

    assert_eq!(
        status_code(
            Api::<Secret>::all(tenant)
                .list(&ListParams::default())
                .await
        ),
        Some(401)
    );
    assert!(
        Api::<Secret>::namespaced(platform, &ns)
            .get_opt(&secret_name)
            .await?
            .is_none()
    );
    assert!(sas.list(&granted_sa).await?.items.is_empty());
    let bindings = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(mcp.client())
        .list(
            &ListParams::default().labels("accessrequest.clusters.openmcp.cloud/name=p--cp-0--mcp"),
        )
        .await?;
    assert!(bindings.items.is_empty());
    Ok(())
}

/// Creates a workload ClusterRequest `name` in `ns` and returns it granted.
async fn workload_request(
    platform: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<ClusterRequest, Box<dyn std::error::Error>> {
    let nss = Api::<Namespace>::all(platform.clone());
    if nss.get_opt(ns).await?.is_none() {
        let obj: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        nss.create(&PostParams::default(), &obj).await?;
    }
    let api = Api::<ClusterRequest>::namespaced(platform.clone(), ns);
    let mut cr = ClusterRequest::new(
        name,
        ClusterRequestSpec {
            purpose: "workload".into(),
            wait_for_cluster_deletion: None,
        },
    );
    cr.metadata.namespace = Some(ns.into());
    api.create(&PostParams::default(), &cr).await?;
    let cr = wait_for(&api, name, TIMEOUT, |o: Option<&ClusterRequest>| {
        o.is_some_and(ClusterRequest::is_granted)
    })
    .await?
    .ok_or("vanished")?;
    Ok(cr)
}

#[tokio::test]
async fn workload_clusters_are_shared_up_to_the_tenancy_count() -> TestResult {
    let env = TestEnv::builder().workload_tenancy(2).start().await?;
    let platform = env.platform().client();
    let mut by_cluster: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Created all at once: the scheduler must not overfill a cluster while requests race.
    let requests =
        futures::future::try_join_all((0..5).map(|i| {
            let platform = platform.clone();
            async move {
                workload_request(&platform, &format!("tenant-{i}"), &format!("p--t{i}--wl")).await
            }
        }))
        .await?;
    for cr in &requests {
        let c = cr
            .status
            .as_ref()
            .and_then(|s| s.cluster.clone())
            .ok_or("no cluster")?;
        by_cluster.entry(c.name).or_default().push(cr.name_any());
    }
    let mut sizes: Vec<usize> = by_cluster.values().map(Vec::len).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![1, 2, 2], "{by_cluster:?}");
    assert_eq!(env.workload_clusters().len(), 3);
    for name in by_cluster.keys() {
        let c = Api::<Cluster>::namespaced(platform.clone(), env.pod_namespace())
            .get(name)
            .await?;
        assert_eq!(c.tenancy_count(), by_cluster[name].len());
        assert_eq!(c.spec.purposes, vec!["workload".to_string()]);
    }

    // When its last request goes, a workload cluster is deleted and stops serving.
    let (lonely, holders) = by_cluster
        .iter()
        .find(|(_, v)| v.len() == 1)
        .ok_or("no single")?;
    let handle: ClusterHandle = env
        .clusters()
        .into_iter()
        .find(|c| &c.name == lonely)
        .ok_or("no handle")?
        .handle;
    Api::<Namespace>::all(handle.client())
        .get("default")
        .await?;
    let holder = requests
        .iter()
        .find(|r| r.name_any() == holders[0])
        .ok_or("no holder")?;
    let api = Api::<ClusterRequest>::namespaced(
        platform.clone(),
        &holder.namespace().unwrap_or_default(),
    );
    api.delete(&holder.name_any(), &DeleteParams::default())
        .await?;
    wait_for(&api, &holder.name_any(), TIMEOUT, conditions::gone()).await?;
    let clusters = Api::<Cluster>::namespaced(platform.clone(), env.pod_namespace());
    wait_for(&clusters, lonely, TIMEOUT, conditions::gone()).await?;
    assert_eq!(env.workload_clusters().len(), 2);
    assert!(
        Api::<Namespace>::all(handle.client())
            .get("default")
            .await
            .is_err()
    );

    // A freed place is filled before a new cluster is opened.
    let (full, full_holders) = by_cluster
        .iter()
        .find(|(_, v)| v.len() == 2)
        .ok_or("no full")?;
    let leaving = requests
        .iter()
        .find(|r| r.name_any() == full_holders[0])
        .ok_or("no holder")?;
    let api = Api::<ClusterRequest>::namespaced(
        platform.clone(),
        &leaving.namespace().unwrap_or_default(),
    );
    api.delete(&leaving.name_any(), &DeleteParams::default())
        .await?;
    wait_for(&api, &leaving.name_any(), TIMEOUT, conditions::gone()).await?;
    let cr = workload_request(&platform, "tenant-9", "p--t9--wl").await?;
    let assigned = cr.status.and_then(|s| s.cluster).ok_or("no cluster")?.name;
    assert_eq!(&assigned, full);
    assert_eq!(env.workload_clusters().len(), 2);
    Ok(())
}

/// A refused write must not strand a request: the scheduler reserves a new cluster for the
/// request before it creates the Cluster object, so a create answered with a 500 has to be made
/// again — also for the next request put on the same cluster.
#[tokio::test]
async fn a_refused_cluster_create_is_made_again() -> TestResult {
    let env = TestEnv::builder().workload_tenancy(2).start().await?;
    let platform = env.platform().client();
    env.platform().faults().inject(
        FaultRule::new(500)
            .verb("create")
            .resource("clusters")
            .times(1),
    );
    let first = workload_request(&platform, "tenant-a", "p--a--wl").await?;
    let second = workload_request(&platform, "tenant-b", "p--b--wl").await?;
    let cluster_of = |cr: &ClusterRequest| cr.status.as_ref().and_then(|s| s.cluster.clone());
    let cluster = cluster_of(&first).ok_or("no cluster")?;
    assert_eq!(
        cluster_of(&second).map(|c| c.name),
        Some(cluster.name.clone())
    );

    let object = Api::<Cluster>::namespaced(platform.clone(), &cluster.namespace)
        .get(&cluster.name)
        .await?;
    for request in [&first, &second] {
        let finalizer = format!(
            "{REQUEST_FINALIZER_ON_CLUSTER_PREFIX}{}",
            request.uid().unwrap_or_default()
        );
        assert!(object.finalizers().contains(&finalizer), "{object:?}");
    }
    let served = env
        .clusters()
        .into_iter()
        .find(|c| c.name == cluster.name)
        .ok_or("not served")?;
    assert_eq!(
        object.status.and_then(|s| s.api_server),
        Some(served.handle.url())
    );
    Ok(())
}

#[tokio::test]
async fn requests_that_cannot_be_satisfied_are_denied_with_a_reason() -> TestResult {
    let env = TestEnv::builder().control_planes(1).start().await?;
    let cp = env.control_planes()[0].clone();
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
    let platform = env.platform().client();

    // Unknown purpose.
    let crs = Api::<ClusterRequest>::namespaced(platform.clone(), &ns);
    let mut gpu = ClusterRequest::new(
        "gpu",
        ClusterRequestSpec {
            purpose: "gpu".into(),
            wait_for_cluster_deletion: None,
        },
    );
    gpu.metadata.namespace = Some(ns.clone());
    crs.create(&PostParams::default(), &gpu).await?;
    let denied = |o: Option<&ClusterRequest>| o.is_some_and(|o| phase_of(o) == "Denied");
    let gpu = wait_for(&crs, "gpu", TIMEOUT, denied)
        .await?
        .ok_or("vanished")?;
    let (reason, message) = granted_condition(&gpu);
    assert_eq!(reason, "ConfigurationProblem");
    assert!(message.contains("purpose 'gpu'"), "{message}");

    let ars = Api::<AccessRequest>::namespaced(platform.clone(), &ns);
    let ar_denied = |o: Option<&AccessRequest>| o.is_some_and(|o| phase_of(o) == "Denied");
    let admin = TokenConfig {
        role_refs: vec![RoleRef::cluster_role("cluster-admin")],
        ..Default::default()
    };

    // A ClusterRequest that does not exist.
    ars.create(
        &PostParams::default(),
        &access_request("to-nowhere", &ns, "no-such-request", admin.clone()),
    )
    .await?;
    let ar = wait_for(&ars, "to-nowhere", TIMEOUT, ar_denied)
        .await?
        .ok_or("vanished")?;
    let (reason, message) = granted_condition(&ar);
    assert_eq!(reason, "InvalidReference");
    assert!(
        message.contains("no-such-request") && message.contains("not found"),
        "{message}"
    );
    assert_eq!(
        ar.status.as_ref().map(|s| s.common.observed_generation),
        ar.metadata.generation
    );

    // A denied ClusterRequest.
    ars.create(
        &PostParams::default(),
        &access_request("to-gpu", &ns, "gpu", admin.clone()),
    )
    .await?;
    let ar = wait_for(&ars, "to-gpu", TIMEOUT, ar_denied)
        .await?
        .ok_or("vanished")?;
    assert!(
        granted_condition(&ar).1.contains("denied"),
        "{:?}",
        granted_condition(&ar)
    );

    // Invalid permissions: a resource rule without resources, a Role reference without namespace.
    let bad_rule = TokenConfig {
        permissions: vec![PermissionsRequest {
            rules: vec![rule(&[""], &[], &["get"])],
            ..Default::default()
        }],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("bad-rule", &ns, &cp.name, bad_rule),
    )
    .await?;
    let ar = wait_for(&ars, "bad-rule", TIMEOUT, ar_denied)
        .await?
        .ok_or("vanished")?;
    let (reason, message) = granted_condition(&ar);
    assert_eq!(reason, "InvalidPermissions");
    assert!(message.contains("resources"), "{message}");

    let bad_ref = TokenConfig {
        role_refs: vec![RoleRef {
            name: "edit".into(),
            namespace: String::new(),
            kind: service_provider_runtime::openmcp::RoleKind::Role,
        }],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("bad-ref", &ns, &cp.name, bad_ref),
    )
    .await?;
    let ar = wait_for(&ars, "bad-ref", TIMEOUT, ar_denied)
        .await?
        .ok_or("vanished")?;
    assert!(
        granted_condition(&ar).1.contains("roleRefs[0].namespace"),
        "{:?}",
        granted_condition(&ar)
    );

    // A namespace that must not be created.
    let no_ns = TokenConfig {
        permissions: vec![PermissionsRequest {
            namespace: "absent".into(),
            disable_automatic_namespace_creation: true,
            rules: vec![rule(&[""], &["configmaps"], &["get"])],
            ..Default::default()
        }],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("no-ns", &ns, &cp.name, no_ns),
    )
    .await?;
    let ar = wait_for(&ars, "no-ns", TIMEOUT, ar_denied)
        .await?
        .ok_or("vanished")?;
    assert!(
        granted_condition(&ar).1.contains("'absent' does not exist"),
        "{:?}",
        granted_condition(&ar)
    );

    // A granted request whose spec turns invalid is denied and loses its credentials.
    let fine = TokenConfig {
        role_refs: vec![RoleRef::cluster_role("view")],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("turns-bad", &ns, &cp.name, fine),
    )
    .await?;
    let ar = wait_granted(&ars, "turns-bad").await?;
    let secret_name = ar
        .status
        .and_then(|s| s.secret_ref)
        .ok_or("no secretRef")?
        .name;
    let secrets = Api::<Secret>::namespaced(platform.clone(), &ns);
    let secret = secrets.get(&secret_name).await?;
    let kubeconfig = String::from_utf8(secret.data.unwrap_or_default()["kubeconfig"].0.clone())?;
    let tenant = client_from(&kubeconfig).await?;
    Api::<ConfigMap>::namespaced(tenant.clone(), "default")
        .list(&ListParams::default())
        .await?;
    ars.patch(
        "turns-bad",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"token": {"permissions": [{"rules": [{"apiGroups": [""], "verbs": ["get"]}]}]}}})),
    )
    .await?;
    wait_for(&ars, "turns-bad", TIMEOUT, ar_denied).await?;
    assert!(secrets.get_opt(&secret_name).await?.is_none());
    assert_eq!(
        status_code(
            Api::<ConfigMap>::namespaced(tenant, "default")
                .list(&ListParams::default())
                .await
        ),
        Some(401)
    );

    // Denied is not final: the missing ClusterRequest appears and the request is granted.
    let mut late = ClusterRequest::new(
        "no-such-request",
        ClusterRequestSpec {
            purpose: "workload".into(),
            wait_for_cluster_deletion: None,
        },
    );
    late.metadata.namespace = Some(ns.clone());
    crs.create(&PostParams::default(), &late).await?;
    wait_granted(&ars, "to-nowhere").await?;
    Ok(())
}

#[tokio::test]
async fn deleting_a_control_plane_deletes_its_services_then_its_cluster() -> TestResult {
    let env = TestEnv::builder()
        .provider::<foo::Foo>()
        .provider_config(json!({"versions": [{"version": "1.0.0"}]}))
        .control_planes(1)
        .start()
        .await?;
    let cp = env.control_planes()[0].clone();
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
    let platform = env.platform().client();
    let onboarding = env.onboarding().client();
    assert_eq!(env.provider().map(|p| p.name()), Some("foo"));

    // The provider's identity on the platform holds its generated ClusterRole and no more.
    let provider = client_from(env.provider().ok_or("no provider")?.platform_kubeconfig()).await?;
    Api::<ClusterRequest>::all(provider.clone())
        .list(&ListParams::default())
        .await?;
    assert_eq!(
        status_code(
            Api::<Secret>::namespaced(provider, &ns)
                .delete("x", &DeleteParams::default())
                .await
        ),
        Some(403)
    );

    // A Foo for the ControlPlane whose provider holds it with a finalizer, and MCP access.
    let foos = Api::<foo::Foo>::namespaced(onboarding.clone(), &cp.namespace);
    let mut obj = foo::Foo::new(
        &cp.name,
        foo::FooSpec {
            version: "1.0.0".into(),
        },
    );
    obj.metadata.finalizers = Some(vec!["foo.services.open-control-plane.io/finalizer".into()]);
    foos.create(&PostParams::default(), &obj).await?;
    let ars = Api::<AccessRequest>::namespaced(platform.clone(), &ns);
    let admin = TokenConfig {
        role_refs: vec![RoleRef::cluster_role("cluster-admin")],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("foo--cp-0--mcp", &ns, &cp.name, admin),
    )
    .await?;
    wait_granted(&ars, "foo--cp-0--mcp").await?;
    let mcp = env.mcp(&cp).ok_or("no MCP")?;
    let cr = Api::<ClusterRequest>::namespaced(platform.clone(), &ns)
        .get(&cp.name)
        .await?;
    let cluster_ref = cr.status.and_then(|s| s.cluster).ok_or("no cluster")?;

    let cps = Api::<ControlPlane>::namespaced(onboarding.clone(), &cp.namespace);
    cps.delete(&cp.name, &DeleteParams::default()).await?;

    // The Service API object is being deleted; the ControlPlane waits for it.
    wait_for(&foos, &cp.name, TIMEOUT, |o: Option<&foo::Foo>| {
        o.is_some_and(|o| o.metadata.deletion_timestamp.is_some())
    })
    .await?;
    let waiting = wait_for(&cps, &cp.name, TIMEOUT, |o: Option<&ControlPlane>| {
        o.is_some_and(|o| {
            o.status
                .as_ref()
                .and_then(|s| s.common.condition("AllServicesDeleted"))
                .is_some_and(|c| c.status == "False")
        })
    })
    .await?
    .ok_or("ControlPlane vanished early")?;
    assert_eq!(phase_of(&waiting), "Terminating");
    let crs = Api::<ClusterRequest>::namespaced(platform.clone(), &ns);
    assert!(
        crs.get_opt(&cp.name)
            .await?
            .is_some_and(|c| c.metadata.deletion_timestamp.is_none())
    );

    // The provider finishes: it gives its access back and drops its finalizer.
    ars.delete("foo--cp-0--mcp", &DeleteParams::default())
        .await?;
    wait_for(&ars, "foo--cp-0--mcp", TIMEOUT, conditions::gone()).await?;
    foos.patch(
        &cp.name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;

    // Then the cascade runs to the end.
    wait_for(&cps, &cp.name, TIMEOUT, conditions::gone()).await?;
    assert!(crs.get_opt(&cp.name).await?.is_none());
    let clusters = Api::<Cluster>::namespaced(platform.clone(), &cluster_ref.namespace);
    assert!(clusters.get_opt(&cluster_ref.name).await?.is_none());
    assert!(
        Api::<Namespace>::all(platform.clone())
            .get_opt(&ns)
            .await?
            .is_none()
    );
    assert!(env.mcp(&cp).is_none());
    assert!(
        Api::<Namespace>::all(mcp.client())
            .get("default")
            .await
            .is_err()
    );
    Ok(())
}

#[tokio::test]
async fn dedicated_listeners_serve_the_same_platform() -> TestResult {
    let env = TestEnv::builder()
        .hosting(Hosting::Listeners)
        .control_planes(1)
        .start()
        .await?;
    let cp = env.control_planes()[0].clone();
    let mcp = env.mcp(&cp).ok_or("no MCP")?;
    assert!(!mcp.is_logical());
    assert!(mcp.dedicated_cluster().is_some());
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
    let ars = Api::<AccessRequest>::namespaced(env.platform().client(), &ns);
    let token = TokenConfig {
        permissions: vec![PermissionsRequest {
            rules: vec![rule(&[""], &["namespaces"], &["list"])],
            ..Default::default()
        }],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("a", &ns, &cp.name, token),
    )
    .await?;
    let ar = wait_granted(&ars, "a").await?;
    let secret = ar
        .status
        .and_then(|s| s.secret_ref)
        .ok_or("no secretRef")?
        .name;
    let secret = Api::<Secret>::namespaced(env.platform().client(), &ns)
        .get(&secret)
        .await?;
    let kubeconfig = String::from_utf8(secret.data.unwrap_or_default()["kubeconfig"].0.clone())?;
    let tenant = client_from(&kubeconfig).await?;
    let listed = Api::<Namespace>::all(tenant.clone())
        .list(&ListParams::default())
        .await?;
    assert!(
        listed
            .items
            .iter()
            .any(|n| n.name_any() == "accessrequests")
    );
    assert_eq!(
        status_code(Api::<Namespace>::all(tenant).get("default").await),
        Some(403)
    );
    Ok(())
}

#[tokio::test]
async fn kcp_consumer_workspaces_are_bound_to_the_provider_export() -> TestResult {
    let env = TestEnv::builder()
        .provider::<foo::Foo>()
        .provider_config(json!({"versions": [{"version": "1.0.0"}]}))
        .kcp(2)
        .start()
        .await?;
    let kcp = env.kcp().ok_or("no kcp")?;
    let export = kcp.export_name().ok_or("no export")?;
    assert_eq!(export, "foo.services.open-control-plane.io");
    assert_eq!(kcp.provider_workspace().path, "root:provider");
    let paths: Vec<&str> = kcp.consumers().iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, vec!["root:consumer-0", "root:consumer-1"]);

    // Consumers serve the bound Service API, each its own objects under the same name.
    let resource = kube::api::ApiResource::erase::<foo::Foo>(&());
    for c in kcp.consumers() {
        let foos = Api::<kube::api::DynamicObject>::namespaced_with(
            kcp.client(&c.path),
            "default",
            &resource,
        );
        let obj: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "foo.services.open-control-plane.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "same-name"},
            "spec": {"version": "1.0.0"},
        }))?;
        foos.create(&PostParams::default(), &obj).await?;
        assert_eq!(foos.list(&ListParams::default()).await?.items.len(), 1);
    }

    // The provider's identity: it reads the endpoint slice (which lists the virtual workspace
    // now that bindings exist) and nothing it was not granted.
    let identity = client_from(kcp.provider_kubeconfig().ok_or("no provider identity")?).await?;
    let slices = Api::<kube::api::DynamicObject>::all_with(
        identity.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
            "apiexportendpointslices",
        ),
    );
    let slice = slices.get(export).await?;
    let urls = slice
        .data
        .pointer("/status/endpoints")
        .and_then(|e| e.as_array())
        .map(Vec::len);
    assert_eq!(urls, Some(1), "{:?}", slice.data);
    assert_eq!(
        status_code(
            Api::<ConfigMap>::namespaced(identity, "default")
                .list(&ListParams::default())
                .await
        ),
        Some(403)
    );

    // The same identity is stored on the platform for the ProviderConfig's kcp block.
    let provider = env.provider().ok_or("no provider")?;
    let secret_name = provider.kcp_kubeconfig_secret().ok_or("no kcp Secret")?;
    let secret = Api::<Secret>::namespaced(env.platform().client(), provider.pod_namespace())
        .get(secret_name)
        .await?;
    assert!(secret.data.unwrap_or_default().contains_key("kubeconfig"));
    let block = kcp.provider_config_block(provider.pod_namespace(), secret_name);
    assert_eq!(block["providerWorkspace"], "root:provider");

    let dir = std::env::temp_dir().join(format!(
        "sp-platform-kcp-kubeconfigs-{}",
        std::process::id()
    ));
    let files = env.write_kubeconfigs(&dir)?;
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for expected in [
        "kcp-provider.kubeconfig",
        "kcp-provider-identity.kubeconfig",
        "kcp-root-consumer-1.kubeconfig",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[tokio::test]
async fn granted_tokens_are_renewed_before_they_expire() -> TestResult {
    let env = TestEnv::builder()
        .token_ttl(Duration::from_secs(4))
        .control_planes(1)
        .start()
        .await?;
    let cp = env.control_planes()[0].clone();
    let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
    let ars = Api::<AccessRequest>::namespaced(env.platform().client(), &ns);
    let token = TokenConfig {
        role_refs: vec![RoleRef::cluster_role("view")],
        ..Default::default()
    };
    ars.create(
        &PostParams::default(),
        &access_request("short", &ns, &cp.name, token),
    )
    .await?;
    let ar = wait_granted(&ars, "short").await?;
    let secret_name = ar
        .status
        .and_then(|s| s.secret_ref)
        .ok_or("no secretRef")?
        .name;
    let secrets = Api::<Secret>::namespaced(env.platform().client(), &ns);
    let field = |s: &Secret, k: &str| {
        s.data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .unwrap_or_default()
    };
    let first = secrets.get(&secret_name).await?;
    let (created, expires): (i64, i64) = (
        field(&first, "creationTimestamp").parse()?,
        field(&first, "expirationTimestamp").parse()?,
    );
    assert!(
        (3..=5).contains(&(expires - created)),
        "{created} .. {expires}"
    );

    // After 80% of the validity a new token replaces it in the same Secret.
    let old = field(&first, "token");
    let renewed = wait_for(&secrets, &secret_name, TIMEOUT, |s: Option<&Secret>| {
        s.is_some_and(|s| {
            let t = field(s, "token");
            !t.is_empty() && t != old
        })
    })
    .await?
    .ok_or("Secret vanished")?;
    let next: i64 = field(&renewed, "expirationTimestamp").parse()?;
    assert!(next > expires, "{next} <= {expires}");
    let tenant = client_from(&field(&renewed, "kubeconfig")).await?;
    Api::<ConfigMap>::namespaced(tenant, "default")
        .list(&ListParams::default())
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_provider_can_be_left_for_its_own_init() -> TestResult {
    let env = TestEnv::builder()
        .provider::<foo::Foo>()
        .provider_initialized(false)
        .start()
        .await?;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds = |c: &ClusterHandle| Api::<CustomResourceDefinition>::all(c.client());
    assert!(
        crds(env.onboarding())
            .get_opt("foos.foo.services.open-control-plane.io")
            .await?
            .is_none()
    );
    assert!(
        crds(env.platform())
            .get_opt("providerconfigs.foo.services.open-control-plane.io")
            .await?
            .is_none()
    );
    let sps = Api::<service_provider_runtime::openmcp::ServiceProviderObject>::all(
        env.platform().client(),
    );
    let sp = sps.get("foo").await?;
    assert!(
        sp.status
            .map(|s| s.resources)
            .unwrap_or_default()
            .is_empty()
    );

    // What init does on the platform, the provider's own identity may do.
    let provider = client_from(env.provider().ok_or("no provider")?.platform_kubeconfig()).await?;
    let crd = service_provider_runtime::manifests::provider_config_crd::<foo::Foo>();
    // `init` creates a missing CRD and replaces the spec of an existing one, as Go's
    // CRDManager does.
    let created = Api::<CustomResourceDefinition>::all(provider.clone())
        .create(&kube::api::PostParams::default(), &crd)
        .await?;
    Api::<CustomResourceDefinition>::all(provider.clone())
        .replace(
            "providerconfigs.foo.services.open-control-plane.io",
            &kube::api::PostParams::default(),
            &created,
        )
        .await?;
    Api::<service_provider_runtime::openmcp::ServiceProviderObject>::all(provider)
        .patch_status(
            "foo",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"resources": [{"group": "foo.services.open-control-plane.io", "version": "v1alpha1", "kind": "Foo"}]}})),
        )
        .await?;
    assert_eq!(
        sps.get("foo").await?.status.map(|s| s.resources.len()),
        Some(1)
    );
    Ok(())
}

/// Onboarding access as `init` and `run` obtain it, from a platform whose operator is stopped and
/// answered for by hand here: it takes up a grant whose Secret is written after it, and a denial
/// or no answer at all ends it with an error naming the request.
#[tokio::test]
async fn onboarding_access_waits_for_the_grant_and_its_secret() -> TestResult {
    use service_provider_runtime::access::clients::ClientFactory;
    use service_provider_runtime::access::onboarding::onboarding_access;
    use service_provider_runtime::openmcp::naming::stable_request_name;

    let env = TestEnv::builder().start().await?;
    env.operator().stop();
    let platform = env.platform().client();
    let ns = "onboarding-access";
    Api::<Namespace>::all(platform.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
        )
        .await?;
    let request = |local_name: &'static str, timeout: Duration| {
        let platform = platform.clone();
        tokio::spawn(async move {
            let rules = vec![rule(&[""], &["configmaps"], &["get"])];
            onboarding_access(
                &platform,
                &ClientFactory::new(),
                "foo.example",
                ns,
                local_name,
                rules,
                timeout,
            )
            .await
        })
    };
    let crs: Api<ClusterRequest> = Api::namespaced(platform.clone(), ns);
    let ars: Api<AccessRequest> = Api::namespaced(platform.clone(), ns);
    let answer = |phase: &str| Patch::Merge(json!({"status": {"phase": phase}}));

    // Granted, and the Secret comes only after the grant.
    let granted = request("onboarding-run", TIMEOUT);
    let name = stable_request_name("foo.example", "onboarding-run", "")?;
    wait_for(&crs, &name, TIMEOUT, conditions::exists()).await?;
    crs.patch_status(&name, &PatchParams::default(), &answer("Granted"))
        .await?;
    let ar = wait_for(&ars, &name, TIMEOUT, conditions::exists())
        .await?
        .ok_or("no AccessRequest")?;
    let secret = format!("{name}.kubeconfig");
    let secret_reads = || env.platform().requests("list", "secrets");
    let before = secret_reads();
    ars.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "phase": "Granted",
            "observedGeneration": ar.metadata.generation,
            "secretRef": {"name": secret},
        }})),
    )
    .await?;
    // The Secret is written only once the grant is taken up and its Secret looked for.
    tokio::time::timeout(TIMEOUT, async {
        while secret_reads() == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await?;
    assert!(!granted.is_finished(), "granted without its Secret");
    let kubeconfig = env.onboarding().kubeconfig();
    Api::<Secret>::namespaced(platform.clone(), ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": secret},
                "stringData": {"kubeconfig": kubeconfig},
            }))?,
        )
        .await?;
    let access = tokio::time::timeout(TIMEOUT, granted).await???;
    Api::<Namespace>::all(access.client().clone())
        .get("default")
        .await?;

    // Denied.
    let denied = request("onboarding-init", TIMEOUT);
    let name = stable_request_name("foo.example", "onboarding-init", "")?;
    wait_for(&crs, &name, TIMEOUT, conditions::exists()).await?;
    crs.patch_status(&name, &PatchParams::default(), &answer("Denied"))
        .await?;
    let err = tokio::time::timeout(TIMEOUT, denied)
        .await??
        .err()
        .ok_or("a denied request gave access")?;
    assert_eq!(
        err.to_string(),
        format!(
            "ClusterRequest {ns}/{name} was denied by the platform; check the platform operator's logs"
        )
    );

    // Not answered.
    let unanswered = request("onboarding-other", Duration::from_secs(2));
    let name = stable_request_name("foo.example", "onboarding-other", "")?;
    let err = tokio::time::timeout(TIMEOUT, unanswered)
        .await??
        .err()
        .ok_or("an unanswered request gave access")?;
    assert_eq!(
        err.to_string(),
        format!(
            "ClusterRequest {ns}/{name} was not ready within 2s; is the openMCP platform operator running?"
        )
    );
    Ok(())
}
