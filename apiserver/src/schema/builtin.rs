//! The built-in kinds the server serves, with schemas generated from k8s-openapi's `schemars`
//! implementations — the same definitions kube-apiserver publishes, named the same way
//! (`io.k8s.api.core.v1.ConfigMap`).
//!
//! Two sets of definitions come out of the generator: the published ones, as they are, for the
//! OpenAPI documents; and validation ones, where the few types Go decodes more liberally than
//! their OpenAPI says (`Quantity` accepts numbers, `RawExtension`/`JSON`/`FieldsV1` hold any
//! JSON, `JSONSchemaProps`' "or" types) accept anything, so that no valid built-in object is
//! rejected or pruned.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use k8s_openapi::apimachinery::pkg::apis::meta;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use super::objectmeta::NameRule;
use super::structural::Structural;
use crate::builtin::Scope;

/// A built-in resource: where it is served and how its objects are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BuiltinResource {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Resource name in URLs.
    pub plural: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// How `metadata.name` is checked; `None` for kinds kube does not store (reviews, requests).
    pub name_rule: Option<NameRule>,
    /// The OpenAPI definition name (`io.k8s.api.core.v1.ConfigMap`).
    pub definition: &'static str,
}

/// Every built-in resource with a schema: the enabled Kubernetes version's GA types
/// ([`crate::builtin::api_types`]) that are served as resources, in k8s-openapi's order.
pub(crate) static BUILTINS: LazyLock<Vec<BuiltinResource>> = LazyLock::new(|| {
    crate::builtin::api_types()
        .iter()
        .filter(|t| t.scope != Scope::Subresource)
        .map(|t| BuiltinResource {
            group: t.group,
            version: t.version,
            kind: t.kind,
            plural: t.plural,
            namespaced: t.scope == Scope::Namespaced,
            name_rule: crate::builtin::name_rule(t),
            definition: t.definition.as_ref(),
        })
        .collect()
});

#[cfg(test)]
/// The `TokenRequest` kind, served as the `token` subresource of service accounts.
pub(crate) const TOKEN_REQUEST_DEFINITION: &str = "io.k8s.api.authentication.v1.TokenRequest";

/// Looks up a built-in resource by group, version and kind.
pub(crate) fn builtin_by_kind(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<&'static BuiltinResource> {
    BUILTINS
        .iter()
        .find(|b| b.group == group && b.version == version && b.kind == kind)
}

/// Definitions, generated once.
struct Catalog {
    published: Map<String, Value>,
    validation: Map<String, Value>,
    compiled: HashMap<&'static str, Arc<Structural>>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(build_catalog);

fn build_catalog() -> Catalog {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    for t in crate::builtin::api_types() {
        t.add_schema(&mut generator);
    }
    let _ = generator.subschema_for::<meta::v1::Status>();
    let _ = generator.subschema_for::<meta::v1::ObjectMeta>();
    let _ = generator.subschema_for::<meta::v1::ListMeta>();
    let mut published = generator.take_definitions(true);
    for t in crate::builtin::api_types() {
        if let Some(Value::Object(d)) = published.get_mut(t.definition.as_ref()) {
            d.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": t.group, "kind": t.kind, "version": t.version}]),
            );
        }
    }
    // k8s-openapi lists `metadata` as required on every top-level kind; kube-apiserver's own
    // OpenAPI does not, and requests without metadata reach validation, which reports the name.
    for d in published.values_mut() {
        if d.pointer("/properties/metadata").is_some() {
            if let Some(Value::Array(req)) = d.get_mut("required") {
                req.retain(|r| r != "metadata");
            }
            if d.get("required")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
                && let Some(m) = d.as_object_mut()
            {
                m.remove("required");
            }
        }
    }
    let mut validation = published.clone();
    for (name, desc) in [
        (
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
            "Go accepts numbers and strings",
        ),
        (
            "io.k8s.apimachinery.pkg.runtime.RawExtension",
            "any embedded object",
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
            "a field set trie",
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
            "any JSON value",
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
            "a schema or schemas",
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
            "a schema or a boolean",
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
            "a schema or strings",
        ),
    ] {
        if validation.contains_key(name) {
            validation.insert(
                name.into(),
                json!({"description": desc, "x-kubernetes-preserve-unknown-fields": true}),
            );
        }
    }
    // Go decodes `[]byte` fields itself and refuses bad base64 with a 400 before any validation
    // (`crate::validation::builtin::check_bytes`); kube-apiserver checks no OpenAPI format of a
    // built-in, and an empty string is a valid (empty) value.
    for d in validation.values_mut() {
        drop_byte_formats(d);
    }
    let mut compiled = HashMap::new();
    for def in crate::builtin::api_types()
        .iter()
        .map(|t| t.definition.as_ref())
    {
        let root = json!({"$ref": format!("#/components/schemas/{def}")});
        // The definitions are generated from k8s-openapi at build time; a failure here is a
        // bug in this module, and leaves the kind without a schema rather than crashing.
        match Structural::compile_with(&root, Some(&validation), true) {
            Ok(s) => {
                compiled.insert(def, Arc::new(s));
            }
            Err(e) => {
                tracing::error!(definition = def, error = %e, "built-in schema does not compile")
            }
        }
    }
    Catalog {
        published,
        validation,
        compiled,
    }
}

fn drop_byte_formats(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("format").and_then(Value::as_str) == Some("byte") {
                m.remove("format");
            }
            m.values_mut().for_each(drop_byte_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_byte_formats),
        _ => {}
    }
}

/// The compiled validation schema of a built-in definition (`io.k8s.api.core.v1.ConfigMap`).
pub(crate) fn builtin_schema(definition: &str) -> Option<Arc<Structural>> {
    CATALOG.compiled.get(definition).cloned()
}

/// The published OpenAPI v3 definitions of all built-in kinds and what they reference, keyed
/// by definition name, with `$ref`s to `#/components/schemas/…`.
pub(crate) fn builtin_definitions() -> &'static Map<String, Value> {
    &CATALOG.published
}

/// The definitions used for validation (see the module docs for how they differ).
#[allow(dead_code)]
pub(crate) fn validation_definitions() -> &'static Map<String, Value> {
    &CATALOG.validation
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(def: &str, obj: Value) -> Vec<String> {
        builtin_schema(def)
            .unwrap()
            .validate(&obj, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn every_builtin_compiles() {
        for b in BUILTINS.iter() {
            assert!(builtin_schema(b.definition).is_some(), "{}", b.definition);
            assert!(
                builtin_definitions()[b.definition]["x-kubernetes-group-version-kind"].is_array()
            );
        }
        assert!(builtin_schema(TOKEN_REQUEST_DEFINITION).is_some());
        assert!(
            builtin_definitions().contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
    }

    #[test]
    fn type_errors_in_builtins() {
        assert_eq!(
            check(
                "io.k8s.api.core.v1.ConfigMap",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": 1}})
            ),
            [
                "data.a: Invalid value: \"integer\": data.a in body must be of type string: \"integer\""
            ]
        );
        assert_eq!(
            check(
                "io.k8s.api.apps.v1.Deployment",
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"replicas": "two", "selector": {}, "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 0.5, "memory": "1Gi"}}}]}}}})
            ),
            [
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            check(
                "io.k8s.api.rbac.v1.RoleBinding",
                json!({"metadata": {"name": "r"}, "subjects": [{"kind": "User"}]})
            ),
            [
                "subjects[0].name: Required value",
                "roleRef: Required value"
            ]
        );
        assert!(check("io.k8s.api.apps.v1.Deployment", json!({"spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}],
            "affinity": null}}, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}})).is_empty());
    }

    #[test]
    fn builtins_prune_unknown_fields_and_nulls() {
        let s = builtin_schema("io.k8s.api.apps.v1.Deployment").unwrap();
        let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "x": 1},
            "spec": {"foo": 1, "replicas": null, "template": {"spec": {"containers": [{"name": "c", "bar": true}]}}}});
        let unknown = s.prune(&mut obj).unwrap();
        assert_eq!(
            unknown,
            [
                "metadata.x",
                "spec.foo",
                "spec.template.spec.containers[0].bar"
            ]
        );
        assert_eq!(
            obj["spec"],
            json!({"template": {"spec": {"containers": [{"name": "c"}]}}})
        );
    }

    #[test]
    fn crd_objects_keep_their_schemas() {
        let s = builtin_schema(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        )
        .unwrap();
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b.c"},
            "spec": {"group": "b.c", "scope": "Namespaced", "names": {"plural": "a", "kind": "A"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "default": {"x": [1]},
                        "properties": {"l": {"type": "array", "items": {"type": "string", "enum": ["a"]}}}}}}}}]}});
        let before = crd.clone();
        assert_eq!(s.prune(&mut crd).unwrap(), Vec::<String>::new());
        assert_eq!(crd, before);
        assert!(s.validate(&crd, None).is_empty());
    }
}
