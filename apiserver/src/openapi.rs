//! `/openapi/v2` and `/openapi/v3`: the documents kubectl reads for `explain` and to learn that the
//! server validates fields itself (`fieldValidation`).

use std::collections::BTreeMap;
use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::handler::Target;
use crate::handler::negotiate::Output;
use crate::handler::response::{Body, value_response};
use crate::registry::ResourceInfo;

/// The definition name kube-apiserver uses: reversed group, version, kind (`com.example.v1.Widget`).
pub fn definition_name(i: &ResourceInfo) -> String {
    let g = if i.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        i.group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{g}.{}.{}", i.version, i.kind)
}

fn schema_of(i: &ResourceInfo) -> Value {
    let mut s =
        i.openapi_schema.as_deref().cloned().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        props.entry("apiVersion").or_insert_with(|| json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
        props.entry("kind").or_insert_with(|| json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
        props.entry("metadata").or_insert_with(
            || json!({"type": "object", "description": "Standard object's metadata."}),
        );
    }
    s["x-kubernetes-group-version-kind"] =
        json!([{"group": i.group, "version": i.version, "kind": i.kind}]);
    s
}

fn paths_of(i: &ResourceInfo) -> (String, Value) {
    let prefix = if i.group.is_empty() {
        format!("/api/{}", i.version)
    } else {
        format!("/apis/{}/{}", i.group, i.version)
    };
    let ns = if i.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let gvk = json!({"group": i.group, "version": i.version, "kind": i.kind});
    let params = json!([
        {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}, "type": "string"},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}, "type": "string"},
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}, "type": "string"},
    ]);
    let op = |action: &str| json!({"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": {}});
    (
        format!("{prefix}{ns}/{}/{{name}}", i.resource),
        json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
    )
}

fn gv_key(i: &ResourceInfo) -> String {
    if i.group.is_empty() {
        format!("api/{}", i.version)
    } else {
        format!("apis/{}/{}", i.group, i.version)
    }
}

fn resources(t: &Target) -> Vec<Arc<ResourceInfo>> {
    t.surface
        .groups(t)
        .into_iter()
        .flat_map(|g| g.resources.into_values().flatten())
        .collect()
}

/// Serves `/openapi<rest>`.
pub fn serve(t: &Target, rest: &str, _accept: Option<&str>) -> ApiResult<Response<Body>> {
    let rs = resources(t);
    let info = json!({"title": "Kubernetes", "version": "v1.33.0"});
    if rest == "/v2" {
        let mut defs = serde_json::Map::new();
        let mut paths = serde_json::Map::new();
        for i in &rs {
            defs.insert(definition_name(i), schema_of(i));
            let (p, v) = paths_of(i);
            paths.insert(p, v);
        }
        return Ok(value_response(
            200,
            &json!({"swagger": "2.0", "info": info, "paths": paths, "definitions": defs}),
            Output::Json,
        ));
    }
    if rest == "/v3" {
        let mut index = BTreeMap::new();
        for i in &rs {
            let k = gv_key(i);
            index
                .entry(k.clone())
                .or_insert_with(|| json!({"serverRelativeURL": format!("/openapi/v3/{k}?hash=0")}));
        }
        return Ok(value_response(200, &json!({"paths": index}), Output::Json));
    }
    if let Some(gv) = rest.strip_prefix("/v3/") {
        let selected: Vec<&Arc<ResourceInfo>> = rs.iter().filter(|i| gv_key(i) == gv).collect();
        if selected.is_empty() {
            return Err(ApiError::no_route());
        }
        let mut schemas = serde_json::Map::new();
        let mut paths = serde_json::Map::new();
        for i in selected {
            schemas.insert(definition_name(i), schema_of(i));
            let (p, v) = paths_of(i);
            paths.insert(p, v);
        }
        return Ok(value_response(
            200,
            &json!({"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": schemas}}),
            Output::Json,
        ));
    }
    Err(ApiError::no_route())
}
