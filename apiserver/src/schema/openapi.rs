//! The OpenAPI documents kubectl reads: `/openapi/v3` (an index of group-versions) and
//! `/openapi/v3/<api|apis/group>/<version>` (one document per group-version), and `/openapi/v2`.
//!
//! What kubectl (1.27–1.33) does with them:
//! - `kubectl explain` fetches the v3 index, then the group-version document, and renders the
//!   schema in `components.schemas` whose `x-kubernetes-group-version-kind` names the kind.
//! - `kubectl create/apply/replace` (with the default `--validate=strict`) look in the v3
//!   document for a PATCH operation tagged with the kind that takes a `fieldValidation` query
//!   parameter; finding it, they leave validation to the server. (For a CRD whose document is
//!   missing they check the Namespace operation instead.) Only if that fails do they fall back to
//!   v2, which they request as protobuf only.
//! - Client-side `kubectl apply` of a built-in computes a strategic merge patch from the v3
//!   schema when the PATCH operation lists `application/strategic-merge-patch+json`. The schemas
//!   here come from k8s-openapi, which has no `x-kubernetes-patch-merge-key` extensions, so that
//!   content type is deliberately not listed: kubectl then falls back to the patch metadata
//!   compiled into it from the Go types, which is exactly kube's.
//!
//! So v3 JSON is what matters. `/openapi/v2` is served as JSON for other clients; kubectl asks
//! for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` only, and the server should
//! answer that with 406 Not Acceptable, on which client-go's callers fall back as above.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::builtin::{builtin_by_kind, builtin_definitions};

/// One served resource as the OpenAPI documents describe it.
#[derive(Clone, Debug)]
pub struct OpenApiResource {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The `openAPIV3Schema` of a custom resource. `None` for built-ins (their definitions come
    /// from k8s-openapi) and for resources without a schema.
    pub schema: Option<Value>,
    /// Has a `status` subresource.
    pub status: bool,
    /// Has a `scale` subresource.
    pub scale: bool,
    /// Only `create` is served (reviews, bindings): no object is stored.
    pub create_only: bool,
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

/// The definition name kube-apiserver gives a custom resource: reversed group, version, kind
/// (`io.example.v1.Widget` for `example.io/v1` `Widget`).
pub(crate) fn crd_definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// `api/v1` or `apis/<group>/<version>`: the key of a group-version in the v3 index.
pub(crate) fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// 64-bit FNV-1a, uppercase hex: a cache key that changes when a document's inputs change.
fn fnv(data: &[u8], mut h: u64) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

struct GroupVersion {
    resources: Vec<OpenApiResource>,
    hash: String,
    json: OnceLock<Vec<u8>>,
}

/// The OpenAPI documents of one cluster's resources. Build it when the set of resources or a
/// CRD schema changes and share it; documents are rendered on first request and kept.
pub struct OpenApiDocuments {
    kube_version: String,
    groups: BTreeMap<String, GroupVersion>,
    v2: OnceLock<Vec<u8>>,
}

impl std::fmt::Debug for OpenApiDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiDocuments")
            .field("groups", &self.groups.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl OpenApiDocuments {
    /// Describes `resources`; `kube_version` (`v1.33.0`) goes into `info.version`.
    pub fn build(resources: &[OpenApiResource], kube_version: &str) -> OpenApiDocuments {
        let mut groups: BTreeMap<String, GroupVersion> = BTreeMap::new();
        for r in resources {
            let key = group_version_path(&r.group, &r.version);
            groups
                .entry(key)
                .or_insert_with(|| GroupVersion {
                    resources: Vec::new(),
                    hash: String::new(),
                    json: OnceLock::new(),
                })
                .resources
                .push(r.clone());
        }
        for (key, gv) in &mut groups {
            gv.resources.sort_by(|a, b| a.plural.cmp(&b.plural));
            let mut h = fnv(key.as_bytes(), 0xcbf2_9ce4_8422_2325);
            h = fnv(kube_version.as_bytes(), h);
            for r in &gv.resources {
                let line = format!(
                    "{}|{}|{}|{}|{}|",
                    r.kind, r.plural, r.namespaced, r.status, r.scale
                );
                h = fnv(line.as_bytes(), h);
                if let Some(s) = &r.schema {
                    h = fnv(s.to_string().as_bytes(), h);
                }
            }
            gv.hash = format!("{h:016X}");
        }
        OpenApiDocuments {
            kube_version: kube_version.to_string(),
            groups,
            v2: OnceLock::new(),
        }
    }

    /// The `/openapi/v3` index: `{"paths": {"apis/apps/v1": {"serverRelativeURL":
    /// "/openapi/v3/apis/apps/v1?hash=…"}}}`.
    pub fn v3_index(&self) -> Value {
        let paths: Map<String, Value> = self
            .groups
            .iter()
            .map(|(k, gv)| {
                (
                    k.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{k}?hash={}", gv.hash)}),
                )
            })
            .collect();
        json!({"paths": paths})
    }

    #[cfg(test)]
    /// The current hash of a group-version document (`api/v1`, `apis/apps/v1`); a request with
    /// another `hash` should be redirected to the current URL, as kube does.
    pub(crate) fn v3_hash(&self, gv_path: &str) -> Option<&str> {
        self.groups
            .get(gv_path.trim_matches('/'))
            .map(|g| g.hash.as_str())
    }

    /// The JSON of a group-version document (`api/v1`, `apis/apps/v1`), or `None` if no
    /// resource is served there.
    pub fn v3_document(&self, gv_path: &str) -> Option<&[u8]> {
        let gv = self.groups.get(gv_path.trim_matches('/'))?;
        Some(
            gv.json
                .get_or_init(|| serde_json::to_vec(&self.render_v3(gv)).unwrap_or_default()),
        )
    }

    #[cfg(test)]
    /// A group-version document as a value (for tests and tools).
    pub(crate) fn v3_document_value(&self, gv_path: &str) -> Option<Value> {
        let gv = self.groups.get(gv_path.trim_matches('/'))?;
        Some(self.render_v3(gv))
    }

    /// The Swagger 2.0 document (`/openapi/v2`) as JSON.
    pub(crate) fn v2_document(&self) -> &[u8] {
        self.v2
            .get_or_init(|| serde_json::to_vec(&self.render_v2()).unwrap_or_default())
    }

    fn render_v3(&self, gv: &GroupVersion) -> Value {
        let mut schemas = BTreeMap::new();
        let mut wanted = BTreeSet::new();
        let mut paths = Map::new();
        for r in &gv.resources {
            let def = resource_definitions(r, &mut schemas, &mut wanted);
            for (p, item) in resource_paths(r, &def, true) {
                paths.insert(p, item);
            }
        }
        wanted.insert(STATUS.to_string());
        add_closure(&wanted, &mut schemas);
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": self.kube_version},
            "paths": paths,
            "components": {
                "schemas": schemas,
                "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}}
            }
        })
    }

    fn render_v2(&self) -> Value {
        let mut schemas = BTreeMap::new();
        let mut wanted = BTreeSet::new();
        let mut paths = Map::new();
        for gv in self.groups.values() {
            for r in &gv.resources {
                let def = resource_definitions(r, &mut schemas, &mut wanted);
                for (p, item) in resource_paths(r, &def, false) {
                    paths.insert(p, item);
                }
            }
        }
        wanted.insert(STATUS.to_string());
        add_closure(&wanted, &mut schemas);
        let definitions: Map<String, Value> = schemas
            .into_iter()
            .map(|(k, v)| (k, to_v2_schema(v)))
            .collect();
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": self.kube_version},
            "paths": paths,
            "definitions": definitions,
            "securityDefinitions": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
            "security": [{"BearerToken": []}]
        })
    }
}

/// Adds the definitions for `r` (and its list) to `schemas`, records what they reference in
/// `wanted`, and returns the resource's definition name (`None` without a schema).
fn resource_definitions(
    r: &OpenApiResource,
    schemas: &mut BTreeMap<String, Value>,
    wanted: &mut BTreeSet<String>,
) -> Option<String> {
    if let Some(b) = builtin_by_kind(&r.group, &r.version, &r.kind)
        && r.schema.is_none()
    {
        wanted.insert(b.definition.to_string());
        return Some(b.definition.to_string());
    }
    let schema = r.schema.as_ref()?;
    let name = crd_definition_name(&r.group, &r.version, &r.kind);
    let gvk = json!([{"group": r.group, "kind": r.kind, "version": r.version}]);
    let mut def = schema.clone();
    if let Some(m) = def.as_object_mut() {
        // kube publishes the standard descriptions and ObjectMeta for every custom resource.
        let props = m.entry("properties").or_insert_with(|| json!({}));
        if let Some(props) = props.as_object_mut() {
            props.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
            props.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
            props.insert(
                "metadata".into(),
                json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "default": {}, "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
            );
        }
        m.insert("x-kubernetes-group-version-kind".into(), gvk);
    }
    schemas.insert(name.clone(), def);
    schemas.insert(
        format!("{name}List"),
        json!({
            "description": format!("{}List is a list of {}", r.kind, r.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                "items": {"type": "array", "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural), "items": {"$ref": format!("#/components/schemas/{name}")}},
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                "metadata": {"allOf": [{"$ref": format!("#/components/schemas/{LIST_META}")}], "default": {}, "description": "Standard list metadata."}
            },
            "x-kubernetes-group-version-kind": [{"group": r.group, "kind": format!("{}List", r.kind), "version": r.version}]
        }),
    );
    wanted.insert(OBJECT_META.to_string());
    wanted.insert(LIST_META.to_string());
    Some(name)
}

/// Adds every built-in definition in `wanted` and what it references, transitively.
fn add_closure(wanted: &BTreeSet<String>, schemas: &mut BTreeMap<String, Value>) {
    let defs = builtin_definitions();
    let mut todo: Vec<String> = wanted.iter().cloned().collect();
    let mut seen = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(def) = defs.get(&name) else { continue };
        let mut refs = Vec::new();
        collect_refs(def, &mut refs);
        schemas.entry(name).or_insert_with(|| def.clone());
        todo.extend(refs);
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                out.push(name.to_string());
            }
            m.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// `listCoreV1NamespacedConfigMap`-style operation ids: the group without `.k8s.io`, camel-cased.
fn group_version_camel(group: &str, version: &str) -> String {
    let g = if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    };
    let mut out = String::new();
    for part in g.split(['.', '-']).chain(std::iter::once(version)) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

fn query(name: &str, ty: &str, description: &str, v3: bool) -> Value {
    if v3 {
        json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
    } else {
        json!({"name": name, "in": "query", "description": description, "type": ty, "uniqueItems": true})
    }
}

fn path_param(name: &str, description: &str, v3: bool) -> Value {
    if v3 {
        json!({"name": name, "in": "path", "description": description, "required": true, "schema": {"type": "string", "uniqueItems": true}})
    } else {
        json!({"name": name, "in": "path", "description": description, "required": true, "type": "string", "uniqueItems": true})
    }
}

fn write_params(v3: bool, patch: bool) -> Vec<Value> {
    let mut p = vec![
        query(
            "dryRun",
            "string",
            "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
            v3,
        ),
        query(
            "fieldManager",
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
            v3,
        ),
        query(
            "fieldValidation",
            "string",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
            v3,
        ),
    ];
    if patch {
        p.push(query("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people.", v3));
    }
    p
}

fn list_params(v3: bool, watch_only: bool) -> Vec<Value> {
    let mut p: Vec<Value> = [
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
    ]
    .iter()
    .map(|(n, t)| query(n, t, "", v3))
    .collect();
    if watch_only {
        p.retain(|x| x["name"] != "watch");
    }
    p
}

/// One operation. `body` and `response` are definition names.
#[allow(clippy::too_many_arguments)]
fn operation(
    v3: bool,
    op_id: String,
    tag: &str,
    action: &str,
    gvk: &Value,
    params: Vec<Value>,
    body: Option<(&str, &[&str])>,
    response: Option<&str>,
) -> Value {
    let prefix = if v3 {
        "#/components/schemas/"
    } else {
        "#/definitions/"
    };
    let mut op = json!({
        "tags": [tag],
        "operationId": op_id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "responses": {"401": {"description": "Unauthorized"}}
    });
    let schema = |name: &str| json!({"$ref": format!("{prefix}{name}")});
    let ok = match response {
        Some(r) if v3 => {
            json!({"description": "OK", "content": {"application/json": {"schema": schema(r)}, "application/yaml": {"schema": schema(r)}}})
        }
        Some(r) => json!({"description": "OK", "schema": schema(r)}),
        None => json!({"description": "OK"}),
    };
    op["responses"]["200"] = ok;
    let mut params = params;
    if let Some((def, types)) = body {
        if v3 {
            let content: Map<String, Value> = types.iter().map(|t| (t.to_string(), json!({"schema": if *t == "application/json" || *t == "application/yaml" { schema(def) } else { json!({"type": "object"}) }}))).collect();
            op["requestBody"] = json!({"content": content, "required": true});
        } else {
            params.insert(
                0,
                json!({"name": "body", "in": "body", "required": true, "schema": schema(def)}),
            );
            op["consumes"] = json!(types);
        }
    }
    if !v3 {
        op["produces"] = json!(["application/json", "application/yaml"]);
        op["schemes"] = json!(["https"]);
    }
    op["parameters"] = Value::Array(params);
    op
}

/// The paths kube-apiserver publishes for one resource.
fn resource_paths(r: &OpenApiResource, def: &Option<String>, v3: bool) -> Vec<(String, Value)> {
    let prefix = format!("/{}", group_version_path(&r.group, &r.version));
    let tag = if r.group.is_empty() {
        format!("core_{}", r.version)
    } else {
        format!("{}_{}", r.group.replace('.', "_"), r.version)
    };
    let gv = group_version_camel(&r.group, &r.version);
    let ns = if r.namespaced { "Namespaced" } else { "" };
    let kind = &r.kind;
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let def = def.as_deref();
    let list_def = def.map(|d| {
        if builtin_by_kind(&r.group, &r.version, &r.kind).is_some() && r.schema.is_none() {
            d.to_string()
        } else {
            format!("{d}List")
        }
    });
    let collection = if r.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{prefix}/{}", r.plural)
    };
    let item = format!("{collection}/{{name}}");
    let mut common = vec![query(
        "pretty",
        "string",
        "If 'true', then the output is pretty printed.",
        v3,
    )];
    if r.namespaced {
        common.insert(
            0,
            path_param(
                "namespace",
                "object name and auth scope, such as for teams and projects",
                v3,
            ),
        );
    }
    let mut item_common = common.clone();
    item_common.insert(0, path_param("name", &format!("name of the {kind}"), v3));
    let patch_types: &[&str] = &[
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    let body_types: &[&str] = &["application/json", "application/yaml"];
    let with_common = |mut v: Value, params: &[Value]| {
        v["parameters"] = Value::Array(params.to_vec());
        v
    };
    let mut out = Vec::new();
    let list = operation(
        v3,
        format!("list{gv}{ns}{kind}"),
        &tag,
        "list",
        &gvk,
        list_params(v3, false),
        None,
        list_def.as_deref(),
    );
    let create = operation(
        v3,
        format!("create{gv}{ns}{kind}"),
        &tag,
        "post",
        &gvk,
        write_params(v3, false),
        def.map(|d| (d, body_types)),
        def,
    );
    if r.create_only {
        out.push((collection, with_common(json!({"post": create}), &common)));
        return out;
    }
    let delete_collection = operation(
        v3,
        format!("deletecollection{gv}{ns}{kind}"),
        &tag,
        "deletecollection",
        &gvk,
        list_params(v3, false),
        None,
        Some(STATUS),
    );
    out.push((
        collection.clone(),
        with_common(
            json!({"get": list, "post": create, "delete": delete_collection}),
            &common,
        ),
    ));
    let read = operation(
        v3,
        format!("read{gv}{ns}{kind}"),
        &tag,
        "get",
        &gvk,
        vec![],
        None,
        def,
    );
    let replace = operation(
        v3,
        format!("replace{gv}{ns}{kind}"),
        &tag,
        "put",
        &gvk,
        write_params(v3, false),
        def.map(|d| (d, body_types)),
        def,
    );
    let patch = operation(
        v3,
        format!("patch{gv}{ns}{kind}"),
        &tag,
        "patch",
        &gvk,
        write_params(v3, true),
        def.map(|d| (d, patch_types)),
        def,
    );
    let delete = operation(
        v3,
        format!("delete{gv}{ns}{kind}"),
        &tag,
        "delete",
        &gvk,
        vec![
            query("dryRun", "string", "", v3),
            query("gracePeriodSeconds", "integer", "", v3),
            query("propagationPolicy", "string", "", v3),
        ],
        None,
        Some(STATUS),
    );
    out.push((
        item.clone(),
        with_common(
            json!({"get": read, "put": replace, "patch": patch, "delete": delete}),
            &item_common,
        ),
    ));
    if r.status {
        let read = operation(
            v3,
            format!("read{gv}{ns}{kind}Status"),
            &tag,
            "get",
            &gvk,
            vec![],
            None,
            def,
        );
        let replace = operation(
            v3,
            format!("replace{gv}{ns}{kind}Status"),
            &tag,
            "put",
            &gvk,
            write_params(v3, false),
            def.map(|d| (d, body_types)),
            def,
        );
        let patch = operation(
            v3,
            format!("patch{gv}{ns}{kind}Status"),
            &tag,
            "patch",
            &gvk,
            write_params(v3, true),
            def.map(|d| (d, patch_types)),
            def,
        );
        out.push((
            format!("{item}/status"),
            with_common(
                json!({"get": read, "put": replace, "patch": patch}),
                &item_common,
            ),
        ));
    }
    if r.scale {
        let scale_gvk = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        let read = operation(
            v3,
            format!("read{gv}{ns}{kind}Scale"),
            &tag,
            "get",
            &scale_gvk,
            vec![],
            None,
            None,
        );
        let replace = operation(
            v3,
            format!("replace{gv}{ns}{kind}Scale"),
            &tag,
            "put",
            &scale_gvk,
            write_params(v3, false),
            None,
            None,
        );
        let patch = operation(
            v3,
            format!("patch{gv}{ns}{kind}Scale"),
            &tag,
            "patch",
            &scale_gvk,
            write_params(v3, true),
            None,
            None,
        );
        out.push((
            format!("{item}/scale"),
            with_common(
                json!({"get": read, "put": replace, "patch": patch}),
                &item_common,
            ),
        ));
    }
    if r.namespaced {
        let all = operation(
            v3,
            format!("list{gv}{kind}ForAllNamespaces"),
            &tag,
            "list",
            &gvk,
            list_params(v3, false),
            None,
            list_def.as_deref(),
        );
        let common = vec![query(
            "pretty",
            "string",
            "If 'true', then the output is pretty printed.",
            v3,
        )];
        out.push((
            format!("{prefix}/{}", r.plural),
            with_common(json!({"get": all}), &common),
        ));
    }
    out
}

/// Swagger 2.0 form of a v3 schema: references under `#/definitions/`, `allOf: [$ref]` wrappers
/// unwrapped, and the keywords 2.0 lacks (`nullable`, `anyOf`, `oneOf`, `not`) dropped, as kube
/// does when it publishes CRDs in v2.
fn to_v2_schema(v: Value) -> Value {
    match v {
        Value::Object(mut m) => {
            for k in ["nullable", "anyOf", "oneOf", "not"] {
                m.remove(k);
            }
            if let Some(Value::Array(all)) = m.get("allOf")
                && all.len() == 1
                && let Some(r) = all[0].get("$ref").cloned()
            {
                m.remove("allOf");
                m.insert("$ref".into(), r);
            }
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                *r = format!("#/definitions/{name}");
            }
            Value::Object(m.into_iter().map(|(k, x)| (k, to_v2_schema(x))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(to_v2_schema).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> OpenApiResource {
        OpenApiResource {
            create_only: false,
            group: "example.io".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            schema: Some(json!({
                "type": "object",
                "description": "A Widget does widget things.",
                "properties": {"spec": {"type": "object", "description": "Desired state.", "properties": {
                    "size": {"type": "integer", "description": "How big."}}}}
            })),
            status: true,
            scale: false,
        }
    }

    fn builtin(group: &str, kind: &str, plural: &str, namespaced: bool) -> OpenApiResource {
        OpenApiResource {
            create_only: false,
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            schema: None,
            status: false,
            scale: false,
        }
    }

    fn docs() -> OpenApiDocuments {
        OpenApiDocuments::build(
            &[
                widget(),
                builtin("", "Namespace", "namespaces", false),
                builtin("", "ConfigMap", "configmaps", true),
                builtin("apps", "Deployment", "deployments", true),
            ],
            "v1.33.0",
        )
    }

    #[test]
    fn index_lists_group_versions_with_hashes() {
        let d = docs();
        let idx = d.v3_index();
        let paths = idx["paths"].as_object().unwrap();
        assert_eq!(
            paths.keys().collect::<Vec<_>>(),
            ["api/v1", "apis/apps/v1", "apis/example.io/v1"]
        );
        let url = paths["apis/example.io/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(
            url.starts_with("/openapi/v3/apis/example.io/v1?hash="),
            "{url}"
        );
        assert!(url.ends_with(d.v3_hash("apis/example.io/v1").unwrap()));
        // A schema change changes the hash.
        let mut w = widget();
        w.schema = Some(json!({"type": "object"}));
        let other = OpenApiDocuments::build(&[w], "v1.33.0");
        assert_ne!(
            other.v3_hash("apis/example.io/v1"),
            d.v3_hash("apis/example.io/v1")
        );
    }

    #[test]
    fn crd_document_has_schema_gvk_and_patch_with_field_validation() {
        let d = docs();
        let doc: Value =
            serde_json::from_slice(d.v3_document("apis/example.io/v1").unwrap()).unwrap();
        let def = &doc["components"]["schemas"]["io.example.v1.Widget"];
        assert_eq!(
            def["x-kubernetes-group-version-kind"],
            json!([{"group": "example.io", "kind": "Widget", "version": "v1"}])
        );
        assert_eq!(
            def["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(
            doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
                .is_object()
        );
        assert!(
            doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"]
                .is_object(),
            "references are closed over"
        );
        let patch =
            &doc["paths"]["/apis/example.io/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Widget");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert!(
            patch["requestBody"]["content"]
                .get("application/apply-patch+yaml")
                .is_some()
        );
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_none()
        );
        assert_eq!(patch["operationId"], "patchExampleIoV1NamespacedWidget");
        assert!(doc["paths"]["/apis/example.io/v1/namespaces/{namespace}/widgets/{name}/status"]["patch"].is_object());
        assert!(doc["paths"]["/apis/example.io/v1/widgets"]["get"].is_object());
        // Every $ref resolves.
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        for r in refs {
            assert!(
                doc["components"]["schemas"].get(&r).is_some(),
                "dangling $ref {r}"
            );
        }
    }

    #[test]
    fn builtin_documents() {
        let d = docs();
        let doc = d.v3_document_value("api/v1").unwrap();
        assert!(doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"].is_array());
        let ns_patch = &doc["paths"]["/api/v1/namespaces/{name}"]["patch"];
        assert_eq!(
            ns_patch["x-kubernetes-group-version-kind"]["kind"],
            "Namespace"
        );
        assert_eq!(ns_patch["operationId"], "patchCoreV1Namespace");
        let apps = d.v3_document_value("apis/apps/v1").unwrap();
        assert!(apps["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"].is_object());
        assert_eq!(d.v3_document("apis/nope/v1"), None);
    }

    #[test]
    fn v2_document() {
        let d = docs();
        let v2: Value = serde_json::from_slice(d.v2_document()).unwrap();
        assert_eq!(v2["swagger"], "2.0");
        let def = &v2["definitions"]["io.example.v1.Widget"];
        assert_eq!(
            def["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let text = String::from_utf8(d.v2_document().to_vec()).unwrap();
        assert!(!text.contains("#/components/schemas/"));
        let patch =
            &v2["paths"]["/apis/example.io/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert_eq!(patch["parameters"][0]["in"], "body");
    }

    #[test]
    fn names() {
        assert_eq!(
            crd_definition_name("example.io", "v1", "Widget"),
            "io.example.v1.Widget"
        );
        assert_eq!(
            group_version_camel("rbac.authorization.k8s.io", "v1"),
            "RbacAuthorizationV1"
        );
        assert_eq!(group_version_camel("", "v1"), "CoreV1");
        assert_eq!(
            group_version_camel("core.openmcp.cloud", "v1alpha1"),
            "CoreOpenmcpCloudV1alpha1"
        );
    }

    /// A minimal HTTP server with just enough discovery for kubectl, serving these documents.
    fn serve(docs: OpenApiDocuments, seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> u16 {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let res = |name: &str, kind: &str, namespaced: bool| {
            json!({"name": name, "singularName": kind.to_lowercase(), "namespaced": namespaced, "kind": kind,
                   "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
        };
        let routes: Vec<(String, Value)> = vec![
            (
                "/version".into(),
                json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}),
            ),
            (
                "/api".into(),
                json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
            ),
            (
                "/api/v1".into(),
                json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [res("namespaces", "Namespace", false), res("configmaps", "ConfigMap", true)]}),
            ),
            (
                "/apis".into(),
                json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
                {"name": "example.io", "versions": [{"groupVersion": "example.io/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "example.io/v1", "version": "v1"}}]}),
            ),
            (
                "/apis/apps/v1".into(),
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [res("deployments", "Deployment", true)]}),
            ),
            (
                "/apis/example.io/v1".into(),
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "example.io/v1", "resources": [res("widgets", "Widget", true)]}),
            ),
            ("/openapi/v3".into(), docs.v3_index()),
        ];
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let mut parts = line.split_whitespace();
                let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                seen.lock().unwrap().push(format!("{method} {target}"));
                let path = target.split('?').next().unwrap_or("");
                let (code, reply): (u16, Vec<u8>) = if method == "POST" {
                    (201, body)
                } else if let Some(doc) = path
                    .strip_prefix("/openapi/v3/")
                    .and_then(|gv| docs.v3_document(gv))
                {
                    (200, doc.to_vec())
                } else if let Some((_, v)) = routes.iter().find(|(p, _)| p == path) {
                    (200, serde_json::to_vec(v).unwrap())
                } else {
                    (404, serde_json::to_vec(&json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})).unwrap())
                };
                let head = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    reply.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&reply);
            }
        });
        port
    }

    fn kubectl(port: u16, dir: &std::path::Path, args: &[&str]) -> (bool, String) {
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!("apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u, namespace: default}}}}]\ncurrent-context: c\nusers: [{{name: u, user: {{}}}}]\n"),
        )
        .unwrap();
        let out = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .arg("--request-timeout=20s")
            .args(args)
            .output()
            .expect("kubectl must be installed (set SKIP_KUBECTL=1 to skip this test)");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// Runs the real `kubectl explain` and `kubectl create --validate=strict` against the
    /// documents, served with minimal discovery by a throwaway HTTP server.
    #[test]
    fn real_kubectl_explains_and_trusts_server_side_validation() {
        if std::env::var("SKIP_KUBECTL").is_ok_and(|v| v == "1") {
            return;
        }
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let port = serve(docs(), seen.clone());
        let dir =
            std::env::temp_dir().join(format!("schema-kubectl-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();

        let (ok, out) = kubectl(port, &dir, &["explain", "widgets.spec"]);
        assert!(ok, "{out}");
        assert!(out.contains("GROUP:      example.io"), "{out}");
        assert!(out.contains("KIND:       Widget"), "{out}");
        assert!(out.contains("FIELD: spec <Object>"), "{out}");
        assert!(out.contains("Desired state."), "{out}");
        assert!(out.contains("size\t<integer>"), "{out}");

        let (ok, out) = kubectl(port, &dir, &["explain", "widgets.metadata.labels"]);
        assert!(ok, "{out}");
        assert!(out.contains("FIELD: labels <map[string]string>"), "{out}");

        let (ok, out) = kubectl(
            port,
            &dir,
            &["explain", "deployments.spec.template.spec.containers.image"],
        );
        assert!(ok, "{out}");
        assert!(out.contains("FIELD: image <string>"), "{out}");

        let (ok, out) = kubectl(port, &dir, &["explain", "configmaps"]);
        assert!(ok, "{out}");
        assert!(out.contains("KIND:       ConfigMap"), "{out}");

        let manifest = dir.join("w.json");
        std::fs::write(&manifest, r#"{"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}"#).unwrap();
        let (ok, out) = kubectl(
            port,
            &dir,
            &[
                "create",
                "--validate=strict",
                "-f",
                manifest.to_str().unwrap(),
            ],
        );
        assert!(ok, "{out}");
        assert!(out.contains("widget.example.io/w created"), "{out}");
        let requests = seen.lock().unwrap().clone();
        assert!(
            requests.iter().any(|r| r
                .starts_with("POST /apis/example.io/v1/namespaces/default/widgets?")
                && r.contains("fieldValidation=Strict")),
            "kubectl left validation to the server: {requests:?}"
        );
        assert!(
            !requests.iter().any(|r| r.contains("/openapi/v2")),
            "kubectl never needed v2: {requests:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
