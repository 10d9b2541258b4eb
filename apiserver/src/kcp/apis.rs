//! The resources a kcp shard serves in every logical cluster: kube-apiserver's built-ins that kcp
//! keeps (no Pods, Services or `apps`), plus kcp's own `tenancy.kcp.io`, `core.kcp.io` and
//! `apis.kcp.io` types.
//!
//! kcp defines its own types as CustomResourceDefinitions, so they get custom-resource semantics
//! here too: each is described by a CRD (built in code) and goes through the same path a created
//! CRD takes ([`crate::controllers::crd::resource_infos`]), schema and all.

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::registry::{ApiSet, ResourceInfo};

/// The kube-apiserver built-ins a kcp workspace serves: kcp's generic control plane keeps the
/// namespaced configuration kinds, RBAC, leases, events, admission configuration, CRDs and
/// reviews, and no workloads, nodes, storage or networking (kcp runs nothing). A group listed
/// with `None` is kept whole.
const IN_KCP: &[(&str, Option<&[&str]>)] = &[
    (
        "",
        Some(&[
            "namespaces",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "events",
            "resourcequotas",
            "limitranges",
        ]),
    ),
    ("events.k8s.io", None),
    ("authentication.k8s.io", None),
    ("authorization.k8s.io", None),
    ("rbac.authorization.k8s.io", None),
    ("apiextensions.k8s.io", None),
    ("coordination.k8s.io", None),
];

fn in_kcp(i: &ResourceInfo) -> bool {
    IN_KCP
        .iter()
        .any(|(g, rs)| *g == i.group && rs.is_none_or(|rs| rs.contains(&i.resource.as_str())))
}

fn open_obj(props: Value) -> Value {
    json!({"type": "object", "properties": props, "x-kubernetes-preserve-unknown-fields": true})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn any_obj() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// kcp's conditions (`conditionsv1alpha1.Conditions`): no `observedGeneration`, a `severity`.
fn conditions() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["type", "status"],
            "properties": {
                "type": {"type": "string"},
                "status": {"type": "string"},
                "severity": {"type": "string"},
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "reason": {"type": "string"},
                "message": {"type": "string"}
            }
        }
    })
}

fn root(spec: Value, status: Option<Value>) -> Value {
    let mut props = json!({
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": spec,
    });
    if let Some(s) = status {
        props["status"] = s;
    }
    json!({"type": "object", "properties": props})
}

fn claim_v1alpha1() -> Value {
    open_obj(json!({
        "group": string(), "resource": string(), "identityHash": string(),
        "all": {"type": "boolean"},
        "resourceSelector": {"type": "array", "items": open_obj(json!({"name": string(), "namespace": string()}))},
    }))
}

fn claim_v1alpha2() -> Value {
    open_obj(json!({
        "group": string(), "resource": string(), "identityHash": string(), "verbs": strings(),
    }))
}

fn selector() -> Value {
    open_obj(
        json!({"matchAll": {"type": "boolean"}, "matchLabels": {"type": "object", "additionalProperties": string()}, "matchExpressions": {"type": "array", "items": any_obj()}}),
    )
}

struct Def {
    group: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    /// (version, storage, schema, status subresource, printer columns)
    versions: Vec<(&'static str, bool, Value, bool, Value)>,
}

fn crd(d: &Def) -> Value {
    let versions: Vec<Value> = d
        .versions
        .iter()
        .map(|(name, storage, schema, status, columns)| {
            let mut v = json!({
                "name": name, "served": true, "storage": storage,
                "schema": {"openAPIV3Schema": schema},
            });
            if *status {
                v["subresources"] = json!({"status": {}});
            }
            if columns.as_array().is_some_and(|c| !c.is_empty()) {
                v["additionalPrinterColumns"] = columns.clone();
            }
            v
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", d.plural, d.group)},
        "spec": {
            "group": d.group,
            "scope": "Cluster",
            "names": {
                "plural": d.plural, "singular": d.singular, "kind": d.kind,
                "listKind": format!("{}List", d.kind),
                "shortNames": d.short, "categories": ["kcp"],
            },
            "versions": versions,
        }
    })
}

fn col(name: &str, ty: &str, path: &str) -> Value {
    json!({"name": name, "type": ty, "jsonPath": path})
}

fn defs() -> Vec<Def> {
    let workspace_spec = open_obj(json!({
        "type": open_obj(json!({"name": string(), "path": string()})),
        "location": open_obj(json!({"selector": any_obj()})),
        "cluster": string(),
        "URL": string(),
        "mount": any_obj(),
    }));
    let workspace_status = open_obj(json!({
        "phase": string(), "conditions": conditions(), "initializers": strings(), "terminators": strings(),
    }));
    let export_status = open_obj(json!({
        "identityHash": string(),
        "conditions": conditions(),
        "virtualWorkspaces": {"type": "array", "items": open_obj(json!({"url": string()}))},
    }));
    let identity =
        open_obj(json!({"secretRef": open_obj(json!({"namespace": string(), "name": string()}))}));
    let binding_status = |claims: Value| {
        open_obj(json!({
            "apiExportClusterName": string(),
            "phase": string(),
            "boundResources": {"type": "array", "items": open_obj(json!({
                "group": string(), "resource": string(),
                "schema": open_obj(json!({"name": string(), "UID": string(), "identityHash": string()})),
                "storageVersions": strings(),
            }))},
            "exportPermissionClaims": {"type": "array", "items": claims.clone()},
            "appliedPermissionClaims": {"type": "array", "items": any_obj()},
            "conditions": conditions(),
        }))
    };
    let reference =
        open_obj(json!({"export": open_obj(json!({"path": string(), "name": string()}))}));
    vec![
        Def {
            group: "tenancy.kcp.io",
            plural: "workspaces",
            singular: "workspace",
            kind: "Workspace",
            short: &["ws"],
            versions: vec![(
                "v1alpha1",
                true,
                root(workspace_spec, Some(workspace_status)),
                true,
                json!([
                    col("Type", "string", ".spec.type.name"),
                    col("Region", "string", ".metadata.labels['region']"),
                    col("Phase", "string", ".status.phase"),
                    col("URL", "string", ".spec.URL"),
                    col("Age", "date", ".metadata.creationTimestamp"),
                ]),
            )],
        },
        Def {
            group: "core.kcp.io",
            plural: "logicalclusters",
            singular: "logicalcluster",
            kind: "LogicalCluster",
            short: &[],
            versions: vec![(
                "v1alpha1",
                true,
                root(
                    open_obj(json!({
                        "directlyDeletable": {"type": "boolean"},
                        "owner": any_obj(), "createdBy": any_obj(),
                        "initializers": strings(), "terminators": strings(),
                    })),
                    Some(open_obj(json!({
                        "URL": string(), "phase": string(), "conditions": conditions(),
                        "initializers": strings(), "terminators": strings(),
                    }))),
                ),
                true,
                json!([
                    col("Phase", "string", ".status.phase"),
                    col("URL", "string", ".status.URL"),
                    col("Age", "date", ".metadata.creationTimestamp"),
                ]),
            )],
        },
        Def {
            group: "apis.kcp.io",
            plural: "apiresourceschemas",
            singular: "apiresourceschema",
            kind: "APIResourceSchema",
            short: &[],
            versions: vec![(
                "v1alpha1",
                true,
                root(
                    json!({
                        "type": "object",
                        "required": ["group", "names", "scope", "versions"],
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {
                            "group": string(),
                            "names": open_obj(json!({"plural": string(), "singular": string(), "kind": string(), "listKind": string(), "shortNames": strings(), "categories": strings()})),
                            "scope": {"type": "string", "enum": ["Cluster", "Namespaced"]},
                            "nameValidation": string(),
                            "versions": {"type": "array", "minItems": 1, "items": {
                                "type": "object",
                                "required": ["name"],
                                "x-kubernetes-preserve-unknown-fields": true,
                                "properties": {
                                    "name": {"type": "string", "pattern": "^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$"},
                                    "served": {"type": "boolean", "default": true},
                                    "storage": {"type": "boolean"},
                                    "deprecated": {"type": "boolean"},
                                    "deprecationWarning": string(),
                                    "schema": any_obj(),
                                    "subresources": any_obj(),
                                    "additionalPrinterColumns": {"type": "array", "items": any_obj()},
                                    "selectableFields": {"type": "array", "items": any_obj()}
                                }
                            }},
                            "conversion": {
                                "type": "object",
                                "required": ["strategy"],
                                "x-kubernetes-preserve-unknown-fields": true,
                                "properties": {"strategy": string(), "webhook": any_obj()},
                                "x-kubernetes-validations": [{
                                    "message": "Webhook must be specified if strategy=Webhook",
                                    "rule": "(self.strategy == 'None' && !has(self.webhook)) || (self.strategy == 'Webhook' && has(self.webhook))",
                                }],
                            },
                        },
                        // kcp's types_apiresourceschema.go.
                        "x-kubernetes-validations": [{
                            "message": "Conversion must be specified when multiple versions exist",
                            "rule": "size(self.versions) == 1 || (size(self.versions) > 1 && has(self.conversion))",
                        }],
                    }),
                    None,
                ),
                false,
                json!([]),
            )],
        },
        Def {
            group: "apis.kcp.io",
            plural: "apiexports",
            singular: "apiexport",
            kind: "APIExport",
            short: &[],
            versions: vec![
                (
                    "v1alpha1",
                    false,
                    root(
                        open_obj(json!({
                            "latestResourceSchemas": strings(),
                            "identity": identity.clone(),
                            "maximalPermissionPolicy": any_obj(),
                            "permissionClaims": {"type": "array", "items": claim_v1alpha1()},
                        })),
                        Some(export_status.clone()),
                    ),
                    true,
                    json!([]),
                ),
                (
                    "v1alpha2",
                    true,
                    root(
                        open_obj(json!({
                            "resources": {"type": "array", "items": {
                                "type": "object",
                                "required": ["name", "schema"],
                                "x-kubernetes-preserve-unknown-fields": true,
                                "properties": {"name": string(), "group": string(), "schema": string(), "storage": any_obj()}
                            }},
                            "identity": identity,
                            "maximalPermissionPolicy": any_obj(),
                            "permissionClaims": {"type": "array", "items": {
                                "type": "object",
                                "required": ["resource", "verbs"],
                                "x-kubernetes-preserve-unknown-fields": true,
                                "properties": {"group": string(), "resource": string(), "identityHash": string(), "verbs": strings(), "defaultSelector": any_obj()}
                            }},
                        })),
                        Some(export_status),
                    ),
                    true,
                    json!([]),
                ),
            ],
        },
        Def {
            group: "apis.kcp.io",
            plural: "apiexportendpointslices",
            singular: "apiexportendpointslice",
            kind: "APIExportEndpointSlice",
            short: &[],
            versions: vec![(
                "v1alpha1",
                true,
                root(
                    json!({
                        "type": "object",
                        "required": ["export"],
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {
                            "export": {"type": "object", "required": ["name"], "properties": {"path": string(), "name": string()}},
                            "partition": string(),
                        }
                    }),
                    Some(open_obj(json!({
                        "endpoints": {"type": "array", "items": open_obj(json!({"url": string(), "shards": any_obj()}))},
                        "shardSelector": string(),
                        "conditions": conditions(),
                    }))),
                ),
                true,
                json!([]),
            )],
        },
        Def {
            group: "apis.kcp.io",
            plural: "apibindings",
            singular: "apibinding",
            kind: "APIBinding",
            short: &[],
            versions: vec![
                (
                    "v1alpha1",
                    false,
                    root(
                        open_obj(json!({
                            "reference": reference.clone(),
                            "permissionClaims": {"type": "array", "items": claim_v1alpha1()},
                        })),
                        Some(binding_status(claim_v1alpha1())),
                    ),
                    true,
                    json!([]),
                ),
                (
                    "v1alpha2",
                    true,
                    root(
                        json!({
                            "type": "object",
                            "required": ["reference"],
                            "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {
                                "reference": reference,
                                "permissionClaims": {"type": "array", "items": {
                                    "type": "object",
                                    "required": ["resource", "state"],
                                    "x-kubernetes-preserve-unknown-fields": true,
                                    "properties": {
                                        "group": string(), "resource": string(), "identityHash": string(),
                                        "verbs": strings(), "selector": selector(),
                                        "state": {"type": "string", "enum": ["Accepted", "Rejected"]}
                                    }
                                }},
                            }
                        }),
                        Some(binding_status(claim_v1alpha2())),
                    ),
                    true,
                    json!([]),
                ),
            ],
        },
    ]
}

/// The definitions of kcp's own types, as CRDs.
pub(crate) fn kcp_crds() -> Vec<Value> {
    defs().iter().map(crd).collect()
}

fn kcp_infos() -> Vec<Arc<ResourceInfo>> {
    kcp_crds()
        .iter()
        .flat_map(crate::controllers::crd::resource_infos)
        .map(|i| {
            let mut i = (*i).clone();
            i.source = "builtin".into();
            Arc::new(i)
        })
        .collect()
}

/// What a kcp shard serves in every logical cluster, built once per process.
pub(crate) fn builtins() -> Arc<ApiSet> {
    static SET: OnceLock<Arc<ApiSet>> = OnceLock::new();
    SET.get_or_init(|| {
        let kube = crate::builtin::builtins();
        let kept = kube
            .all()
            .filter(|i| in_kcp(i))
            .cloned()
            .collect::<Vec<_>>();
        Arc::new(ApiSet::new(kept.into_iter().chain(kcp_infos())))
    })
    .clone()
}

/// A kcp type by group, version and plural (for the controllers).
///
/// # Panics
/// When the resource is not a kcp built-in: a programming error in this crate.
pub(crate) fn info(group: &str, version: &str, resource: &str) -> Arc<ResourceInfo> {
    builtins()
        .all()
        .find(|i| i.group == group && i.version == version && i.resource == resource)
        .cloned()
        .unwrap_or_else(|| panic!("{group}/{version} {resource} is not served by kcp shards"))
}

/// `tenancy.kcp.io/v1alpha1` workspaces.
pub(crate) fn workspaces() -> Arc<ResourceInfo> {
    info("tenancy.kcp.io", "v1alpha1", "workspaces")
}
/// `core.kcp.io/v1alpha1` logicalclusters.
pub(crate) fn logicalclusters() -> Arc<ResourceInfo> {
    info("core.kcp.io", "v1alpha1", "logicalclusters")
}
/// `apis.kcp.io/v1alpha1` apiresourceschemas.
pub(crate) fn apiresourceschemas() -> Arc<ResourceInfo> {
    info("apis.kcp.io", "v1alpha1", "apiresourceschemas")
}
/// `apis.kcp.io/v1alpha2` apiexports (the storage version).
pub(crate) fn apiexports() -> Arc<ResourceInfo> {
    info("apis.kcp.io", "v1alpha2", "apiexports")
}
/// `apis.kcp.io/v1alpha1` apiexportendpointslices.
pub(crate) fn endpointslices() -> Arc<ResourceInfo> {
    info("apis.kcp.io", "v1alpha1", "apiexportendpointslices")
}
/// `apis.kcp.io/v1alpha2` apibindings (the storage version).
pub(crate) fn apibindings() -> Arc<ResourceInfo> {
    info("apis.kcp.io", "v1alpha2", "apibindings")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kcp_shards_serve_kcp_types_and_no_workloads() {
        let set = builtins();
        let has = |g: &str, v: &str, r: &str| {
            set.all()
                .any(|i| i.group == g && i.version == v && i.resource == r)
        };
        assert!(has("tenancy.kcp.io", "v1alpha1", "workspaces"));
        assert!(has("apis.kcp.io", "v1alpha1", "apiexports"));
        assert!(has("apis.kcp.io", "v1alpha2", "apiexports"));
        assert!(has("apis.kcp.io", "v1alpha2", "apibindings"));
        assert!(has("", "v1", "configmaps"));
        assert!(!has("", "v1", "pods"));
        assert!(!has("apps", "v1", "deployments"));
        let exports = info("apis.kcp.io", "v1alpha1", "apiexports");
        assert_eq!(exports.storage_api_version, "apis.kcp.io/v1alpha2");
        assert!(exports.status);
        assert_eq!(workspaces().short_names, ["ws"]);
    }
}
