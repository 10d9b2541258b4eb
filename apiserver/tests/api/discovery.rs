//! Discovery (legacy and aggregated), version, content negotiation.

use kube::discovery::{Discovery, Scope};

use crate::common::*;

#[tokio::test]
async fn legacy_and_aggregated_discovery_list_builtins_and_crds() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    for d in [
        Discovery::new(client.clone()).run().await.unwrap(),
        Discovery::new(client.clone())
            .run_aggregated()
            .await
            .unwrap(),
    ] {
        let groups: Vec<String> = d.groups().map(|g| g.name().to_string()).collect();
        for g in [
            "",
            "apps",
            "rbac.authorization.k8s.io",
            "apiextensions.k8s.io",
            "coordination.k8s.io",
            "events.k8s.io",
            "example.com",
        ] {
            assert!(groups.contains(&g.to_string()), "{g} in {groups:?}");
        }
        let ex = d.get("example.com").unwrap();
        assert_eq!(ex.preferred_version_or_latest(), "v1");
        let (ar, caps) = ex.recommended_kind("Widget").unwrap();
        assert_eq!(ar.plural, "widgets");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(
            caps.subresources
                .iter()
                .any(|(s, _)| s.plural == "widgets/status" || s.plural == "status"),
            "{:?}",
            caps.subresources
        );
        let (dep, caps) = d
            .get("apps")
            .unwrap()
            .recommended_kind("Deployment")
            .unwrap();
        assert_eq!(dep.plural, "deployments");
        assert!(caps.subresources.len() >= 2);
    }
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
}

#[tokio::test]
async fn negotiation_and_unknown_paths() {
    let c = cluster().await;
    let (code, body) = raw(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("accept", "application/vnd.kubernetes.protobuf")],
        "",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(body.starts_with("k8s\0"), "a protobuf body: {body}");
    let (code, _) = raw(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("accept", "application/vnd.kubernetes.protobuf, */*")],
        "",
    )
    .await;
    assert_eq!(code, 200);
    // A group version nobody serves has no handler: Go's plain 404 page, as kube-apiserver's mux.
    let (code, body) = raw(&c, "GET", "/apis/nope.io/v1/things", &[], "").await;
    assert_eq!((code, body.as_str()), (404, "404 page not found\n"));
    // An unknown resource of a served group version: a Status.
    let (code, body) = raw(&c, "GET", "/api/v1/things", &[], "").await;
    assert_eq!(code, 404);
    assert!(body.contains("the server could not find the requested resource"));
    let (code, body) = raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        &[("content-type", "text/plain")],
        "{}",
    )
    .await;
    assert_eq!(code, 415, "{body}");
    let (code, body) = raw(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        "",
    )
    .await;
    assert_eq!(code, 200);
    let t: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["columnDefinitions"][0]["name"], "Name");
    assert_eq!(t["rows"][0]["cells"][0], "kube-root-ca.crt");
    let (code, body) = raw(&c, "GET", "/openapi/v3", &[], "").await;
    assert_eq!(code, 200);
    assert!(body.contains("apis/apps/v1"));
    let (code, body) = raw(&c, "GET", "/healthz", &[], "").await;
    assert_eq!((code, body.as_str()), (200, "ok"));
}

/// Over HTTP/2, an answer given while the client is still sending its body used to reset the
/// stream: curl (like other HTTP/2 clients that do not wait for a reset after a response) saw a
/// stream error instead of the 404 kube-apiserver answers. hyper's client tolerates the reset, so
/// curl is the client here.
#[tokio::test]
async fn http2_clients_get_the_404_of_an_unserved_resource() {
    let c = service_provider_apiserver::ApiServer::start_with(
        "h2",
        service_provider_apiserver::ClusterOptions::default().http(),
    )
    .await
    .unwrap();
    for path in ["/apis/apps/v1/nopes", "/api/v1/nopes"] {
        let (code, status) =
            crate::http2::post_large_body(&format!("{}{path}", c.url()), c.admin_token(), None)
                .await;
        assert_eq!(code, "404 2", "{path}");
        assert_eq!(status["reason"], "NotFound", "{status}");
    }
}
