//! Client-certificate authentication: kubeconfigs that carry a certificate (as kind and k3d write
//! them) authenticate as the certificate's CN and O, RBAC applies to that user and its groups,
//! and a certificate the cluster's CA did not sign is 401.

use base64::Engine;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};
use serde_json::json;

use crate::common::*;

async fn client_from(kubeconfig: &str) -> Client {
    let kc = Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

async fn whoami(client: &Client) -> (String, Vec<String>) {
    let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
    let review: SelfSubjectReview = serde_json::from_value(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .unwrap();
    let got = reviews.create(&Default::default(), &review).await.unwrap();
    let info = got.status.unwrap().user_info.unwrap();
    (info.username.unwrap(), info.groups.unwrap_or_default())
}

#[tokio::test]
async fn client_certificates_authenticate_as_their_subject() {
    let c = cluster().await;
    let kubeconfig = c
        .kubeconfig_with_certificate("alice", Some("devs"))
        .unwrap();
    // The kubeconfig has the shape kind writes: certificate and key data, no token.
    let doc: serde_json::Value = serde_norway::from_str(&kubeconfig).unwrap();
    let user = &doc["users"][0]["user"];
    assert!(user["token"].is_null());
    let cert = base64::engine::general_purpose::STANDARD
        .decode(user["client-certificate-data"].as_str().unwrap())
        .unwrap();
    assert!(
        String::from_utf8(cert)
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );

    let alice = client_from(&kubeconfig).await;
    assert_eq!(
        whoami(&alice).await,
        (
            "alice".to_string(),
            vec!["devs".to_string(), "system:authenticated".to_string()]
        )
    );
    // RBAC sees the certificate's user and groups: nothing is allowed until the group is bound.
    let cms: Api<ConfigMap> = Api::default_namespaced(alice.clone());
    let s = status(cms.list(&Default::default()).await.unwrap_err());
    assert_eq!(s.code, 403);
    assert!(
        s.message
            .contains("User \"alice\" cannot list resource \"configmaps\""),
        "{}",
        s.message
    );
    let bindings: Api<RoleBinding> = Api::default_namespaced(c.client());
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "devs-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]
    }))
    .unwrap();
    bindings
        .create(&Default::default(), &binding)
        .await
        .unwrap();
    eventually("the group binding to apply", || {
        let cms = cms.clone();
        async move { cms.list(&Default::default()).await.is_ok() }
    })
    .await;
    let s = status(
        cms.create(&Default::default(), &ConfigMap::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 403, "view does not create: {}", s.message);

    // A k3d-style admin certificate is in system:masters.
    let admin = client_from(
        &c.kubeconfig_with_certificate("system:admin", Some("system:masters"))
            .unwrap(),
    )
    .await;
    let admin_cms: Api<ConfigMap> = Api::default_namespaced(admin);
    admin_cms
        .create(
            &Default::default(),
            &serde_json::from_value(json!({"metadata": {"name": "by-cert"}})).unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn certificates_the_cluster_ca_did_not_sign_are_unauthorized() {
    let c = cluster().await;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mallory");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let foreign = params.self_signed(&key).unwrap();
    let cert = service_provider_apiserver::tls::ClientCertificate {
        cert_pem: foreign.pem(),
        key_pem: key.serialize_pem(),
    };
    let kubeconfig = service_provider_apiserver::kubeconfig::kubeconfig_with_certificate(
        "x",
        &c.url(),
        c.ca_pem(),
        "mallory",
        &cert,
        "default",
    );
    let mallory = client_from(&kubeconfig).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(mallory);
    let s = status(cms.list(&Default::default()).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (401, "Unauthorized"));
}
