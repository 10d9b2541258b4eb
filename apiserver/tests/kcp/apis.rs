//! `apis.kcp.io`: APIResourceSchemas, APIExports (both versions, identity, endpoint slices) and
//! APIBindings (bind authorization, Binding → Bound, bound resources, schema swaps).

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use sha2::Digest;

use crate::common::*;

/// kcp's rules on `spec.conversion` (`types_apiresourceschema.go`): required with more than one
/// version, and a webhook exactly when the strategy is `Webhook`.
#[tokio::test]
async fn a_schema_of_several_versions_says_how_they_convert() {
    let kcp = kcp().await;
    let p = kcp.create_workspace("root:p").await.unwrap();
    let api = schemas(&kcp.client(&p.path));
    let two_versions = |prefix: &str, conversion: Option<serde_json::Value>| {
        let mut schema = cowboy_schema(prefix, json!({}));
        let mut older = schema.data["spec"]["versions"][0].clone();
        older["name"] = json!("v1beta1");
        older["storage"] = json!(false);
        schema.data["spec"]["versions"]
            .as_array_mut()
            .unwrap()
            .push(older);
        if let Some(conversion) = conversion {
            schema.data["spec"]["conversion"] = conversion;
        }
        schema
    };
    let e = status(
        api.create(&PostParams::default(), &two_versions("v1", None))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("Conversion must be specified when multiple versions exist"),
        "{}",
        e.message
    );
    let e = status(
        api.create(
            &PostParams::default(),
            &two_versions("v2", Some(json!({"strategy": "Webhook"}))),
        )
        .await
        .unwrap_err(),
    );
    assert!(
        e.message
            .contains("Webhook must be specified if strategy=Webhook"),
        "{}",
        e.message
    );
    api.create(
        &PostParams::default(),
        &two_versions("v3", Some(json!({"strategy": "None"}))),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn apiresourceschema_names_are_checked_and_specs_are_immutable() {
    let kcp = kcp().await;
    let p = kcp.create_workspace("root:p").await.unwrap();
    let api = schemas(&kcp.client(&p.path));
    let mut bad = cowboy_schema("v1", json!({}));
    bad.metadata.name = Some("v1.horses.wildwest.dev".into());
    let e = status(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(e.code, 403);
    assert_eq!(e.reason, "Forbidden");
    assert!(
        e.message
            .contains("metadata.name: Invalid value: \"v1.horses.wildwest.dev\": must end in .cowboys.wildwest.dev"),
        "{}",
        e.message
    );
    let mut dotted = cowboy_schema("v1", json!({}));
    dotted.metadata.name = Some("v.1.cowboys.wildwest.dev".into());
    assert_eq!(
        code(
            api.create(&PostParams::default(), &dotted)
                .await
                .unwrap_err()
        ),
        403
    );
    api.create(&PostParams::default(), &cowboy_schema("v1", json!({})))
        .await
        .unwrap();
    let e = status(
        api.patch(
            "v1.cowboys.wildwest.dev",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"names": {"shortNames": ["cb"]}}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(e.message.contains("spec: Invalid value"), "{}", e.message);
    assert!(e.message.contains("is immutable"), "{}", e.message);
    // Metadata may change.
    api.patch(
        "v1.cowboys.wildwest.dev",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn an_export_gets_an_identity_and_an_empty_endpoint_slice() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let c = kcp.client(&p.path);
    let export =
        serde_json::to_value(exports(&c, "v1alpha2").get("cowboys").await.unwrap()).unwrap();
    let hash = export["status"]["identityHash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(hash.len(), 64);
    assert_eq!(condition(&export, "IdentityValid").as_deref(), Some("True"));
    assert_eq!(
        export["spec"]["identity"]["secretRef"],
        json!({"namespace": "kcp-system", "name": "cowboys"})
    );
    assert_eq!(export["metadata"]["annotations"]["kcp.io/path"], "root:p");
    let secret = Api::<Secret>::namespaced(c.clone(), "kcp-system")
        .get("cowboys")
        .await
        .unwrap();
    let key = &secret.data.unwrap()["key"].0;
    let want: String = sha2::Sha256::digest(key)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hash, want);
    // The auto-created slice: named like the export, owned by it, no endpoint without bindings.
    let slice = wait_obj(&slices(&c), "cowboys", "slice status", |v| {
        condition(v, "APIExportValid").as_deref() == Some("True")
    })
    .await;
    assert_eq!(
        slice["spec"]["export"],
        json!({"path": "root:p", "name": "cowboys"})
    );
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "APIExport");
    assert!(endpoint_urls(&slice).is_empty());
    // The v1alpha1 view of the same export.
    let v1 = serde_json::to_value(exports(&c, "v1alpha1").get("cowboys").await.unwrap()).unwrap();
    assert_eq!(v1["apiVersion"], "apis.kcp.io/v1alpha1");
    assert_eq!(
        v1["spec"]["latestResourceSchemas"],
        json!(["v1.cowboys.wildwest.dev"])
    );
    assert_eq!(
        v1["spec"]["permissionClaims"],
        json!([{"group": "", "resource": "configmaps"}])
    );
    assert_eq!(v1["status"]["identityHash"], hash);
}

#[tokio::test]
async fn a_v1alpha1_export_is_stored_as_v1alpha2() {
    let kcp = kcp().await;
    let p = kcp.create_workspace("root:p").await.unwrap();
    let c = kcp.client(&p.path);
    schemas(&c)
        .create(&PostParams::default(), &cowboy_schema("v1", json!({})))
        .await
        .unwrap();
    exports(&c, "v1alpha1")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                "metadata": {"name": "cowboys"},
                "spec": {
                    "latestResourceSchemas": ["v1.cowboys.wildwest.dev"],
                    "permissionClaims": [{"group": "", "resource": "secrets", "all": true}]
                }
            })),
        )
        .await
        .unwrap();
    let v2 = serde_json::to_value(exports(&c, "v1alpha2").get("cowboys").await.unwrap()).unwrap();
    assert_eq!(
        v2["spec"]["resources"],
        json!([{"group": "wildwest.dev", "name": "cowboys", "schema": "v1.cowboys.wildwest.dev", "storage": {"crd": {}}}])
    );
    assert_eq!(
        v2["spec"]["permissionClaims"],
        json!([{"group": "", "resource": "secrets", "verbs": ["*"]}])
    );
    let v1 = serde_json::to_value(exports(&c, "v1alpha1").get("cowboys").await.unwrap()).unwrap();
    assert_eq!(
        v1["spec"]["permissionClaims"],
        json!([{"group": "", "resource": "secrets", "all": true}])
    );
}

#[tokio::test]
async fn a_binding_goes_bound_and_serves_the_schema_with_its_validation() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = kcp.create_workspace("root:c").await.unwrap();
    let b = bind(&kcp, &ws, &p, "cowboys", json!([])).await;
    let export_hash = serde_json::to_value(
        exports(&kcp.client(&p.path), "v1alpha2")
            .get("cowboys")
            .await
            .unwrap(),
    )
    .unwrap()["status"]["identityHash"]
        .clone();
    let schema_uid = schemas(&kcp.client(&p.path))
        .get("v1.cowboys.wildwest.dev")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    assert_eq!(b["status"]["apiExportClusterName"], json!(p.name));
    assert_eq!(
        b["status"]["boundResources"],
        json!([{
            "group": "wildwest.dev", "resource": "cowboys",
            "schema": {"name": "v1.cowboys.wildwest.dev", "UID": schema_uid, "identityHash": export_hash},
            "storageVersions": ["v1alpha1"]
        }])
    );
    for c in [
        "APIExportValid",
        "BindingUpToDate",
        "InitialBindingCompleted",
        "Ready",
    ] {
        assert_eq!(condition(&b, c).as_deref(), Some("True"), "{c}");
    }
    assert_eq!(b["status"]["conditions"][0]["type"], "Ready");
    assert!(
        b["status"]["conditions"][0]
            .get("observedGeneration")
            .is_none()
    );
    assert!(
        b["metadata"]["labels"]["internal.apis.kcp.io/export"]
            .as_str()
            .is_some_and(|l| !l.is_empty())
    );
    assert_eq!(b["metadata"]["annotations"]["kcp.io/path"], "root:c");
    assert_eq!(
        b["metadata"]["finalizers"],
        json!(["apis.kcp.io/apibinding-finalizer"])
    );
    // The v1alpha1 view.
    let v1 = serde_json::to_value(
        bindings(&kcp.client(&ws.path), "v1alpha1")
            .get("cowboys")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        v1["status"]["boundResources"][0]["schema"]["UID"],
        json!(schema_uid)
    );

    // The bound resource, validated by the schema.
    let api = cowboys(&kcp.client(&ws.path), "default");
    let created = api
        .create(&PostParams::default(), &cowboy("lucky", "ride"))
        .await
        .unwrap();
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(
        created["metadata"]["annotations"]["kcp.io/cluster"],
        json!(ws.name)
    );
    let e = status(
        api.create(
            &PostParams::default(),
            &cowboy("too-long", "x".repeat(30).as_str()),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(e.message.contains("spec.intent"), "{}", e.message);
    // Discovery in the consumer lists it.
    let d = kube::Discovery::new(kcp.client(&ws.path))
        .run()
        .await
        .unwrap();
    assert!(d.groups().any(|g| g.name() == "wildwest.dev"));
    // Not served in the provider workspace, which did not bind.
    let none = cowboys(&kcp.client(&p.path), "default");
    assert_eq!(
        code(none.list(&ListParams::default()).await.unwrap_err()),
        404
    );
}

#[tokio::test]
async fn a_watch_sees_a_binding_go_from_binding_to_bound() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{WatchEvent, WatchParams};
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = kcp.create_workspace("root:c").await.unwrap();
    let api = bindings(&kcp.client(&ws.path), "v1alpha2");
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    bind(&kcp, &ws, &p, "cowboys", json!([])).await;
    let mut phases: Vec<String> = Vec::new();
    while phases.last().map(String::as_str) != Some("Bound") {
        match tokio::time::timeout(TIMEOUT, events.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(b) | WatchEvent::Modified(b)))) => {
                let phase = b
                    .data
                    .pointer("/status/phase")
                    .and_then(|p| p.as_str())
                    .unwrap_or("");
                if phases.last().map(String::as_str) != Some(phase) {
                    phases.push(phase.to_string());
                }
            }
            Ok(Ok(Some(_))) => {}
            other => panic!("watch ended: {other:?}"),
        }
    }
    assert_eq!(phases, ["", "Binding", "Bound"]);
}

#[tokio::test]
async fn binding_needs_bind_permission_on_the_export() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = kcp.create_workspace("root:c").await.unwrap();
    let token = kcp.add_user("alice", &["tenants"]);
    // alice is admin in her workspace, but may not bind the export yet.
    let admin = kcp.client(&ws.path);
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "alice-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let alice = kcp.client_for_url(&ws.url, &token);
    let binding = dynamic(json!({
        "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
        "metadata": {"name": "cowboys"},
        "spec": {"reference": {"export": {"path": "root:p", "name": "cowboys"}}}
    }));
    let e = status(
        bindings(&alice, "v1alpha2")
            .create(&PostParams::default(), &binding)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "apibindings.apis.kcp.io \"cowboys\" is forbidden: unable to create APIBinding: no permission to bind to export root:p:cowboys"
    );
    // The provider grants `bind` to the tenants group.
    let pc = kcp.client(&p.path);
    Api::<ClusterRole>::all(pc.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "bind-cowboys"},
                "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": ["cowboys"], "verbs": ["bind"]}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(pc)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "tenants-bind"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bind-cowboys"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenants"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    bindings(&alice, "v1alpha2")
        .create(&PostParams::default(), &binding)
        .await
        .expect("bind with permission");
    wait_obj(&bindings(&alice, "v1alpha2"), "cowboys", "Bound", |v| {
        v["status"]["phase"] == "Bound"
    })
    .await;
}

#[tokio::test]
async fn a_binding_to_a_missing_export_reports_it_and_binds_once_it_exists() {
    let kcp = kcp().await;
    let pws = kcp.create_workspace("root:p").await.unwrap();
    let ws = kcp.create_workspace("root:c").await.unwrap();
    let c = kcp.client(&ws.path);
    bindings(&c, "v1alpha2")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
                "metadata": {"name": "cowboys"},
                "spec": {"reference": {"export": {"path": "root:p", "name": "cowboys"}}}
            })),
        )
        .await
        .unwrap();
    let b = wait_obj(
        &bindings(&c, "v1alpha2"),
        "cowboys",
        "APIExportValid",
        |v| condition(v, "APIExportValid").as_deref() == Some("False"),
    )
    .await;
    assert_eq!(b["status"]["phase"], "Binding");
    let cond = b["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "APIExportValid")
        .unwrap()
        .clone();
    assert_eq!(cond["reason"], "APIExportNotFound");
    assert_eq!(cond["severity"], "Error");
    assert_eq!(condition(&b, "Ready").as_deref(), Some("False"));
    // The provider appears: the binding completes.
    let pc = kcp.client(&pws.path);
    schemas(&pc)
        .create(&PostParams::default(), &cowboy_schema("v1", json!({})))
        .await
        .unwrap();
    exports(&pc, "v1alpha2")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": "cowboys"},
                "spec": {"resources": [{"group": "wildwest.dev", "name": "cowboys", "schema": "v1.cowboys.wildwest.dev", "storage": {"crd": {}}}]}
            })),
        )
        .await
        .unwrap();
    wait_obj(&bindings(&c, "v1alpha2"), "cowboys", "Bound", |v| {
        v["status"]["phase"] == "Bound" && condition(v, "Ready").as_deref() == Some("True")
    })
    .await;
}

#[tokio::test]
async fn a_schema_swap_on_the_export_reaches_existing_bindings() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = consumer(&kcp, "c", &p).await;
    let pc = kcp.client(&p.path);
    let consumer = kcp.client(&ws.path);
    let api = cowboys(&consumer, "default");
    // The old schema prunes an unknown field.
    let mut with_hat = cowboy("before", "ride");
    with_hat.data["spec"]["hat"] = json!("stetson");
    let o = api.create(&PostParams::default(), &with_hat).await.unwrap();
    assert!(o.data["spec"].get("hat").is_none());
    // The provider publishes a new schema with `hat` and points the export at it.
    schemas(&pc)
        .create(
            &PostParams::default(),
            &cowboy_schema(
                "v2",
                json!({"hat": {"type": "string", "enum": ["stetson", "bowler"]}}),
            ),
        )
        .await
        .unwrap();
    let new_uid = schemas(&pc)
        .get("v2.cowboys.wildwest.dev")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    exports(&pc, "v1alpha2")
        .patch(
            "cowboys",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": [
                {"group": "wildwest.dev", "name": "cowboys", "schema": "v2.cowboys.wildwest.dev", "storage": {"crd": {}}}
            ]}})),
        )
        .await
        .unwrap();
    let b = wait_obj(
        &bindings(&consumer, "v1alpha2"),
        "cowboys",
        "new schema",
        |v| {
            v.pointer("/status/boundResources/0/schema/UID") == Some(&json!(new_uid))
                && condition(v, "BindingUpToDate").as_deref() == Some("True")
        },
    )
    .await;
    assert_eq!(
        b["status"]["boundResources"][0]["schema"]["name"],
        "v2.cowboys.wildwest.dev"
    );
    // The new field is served and validated.
    let mut after = cowboy("after", "ride");
    after.data["spec"]["hat"] = json!("stetson");
    let o = api.create(&PostParams::default(), &after).await.unwrap();
    assert_eq!(o.data["spec"]["hat"], "stetson");
    let mut wrong = cowboy("wrong", "ride");
    wrong.data["spec"]["hat"] = json!("cap");
    assert_eq!(
        code(
            api.create(&PostParams::default(), &wrong)
                .await
                .unwrap_err()
        ),
        422
    );
    // Existing objects are still there.
    assert!(api.get("before").await.is_ok());
}

#[tokio::test]
async fn deleting_a_binding_removes_its_objects_and_resources() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = consumer(&kcp, "c", &p).await;
    let c = kcp.client(&ws.path);
    let api = cowboys(&c, "default");
    api.create(&PostParams::default(), &cowboy("a", "x"))
        .await
        .unwrap();
    bindings(&c, "v1alpha2")
        .delete("cowboys", &Default::default())
        .await
        .unwrap();
    eventually("the binding to go", || {
        let b = bindings(&c, "v1alpha2");
        async move { b.get_opt("cowboys").await.ok().flatten().is_none() }
    })
    .await;
    assert_eq!(
        code(api.list(&ListParams::default()).await.unwrap_err()),
        404
    );
    // The objects are gone from storage too: a new binding starts empty.
    bind(&kcp, &ws, &p, "again", json!([])).await;
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_v1alpha1_binding_is_stored_as_v1alpha2() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = kcp.create_workspace("root:c").await.unwrap();
    let c = kcp.client(&ws.path);
    bindings(&c, "v1alpha1")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
                "metadata": {"name": "cowboys"},
                "spec": {
                    "reference": {"export": {"path": p.path, "name": "cowboys"}},
                    "permissionClaims": [{"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}]
                }
            })),
        )
        .await
        .unwrap();
    let v2 = wait_obj(&bindings(&c, "v1alpha2"), "cowboys", "Bound", |v| {
        v["status"]["phase"] == "Bound"
    })
    .await;
    assert_eq!(
        v2["spec"]["permissionClaims"],
        json!([{"group": "", "resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}, "state": "Accepted"}])
    );
    assert_eq!(
        v2["status"]["appliedPermissionClaims"],
        json!([{"group": "", "resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}}])
    );
    let v1 = serde_json::to_value(bindings(&c, "v1alpha1").get("cowboys").await.unwrap()).unwrap();
    assert_eq!(
        v1["spec"]["permissionClaims"],
        json!([{"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}])
    );
    assert_eq!(v1["status"]["phase"], "Bound");
}

#[tokio::test]
async fn a_local_maximal_permission_policy_limits_bound_resources() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let pc = kcp.client(&p.path);
    exports(&pc, "v1alpha2")
        .patch(
            "cowboys",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maximalPermissionPolicy": {"local": {}}}})),
        )
        .await
        .unwrap();
    let ws = consumer(&kcp, "c", &p).await;
    let token = kcp.add_user("alice", &[]);
    Api::<ClusterRoleBinding>::all(kcp.client(&ws.path))
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "alice-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let alice = cowboys(&kcp.client_for_url(&ws.url, &token), "default");
    // The binding picked up the policy (the export changed after the binding bound).
    eventually("the policy to apply", || {
        let alice = alice.clone();
        async move {
            matches!(alice.list(&ListParams::default()).await, Err(kube::Error::Api(s)) if s.code == 403)
        }
    })
    .await;
    let e = status(alice.list(&ListParams::default()).await.unwrap_err());
    assert!(
        e.message
            .contains(&format!("API export \"{}\"|\"cowboys\" policy", p.name)),
        "{}",
        e.message
    );
    // Other resources in the workspace are not affected.
    assert!(
        Api::<Secret>::namespaced(kcp.client_for_url(&ws.url, &token), "default")
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    // The provider allows every authenticated user of its bindings to read cowboys.
    Api::<ClusterRole>::all(pc.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "cowboys-readers"},
                "rules": [{"apiGroups": ["wildwest.dev"], "resources": ["cowboys"], "verbs": ["get", "list", "watch"]}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(pc)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "cowboys-readers"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cowboys-readers"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "apis.kcp.io:binding:system:authenticated"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert!(alice.list(&ListParams::default()).await.is_ok());
    assert_eq!(
        code(
            alice
                .create(&PostParams::default(), &cowboy("x", "y"))
                .await
                .unwrap_err()
        ),
        403
    );
}

#[tokio::test]
async fn losing_the_schema_or_the_export_invalidates_the_binding_but_ready_sticks() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let ws = consumer(&kcp, "c", &p).await;
    let pc = kcp.client(&p.path);
    let c = kcp.client(&ws.path);
    schemas(&pc)
        .delete("v1.cowboys.wildwest.dev", &Default::default())
        .await
        .unwrap();
    let b = wait_obj(
        &bindings(&c, "v1alpha2"),
        "cowboys",
        "APIExportValid=False",
        |v| condition(v, "APIExportValid").as_deref() == Some("False"),
    )
    .await;
    let cond = b["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "APIExportValid")
        .unwrap()
        .clone();
    assert!(
        cond["message"]
            .as_str()
            .unwrap()
            .contains("v1.cowboys.wildwest.dev not found"),
        "{cond}"
    );
    assert_eq!(
        condition(&b, "Ready").as_deref(),
        Some("True"),
        "Ready is sticky"
    );
    assert_eq!(b["status"]["phase"], "Bound");
    // The export goes: its endpoint slice goes with it (owner reference).
    exports(&pc, "v1alpha2")
        .delete("cowboys", &Default::default())
        .await
        .unwrap();
    wait_obj(
        &bindings(&c, "v1alpha2"),
        "cowboys",
        "APIExportNotFound",
        |v| {
            v["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["reason"] == "APIExportNotFound"))
        },
    )
    .await;
    eventually("the endpoint slice to be collected", || {
        let s = slices(&pc);
        async move { s.get_opt("cowboys").await.ok().flatten().is_none() }
    })
    .await;
}
