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
