//! The launcher of real kube-apiservers (`dev::realstack`): a kube-apiserver built by `cargo xtask
//! realstack` (or envtest's, through `KUBEBUILDER_ASSETS`) starts, serves the admin, enforces
//! RBAC, and leaves no process behind. Skipped, saying so, where the binaries are not built —
//! unless the real backend is asked for (`SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver`, which
//! `cargo xtask test-real` and CI set): then missing binaries fail the test.

use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::api::{Api, ObjectMeta, PostParams};
use service_provider_runtime::dev::realstack::{
    Binaries, KUBERNETES_VERSION, KubeApiserver, RealStack,
};

/// Waits until process `pid` is gone.
async fn wait_exited(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let proc = std::path::Path::new("/proc").join(pid.to_string());
    while proc.exists() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_apiserver_serves_the_admin_and_enforces_rbac() -> anyhow::Result<()> {
    let Some(binaries) = Binaries::for_test() else {
        return Ok(());
    };
    let stack = RealStack::start_with(binaries, Duration::from_secs(120)).await?;
    let cluster: KubeApiserver = stack.kube_apiserver("mcp-a").await?;
    let admin = cluster.client().await?;

    // The release built, stamped as the release is.
    let version = admin.apiserver_version().await?;
    assert_eq!(version.git_version, KUBERNETES_VERSION, "{version:?}");

    // The admin (a client certificate in system:masters) writes.
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("tenant-a".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), "tenant-a");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("greeting".into()),
            ..Default::default()
        },
        data: Some([("hello".to_string(), "world".to_string())].into()),
        ..Default::default()
    };
    config_maps.create(&PostParams::default(), &cm).await?;
    let read = config_maps.get("greeting").await?;
    assert_eq!(
        read.data.and_then(|d| d.get("hello").cloned()).as_deref(),
        Some("world")
    );

    // A ServiceAccount with no rules, authenticated by a TokenRequest token: RBAC says 403.
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "tenant-a");
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some("nobody".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    accounts.create(&PostParams::default(), &sa).await?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token = accounts
        .create_token_request("nobody", &PostParams::default(), &request)
        .await?
        .status
        .and_then(|s| s.token)
        .unwrap_or_default();
    assert!(!token.is_empty());
    let nobody = cluster.client_for_token(&token).await?;
    let denied = Api::<ConfigMap>::namespaced(nobody.clone(), "tenant-a")
        .get("greeting")
        .await
        .err();
    assert_eq!(
        denied.as_ref().and_then(status_code),
        Some(403),
        "{denied:?}"
    );
    // The token does authenticate: SelfSubjectReview says who it is.
    let whoami: serde_json::Value = nobody
        .request(
            http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&serde_json::json!({
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "SelfSubjectReview",
                }))?)?,
        )
        .await?;
    assert_eq!(
        whoami["status"]["userInfo"]["username"],
        "system:serviceaccount:tenant-a:nobody"
    );
    // A token the server never issued is not authenticated at all: 401.
    let forged = cluster.client_for_token("not-a-token").await?;
    let unauthenticated = Api::<ConfigMap>::namespaced(forged, "tenant-a")
        .get("greeting")
        .await
        .err();
    assert_eq!(
        unauthenticated.as_ref().and_then(status_code),
        Some(401),
        "{unauthenticated:?}"
    );

    // Dropped, the process is gone and its port closed.
    let pid = cluster.pid();
    let address = cluster.url().trim_start_matches("https://").to_string();
    drop(cluster);
    assert!(
        wait_exited(pid, Duration::from_secs(10)).await,
        "kube-apiserver {pid} still runs"
    );
    assert!(tokio::net::TcpStream::connect(&address).await.is_err());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_on_one_etcd_do_not_see_each_other() -> anyhow::Result<()> {
    let Some(binaries) = Binaries::for_test() else {
        return Ok(());
    };
    let stack = RealStack::start_with(binaries, Duration::from_secs(120)).await?;
    let (a, b) = tokio::try_join!(stack.kube_apiserver("a"), stack.kube_apiserver("b"))?;
    assert_ne!(a.etcd_prefix(), b.etcd_prefix());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("only-in-a".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let in_a: Api<Namespace> = Api::all(a.client().await?);
    in_a.create(&PostParams::default(), &ns).await?;
    assert!(in_a.get_opt("only-in-a").await?.is_some());
    let in_b: Api<Namespace> = Api::all(b.client().await?);
    assert!(in_b.get_opt("only-in-a").await?.is_none());
    Ok(())
}
