//! The APIExport virtual workspace, as a provider reaches it through the endpoint slice.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use service_provider_apiserver::kcp::Kcp;

use crate::common::*;

/// The endpoint URL of the provider's slice, once it has one.
async fn vw_url(kcp: &Kcp, provider: &str) -> String {
    let slice = wait_obj(
        &slices(&kcp.client(provider)),
        "cowboys",
        "an endpoint",
        |v| !endpoint_urls(v).is_empty(),
    )
    .await;
    endpoint_urls(&slice).remove(0)
}

#[tokio::test]
async fn an_endpoint_slice_gains_its_url_when_the_first_binding_appears() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let slice = wait_obj(&slices(&kcp.client(&p.path)), "cowboys", "status", |v| {
        condition(v, "APIExportValid").is_some()
    })
    .await;
    assert!(endpoint_urls(&slice).is_empty());
    consumer(&kcp, "c", &p).await;
    let url = vw_url(&kcp, &p.path).await;
    assert_eq!(
        url,
        format!(
            "{}/services/apiexport/{}/cowboys",
            kcp.shard(0).unwrap().url(),
            p.name
        )
    );
    // The switch publishes every shard eagerly, also for exports without bindings.
    let q = provider(&kcp, "q").await;
    kcp.set_publish_endpoints_eagerly(true);
    let slice = wait_obj(
        &slices(&kcp.client(&q.path)),
        "cowboys",
        "eager endpoint",
        |v| !endpoint_urls(v).is_empty(),
    )
    .await;
    assert_eq!(endpoint_urls(&slice).len(), 1);
}

#[tokio::test]
async fn the_wildcard_lists_and_watches_bound_objects_of_every_consumer() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let a = consumer(&kcp, "a", &p).await;
    let b = consumer(&kcp, "b", &p).await;
    let url = vw_url(&kcp, &p.path).await;
    for ws in [&a, &b] {
        cowboys(&kcp.client(&ws.path), "default")
            .create(
                &PostParams::default(),
                &cowboy("same", &ws.path.replace(':', "-")),
            )
            .await
            .unwrap();
    }
    let wild = all_cowboys(&kcp.client_for_url(&format!("{url}/clusters/*"), kcp.admin_token()));
    let list = wild.list(&ListParams::default()).await.unwrap();
    let mut got: Vec<(String, String)> = list
        .items
        .iter()
        .map(|o| {
            let v = serde_json::to_value(o).unwrap();
            (
                v["metadata"]["annotations"]["kcp.io/cluster"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                v["spec"]["intent"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want = vec![
        (a.name.clone(), "root-a".to_string()),
        (b.name.clone(), "root-b".to_string()),
    ];
    want.sort();
    assert_eq!(got, want);
    // A watch from the list's resourceVersion sees later changes, in order.
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = wild
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    cowboys(&kcp.client(&b.path), "default")
        .create(&PostParams::default(), &cowboy("late", "x"))
        .await
        .unwrap();
    loop {
        match tokio::time::timeout(TIMEOUT, stream.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(o)))) => {
                assert_eq!(o.metadata.name.as_deref(), Some("late"));
                assert_eq!(o.metadata.annotations.unwrap()["kcp.io/cluster"], b.name);
                break;
            }
            Ok(Ok(Some(_))) => {}
            other => panic!("watch ended: {other:?}"),
        }
    }
    // Writes need one logical cluster.
    assert_eq!(
        code(
            wild.create(&PostParams::default(), &cowboy("x", "y"))
                .await
                .unwrap_err()
        ),
        405
    );
}

#[tokio::test]
async fn one_cluster_through_the_virtual_workspace_reads_and_writes_status() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let a = consumer(&kcp, "a", &p).await;
    let url = vw_url(&kcp, &p.path).await;
    cowboys(&kcp.client(&a.path), "default")
        .create(&PostParams::default(), &cowboy("lucky", "ride"))
        .await
        .unwrap();
    let vw = kcp.client_for_url(&format!("{url}/clusters/{}", a.name), kcp.admin_token());
    let api = cowboys(&vw, "default");
    let o = api.get("lucky").await.unwrap();
    assert_eq!(o.metadata.annotations.unwrap()["kcp.io/cluster"], a.name);
    api.patch_status(
        "lucky",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"result": "done"}})),
    )
    .await
    .unwrap();
    let seen = cowboys(&kcp.client(&a.path), "default")
        .get("lucky")
        .await
        .unwrap();
    assert_eq!(seen.data["status"]["result"], "done");
    // The virtual workspace has no aggregated discovery, but legacy discovery works for clients.
    let d = kube::Discovery::new(vw.clone()).run().await.unwrap();
    let groups: Vec<String> = d.groups().map(|g| g.name().to_string()).collect();
    assert!(groups.contains(&"wildwest.dev".to_string()), "{groups:?}");
    assert!(groups.contains(&"apis.kcp.io".to_string()), "{groups:?}");
    // Paths are not names in the virtual workspace; discovery lives only under /clusters/.
    let by_path = kcp.client_for_url(&format!("{url}/clusters/{}", a.path), kcp.admin_token());
    assert_eq!(
        code(
            cowboys(&by_path, "default")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        ),
        404
    );
    let bare = kcp.client_for_url(&url, kcp.admin_token());
    assert_eq!(
        code(bare.list_core_api_resources("v1").await.unwrap_err()),
        404
    );
}

#[tokio::test]
async fn the_virtual_workspace_refuses_a_workspace_with_no_binding() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    consumer(&kcp, "a", &p).await;
    let other = kcp.create_workspace("root:other").await.unwrap();
    let url = vw_url(&kcp, &p.path).await;
    let vw = kcp.client_for_url(&format!("{url}/clusters/{}", other.name), kcp.admin_token());
    let e = status(
        cowboys(&vw, "default")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message
            .ends_with("could not find suitable APIBinding in target logical cluster"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn accepted_claims_and_read_only_apibindings() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let accepted = kcp.create_workspace("root:accepted").await.unwrap();
    bind(
        &kcp,
        &accepted,
        &p,
        "cowboys",
        json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch", "create"], "selector": {"matchAll": true}, "state": "Accepted"}]),
    )
    .await;
    let rejected = kcp.create_workspace("root:rejected").await.unwrap();
    bind(
        &kcp,
        &rejected,
        &p,
        "cowboys",
        json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list"], "selector": {"matchAll": true}, "state": "Rejected"}]),
    )
    .await;
    let url = vw_url(&kcp, &p.path).await;
    let token = kcp.admin_token();
    for ws in [&accepted, &rejected] {
        Api::<ConfigMap>::namespaced(kcp.client(&ws.path), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "tenant-data"}})).unwrap(),
            )
            .await
            .unwrap();
    }
    // Accepted: the provider reads and creates configmaps there.
    let acc = kcp.client_for_url(&format!("{url}/clusters/{}", accepted.name), token);
    let cms = Api::<ConfigMap>::namespaced(acc.clone(), "default");
    assert!(cms.get("tenant-data").await.is_ok());
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "from-provider"}})).unwrap(),
    )
    .await
    .unwrap();
    // A verb the claim does not grant.
    assert_eq!(
        code(
            cms.delete("tenant-data", &Default::default())
                .await
                .unwrap_err()
        ),
        403
    );
    // Rejected: no access.
    let rej = kcp.client_for_url(&format!("{url}/clusters/{}", rejected.name), token);
    assert_eq!(
        code(
            Api::<ConfigMap>::namespaced(rej, "default")
                .get("tenant-data")
                .await
                .unwrap_err()
        ),
        403
    );
    // The wildcard shows claimed objects only where the claim was accepted.
    let wild = kcp.client_for_url(&format!("{url}/clusters/*"), token);
    let names: Vec<(String, String)> = Api::<ConfigMap>::all(wild.clone())
        .list(&ListParams::default().fields("metadata.namespace=default"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .map(|c| {
            (
                c.metadata.annotations.unwrap()["kcp.io/cluster"].clone(),
                c.metadata.name.unwrap(),
            )
        })
        .collect();
    assert!(names.iter().all(|(c, _)| *c == accepted.name), "{names:?}");
    assert_eq!(names.len(), 2, "{names:?}");
    // Unclaimed built-ins are not served at all.
    assert_eq!(
        code(
            Api::<Secret>::namespaced(acc.clone(), "default")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        ),
        404
    );
    // APIBindings: read-only, only the bindings to this export.
    let bs = bindings(&acc, "v1alpha2");
    let listed = bs.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let e = status(
        bs.patch(
            "cowboys",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message
            .ends_with("write access to APIBinding is not allowed from virtual workspace"),
        "{}",
        e.message
    );
    let all: Vec<Value> = bindings(&wild, "v1alpha1")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|b| serde_json::to_value(b).unwrap())
        .collect();
    assert_eq!(all.len(), 2);
}

#[tokio::test]
async fn no_token_subresource_and_providers_need_apiexport_content() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let a = kcp.create_workspace("root:a").await.unwrap();
    // Export serviceaccounts as a claim and accept it.
    exports(&kcp.client(&p.path), "v1alpha2")
        .patch(
            "cowboys",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"permissionClaims": [{"group": "", "resource": "serviceaccounts", "verbs": ["*"]}]}})),
        )
        .await
        .unwrap();
    bind(
        &kcp,
        &a,
        &p,
        "cowboys",
        json!([{"group": "", "resource": "serviceaccounts", "verbs": ["*"], "selector": {"matchAll": true}, "state": "Accepted"}]),
    )
    .await;
    let url = vw_url(&kcp, &p.path).await;
    let vw = kcp.client_for_url(&format!("{url}/clusters/{}", a.name), kcp.admin_token());
    let sas = Api::<ServiceAccount>::namespaced(vw.clone(), "default");
    eventually(
        "the default ServiceAccount through the virtual workspace",
        || {
            let sas = sas.clone();
            async move { sas.get_opt("default").await.ok().flatten().is_some() }
        },
    )
    .await;
    let e = sas
        .create_token_request(
            "default",
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {}})).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(code(e), 404, "the virtual workspace wires only `status`");
    let d = vw
        .list_core_api_resources("v1")
        .await
        .expect("core discovery");
    assert!(
        d.resources
            .iter()
            .all(|r| r.name != "serviceaccounts/token"),
        "{:?}",
        d.resources.iter().map(|r| &r.name).collect::<Vec<_>>()
    );

    // A provider ServiceAccount needs `apiexports/content` in its workspace.
    let pc = kcp.client(&p.path);
    Api::<ServiceAccount>::namespaced(pc.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "controller"}})).unwrap(),
        )
        .await
        .unwrap();
    let token = Api::<ServiceAccount>::namespaced(pc.clone(), "default")
        .create_token_request(
            "controller",
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap(),
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token
        .unwrap();
    let as_sa = kcp.client_for_url(&format!("{url}/clusters/*"), &token);
    let e = status(
        all_cowboys(&as_sa)
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message.contains("API export: \"cowboys\""),
        "{}",
        e.message
    );
    Api::<ClusterRole>::all(pc.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "cowboys-content"},
                "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"], "resourceNames": ["cowboys"], "verbs": ["*"]}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(pc)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "controller-content"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cowboys-content"},
                "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": "default"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert!(
        all_cowboys(&as_sa)
            .list(&ListParams::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_claim_selector_limits_what_the_provider_sees_and_labels_what_it_creates() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let a = kcp.create_workspace("root:a").await.unwrap();
    bind(
        &kcp,
        &a,
        &p,
        "cowboys",
        json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch", "create"],
                "selector": {"matchLabels": {"shared-with": "cowboys"}}, "state": "Accepted"}]),
    )
    .await;
    let tenant = Api::<ConfigMap>::namespaced(kcp.client(&a.path), "default");
    for (name, labels) in [
        ("private", json!({})),
        ("shared", json!({"shared-with": "cowboys"})),
    ] {
        tenant
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                    .unwrap(),
            )
            .await
            .unwrap();
    }
    let url = vw_url(&kcp, &p.path).await;
    let vw = Api::<ConfigMap>::namespaced(
        kcp.client_for_url(&format!("{url}/clusters/{}", a.name), kcp.admin_token()),
        "default",
    );
    assert!(vw.get("shared").await.is_ok());
    assert_eq!(code(vw.get("private").await.unwrap_err()), 404);
    let names: Vec<String> = vw
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["shared"]);
    let made = vw
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "from-provider"}})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        made.metadata
            .labels
            .unwrap()
            .get("shared-with")
            .map(String::as_str),
        Some("cowboys")
    );
}

#[tokio::test]
async fn claimed_bind_and_escalate_let_a_provider_grant_what_it_does_not_hold() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let rbac_claims = |verbs_roles: Value| {
        json!([
            {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verbs": verbs_roles},
            {"group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings", "verbs": ["get", "create"]},
        ])
    };
    exports(&kcp.client(&p.path), "v1alpha2")
        .patch(
            "cowboys",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"permissionClaims": rbac_claims(json!(["get", "create", "bind", "escalate"]))}})),
        )
        .await
        .unwrap();
    let accept = |claims: Value| {
        let mut claims = claims;
        for c in claims.as_array_mut().unwrap() {
            c["selector"] = json!({"matchAll": true});
            c["state"] = json!("Accepted");
        }
        claims
    };
    // One consumer accepts bind/escalate, the other only create.
    let full = kcp.create_workspace("root:full").await.unwrap();
    bind(
        &kcp,
        &full,
        &p,
        "cowboys",
        accept(rbac_claims(json!(["get", "create", "bind", "escalate"]))),
    )
    .await;
    let plain = kcp.create_workspace("root:plain").await.unwrap();
    bind(
        &kcp,
        &plain,
        &p,
        "cowboys",
        accept(rbac_claims(json!(["get", "create"]))),
    )
    .await;

    // The provider: a user allowed the export's content, nothing else.
    let token = kcp.add_user("provider", &[]);
    let content: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "content"},
        "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"], "resourceNames": ["cowboys"], "verbs": ["*"]},
                  {"nonResourceURLs": ["/"], "verbs": ["access"]}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(kcp.client(&p.path))
        .create(&PostParams::default(), &content)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "content"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "content"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "provider"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(kcp.client(&p.path))
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    let url = vw_url(&kcp, &p.path).await;
    let admin_binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "worker-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "worker", "namespace": "default"}],
    }))
    .unwrap();
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "minter"},
        "rules": [{"apiGroups": [""], "resources": ["serviceaccounts/token"], "resourceNames": ["worker"], "verbs": ["create"]}],
    }))
    .unwrap();
    let in_full = kcp.client_for_url(&format!("{url}/clusters/{}", full.name), &token);
    Api::<ClusterRoleBinding>::all(in_full.clone())
        .create(&PostParams::default(), &admin_binding)
        .await
        .expect("bind is claimed");
    Api::<ClusterRole>::all(in_full)
        .create(&PostParams::default(), &role)
        .await
        .expect("escalate is claimed");

    let in_plain = kcp.client_for_url(&format!("{url}/clusters/{}", plain.name), &token);
    let e = status(
        Api::<ClusterRoleBinding>::all(in_plain.clone())
            .create(&PostParams::default(), &admin_binding)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message
            .contains("attempting to grant RBAC permissions not currently held"),
        "{}",
        e.message
    );
    assert_eq!(
        code(
            Api::<ClusterRole>::all(in_plain)
                .create(&PostParams::default(), &role)
                .await
                .unwrap_err()
        ),
        403
    );
}
