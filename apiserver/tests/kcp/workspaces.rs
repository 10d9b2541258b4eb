//! Workspaces, logical clusters, routing by path and name, the `kcp.io/cluster` annotation and
//! the wildcard.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::Api;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn creating_a_workspace_creates_a_ready_logical_cluster() {
    let kcp = kcp().await;
    let root = kcp.client("root");
    let ws = workspaces(&root)
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": "team"}, "spec": {}
            })),
        )
        .await
        .expect("create workspace");
    assert_eq!(ws.metadata.name.as_deref(), Some("team"));
    assert_eq!(ws.data["status"]["phase"], "Scheduling");
    let ready = wait_obj(&workspaces(&root), "team", "Ready", |v| {
        v.pointer("/status/phase") == Some(&json!("Ready"))
    })
    .await;
    let name = ready["spec"]["cluster"].as_str().expect("spec.cluster");
    assert_eq!(name.len(), 16, "{name}");
    assert!(
        name.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    );
    assert_eq!(
        ready["spec"]["URL"],
        json!(format!("{}/clusters/root:team", kcp.url()))
    );
    assert_eq!(
        ready["spec"]["type"],
        json!({"name": "universal", "path": "root"})
    );
    assert_eq!(
        ready["metadata"]["annotations"]["kcp.io/cluster"],
        json!("root"),
        "the Workspace object lives in its parent"
    );

    // By path and by name: the same logical cluster, with namespace `default`, its ServiceAccount
    // and the CA ConfigMap, and the LogicalCluster object.
    for addr in ["root:team", name] {
        let c = kcp.client(addr);
        let ns: Api<Namespace> = Api::all(c.clone());
        let names: Vec<String> = ns
            .list(&ListParams::default())
            .await
            .expect("list namespaces")
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        assert_eq!(names, ["default"]);
        let sas: Api<ServiceAccount> = Api::namespaced(c.clone(), "default");
        eventually("the default ServiceAccount", || {
            let sas = sas.clone();
            async move { sas.get_opt("default").await.ok().flatten().is_some() }
        })
        .await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
        eventually("kube-root-ca.crt", || {
            let cms = cms.clone();
            async move {
                cms.get_opt("kube-root-ca.crt")
                    .await
                    .ok()
                    .flatten()
                    .is_some()
            }
        })
        .await;
        let lc: Api<kube::api::DynamicObject> = Api::all_with(
            c.clone(),
            &ar(
                "core.kcp.io",
                "v1alpha1",
                "LogicalCluster",
                "logicalclusters",
            ),
        );
        let lc = serde_json::to_value(lc.get("cluster").await.expect("LogicalCluster")).unwrap();
        assert_eq!(lc["metadata"]["annotations"]["kcp.io/path"], "root:team");
        assert_eq!(lc["metadata"]["annotations"]["kcp.io/cluster"], name);
        assert_eq!(lc["status"]["phase"], "Ready");
        assert_eq!(lc["spec"]["owner"]["name"], "team");
        assert_eq!(lc["spec"]["owner"]["cluster"], "root");
    }
    let info = kcp.workspace("root:team").expect("indexed");
    assert_eq!(info.name, name);
    assert_eq!(
        kcp.workspace(name).map(|w| w.path),
        Some("root:team".into())
    );
}

#[tokio::test]
async fn every_object_in_every_response_carries_its_logical_cluster() {
    let kcp = kcp().await;
    let ws = kcp.create_workspace("root:a").await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(kcp.client(&ws.path), "default");
    let created = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap();
    let ann = |cm: &ConfigMap| {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kcp.io/cluster").cloned())
    };
    assert_eq!(ann(&created), Some(ws.name.clone()));
    assert_eq!(ann(&cms.get("x").await.unwrap()), Some(ws.name.clone()));
    for cm in cms.list(&ListParams::default()).await.unwrap() {
        assert_eq!(ann(&cm), Some(ws.name.clone()));
    }
    let mut stream = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let mut seen = 0;
    while seen < 1 {
        match tokio::time::timeout(TIMEOUT, stream.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(cm)))) => {
                assert_eq!(ann(&cm), Some(ws.name.clone()));
                seen += 1;
            }
            Ok(Ok(Some(_))) => {}
            other => panic!("watch ended: {other:?}"),
        }
    }
}

#[tokio::test]
async fn unknown_paths_bad_names_and_wildcard_writes_are_refused() {
    let kcp = kcp().await;
    let missing: Api<ConfigMap> = Api::namespaced(kcp.client("root:nope"), "default");
    let e = status(missing.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 403);
    assert!(
        e.message.ends_with("workspace access not permitted"),
        "{}",
        e.message
    );
    let bad: Api<ConfigMap> = Api::namespaced(kcp.client("Root:X"), "default");
    let e = status(bad.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "invalid cluster: \"Root:X\" does not match the regex"
    );
    let wild: Api<ConfigMap> = Api::namespaced(kcp.wildcard_client(0), "default");
    let e = status(
        wild.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 405);
    assert_eq!(e.reason, "MethodNotAllowed");
    assert_eq!(
        e.message,
        "create is not supported on resources of kind \"configmaps\" in the `*` logical cluster"
    );
}

#[tokio::test]
async fn the_wildcard_needs_system_masters() {
    let kcp = kcp().await;
    let token = kcp.add_user("alice", &[]);
    let url = format!("{}/clusters/*", kcp.url());
    let cms: Api<ConfigMap> = Api::all(kcp.client_for_url(&url, &token));
    assert_eq!(
        code(cms.list(&ListParams::default()).await.unwrap_err()),
        403
    );
    let cms: Api<ConfigMap> = Api::all(kcp.wildcard_client(0));
    assert!(cms.list(&ListParams::default()).await.is_ok());
    // Percent-encoded, as some clients send it.
    let encoded = format!("{}/clusters/%2A", kcp.url());
    let cms: Api<ConfigMap> = Api::all(kcp.client_for_url(&encoded, kcp.admin_token()));
    assert!(cms.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn same_named_objects_in_two_workspaces_stay_distinct_in_a_wildcard_watch() {
    let kcp = kcp().await;
    let a = kcp.create_workspace("root:a").await.unwrap();
    let b = kcp.create_workspace("root:b").await.unwrap();
    let wild: Api<ConfigMap> = Api::all(kcp.wildcard_client(0));
    let list = wild.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    let mut stream = wild
        .watch(&WatchParams::default().labels("test=wildcard"), &rv)
        .await
        .unwrap()
        .boxed();
    for (ws, value) in [(&a, "from-a"), (&b, "from-b")] {
        let cms: Api<ConfigMap> = Api::namespaced(kcp.client(&ws.path), "default");
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "same", "labels": {"test": "wildcard"}},
                "data": {"v": value}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    }
    let mut seen: Vec<(String, String, u64)> = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(TIMEOUT, stream.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(cm)))) => {
                let v: Value = serde_json::to_value(&cm).unwrap();
                seen.push((
                    v["metadata"]["annotations"]["kcp.io/cluster"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    v["data"]["v"].as_str().unwrap().to_string(),
                    v["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap(),
                ));
            }
            Ok(Ok(Some(_))) => {}
            other => panic!("watch ended: {other:?}"),
        }
    }
    assert_eq!(
        seen.iter()
            .map(|(c, v, _)| (c.clone(), v.clone()))
            .collect::<Vec<_>>(),
        [
            (a.name.clone(), "from-a".to_string()),
            (b.name.clone(), "from-b".to_string())
        ]
    );
    assert!(seen[0].2 < seen[1].2, "one resourceVersion order per shard");
    // The wildcard list shows both, each with its cluster.
    let items = wild
        .list(&ListParams::default().labels("test=wildcard"))
        .await
        .unwrap()
        .items;
    let mut clusters: Vec<String> = items
        .iter()
        .map(|cm| cm.metadata.annotations.as_ref().unwrap()["kcp.io/cluster"].clone())
        .collect();
    clusters.sort();
    let mut want = vec![a.name.clone(), b.name.clone()];
    want.sort();
    assert_eq!(clusters, want);
}

#[tokio::test]
async fn nested_workspaces_resolve_and_deleting_a_workspace_removes_its_content() {
    let kcp = kcp().await;
    let org = kcp.create_workspace("root:org").await.unwrap();
    let team = kcp.create_workspace("root:org:team").await.unwrap();
    assert_eq!(team.path, "root:org:team");
    let cms: Api<ConfigMap> = Api::namespaced(kcp.client("root:org:team"), "default");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
    )
    .await
    .unwrap();
    workspaces(&kcp.client("root"))
        .delete("org", &Default::default())
        .await
        .unwrap();
    eventually("the workspace and its child to go", || {
        let kcp = kcp.clone();
        let (o, t) = (org.name.clone(), team.name.clone());
        async move { kcp.workspace(&o).is_none() && kcp.workspace(&t).is_none() }
    })
    .await;
    eventually("the Workspace object to go", || {
        let api = workspaces(&kcp.client("root"));
        async move { api.get_opt("org").await.ok().flatten().is_none() }
    })
    .await;
    let e = status(cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 403);
}

/// kcp's routing answers some requests before any resource handler sees them (a workspace the
/// caller cannot reach, a malformed virtual-workspace path). Over HTTP/2 such an answer used to
/// come while the client was still sending its body, which reset the stream: curl saw a stream
/// error instead of the 403/404. hyper's client tolerates the reset, so curl is the client here,
/// negotiating HTTP/2 over TLS with ALPN as the server offers it.
#[tokio::test]
async fn http2_clients_get_routing_errors_as_a_status() {
    let kcp = kcp().await;
    let ca_pem = kcp.ca_pem().expect("kcp serves TLS");
    for (path, code, reason) in [
        (
            "/clusters/root:nope/api/v1/namespaces/default/configmaps",
            "403",
            "Forbidden",
        ),
        ("/services/apiexport/nope", "404", "NotFound"),
    ] {
        let (got, status) = crate::http2::post_large_body(
            &format!("{}{path}", kcp.url()),
            kcp.admin_token(),
            Some(ca_pem),
        )
        .await;
        assert_eq!(got, format!("{code} 2"), "{path}: {status}");
        assert_eq!(status["reason"], reason, "{status}");
    }
}
