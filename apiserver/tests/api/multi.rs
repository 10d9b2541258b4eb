//! Several clusters in one process; kubeconfigs; tokens scoped to their cluster.

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, ResourceExt};
use serde_json::json;
use service_provider_apiserver::{ClusterOptions, ControlPlane};

use crate::common::*;

#[tokio::test]
async fn clusters_are_independent_and_kubeconfigs_work() {
    let cp = ControlPlane::new();
    let a = cp
        .add_cluster("platform", ClusterOptions::default())
        .await
        .unwrap();
    let b = cp
        .add_cluster("onboarding", ClusterOptions::default().http())
        .await
        .unwrap();
    assert!(
        cp.add_cluster("platform", ClusterOptions::default())
            .await
            .is_err()
    );
    assert_ne!(a.url(), b.url());
    assert!(a.url().starts_with("https://127.0.0.1:"));
    assert!(b.url().starts_with("http://127.0.0.1:"));

    // A client built from the kubeconfig YAML, as kubectl would read it.
    let kc = Kubeconfig::from_yaml(&a.kubeconfig()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(cfg).unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "only-on-a"}})).unwrap(),
    )
    .await
    .unwrap();
    let on_b: Api<ConfigMap> = Api::default_namespaced(b.client());
    assert_eq!(code(on_b.get("only-on-a").await.unwrap_err()), 404);

    let dir = std::env::temp_dir().join(format!("kc-{}", std::process::id()));
    a.write_kubeconfig(&dir).unwrap();
    assert!(std::fs::read_to_string(&dir).unwrap().contains(&a.url()));
    let _ = std::fs::remove_file(dir);
    assert_eq!(cp.clusters().len(), 2);
}

#[tokio::test]
async fn service_account_tokens_work_only_on_their_cluster() {
    let cp = ControlPlane::new();
    let a = cp
        .add_cluster("a", ClusterOptions::default())
        .await
        .unwrap();
    let b = cp
        .add_cluster("b", ClusterOptions::default())
        .await
        .unwrap();
    let sas: Api<ServiceAccount> = Api::default_namespaced(a.client());
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "bot"}})).unwrap(),
    )
    .await
    .unwrap();
    // Without audiences the token is for the API server itself.
    let tr: TokenRequest =
        serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    let tr = sas
        .create_token_request("bot", &PostParams::default(), &tr)
        .await
        .unwrap();
    let token = tr.status.unwrap().token.unwrap_or_default();
    assert_eq!(token.split('.').count(), 3, "a JWT");
    // A token for another audience does not authenticate API requests.
    let other: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": ["vault"]}})).unwrap();
    let other = sas
        .create_token_request("bot", &PostParams::default(), &other)
        .await
        .unwrap();
    let other = other.status.unwrap().token.unwrap_or_default();
    let with_other: Api<ServiceAccount> = Api::default_namespaced(a.client_for(&other));
    assert_eq!(
        code(with_other.list(&ListParams::default()).await.unwrap_err()),
        401
    );

    let on_a: Api<ServiceAccount> = Api::default_namespaced(a.client_for(&token));
    // The token authenticates on A (its permissions are RBAC's business).
    let s = status(on_a.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(s.code, 403, "authenticated, but RBAC grants nothing yet");
    assert_eq!(
        s.message,
        "serviceaccounts is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"serviceaccounts\" in API group \"\" in the namespace \"default\""
    );
    let on_b: Api<ServiceAccount> = Api::default_namespaced(b.client_for(&token));
    assert_eq!(
        code(on_b.list(&ListParams::default()).await.unwrap_err()),
        401
    );
    let bogus: Api<ServiceAccount> = Api::default_namespaced(a.client_for("not-a-token"));
    assert_eq!(
        code(bogus.list(&ListParams::default()).await.unwrap_err()),
        401
    );
}

#[tokio::test]
async fn a_hundred_clusters_are_cheap() {
    let cp = ControlPlane::new();
    let started = std::time::Instant::now();
    let mut clusters = Vec::new();
    for i in 0..100 {
        clusters.push(
            cp.add_cluster(&format!("mcp-{i}"), ClusterOptions::default())
                .await
                .unwrap(),
        );
    }
    for c in clusters.iter().step_by(10) {
        let api: Api<ConfigMap> = Api::default_namespaced(c.client());
        eventually("kube-root-ca.crt", || async {
            api.get("kube-root-ca.crt").await.is_ok()
        })
        .await;
        assert_eq!(
            api.get("kube-root-ca.crt").await.unwrap().name_any(),
            "kube-root-ca.crt"
        );
    }
    eprintln!("100 clusters started and probed in {:?}", started.elapsed());
}
