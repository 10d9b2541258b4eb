//! Every built-in resource of the enabled Kubernetes version: served, and usable end to end.
//!
//! The expected resources come from k8s-openapi itself — the generated type list
//! (`src/builtin/types.rs`) read through k8s-openapi's own `Resource` traits here, not through the
//! server's registry — and each served resource gets one object built from the server's published
//! OpenAPI schema (k8s-openapi's), created, read, listed, watched, patched and deleted.

use std::collections::BTreeSet;

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::discovery::{Discovery, Scope, verbs};
use serde_json::{Map, Value, json};

use crate::common::*;

/// One resource k8s-openapi says the enabled version has.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Expected {
    api_version: String,
    plural: String,
    kind: String,
    namespaced: bool,
}

trait ScopeOf {
    /// `None` for subresource bodies (`Scale`, `Eviction`), which are no resources of their own.
    const NAMESPACED: Option<bool>;
}
impl ScopeOf for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: Option<bool> = Some(true);
}
impl ScopeOf for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: Option<bool> = Some(false);
}
impl ScopeOf for k8s_openapi::SubResourceScope {
    const NAMESPACED: Option<bool> = None;
}

fn expected_of<T: k8s_openapi::Resource>() -> Option<Expected>
where
    T::Scope: ScopeOf,
{
    Some(Expected {
        api_version: T::API_VERSION.to_string(),
        plural: T::URL_PATH_SEGMENT.to_string(),
        kind: T::KIND.to_string(),
        namespaced: <T::Scope as ScopeOf>::NAMESPACED?,
    })
}

macro_rules! builtin_types {
    (kubernetes: $k8s:literal, stored: [$($($s:ident)::+),* $(,)?], other: [$($($o:ident)::+),* $(,)?] $(,)?) => {
        const KUBERNETES_VERSION: &str = $k8s;

        fn expected() -> Vec<Expected> {
            let all = vec![
                $(expected_of::<k8s_openapi::$($s)::+>(),)*
                $(expected_of::<k8s_openapi::$($o)::+>(),)*
            ];
            all.into_iter().flatten().collect()
        }
    };
}

include!("../../src/builtin/types.rs");

/// A value that satisfies `schema`: every required property, one item per required list.
fn sample(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let schema = resolve(schema, defs);
    if depth > 12 {
        return json!({});
    }
    if schema.get("x-kubernetes-int-or-string").is_some() {
        return json!(1);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") | None => {
            let mut out = Map::new();
            let props = schema.get("properties").and_then(Value::as_object);
            for r in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(p) = props.and_then(|p| p.get(r)) {
                    out.insert(r.to_string(), sample(p, defs, depth + 1));
                }
            }
            Value::Object(out)
        }
        Some("array") => json!([sample(
            schema.get("items").unwrap_or(&json!({})),
            defs,
            depth + 1
        )]),
        Some("string") => match schema.get("format").and_then(Value::as_str) {
            Some("byte") => json!("eA=="),
            Some("date-time") => json!("2024-01-01T00:00:00Z"),
            _ => json!("x"),
        },
        Some("integer") | Some("number") => json!(1),
        Some("boolean") => json!(false),
        _ => json!({}),
    }
}

/// Follows `$ref` and a single-element `allOf` (how kube wraps references with a description).
fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    let target = schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .and_then(|n| defs.get(n));
    match target {
        Some(t) => resolve(t, defs),
        None => schema,
    }
}

/// Where kube-apiserver checks more than the schema, a sample is made valid the way a user's
/// object would be: a workload selects its own template's labels, pods have a named container.
fn make_valid(obj: &mut Value, name: &str) {
    fn pod_spec(spec: &mut Value, restart: &str) {
        spec["containers"] = json!([{"name": "c", "image": "busybox"}]);
        spec["restartPolicy"] = json!(restart);
    }
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let labels = json!({"app": name});
    match kind.as_str() {
        "Pod" => pod_spec(&mut obj["spec"], "Always"),
        "SubjectAccessReview" | "LocalSubjectAccessReview" | "SelfSubjectAccessReview" => {
            if kind != "SelfSubjectAccessReview" {
                obj["spec"]["user"] = json!("someone");
            }
            obj["spec"]["resourceAttributes"] =
                json!({"verb": "get", "resource": "pods", "namespace": "default"});
        }
        "SelfSubjectRulesReview" => obj["spec"]["namespace"] = json!("default"),
        "Service" => obj["spec"] = json!({"ports": [{"port": 80}]}),
        "Event" if obj["apiVersion"] == "events.k8s.io/v1" => {
            obj["type"] = json!("Normal");
            obj["eventTime"] = json!("2024-01-01T00:00:00.000000Z");
            for f in [
                "reportingController",
                "reportingInstance",
                "action",
                "reason",
            ] {
                obj[f] = json!("x");
            }
        }
        "CustomResourceDefinition" => *obj = widget_crd(),
        "Ingress" => {
            obj["spec"]["defaultBackend"] =
                json!({"service": {"name": "web", "port": {"number": 80}}});
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            obj["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"});
        }
        "PodTemplate" => {
            obj["template"]["metadata"]["labels"] = labels.clone();
            pod_spec(&mut obj["template"]["spec"], "Always");
        }
        "CronJob" => {
            obj["spec"]["schedule"] = json!("*/5 * * * *");
            pod_spec(
                &mut obj["spec"]["jobTemplate"]["spec"]["template"]["spec"],
                "Never",
            );
        }
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => {
            if kind == "ReplicationController" {
                obj["spec"]["selector"] = labels.clone();
            } else {
                obj["spec"]["selector"] = json!({"matchLabels": labels});
            }
            obj["spec"]["template"]["metadata"]["labels"] = labels.clone();
            let restart = if kind == "Job" { "Never" } else { "Always" };
            pod_spec(&mut obj["spec"]["template"]["spec"], restart);
        }
        _ => {}
    }
}

async fn openapi_definitions(client: &kube::Client, api_version: &str) -> Map<String, Value> {
    let path = if api_version.contains('/') {
        format!("/openapi/v3/apis/{api_version}")
    } else {
        format!("/openapi/v3/api/{api_version}")
    };
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let doc: Value = client.request(req).await.unwrap();
    doc.pointer("/components/schemas")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn definition_of<'a>(defs: &'a Map<String, Value>, ar: &ApiResource) -> Option<&'a Value> {
    defs.values().find(|d| {
        d.get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .is_some_and(|gvks| {
                gvks.iter().any(|g| {
                    g["group"] == ar.group && g["version"] == ar.version && g["kind"] == ar.kind
                })
            })
    })
}

/// One schema-valid object of a resource.
async fn object_for(client: &kube::Client, ar: &ApiResource, name: &str) -> DynamicObject {
    let defs = openapi_definitions(client, &ar.api_version).await;
    let def =
        definition_of(&defs, ar).unwrap_or_else(|| panic!("no OpenAPI definition for {}", ar.kind));
    let mut obj = sample(def, &defs, 0);
    obj["apiVersion"] = json!(ar.api_version);
    obj["kind"] = json!(ar.kind);
    obj["metadata"] = json!({"name": name});
    make_valid(&mut obj, name);
    serde_json::from_value(obj).unwrap()
}

/// The served resources, from aggregated discovery: every version of every group.
async fn served(client: &kube::Client) -> Vec<(ApiResource, kube::discovery::ApiCapabilities)> {
    let d = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    let mut out = Vec::new();
    for g in d.groups() {
        for v in g.versions() {
            out.extend(g.versioned_resources(v));
        }
    }
    out
}

#[tokio::test]
async fn every_builtin_resource_of_the_kubernetes_version_is_served() {
    let c = cluster().await;
    let client = c.client();
    let served: BTreeSet<Expected> = served(&client)
        .await
        .into_iter()
        .map(|(ar, caps)| Expected {
            api_version: ar.api_version,
            plural: ar.plural,
            kind: ar.kind,
            namespaced: caps.scope == Scope::Namespaced,
        })
        .collect();
    let expected = expected();
    assert!(expected.len() > 60, "{} expected resources", expected.len());
    let missing: Vec<&Expected> = expected.iter().filter(|e| !served.contains(e)).collect();
    assert!(missing.is_empty(), "not served: {missing:#?}");
    // Legacy discovery lists the same resources.
    let legacy = Discovery::new(client.clone()).run().await.unwrap();
    for e in &expected {
        let (group, version) = e
            .api_version
            .split_once('/')
            .unwrap_or(("", &e.api_version));
        let g = legacy
            .get(group)
            .unwrap_or_else(|| panic!("group {group:?} in legacy discovery"));
        assert!(
            g.versioned_resources(version)
                .iter()
                .any(|(ar, _)| ar.plural == e.plural),
            "{e:?} in legacy discovery"
        );
    }
}

#[tokio::test]
async fn every_served_resource_takes_one_object_through_its_verbs() {
    let c = cluster().await;
    let client = c.client();
    let mut checked = 0;
    for (ar, caps) in served(&client).await {
        let name = format!("t-{}-{}", ar.plural, ar.version);
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => Api::namespaced_with(client.clone(), "default", &ar),
            Scope::Cluster => Api::all_with(client.clone(), &ar),
        };
        let what = format!("{} {}", ar.api_version, ar.plural);
        if !caps.supports_operation(verbs::LIST) {
            // Create-only kinds (reviews, bindings) answer a create; nothing is stored.
            if caps.supports_operation(verbs::CREATE) {
                let obj = if ar.kind == "Binding" {
                    let pod: Api<k8s_openapi::api::core::v1::Pod> =
                        Api::namespaced(client.clone(), "default");
                    let p = serde_json::from_value(json!({"metadata": {"name": "t-bound"},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
                    .unwrap();
                    pod.create(&PostParams::default(), &p).await.unwrap();
                    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Binding",
                        "metadata": {"name": "t-bound"}, "target": {"kind": "Node", "name": "n1"}}))
                    .unwrap()
                } else {
                    object_for(&client, &ar, &name).await
                };
                let body = serde_json::to_vec(&obj).unwrap();
                let path = api.resource_url();
                let req = http::Request::post(path)
                    .header("content-type", "application/json")
                    .body(body)
                    .unwrap();
                let out: Value = client
                    .request(req)
                    .await
                    .unwrap_or_else(|e| panic!("create {what}: {e}"));
                assert!(out.get("kind").is_some(), "{what}: {out}");
                checked += 1;
            }
            continue;
        }
        if !caps.supports_operation(verbs::CREATE) {
            // Read-only (componentstatuses): what the server keeps can be read.
            let list = api.list(&ListParams::default()).await.unwrap();
            let first = list
                .items
                .first()
                .unwrap_or_else(|| panic!("{what} lists something"));
            let name = first.metadata.name.clone().unwrap();
            api.get(&name)
                .await
                .unwrap_or_else(|e| panic!("get {what}: {e}"));
            checked += 1;
            continue;
        }
        let obj = object_for(&client, &ar, &name).await;
        let name = obj.metadata.name.clone().unwrap_or_default();
        let created = api
            .create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "create {what}: {e}\n{}",
                    serde_json::to_string(&obj).unwrap()
                )
            });
        let got = api
            .get(&name)
            .await
            .unwrap_or_else(|e| panic!("get {what}: {e}"));
        assert_eq!(got.metadata.uid, created.metadata.uid, "{what}");
        let list = api.list(&ListParams::default()).await.unwrap();
        assert!(
            list.items
                .iter()
                .any(|o| o.metadata.name.as_deref() == Some(name.as_str())),
            "{what}: listed"
        );
        let rv = list.metadata.resource_version.clone().unwrap();
        let mut watch = api
            .watch(
                &WatchParams::default().fields(&format!("metadata.name={name}")),
                &rv,
            )
            .await
            .unwrap()
            .boxed();
        let patched = api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"patched": "yes"}}})),
            )
            .await
            .unwrap_or_else(|e| panic!("patch {what}: {e}"));
        assert_eq!(
            patched.labels().get("patched").map(String::as_str),
            Some("yes")
        );
        let seen = tokio::time::timeout(TIMEOUT, async {
            while let Some(ev) = watch.next().await {
                if let Ok(WatchEvent::Modified(o)) = ev
                    && o.labels().get("patched").is_some()
                {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(seen, Ok(true), "{what}: the patch is watched");
        api.delete(&name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete {what}: {e}"));
        let uid = created.metadata.uid.clone().unwrap_or_default();
        tokio::time::timeout(
            TIMEOUT,
            kube::runtime::wait::await_condition(
                api.clone(),
                &name,
                kube::runtime::conditions::is_deleted(&uid),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{what}: deleted"))
        .unwrap();
        checked += 1;
    }
    assert!(checked > 70, "{checked} resources checked");
}

/// `/version` reports the Kubernetes version whose API is served: k8s-openapi's enabled version,
/// as the generated list records it.
#[tokio::test]
async fn version_is_the_kubernetes_version_of_k8s_openapi() {
    let c = cluster().await;
    let v = c.client().apiserver_version().await.unwrap();
    assert_eq!(format!("{}.{}", v.major, v.minor), KUBERNETES_VERSION);
    assert_eq!(
        v.git_version,
        format!("v{KUBERNETES_VERSION}.0-service-provider")
    );
}
