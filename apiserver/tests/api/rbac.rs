//! Authentication and RBAC authorization for identities other than the admin.

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use service_provider_apiserver::Cluster;

use crate::common::*;

async fn sa_token(c: &Cluster, name: &str) -> String {
    let sas: Api<ServiceAccount> = Api::default_namespaced(c.client());
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
    )
    .await
    .unwrap();
    let tr: TokenRequest = serde_json::from_value(json!({"spec": {}})).unwrap();
    sas.create_token_request(name, &PostParams::default(), &tr)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
        .unwrap_or_default()
}

async fn create<K>(api: Api<K>, v: serde_json::Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(v).unwrap())
        .await
        .unwrap();
}

#[tokio::test]
async fn roles_allow_exactly_what_they_grant() {
    let c = cluster().await;
    let admin = c.client();
    let token = sa_token(&c, "reader").await;
    let bot = c.client_for(&token);
    let cms: Api<ConfigMap> = Api::default_namespaced(bot.clone());
    assert_eq!(
        code(cms.list(&ListParams::default()).await.unwrap_err()),
        403
    );

    create(Api::<Role>::namespaced(admin.clone(), "default"), json!({"metadata": {"name": "cm-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["allowed"], "verbs": ["get"]}
    ]}))
    .await;
    create(
        Api::<RoleBinding>::namespaced(admin.clone(), "default"),
        json!({"metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}]}),
    )
    .await;
    // Effective at once.
    assert!(cms.list(&ListParams::default()).await.is_ok());
    assert!(cms.get("kube-root-ca.crt").await.is_ok());
    let s = status(
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "configmaps is forbidden: User \"system:serviceaccount:default:reader\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    // Other namespaces are not covered by a Role.
    let elsewhere: Api<ConfigMap> = Api::namespaced(bot.clone(), "kube-system");
    assert_eq!(
        code(elsewhere.list(&ListParams::default()).await.unwrap_err()),
        403
    );
    // resourceNames.
    let secrets_admin: Api<Secret> = Api::default_namespaced(admin.clone());
    for n in ["allowed", "other"] {
        secrets_admin
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": n}})).unwrap(),
            )
            .await
            .unwrap();
    }
    let secrets: Api<Secret> = Api::default_namespaced(bot.clone());
    assert!(secrets.get("allowed").await.is_ok());
    let s = status(secrets.get("other").await.unwrap_err());
    assert_eq!(
        s.message,
        "secrets \"other\" is forbidden: User \"system:serviceaccount:default:reader\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    // SelfSubjectAccessReview answers the same.
    let ssar: Api<SelfSubjectAccessReview> = Api::all(bot.clone());
    let review = |verb: &str| -> SelfSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": "default"}}})).unwrap()
    };
    assert!(
        ssar.create(&PostParams::default(), &review("list"))
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );
    assert!(
        !ssar
            .create(&PostParams::default(), &review("delete"))
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );

    // Deleting the binding takes the permission away.
    let rbs: Api<RoleBinding> = Api::default_namespaced(admin.clone());
    rbs.delete("reader", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        code(cms.list(&ListParams::default()).await.unwrap_err()),
        403
    );
}

#[tokio::test]
async fn cluster_roles_subresources_and_non_resource_urls() {
    let c = cluster().await;
    let admin = c.client();
    let token = sa_token(&c, "ops").await;
    let bot = c.client_for(&token);
    create(
        Api::<ClusterRole>::all(admin.clone()),
        json!({"metadata": {"name": "ops"}, "rules": [
            {"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["get"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
        ]}),
    )
    .await;
    create(
        Api::<ClusterRoleBinding>::all(admin.clone()),
        json!({"metadata": {"name": "ops"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ops"},
        "subjects": [{"kind": "ServiceAccount", "name": "ops", "namespace": "default"}]}),
    )
    .await;
    let metrics = bot
        .request_text(http::Request::get("/metrics").body(vec![]).unwrap())
        .await;
    assert!(metrics.is_ok(), "{metrics:?}");
    let healthz = c
        .client_for(&token)
        .request_text(http::Request::get("/version").body(vec![]).unwrap())
        .await;
    assert!(healthz.is_ok());
    let e = bot
        .request_text(http::Request::get("/logs").body(vec![]).unwrap())
        .await;
    assert_eq!(
        e.map(|_| 200).unwrap_or_else(code),
        403,
        "no rule grants /logs"
    );
    // Discovery is open to every authenticated user (system:discovery).
    assert!(
        kube::discovery::Discovery::new(bot.clone())
            .run()
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn escalation_is_refused() {
    let c = cluster().await;
    let admin = c.client();
    let token = sa_token(&c, "rbac-manager").await;
    let bot = c.client_for(&token);
    create(Api::<ClusterRole>::all(admin.clone()), json!({"metadata": {"name": "role-writer"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create"]}
    ]}))
    .await;
    create(Api::<ClusterRoleBinding>::all(admin.clone()), json!({"metadata": {"name": "role-writer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "role-writer"},
        "subjects": [{"kind": "ServiceAccount", "name": "rbac-manager", "namespace": "default"}]}))
    .await;
    let roles: Api<Role> = Api::default_namespaced(bot);
    let r: Role = serde_json::from_value(json!({"metadata": {"name": "too-much"}, "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})).unwrap();
    let s = status(roles.create(&PostParams::default(), &r).await.unwrap_err());
    assert_eq!(s.code, 403);
    assert!(
        s.message
            .contains("attempting to grant RBAC permissions not currently held"),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn tokens_die_with_their_service_account_and_anonymous_is_forbidden() {
    let c = cluster().await;
    let token = sa_token(&c, "short-lived").await;
    let mine: Api<ConfigMap> = Api::default_namespaced(c.client_for(&token));
    assert_eq!(
        code(mine.list(&ListParams::default()).await.unwrap_err()),
        403
    );
    let sas: Api<ServiceAccount> = Api::default_namespaced(c.client());
    sas.delete("short-lived", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        code(mine.list(&ListParams::default()).await.unwrap_err()),
        401
    );

    // No credentials: system:anonymous, refused by RBAC.
    let mut cfg = c.config();
    cfg.headers.clear();
    let anon: Api<ConfigMap> = Api::default_namespaced(Client::try_from(cfg).unwrap());
    let s = status(anon.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(s.code, 403);
    assert!(
        s.message.contains("User \"system:anonymous\""),
        "{}",
        s.message
    );

    // TokenReview tells who a token belongs to.
    let reviews: Api<k8s_openapi::api::authentication::v1::TokenReview> = Api::all(c.client());
    let token2 = sa_token(&c, "reviewed").await;
    let r: k8s_openapi::api::authentication::v1::TokenReview =
        serde_json::from_value(json!({"spec": {"token": token2}})).unwrap();
    let st = reviews
        .create(&PostParams::default(), &r)
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(st.authenticated, Some(true));
    assert_eq!(
        st.user.unwrap().username.as_deref(),
        Some("system:serviceaccount:default:reviewed")
    );
}
