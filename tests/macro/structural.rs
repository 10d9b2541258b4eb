//! Every generated schema obeys Kubernetes' structural-schema rules, which kube-apiserver enforces
//! on CRDs and kcp on APIResourceSchemas.

use serde_json::Value;
use service_provider::ServiceProvider;
use service_provider::manifests::{self, Manifest};

use crate::{hello, kitchen_sink, velero};

/// Keywords that value validations (`allOf`, `anyOf`, `oneOf`, `not`) must not carry: only the
/// structural part of a schema may say them.
const STRUCTURAL_ONLY: [&str; 5] = [
    "type",
    "description",
    "default",
    "nullable",
    "additionalProperties",
];

/// Walks `node` and pushes one message per violation.
fn walk(path: &str, node: &Value, in_value_validation: bool, errors: &mut Vec<String>) {
    let Some(obj) = node.as_object() else {
        errors.push(format!("{path}: a schema must be an object, found {node}"));
        return;
    };
    let has_type = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    let flag = |key: &str| obj.get(key) == Some(&Value::Bool(true));
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    let int_or_string = flag("x-kubernetes-int-or-string");

    for key in ["$ref", "definitions", "$defs", "$schema"] {
        if obj.contains_key(key) {
            errors.push(format!(
                "{path}: `{key}` is not allowed in a structural schema"
            ));
        }
    }
    if in_value_validation {
        for key in STRUCTURAL_ONLY {
            if obj.contains_key(key) {
                errors.push(format!(
                    "{path}: `{key}` is not allowed inside allOf/anyOf/oneOf/not"
                ));
            }
        }
    } else if !has_type && !preserve && !int_or_string {
        errors.push(format!(
            "{path}: no `type` (and neither x-kubernetes-preserve-unknown-fields nor x-kubernetes-int-or-string)"
        ));
    }
    // int-or-string stands for the types integer and string; kube-apiserver accepts it nullable
    // (controller-tools writes `*IntOrString` that way too).
    if flag("nullable") && !has_type && !int_or_string {
        errors.push(format!("{path}: `nullable` without a `type`"));
    }
    if obj.contains_key("properties") && obj.contains_key("additionalProperties") {
        errors.push(format!(
            "{path}: `properties` and `additionalProperties` are mutually exclusive"
        ));
    }
    if obj.get("type").and_then(Value::as_str) == Some("array") && !obj.contains_key("items") {
        errors.push(format!("{path}: an array without `items`"));
    }
    match obj.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => {
            let items = obj.get("items").cloned().unwrap_or_default();
            let required: Vec<&str> = items["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let keys = obj
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array);
            match keys {
                None => errors.push(format!(
                    "{path}: a list-map without x-kubernetes-list-map-keys"
                )),
                Some(keys) => {
                    for key in keys.iter().filter_map(Value::as_str) {
                        let defaulted = items["properties"][key].get("default").is_some();
                        if !required.contains(&key) && !defaulted {
                            errors.push(format!(
                                "{path}: list-map key `{key}` is neither required nor defaulted"
                            ));
                        }
                    }
                }
            }
            if items["type"] != "object" {
                errors.push(format!("{path}: a list-map's items must be objects"));
            }
        }
        Some(_) | None if obj.contains_key("x-kubernetes-list-map-keys") => {
            errors.push(format!(
                "{path}: x-kubernetes-list-map-keys without x-kubernetes-list-type: map"
            ));
        }
        _ => {}
    }

    if let Some(properties) = obj.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            walk(
                &format!("{path}.{name}"),
                child,
                in_value_validation,
                errors,
            );
        }
    }
    if let Some(items) = obj.get("items") {
        walk(&format!("{path}[]"), items, in_value_validation, errors);
    }
    if let Some(additional) = obj.get("additionalProperties").filter(|a| a.is_object()) {
        walk(
            &format!("{path}{{*}}"),
            additional,
            in_value_validation,
            errors,
        );
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, child) in obj
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(&format!("{path}/{key}[{i}]"), child, true, errors);
        }
    }
    if let Some(not) = obj.get("not") {
        walk(&format!("{path}/not"), not, true, errors);
    }
}

fn violations(schema: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    walk("", schema, false, &mut errors);
    errors
}

/// Every schema in a provider's manifests: each CRD version's `openAPIV3Schema` and each
/// APIResourceSchema version's bare `schema`.
fn schemas<P: ServiceProvider>() -> Vec<(String, Value)> {
    manifests::manifests::<P>()
        .iter()
        .flat_map(|m: &Manifest| {
            let versions = m.object["spec"]["versions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            versions.into_iter().enumerate().filter_map(move |(i, v)| {
                let schema = match m.kind() {
                    "CustomResourceDefinition" => v["schema"]["openAPIV3Schema"].clone(),
                    "APIResourceSchema" => v["schema"].clone(),
                    _ => return None,
                };
                Some((format!("{} versions[{i}]", m.path), schema))
            })
        })
        .collect()
}

fn assert_structural<P: ServiceProvider>() {
    let schemas = schemas::<P>();
    let service_versions = 1 + P::SERVED_VERSIONS.len();
    let expected = 1 + service_versions * if P::INFO.kcp { 2 } else { 1 };
    assert_eq!(
        schemas.len(),
        expected,
        "{}: a version of the ProviderConfig CRD, and each of the Service API's in its CRD and, with kcp, in its APIResourceSchema",
        P::INFO.kind
    );
    for (file, schema) in schemas {
        assert_eq!(schema["type"], "object", "{file}");
        let errors = violations(&schema);
        assert!(
            errors.is_empty(),
            "{} {file} is not structural:\n{}",
            P::INFO.kind,
            errors.join("\n")
        );
    }
}

#[test]
fn every_generated_schema_is_structural() {
    assert_structural::<hello::Hello>();
    assert_structural::<velero::Velero>();
    assert_structural::<kitchen_sink::Sink>();
}

#[test]
fn the_walk_catches_what_the_apiserver_rejects() {
    let bad = serde_json::json!({
        "type": "object",
        "properties": {
            "untyped": {"description": "anything"},
            "nullableOnly": {"nullable": true},
            "choice": {"type": "string", "anyOf": [{"type": "string", "enum": ["a"]}]},
            "list": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "port": {"x-kubernetes-int-or-string": true},
        },
    });
    let errors = violations(&bad);
    assert_eq!(errors.len(), 5, "{errors:#?}");
    for (needle, field) in [
        ("no `type`", ".untyped"),
        ("`nullable` without a `type`", ".nullableOnly"),
        ("`type` is not allowed inside", ".choice/anyOf[0]"),
        ("neither required nor defaulted", ".list"),
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(field) && e.contains(needle)),
            "{needle} at {field}: {errors:#?}"
        );
    }
}
