//! Non-resource endpoints: `/version`, legacy and aggregated discovery, OpenAPI, `/metrics`.

use std::sync::Arc;

use http::{HeaderMap, Method, Response};
use serde_json::{Value, json};

use super::Target;
use super::negotiate::{Allowed, Output, negotiate};
use super::response::{Body, text_response, value_response};
use crate::error::{ApiError, ApiResult};
use crate::registry::{GroupInfo, ResourceInfo};
use crate::request::RequestInfo;

/// The version this server reports: the Kubernetes version whose API it serves (k8s-openapi's
/// enabled version), so clients enable the features that go with it.
pub(super) fn version() -> Value {
    let (major, minor) = crate::builtin::KUBERNETES_VERSION
        .split_once('.')
        .unwrap_or(("1", "0"));
    // The version it emulates is its own, and it is compatible with the minor before it, as
    // kube-apiserver says of itself since 1.31 (compatibility versions).
    let previous = minor.parse::<u32>().map_or(0, |m| m.saturating_sub(1));
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": previous.to_string(),
        "gitVersion": format!("v{major}.{minor}.0-service-provider"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

fn sub_resource(
    parent: &ResourceInfo,
    name: &str,
    kind: &str,
    group: Option<(&str, &str)>,
    verbs: &[&str],
) -> Value {
    let mut r = json!({
        "name": format!("{}/{name}", parent.resource),
        "singularName": "",
        "namespaced": parent.namespaced,
        "kind": kind,
        "verbs": verbs,
    });
    if let Some((g, v)) = group {
        r["group"] = json!(g);
        r["version"] = json!(v);
    }
    r
}

/// A subresource as discovery lists it: name, kind, group/version of the kind (when it differs from
/// the parent's), verbs.
type SubResource = (
    &'static str,
    String,
    Option<(&'static str, &'static str)>,
    &'static [&'static str],
);

/// The subresources of a resource.
fn subresources(i: &ResourceInfo) -> Vec<SubResource> {
    let mut out = Vec::new();
    if i.status {
        out.push((
            "status",
            i.kind.clone(),
            None,
            &["get", "patch", "update"][..],
        ));
    }
    if i.scale.is_some() {
        out.push((
            "scale",
            "Scale".to_string(),
            Some(("autoscaling", "v1")),
            &["get", "patch", "update"][..],
        ));
    }
    if i.strategy == crate::registry::Strategy::ServiceAccount {
        out.push((
            "token",
            "TokenRequest".to_string(),
            Some(("authentication.k8s.io", "v1")),
            &["create"][..],
        ));
    }
    if i.strategy == crate::registry::Strategy::Namespace {
        out.push(("finalize", i.kind.clone(), None, &["update"][..]));
    }
    if i.strategy == crate::registry::Strategy::Pod {
        out.push(("binding", "Binding".to_string(), None, &["create"][..]));
        out.push((
            "ephemeralcontainers",
            i.kind.clone(),
            None,
            &["get", "patch", "update"][..],
        ));
        out.push((
            "eviction",
            "Eviction".to_string(),
            Some(("policy", "v1")),
            &["create"][..],
        ));
    }
    if i.strategy == crate::registry::Strategy::Csr {
        out.push((
            "approval",
            i.kind.clone(),
            None,
            &["get", "patch", "update"][..],
        ));
    }
    // kube-apiserver lists subresources in name order.
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// What kube-apiserver advertises for a stored resource so that a storage migrator sees when the
/// version objects are stored in changes: the first 8 bytes of SHA-256 over
/// `group/version/kind` of the storage version, in base64 (apiserver `discovery/storageversionhash.go`).
fn storage_version_hash(i: &ResourceInfo) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let (group, version) = crate::registry::split_api_version(&i.storage_api_version);
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{}", i.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn resource_list(group: &str, version: &str, resources: &[Arc<ResourceInfo>]) -> Value {
    let mut out = Vec::new();
    for i in resources {
        let mut r = json!({
            "name": i.resource,
            "singularName": i.singular,
            "namespaced": i.namespaced,
            "kind": i.kind,
            "verbs": i.verbs,
        });
        if !i.short_names.is_empty() {
            r["shortNames"] = json!(i.short_names);
        }
        if !i.categories.is_empty() {
            r["categories"] = json!(i.categories);
        }
        if i.stores_objects() {
            r["storageVersionHash"] = json!(storage_version_hash(i));
        }
        out.push(r);
        for (name, kind, gv, verbs) in subresources(i) {
            out.push(sub_resource(i, name, &kind, gv, verbs));
        }
    }
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::registry::api_version(group, version),
        "resources": out,
    })
}

fn group_json(g: &GroupInfo) -> Value {
    let versions: Vec<Value> = g
        .versions
        .iter()
        .map(|v| json!({"groupVersion": crate::registry::api_version(&g.name, v), "version": v}))
        .collect();
    json!({
        "name": g.name,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

fn aggregated_group(g: &GroupInfo) -> Value {
    let versions: Vec<Value> = g
        .versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = g.resources.get(v).into_iter().flatten().map(|i| {
                // A built-in's response kinds leave out the group and version they share with the
                // resource (the endpoint installer's); a CRD's name them (the CRD discovery
                // controller's).
                let response_kind = |group: &str, version: &str, kind: &str| {
                    if i.typed() && group == i.group && version == i.version {
                        json!({"group": "", "version": "", "kind": kind})
                    } else {
                        json!({"group": group, "version": version, "kind": kind})
                    }
                };
                let mut r = json!({
                    "resource": i.resource,
                    "responseKind": response_kind(&i.group, &i.version, &i.kind),
                    "scope": if i.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": i.singular,
                    "verbs": i.verbs,
                });
                if !i.short_names.is_empty() {
                    r["shortNames"] = json!(i.short_names);
                }
                if !i.categories.is_empty() {
                    r["categories"] = json!(i.categories);
                }
                let subs: Vec<Value> = subresources(i)
                    .into_iter()
                    .map(|(name, kind, gv, verbs)| {
                        let (sg, sv) = gv.map(|(a, b)| (a.to_string(), b.to_string())).unwrap_or((i.group.clone(), i.version.clone()));
                        json!({"subresource": name, "responseKind": response_kind(&sg, &sv, &kind), "verbs": verbs})
                    })
                    .collect();
                if !subs.is_empty() {
                    r["subresources"] = json!(subs);
                }
                r
            }).collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut meta = json!({});
    if !g.name.is_empty() {
        meta["name"] = json!(g.name);
    }
    json!({"metadata": meta, "versions": versions})
}

fn aggregated(version: &str, groups: &[GroupInfo]) -> Value {
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": groups.iter().map(aggregated_group).collect::<Vec<_>>(),
    })
}

/// Serves a non-resource path.
pub(super) async fn non_resource(
    t: &Target,
    method: &Method,
    headers: &HeaderMap,
    path: &str,
    ri: &RequestInfo,
) -> ApiResult<Response<Body>> {
    if method != Method::GET && method != Method::HEAD {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ));
    }
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    match path {
        "/metrics" => {
            return Ok(text_response(
                200,
                t.shard.counters().prometheus(),
                "text/plain; version=0.0.4",
            ));
        }
        "/api" => {
            return match negotiate(
                accept,
                Allowed {
                    aggregated: t.surface.aggregated_discovery(),
                    ..Allowed::default()
                },
            )? {
                Output::Aggregated(v) => {
                    let core: Vec<GroupInfo> = t
                        .surface
                        .groups(t)
                        .into_iter()
                        .filter(|g| g.name.is_empty())
                        .collect();
                    Ok(value_response(
                        200,
                        &aggregated(v, &core),
                        Output::Aggregated(v),
                    ))
                }
                out => Ok(value_response(
                    200,
                    &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1")}]}),
                    out,
                )),
            };
        }
        "/apis" => {
            let groups: Vec<GroupInfo> = t
                .surface
                .groups(t)
                .into_iter()
                .filter(|g| !g.name.is_empty())
                .collect();
            return match negotiate(
                accept,
                Allowed {
                    aggregated: t.surface.aggregated_discovery(),
                    ..Allowed::default()
                },
            )? {
                Output::Aggregated(v) => Ok(value_response(
                    200,
                    &aggregated(v, &groups),
                    Output::Aggregated(v),
                )),
                out => Ok(value_response(
                    200,
                    &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups.iter().map(group_json).collect::<Vec<_>>()}),
                    out,
                )),
            };
        }
        _ => {}
    }
    if let Some(rest) = path.strip_prefix("/openapi") {
        return crate::openapi::serve(t, rest, accept);
    }
    let output = negotiate(accept, Allowed::default())?;
    let groups = t.surface.groups(t);
    if ri.prefix == "api" && ri.version == "v1" {
        let core = groups
            .iter()
            .find(|g| g.name.is_empty())
            .ok_or_else(ApiError::no_route)?;
        let rs = core.resources.get("v1").cloned().unwrap_or_default();
        return Ok(value_response(200, &resource_list("", "v1", &rs), output));
    }
    if ri.prefix == "apis" && !ri.group.is_empty() {
        let g = groups
            .iter()
            .find(|g| g.name == ri.group)
            .ok_or_else(ApiError::no_route)?;
        if ri.version.is_empty() {
            let mut v = group_json(g);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            return Ok(value_response(200, &v, output));
        }
        let rs = g
            .resources
            .get(&ri.version)
            .ok_or_else(ApiError::no_route)?;
        return Ok(value_response(
            200,
            &resource_list(&g.name, &ri.version, rs),
            output,
        ));
    }
    Err(ApiError::no_route())
}
