//! Shared helpers for the kcp tests: a provider workspace exporting `cowboys.wildwest.dev`, and
//! consumer workspaces binding it.

use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use service_provider_apiserver::kcp::{Kcp, KcpOptions, WorkspaceInfo};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn kcp() -> Kcp {
    Kcp::start("kcp", KcpOptions::default())
        .await
        .expect("start kcp")
}

pub(crate) fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub(crate) fn workspaces(c: &Client) -> Api<DynamicObject> {
    Api::all_with(
        c.clone(),
        &ar("tenancy.kcp.io", "v1alpha1", "Workspace", "workspaces"),
    )
}
pub(crate) fn schemas(c: &Client) -> Api<DynamicObject> {
    Api::all_with(
        c.clone(),
        &ar(
            "apis.kcp.io",
            "v1alpha1",
            "APIResourceSchema",
            "apiresourceschemas",
        ),
    )
}
pub(crate) fn exports(c: &Client, version: &str) -> Api<DynamicObject> {
    Api::all_with(
        c.clone(),
        &ar("apis.kcp.io", version, "APIExport", "apiexports"),
    )
}
pub(crate) fn slices(c: &Client) -> Api<DynamicObject> {
    Api::all_with(
        c.clone(),
        &ar(
            "apis.kcp.io",
            "v1alpha1",
            "APIExportEndpointSlice",
            "apiexportendpointslices",
        ),
    )
}
pub(crate) fn bindings(c: &Client, version: &str) -> Api<DynamicObject> {
    Api::all_with(
        c.clone(),
        &ar("apis.kcp.io", version, "APIBinding", "apibindings"),
    )
}
pub(crate) fn cowboy_resource() -> ApiResource {
    ar("wildwest.dev", "v1alpha1", "Cowboy", "cowboys")
}
pub(crate) fn cowboys(c: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(c.clone(), ns, &cowboy_resource())
}
pub(crate) fn all_cowboys(c: &Client) -> Api<DynamicObject> {
    Api::all_with(c.clone(), &cowboy_resource())
}

pub(crate) fn dynamic(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("a valid object")
}

/// The `cowboys.wildwest.dev` schema under a prefix; `extra` adds spec properties.
pub(crate) fn cowboy_schema(prefix: &str, extra: Value) -> DynamicObject {
    let mut spec_props = json!({
        "intent": {"type": "string", "maxLength": 20},
        "horses": {"type": "integer", "minimum": 0}
    });
    if let (Some(p), Some(e)) = (spec_props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    dynamic(json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": format!("{prefix}.cowboys.wildwest.dev")},
        "spec": {
            "group": "wildwest.dev",
            "names": {"plural": "cowboys", "singular": "cowboy", "kind": "Cowboy", "listKind": "CowboyList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": spec_props},
                    "status": {"type": "object", "properties": {"result": {"type": "string"}}}
                }}
            }]
        }
    }))
}

/// Waits until `f` holds, polling (for state without a single watchable object).
pub(crate) async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if f().await {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads an object until `pred` holds; returns it.
pub(crate) async fn wait_obj(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Ok(Some(o)) = api.get_opt(name).await {
            let v = serde_json::to_value(&o).expect("serializable");
            if pred(&v) {
                return v;
            }
            last = v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what} on {name}; last seen: {last:#}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn condition(v: &Value, type_: &str) -> Option<String> {
    v.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

/// A provider workspace `root:<name>` with schema `v1.cowboys.wildwest.dev` and export `cowboys`
/// (v1alpha2), its identity set.
pub(crate) async fn provider(kcp: &Kcp, name: &str) -> WorkspaceInfo {
    let ws = kcp
        .create_workspace(&format!("root:{name}"))
        .await
        .expect("provider workspace");
    let c = kcp.client(&ws.path);
    schemas(&c)
        .create(&PostParams::default(), &cowboy_schema("v1", json!({})))
        .await
        .expect("schema");
    exports(&c, "v1alpha2")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha2",
                "kind": "APIExport",
                "metadata": {"name": "cowboys"},
                "spec": {
                    "resources": [{"group": "wildwest.dev", "name": "cowboys", "schema": "v1.cowboys.wildwest.dev", "storage": {"crd": {}}}],
                    "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch", "create"]}]
                }
            })),
        )
        .await
        .expect("export");
    wait_obj(&exports(&c, "v1alpha2"), "cowboys", "identity", |v| {
        v.pointer("/status/identityHash").is_some()
    })
    .await;
    ws
}

/// A consumer workspace `root:<name>` bound to the provider's `cowboys` export, Bound.
pub(crate) async fn consumer(kcp: &Kcp, name: &str, provider: &WorkspaceInfo) -> WorkspaceInfo {
    let ws = kcp
        .create_workspace(&format!("root:{name}"))
        .await
        .expect("consumer workspace");
    bind(kcp, &ws, provider, "cowboys", json!([])).await;
    ws
}

/// Creates APIBinding `name` in `ws` to the provider's `cowboys` export and waits for Bound.
pub(crate) async fn bind(
    kcp: &Kcp,
    ws: &WorkspaceInfo,
    provider: &WorkspaceInfo,
    name: &str,
    claims: Value,
) -> Value {
    let c = kcp.client(&ws.path);
    bindings(&c, "v1alpha2")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha2",
                "kind": "APIBinding",
                "metadata": {"name": name},
                "spec": {
                    "reference": {"export": {"path": provider.path, "name": "cowboys"}},
                    "permissionClaims": claims,
                }
            })),
        )
        .await
        .expect("binding");
    wait_obj(&bindings(&c, "v1alpha2"), name, "Bound", |v| {
        v.pointer("/status/phase") == Some(&json!("Bound"))
    })
    .await
}

pub(crate) fn cowboy(name: &str, intent: &str) -> DynamicObject {
    dynamic(json!({
        "apiVersion": "wildwest.dev/v1alpha1", "kind": "Cowboy",
        "metadata": {"name": name}, "spec": {"intent": intent}
    }))
}

/// The kube::Error's API status code, or a panic with the error.
pub(crate) fn code(e: kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The kube::Error's API status.
pub(crate) fn status(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The endpoint URLs of an endpoint slice.
pub(crate) fn endpoint_urls(v: &Value) -> Vec<String> {
    v.pointer("/status/endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e["url"].as_str().map(str::to_string))
        .collect()
}
