//! Wire details clients see from kube-apiserver: what DELETE answers per resource, PUT's
//! namespace from the URL, timestamps as Go writes them, Go's key order, routes a
//! cluster-scoped resource does not have, `force` outside apply, shared apply ownership.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, ServiceAccount};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::common::*;

/// A request with a body; the status code and body text.
async fn send(
    c: &service_provider_apiserver::Cluster,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, String) {
    raw(c, method, path, &[("content-type", content_type)], body).await
}

#[tokio::test]
async fn delete_answers_the_object_or_a_status_as_the_registry_says() {
    let c = cluster().await;
    let client = c.client();
    // ServiceAccounts' registry sets ReturnDeletedObject: the object comes back.
    let sas: Api<ServiceAccount> = Api::default_namespaced(client.clone());
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap(),
    )
    .await
    .unwrap();
    let deleted = sas.delete("robot", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        deleted
            .left()
            .expect("the deleted ServiceAccount")
            .name_any(),
        "robot"
    );
    // ConfigMaps' does not: a Status naming what was deleted.
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "cfg"}})).unwrap(),
        )
        .await
        .unwrap();
    let s = cms
        .delete("cfg", &DeleteParams::default())
        .await
        .unwrap()
        .right()
        .expect("a Status");
    let d = s.details.unwrap();
    assert_eq!(
        (d.name.as_str(), d.kind.as_str(), d.uid.as_str()),
        ("cfg", "configmaps", cm.uid().unwrap().as_str())
    );
    // Custom resources answer a Status too.
    install_widgets(&client).await;
    let w = widgets(&client, "default");
    w.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let s = w
        .delete("w", &DeleteParams::default())
        .await
        .unwrap()
        .right()
        .expect("a Status for a custom resource");
    let d = s.details.unwrap();
    assert_eq!(
        (d.name.as_str(), d.group.as_str(), d.kind.as_str()),
        ("w", "example.com", "widgets")
    );
}

#[tokio::test]
async fn put_without_a_namespace_takes_the_urls() {
    let c = cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let mut cm = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "cfg"}})).unwrap(),
        )
        .await
        .unwrap();
    cm.metadata.namespace = None;
    cm.data = Some([("k".to_string(), "v".to_string())].into());
    let put = cms
        .replace("cfg", &PostParams::default(), &cm)
        .await
        .unwrap();
    assert_eq!(put.namespace().as_deref(), Some("default"));
    assert_eq!(put.data.unwrap()["k"], "v");
}

#[tokio::test]
async fn objects_and_lists_come_in_gos_key_order() {
    let c = cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "cfg"}, "data": {"a": "1"}})).unwrap(),
    )
    .await
    .unwrap();
    let (_, one) = send(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps/cfg",
        "application/json",
        "",
    )
    .await;
    assert!(
        one.starts_with(r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"#),
        "{one}"
    );
    let (_, list) = send(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        "",
    )
    .await;
    assert!(
        list.starts_with(r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"#),
        "{list}"
    );
    // Items of a built-in kind are typed Go structs in kube-apiserver: no TypeMeta of their own.
    assert!(list.contains(r#""items":[{"metadata":{"#), "{list}");
    let (_, status) = send(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps/nope",
        "application/json",
        "",
    )
    .await;
    assert!(
        status.starts_with(r#"{"kind":"Status","apiVersion":"v1","metadata":{}"#),
        "{status}"
    );
}

#[tokio::test]
async fn a_namespaced_path_for_a_cluster_scoped_custom_resource_is_404() {
    let c = cluster().await;
    let client = c.client();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Cluster",
                "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let gadget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
    }))
    .unwrap();
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    eventually("gadgets are served", || async {
        all.list(&Default::default()).await.is_ok()
    })
    .await;
    all.create(&PostParams::default(), &gadget).await.unwrap();
    let namespaced: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    assert_eq!(code(namespaced.get("g").await.unwrap_err()), 404);
    assert_eq!(
        code(
            namespaced
                .create(&PostParams::default(), &gadget)
                .await
                .unwrap_err()
        ),
        404
    );
    assert_eq!(
        code(namespaced.list(&Default::default()).await.unwrap_err()),
        404
    );
    assert_eq!(all.get("g").await.unwrap().name_any(), "g");
}

#[tokio::test]
async fn force_on_a_patch_that_is_not_apply_is_422() {
    let c = cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "cfg"}})).unwrap(),
    )
    .await
    .unwrap();
    for (query, content_type) in [
        ("force=true", "application/merge-patch+json"),
        ("force=false", "application/strategic-merge-patch+json"),
    ] {
        let (code, body) = send(
            &c,
            "PATCH",
            &format!("/api/v1/namespaces/default/configmaps/cfg?{query}"),
            content_type,
            r#"{"data":{"a":"1"}}"#,
        )
        .await;
        assert_eq!(code, 422, "{body}");
        let s: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            s["message"],
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        assert_eq!(s["details"]["causes"][0]["field"], "force");
    }
}
#[tokio::test]
async fn times_are_written_as_go_writes_them() {
    let c = cluster().await;
    // MicroTime: UTC with six fractional digits.
    let leases: Api<Lease> = Api::default_namespaced(c.client());
    let (code, body) = send(
        &c,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        "application/json",
        &json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {"renewTime": "2024-01-01T12:00:00.5+02:00", "acquireTime": "2024-01-01T10:00:00Z"},
        })
        .to_string(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let raw: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(raw["spec"]["renewTime"], "2024-01-01T10:00:00.500000Z");
    assert_eq!(raw["spec"]["acquireTime"], "2024-01-01T10:00:00.000000Z");
    assert!(leases.get("l").await.is_ok());
    // metav1.Time: UTC, whole seconds.
    let (code, body) = send(
        &c,
        "POST",
        "/api/v1/namespaces/default/events",
        "application/json",
        &json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"},
            "firstTimestamp": "2024-01-01T12:00:00.987+02:00",
            "eventTime": "2024-01-01T12:00:00.1234567+02:00",
            "reportingComponent": "test", "reportingInstance": "test",
            "action": "Test", "reason": "Test", "type": "Normal",
        })
        .to_string(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let raw: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(raw["firstTimestamp"], "2024-01-01T10:00:00Z");
    assert_eq!(raw["eventTime"], "2024-01-01T10:00:00.123456Z");
    let events: Api<Event> = Api::default_namespaced(c.client());
    assert!(events.get("e").await.is_ok());
}

#[tokio::test]
async fn applying_the_same_value_as_another_manager_shares_the_field() {
    let c = cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let cm = |data: Value| {
        Patch::Apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": data,
        }))
    };
    cms.patch(
        "shared",
        &PatchParams::apply("alice"),
        &cm(json!({"a": "1", "b": "1"})),
    )
    .await
    .unwrap();
    // Bob applies alice's value without force: no conflict, and both own `data.a`.
    let o = cms
        .patch("shared", &PatchParams::apply("bob"), &cm(json!({"a": "1"})))
        .await
        .unwrap();
    let mut owners: Vec<String> = o
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter(|m| {
            m.fields_v1
                .as_ref()
                .is_some_and(|f| f.0.pointer("/f:data/f:a").is_some())
        })
        .filter_map(|m| m.manager)
        .collect();
    owners.sort();
    assert_eq!(owners, ["alice", "bob"]);
    // Alice letting go of it leaves it to bob; it stays.
    let o = cms
        .patch(
            "shared",
            &PatchParams::apply("alice"),
            &cm(json!({"b": "1"})),
        )
        .await
        .unwrap();
    assert_eq!(o.data.unwrap().get("a").map(String::as_str), Some("1"));
    // Once bob lets go too, nobody owns it and it goes.
    let o = cms
        .patch("shared", &PatchParams::apply("bob"), &cm(json!({})))
        .await
        .unwrap();
    assert_eq!(o.data.unwrap().get("a"), None);
}
