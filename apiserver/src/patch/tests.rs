//! End-to-end scenarios of server-side apply and managedFields, as clients observe them: the objects
//! and managedFields that result, and the errors they get.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::apply::LAST_APPLIED_ANNOTATION;
use super::*;

const T0: &str = "2024-05-01T10:00:00Z";
const T1: &str = "2024-05-01T10:00:01Z";
const T2: &str = "2024-05-01T10:00:02Z";
const T3: &str = "2024-05-01T10:00:03Z";

fn widget_shape() -> TypeShape {
    TypeShape::from_crd_schema(&json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "image": {"type": "string"},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}
            }},
            "status": {"type": "object", "properties": {
                "phase": {"type": "string"},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                               "items": {"type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}}
            }}
        }
    }))
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

const WIDGET: Target = Target {
    api_version: "example.com/v1",
    subresource: None,
    status_subresource: true,
};
const WIDGET_STATUS: Target = Target {
    api_version: "example.com/v1",
    subresource: Some("status"),
    status_subresource: true,
};

fn req<'a>(
    manager: &'a str,
    force: bool,
    kind: &'a str,
    target: Target<'a>,
    now: &'a str,
) -> ApplyRequest<'a> {
    ApplyRequest {
        manager,
        force,
        kind,
        target,
        now,
    }
}

fn apply_widget(
    live: Option<&Value>,
    spec: Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    apply(
        live,
        &widget(spec),
        &widget_shape(),
        &req(manager, force, "Widget", WIDGET, now),
    )
}

fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

#[test]
fn apply_creates_the_object_and_records_the_applier() {
    let obj = apply_widget(
        None,
        json!({"replicas": 1, "tags": ["a"]}),
        "alice",
        false,
        T0,
    )
    .unwrap();
    assert_eq!(obj["spec"], json!({"replicas": 1, "tags": ["a"]}));
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "manager": "alice", "operation": "Apply",
            "time": T0, "fieldsV1": {"f:spec": {"f:replicas": {}, "f:tags": {"v:\"a\"": {}}}}
        }])
    );
}

#[test]
fn ssa_removes_an_omitted_field_and_refuses_a_conflicting_manager() {
    let obj = apply_widget(
        None,
        json!({"replicas": 1, "image": "x:1"}),
        "alice",
        false,
        T0,
    )
    .unwrap();
    // alice stops setting the image: it is removed.
    let obj = apply_widget(Some(&obj), json!({"replicas": 1}), "alice", false, T1).unwrap();
    assert_eq!(obj["spec"], json!({"replicas": 1}));
    assert_eq!(
        entry(&obj, "alice", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );

    // bob wants a different replica count: refused with kube's message and causes.
    let err = apply_widget(Some(&obj), json!({"replicas": 2}), "bob", false, T2).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(err.reason(), "Conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "alice": .spec.replicas"#
    );
    assert_eq!(
        err.details().unwrap(),
        json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.replicas"}]})
    );

    // Forced, bob takes the field over; alice no longer owns anything.
    let obj = apply_widget(Some(&obj), json!({"replicas": 2}), "bob", true, T2).unwrap();
    assert_eq!(obj["spec"]["replicas"], 2);
    assert!(entry(&obj, "alice", "Apply").is_none());
    assert_eq!(
        entry(&obj, "bob", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );

    // Now alice conflicts with bob.
    let err = apply_widget(Some(&obj), json!({"replicas": 1}), "alice", false, T3).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "bob": .spec.replicas"#
    );
}

#[test]
fn applying_the_same_value_shares_ownership_and_the_field_survives_one_owner_leaving() {
    let obj = apply_widget(
        None,
        json!({"replicas": 1, "image": "x"}),
        "alice",
        false,
        T0,
    )
    .unwrap();
    let obj = apply_widget(Some(&obj), json!({"image": "x"}), "bob", false, T1).unwrap();
    assert_eq!(
        entry(&obj, "bob", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:image": {}}})
    );
    let obj = apply_widget(Some(&obj), json!({"replicas": 1}), "alice", false, T2).unwrap();
    assert_eq!(
        obj["spec"],
        json!({"replicas": 1, "image": "x"}),
        "bob still owns the image"
    );
}

#[test]
fn runtime_apply_with_prune_pattern() {
    let shape = TypeShape::of::<ConfigMap>();
    let target = Target {
        api_version: "v1",
        subresource: None,
        status_subresource: false,
    };
    let r = |now| req("service-provider", true, "ConfigMap", target, now);
    let cm = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cfg", "namespace": "t", "labels": {"app": "x"}}, "data": data})
    };
    let obj = apply(None, &cm(json!({"a": "1", "b": "2"})), &shape, &r(T0)).unwrap();
    // Someone else adds a key with a plain update; it must survive the provider's prune.
    let mut edited = obj.clone();
    edited["data"]["c"] = json!("3");
    record_update(Some(&obj), &mut edited, "kubectl-edit", &shape, &target, T1);
    let obj = apply(Some(&edited), &cm(json!({"a": "1"})), &shape, &r(T2)).unwrap();
    assert_eq!(obj["data"], json!({"a": "1", "c": "3"}));
    assert_eq!(obj["metadata"]["labels"], json!({"app": "x"}));
    assert_eq!(
        entry(&obj, "service-provider", "Apply").unwrap()["fieldsV1"],
        json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
    );
    assert_eq!(
        entry(&obj, "kubectl-edit", "Update").unwrap()["fieldsV1"],
        json!({"f:data": {"f:c": {}}})
    );
    // Dropping all data removes the whole field the provider owned there, but not c.
    let obj = apply(
        Some(&obj),
        &cm(Value::Null)
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.remove("data");
                Value::Object(o)
            })
            .unwrap(),
        &shape,
        &r(T3),
    )
    .unwrap();
    assert_eq!(obj["data"], json!({"c": "3"}));
}

#[test]
fn update_managers_conflict_with_appliers_and_are_named_with_their_version() {
    let shape = TypeShape::of::<Deployment>();
    let target = Target {
        api_version: "apps/v1",
        subresource: None,
        status_subresource: true,
    };
    let deployment = |replicas: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                        "template": {"metadata": {"labels": {"app": "d"}},
                                     "spec": {"containers": [{"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}]}}}})
    };
    let mut created = deployment(1);
    record_update(None, &mut created, "kubectl", &shape, &target, T0);
    let err = apply(
        Some(&created),
        &deployment(3),
        &shape,
        &req("kubectl", false, "Deployment", target, T1),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas"#
    );
    // The container port without protocol is keyed with the TCP default.
    let obj = apply(
        Some(&created),
        &deployment(1),
        &shape,
        &req("kubectl", false, "Deployment", target, T1),
    )
    .unwrap();
    let fields = &entry(&obj, "kubectl", "Apply").unwrap()["fieldsV1"];
    assert!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"]["f:ports"]
            .get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}")
            .is_some(),
        "{fields}"
    );
    assert_eq!(
        fields["f:spec"]["f:selector"],
        json!({}),
        "LabelSelector is atomic"
    );
}

#[test]
fn kubectl_server_side_takes_over_from_client_side_apply() {
    let shape = widget_shape();
    let last = widget(json!({"replicas": 1}));
    let mut live = widget(json!({"replicas": 1}));
    live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: last.to_string()});
    record_update(
        None,
        &mut live,
        "kubectl-client-side-apply",
        &shape,
        &WIDGET,
        T0,
    );
    let obj = apply(
        Some(&live),
        &widget(json!({"replicas": 2})),
        &shape,
        &req("kubectl", false, "Widget", WIDGET, T1),
    )
    .unwrap();
    assert_eq!(obj["spec"]["replicas"], 2);
    let annotation: Value = serde_json::from_str(
        obj["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        annotation["spec"],
        json!({"replicas": 2}),
        "the client-side annotation follows"
    );
    // Another manager gets no such pass.
    let err = apply(
        Some(&live),
        &widget(json!({"replicas": 2})),
        &shape,
        &req("other", false, "Widget", WIDGET, T1),
    )
    .unwrap_err();
    assert_eq!(err.code(), 409);
}

#[test]
fn objects_without_managed_fields_are_owned_by_before_first_apply() {
    let live = widget(json!({"replicas": 1}));
    let err = apply_widget(Some(&live), json!({"replicas": 2}), "alice", false, T1).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using example.com/v1: .spec.replicas"#
    );
}

#[test]
fn status_subresource_applies_touch_only_status() {
    let shape = widget_shape();
    let mut config = widget(json!({"replicas": 1}));
    config["status"] = json!({"phase": "Ignored"});
    let obj = apply(
        None,
        &config,
        &shape,
        &req("alice", false, "Widget", WIDGET, T0),
    )
    .unwrap();
    assert!(
        obj.get("status").is_none(),
        "the main resource ignores status"
    );

    let mut status = widget(json!({"replicas": 99}));
    status["status"] =
        json!({"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]});
    let obj = apply(
        Some(&obj),
        &status,
        &shape,
        &req("ctrl", false, "Widget", WIDGET_STATUS, T1),
    )
    .unwrap();
    assert_eq!(obj["spec"]["replicas"], 1, "/status does not touch spec");
    assert_eq!(obj["status"]["phase"], "Ready");
    let e = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "ctrl")
        .unwrap();
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:phase": {}, "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:type": {}, "f:status": {}}}}})
    );
    // Dropping the condition on the next status apply removes it.
    let mut status = widget(json!({}));
    status["status"] = json!({"phase": "Ready"});
    let obj = apply(
        Some(&obj),
        &status,
        &shape,
        &req("ctrl", false, "Widget", WIDGET_STATUS, T2),
    )
    .unwrap();
    assert_eq!(obj["status"], json!({"phase": "Ready"}));
}

#[test]
fn keyed_list_items_the_applier_drops_are_removed() {
    let obj = apply_widget(
        None,
        json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}),
        "alice",
        false,
        T0,
    )
    .unwrap();
    let obj = apply_widget(
        Some(&obj),
        json!({"ports": [{"name": "c", "port": 3}]}),
        "bob",
        false,
        T1,
    )
    .unwrap();
    let obj = apply_widget(
        Some(&obj),
        json!({"ports": [{"name": "b", "port": 2}]}),
        "alice",
        false,
        T2,
    )
    .unwrap();
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "b", "port": 2}, {"name": "c", "port": 3}])
    );
}

#[test]
fn a_no_op_apply_keeps_the_object_and_the_time() {
    let obj = apply_widget(None, json!({"replicas": 1}), "alice", false, T0).unwrap();
    let again = apply_widget(Some(&obj), json!({"replicas": 1}), "alice", false, T1).unwrap();
    assert_eq!(again, obj);
}

#[test]
fn malformed_apply_requests_get_kube_errors() {
    let shape = widget_shape();
    let mut with_mf = widget(json!({}));
    with_mf["metadata"]["managedFields"] = json!([]);
    let e = apply(
        None,
        &with_mf,
        &shape,
        &req("a", false, "Widget", WIDGET, T0),
    )
    .unwrap_err();
    assert_eq!(
        (e.code(), e.to_string()),
        (400, "metadata.managedFields must be nil".to_string())
    );

    let mut wrong = widget(json!({}));
    wrong["apiVersion"] = json!("example.com/v2");
    let e = apply(None, &wrong, &shape, &req("a", false, "Widget", WIDGET, T0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid object type: example.com/v2, Kind=Widget"
    );

    let e = apply(
        None,
        &widget(json!({})),
        &shape,
        &req("", false, "Widget", WIDGET, T0),
    )
    .unwrap_err();
    assert_eq!(e.code(), 422);

    let e = apply(
        None,
        &widget(json!({"bogus": 1, "ports": [{"port": 1}]})),
        &shape,
        &req("a", false, "Widget", WIDGET, T0),
    )
    .unwrap_err();
    assert_eq!(e.code(), 500);
    assert_eq!(
        e.to_string(),
        "failed to create typed patch object (default/w; example.com/v1, Kind=Widget): errors:\n  .spec.bogus: field not declared in schema\n  .spec.ports: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );
}

#[test]
fn kubectl_server_side_apply_of_a_deployment_records_fields_like_kube() {
    let shape = TypeShape::of::<Deployment>();
    let target = Target {
        api_version: "apps/v1",
        subresource: None,
        status_subresource: true,
    };
    let manifest = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}
    });
    let obj = apply(
        None,
        &manifest,
        &shape,
        &req("kubectl", false, "Deployment", target, T0),
    )
    .unwrap();
    assert_eq!(
        entry(&obj, "kubectl", "Apply").unwrap()["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}}}
                }
            }
        })
    );
}

/// The manifests the framework generates (`manifests/`), applied as `kubectl apply --server-side`
/// would: CRDs and ClusterRoles fit their built-in shapes, and a custom object fits its CRD's shape.
#[test]
fn generated_manifests_apply_server_side() {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("manifests directory is readable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    let crd_shape = TypeShape::of::<CustomResourceDefinition>();
    let role_shape = TypeShape::of::<ClusterRole>();
    let mut crds = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("manifest is readable");
        let doc: Value = serde_norway::from_str(&text).expect("manifest is YAML");
        let (shape, api_version) = match doc["kind"].as_str() {
            Some("CustomResourceDefinition") => (&crd_shape, "apiextensions.k8s.io/v1"),
            Some("ClusterRole") => (&role_shape, "rbac.authorization.k8s.io/v1"),
            _ => continue,
        };
        let target = Target {
            api_version,
            subresource: None,
            status_subresource: true,
        };
        let kind = doc["kind"].as_str().unwrap_or_default();
        let obj = apply(None, &doc, shape, &req("kubectl", false, kind, target, T0))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(entry(&obj, "kubectl", "Apply").is_some());
        if kind != "CustomResourceDefinition" {
            continue;
        }
        crds += 1;
        // A custom object of the CRD's first version applies against the CRD's schema.
        let version = &doc["spec"]["versions"][0];
        let cr_shape = TypeShape::from_crd_schema(&version["schema"]["openAPIV3Schema"]);
        let group = doc["spec"]["group"].as_str().unwrap_or_default();
        let cr_version = format!("{group}/{}", version["name"].as_str().unwrap_or_default());
        let cr_kind = doc["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let cr = json!({"apiVersion": cr_version, "kind": cr_kind, "metadata": {"name": "x", "namespace": "default",
                        "labels": {"a": "b"}, "finalizers": ["f"]}});
        let cr_target = Target {
            api_version: &cr_version,
            subresource: None,
            status_subresource: true,
        };
        let obj = apply(
            None,
            &cr,
            &cr_shape,
            &req("runtime", true, cr_kind, cr_target, T0),
        )
        .unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["f"]));
    }
    assert!(crds > 0, "the repository has generated CRDs");
}
