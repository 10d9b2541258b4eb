//! TokenRequest in workspaces: kcp's claims, and tokens that work only in their home workspace.

use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};
use service_provider_apiserver::kcp::{Kcp, WorkspaceInfo};

use crate::common::*;

async fn mint(kcp: &Kcp, ws: &WorkspaceInfo, sa: &str) -> (String, Value) {
    let sas: Api<ServiceAccount> = Api::namespaced(kcp.client(&ws.path), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": sa}})).unwrap(),
    )
    .await
    .unwrap();
    let tr = sas
        .create_token_request(
            sa,
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {
                "audiences": ["https://kcp.default.svc"], "expirationSeconds": 3600
            }}))
            .unwrap(),
        )
        .await
        .expect("TokenRequest");
    let token = tr.status.expect("status").token.expect("a token");
    let payload = token.split('.').nth(1).expect("a JWT");
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    (token, claims)
}

async fn grant_view(kcp: &Kcp, ws: &WorkspaceInfo, name: &str, subject: Value) {
    Api::<ClusterRoleBinding>::all(kcp.client(&ws.path))
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [subject]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_token_minted_in_workspace_a_is_refused_in_workspace_b() {
    let kcp = kcp().await;
    let a = kcp.create_workspace("root:a").await.unwrap();
    let b = kcp.create_workspace("root:b").await.unwrap();
    let (token, claims) = mint(&kcp, &a, "worker").await;
    assert_eq!(claims["kubernetes.io"]["clusterName"], json!(a.name));
    assert_eq!(claims["iss"], "https://kcp.default.svc");
    assert_eq!(claims["sub"], "system:serviceaccount:default:worker");
    assert_eq!(claims["aud"], json!(["https://kcp.default.svc"]));

    grant_view(
        &kcp,
        &a,
        "worker-view",
        json!({"kind": "ServiceAccount", "name": "worker", "namespace": "default"}),
    )
    .await;
    let in_a: Api<ConfigMap> = Api::namespaced(kcp.client_for_url(&a.url, &token), "default");
    assert!(in_a.list(&ListParams::default()).await.is_ok());

    // In B the token is a stranger: kcp answers with an opaque 404.
    let in_b: Api<ConfigMap> = Api::namespaced(kcp.client_for_url(&b.url, &token), "default");
    let e = status(in_b.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 404);
    assert_eq!(
        e.message,
        "the server could not find the requested resource"
    );

    // Unless RBAC in B grants it, through the group of its home cluster.
    grant_view(
        &kcp,
        &b,
        "a-view",
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": format!("system:cluster:{}", a.name)}),
    )
    .await;
    assert!(in_b.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn a_service_account_token_without_a_cluster_prefix_goes_home() {
    let kcp = kcp().await;
    let a = kcp.create_workspace("root:a").await.unwrap();
    let (token, _) = mint(&kcp, &a, "worker").await;
    grant_view(
        &kcp,
        &a,
        "worker-view",
        json!({"kind": "ServiceAccount", "name": "worker", "namespace": "default"}),
    )
    .await;
    Api::<ConfigMap>::namespaced(kcp.client(&a.path), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "mine"}})).unwrap(),
        )
        .await
        .unwrap();
    let plain: Api<ConfigMap> = Api::namespaced(kcp.client_for_url(&kcp.url(), &token), "default");
    assert!(plain.get("mine").await.is_ok());
}

#[tokio::test]
async fn deleting_the_service_account_revokes_its_tokens() {
    let kcp = kcp().await;
    let a = kcp.create_workspace("root:a").await.unwrap();
    let (token, _) = mint(&kcp, &a, "worker").await;
    let c: Api<ConfigMap> = Api::namespaced(kcp.client_for_url(&a.url, &token), "default");
    assert_eq!(code(c.list(&ListParams::default()).await.unwrap_err()), 403);
    Api::<ServiceAccount>::namespaced(kcp.client(&a.path), "default")
        .delete("worker", &Default::default())
        .await
        .unwrap();
    assert_eq!(code(c.list(&ListParams::default()).await.unwrap_err()), 401);
}

#[tokio::test]
async fn a_provider_reviews_a_tenant_token_through_a_tokenreviews_claim() {
    use k8s_openapi::api::authentication::v1::TokenReview;
    use kube::api::{Patch, PatchParams};
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    exports(&kcp.client(&p.path), "v1alpha2")
        .patch(
            "cowboys",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"permissionClaims": [
                {"group": "authentication.k8s.io", "resource": "tokenreviews", "verbs": ["create"]}
            ]}})),
        )
        .await
        .unwrap();
    let a = kcp.create_workspace("root:a").await.unwrap();
    bind(
        &kcp,
        &a,
        &p,
        "cowboys",
        json!([{"group": "authentication.k8s.io", "resource": "tokenreviews", "verbs": ["create"],
                "selector": {"matchAll": true}, "state": "Accepted"}]),
    )
    .await;
    let (token, _) = mint(&kcp, &a, "worker").await;
    let slice = wait_obj(
        &slices(&kcp.client(&p.path)),
        "cowboys",
        "an endpoint",
        |v| !endpoint_urls(v).is_empty(),
    )
    .await;
    let url = endpoint_urls(&slice).remove(0);
    let vw = kcp.client_for_url(&format!("{url}/clusters/{}", a.name), kcp.admin_token());
    let review = Api::<TokenReview>::all(vw)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {"token": token}})).unwrap(),
        )
        .await
        .expect("TokenReview through the virtual workspace");
    let st = review.status.expect("status");
    assert_eq!(st.authenticated, Some(true));
    let user = st.user.expect("user");
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:worker")
    );
    assert_eq!(
        user.extra.unwrap()["authentication.kcp.io/cluster-name"],
        vec![a.name]
    );
}
