//! Patches and server-side apply with managedFields, as `kube::Client` sees them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::*;

fn apply_params(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

fn managed_fields(obj: &impl ResourceExt) -> Vec<Value> {
    obj.managed_fields()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn entry_of(entries: &[Value], manager: &str, operation: &str) -> Option<Value> {
    entries
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .cloned()
}

#[tokio::test]
async fn ssa_removes_an_omitted_field_and_refuses_a_conflicting_manager() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");
    let config = |labels: Value, size: i64| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": labels}, "spec": {"size": size}
        }))
        .unwrap()
    };

    // Created by apply; alice owns what she applied.
    let w = api
        .patch(
            "w",
            &apply_params("alice"),
            &Patch::Apply(config(json!({"a": "1", "b": "2"}), 3)),
        )
        .await
        .unwrap();
    assert_eq!(w.labels().len(), 2);
    let alice = entry_of(&managed_fields(&w), "alice", "Apply").expect("alice's entry");
    assert_eq!(alice["apiVersion"], "example.com/v1");
    assert_eq!(alice["fieldsType"], "FieldsV1");
    assert_eq!(alice["fieldsV1"]["f:spec"], json!({"f:size": {}}));

    // alice stops applying label b: it is removed.
    let w = api
        .patch(
            "w",
            &apply_params("alice"),
            &Patch::Apply(config(json!({"a": "1"}), 3)),
        )
        .await
        .unwrap();
    assert_eq!(
        w.labels().clone(),
        BTreeMap::from([("a".to_string(), "1".to_string())])
    );

    // bob wants another size: 409 with kube-apiserver's message and causes.
    let err = api
        .patch(
            "w",
            &apply_params("bob"),
            &Patch::Apply(config(json!({}), 5)),
        )
        .await
        .unwrap_err();
    let s = status(err);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        r#"Apply failed with 1 conflict: conflict with "alice": .spec.size"#
    );
    let cause = &s.details.expect("details").causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldManagerConflict", ".spec.size")
    );

    // Forced, bob takes the field over.
    let w = api
        .patch(
            "w",
            &apply_params("bob").force(),
            &Patch::Apply(config(json!({}), 5)),
        )
        .await
        .unwrap();
    assert_eq!(w.data["spec"]["size"], 5);
    let entries = managed_fields(&w);
    assert_eq!(
        entry_of(&entries, "bob", "Apply").unwrap()["fieldsV1"]["f:spec"],
        json!({"f:size": {}})
    );
    assert!(
        entry_of(&entries, "alice", "Apply").unwrap()["fieldsV1"]
            .get("f:spec")
            .is_none()
    );
}

#[tokio::test]
async fn plain_writes_are_recorded_and_conflict_with_appliers() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}})).unwrap();
    let created = api
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..Default::default()
            },
            &cm,
        )
        .await
        .unwrap();
    let creator =
        entry_of(&managed_fields(&created), "creator", "Update").expect("create is recorded");
    assert_eq!(creator["fieldsV1"], json!({"f:data": {".": {}, "f:k": {}}}));

    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "other"}});
    let s = status(
        api.patch("c", &apply_params("applier"), &Patch::Apply(&applied))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        s.message,
        r#"Apply failed with 1 conflict: conflict with "creator" using v1: .data.k"#
    );
}

#[tokio::test]
async fn runtime_apply_with_prune_keeps_fields_of_other_writers() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let pp = apply_params("service-provider").force();
    let config = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data});
    api.patch(
        "cfg",
        &pp,
        &Patch::Apply(config(json!({"a": "1", "b": "2"}))),
    )
    .await
    .unwrap();
    api.patch(
        "cfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"c": "3"}})),
    )
    .await
    .unwrap();
    let cm = api
        .patch("cfg", &pp, &Patch::Apply(config(json!({"a": "1"}))))
        .await
        .unwrap();
    let data = cm.data.unwrap();
    assert_eq!(
        data.keys().cloned().collect::<Vec<_>>(),
        vec!["a", "c"],
        "b is pruned, c belongs to someone else"
    );
}

#[tokio::test]
async fn status_apply_touches_only_status() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");
    api.create(&PostParams::default(), &widget("s", 2))
        .await
        .unwrap();
    let status_config = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "s"},
                               "spec": {"size": 9}, "status": {"phase": "Ready"}});
    let w = api
        .patch_status("s", &apply_params("ctrl"), &Patch::Apply(&status_config))
        .await
        .unwrap();
    assert_eq!(w.data["spec"]["size"], 2);
    assert_eq!(w.data["status"]["phase"], "Ready");
    let e = managed_fields(&w)
        .into_iter()
        .find(|e| e["manager"] == "ctrl")
        .unwrap();
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
}

#[tokio::test]
async fn patch_errors_match_kube_apiserver() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");
    api.create(&PostParams::default(), &widget("p", 2))
        .await
        .unwrap();
    let failing_test = Patch::Json::<()>(
        serde_json::from_value(json!([{"op": "test", "path": "/spec/size", "value": 3}])).unwrap(),
    );
    let s = status(
        api.patch("p", &PatchParams::default(), &failing_test)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "the server rejected our request due to an error in our request"
    );
    let s = status(
        api.patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 3}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 415);
    let with_managed_fields = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                                     "metadata": {"name": "p", "managedFields": [{"manager": "x"}]}});
    let s = status(
        api.patch("p", &apply_params("a"), &Patch::Apply(&with_managed_fields))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (400, "metadata.managedFields must be nil")
    );
}

// Server-side apply and JSON patch through typed clients.

fn ssa_cm(data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data})
}

#[tokio::test]
async fn apply_creates_removes_omitted_fields_and_refuses_conflicts() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let alice = PatchParams::apply("alice");
    let o = api
        .patch(
            "ssa",
            &alice,
            &Patch::Apply(ssa_cm(json!({"a": "1", "b": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(o.data.as_ref().unwrap().len(), 2);
    let mf = o.metadata.managed_fields.as_ref().unwrap();
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("alice"), Some("Apply"))
    );

    // Omitting a field alice applied before removes it.
    let o = api
        .patch("ssa", &alice, &Patch::Apply(ssa_cm(json!({"a": "1"}))))
        .await
        .unwrap();
    assert_eq!(o.data.unwrap().keys().collect::<Vec<_>>(), ["a"]);

    // Another manager changing alice's field conflicts...
    let bob = PatchParams::apply("bob");
    let s = status(
        api.patch("ssa", &bob, &Patch::Apply(ssa_cm(json!({"a": "other"}))))
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(
        s.message.contains("conflict with \"alice\""),
        "{}",
        s.message
    );
    assert_eq!(s.details.unwrap().causes[0].field, ".data.a");
    // ...unless forced, which takes ownership.
    let o = api
        .patch(
            "ssa",
            &bob.clone().force(),
            &Patch::Apply(ssa_cm(json!({"a": "other"}))),
        )
        .await
        .unwrap();
    assert_eq!(o.data.unwrap()["a"], "other");
    // Bob applying the same value as alice would not conflict: shared ownership.
    let o = api
        .patch("ssa", &alice, &Patch::Apply(ssa_cm(json!({"c": "3"}))))
        .await
        .unwrap();
    assert_eq!(
        o.data.unwrap().get("a").map(String::as_str),
        Some("other"),
        "alice no longer owns a"
    );
}

#[tokio::test]
async fn json_patch_and_update_managers() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    api.create(
        &PostParams {
            field_manager: Some("creator".into()),
            ..Default::default()
        },
        &serde_json::from_value(ssa_cm(json!({"a": "1"}))).unwrap(),
    )
    .await
    .unwrap();
    let p: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "remove", "path": "/data/a"}
    ]))
    .unwrap();
    let o = api
        .patch(
            "ssa",
            &PatchParams {
                field_manager: Some("patcher".into()),
                ..Default::default()
            },
            &Patch::<()>::Json(p),
        )
        .await
        .unwrap();
    assert_eq!(o.data.as_ref().unwrap().keys().collect::<Vec<_>>(), ["b"]);
    let managers: Vec<String> = o
        .metadata
        .managed_fields
        .unwrap()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(managers.contains(&"patcher".to_string()), "{managers:?}");

    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/b", "value": "nope"}]))
            .unwrap();
    let s = status(
        api.patch("ssa", &PatchParams::default(), &Patch::<()>::Json(failing))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 422, "{}", s.message);
}

#[tokio::test]
async fn apply_to_builtins_with_list_maps_and_status() {
    let c = cluster().await;
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::default_namespaced(c.client());
    let d = |image: &str, env: serde_json::Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
               "spec": {"selector": {"matchLabels": {"app": "a"}},
                        "template": {"metadata": {"labels": {"app": "a"}},
                                     "spec": {"containers": [{"name": "main", "image": image, "env": env}]}}}})
    };
    let pp = PatchParams::apply("operator");
    api.patch(
        "app",
        &pp,
        &Patch::Apply(d(
            "nginx:1",
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        )),
    )
    .await
    .unwrap();
    // Another manager adds an env var to the same container: merged by the list-map key.
    api.patch("app", &PatchParams::apply("sidecar"), &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "env": [{"name": "C", "value": "3"}]}]}}}})))
        .await
        .unwrap();
    let o = api
        .patch(
            "app",
            &pp,
            &Patch::Apply(d("nginx:2", json!([{"name": "A", "value": "1"}]))),
        )
        .await
        .unwrap();
    let c0 = &o.spec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(c0.image.as_deref(), Some("nginx:2"));
    let names: Vec<&str> = c0
        .env
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["A", "C"],
        "B was dropped by its only manager, C kept by its manager"
    );
    assert_eq!(o.metadata.generation, Some(3));
    // Apply to /status writes only status.
    let st = api
        .patch_status("app", &PatchParams::apply("status-writer"), &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"}, "status": {"replicas": 4}})))
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().replicas, Some(4));
    assert_eq!(st.metadata.generation, Some(3));
}
