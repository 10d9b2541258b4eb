//! CustomResourceDefinitions: validation of the definition, registration of the resources it
//! defines (synchronously, so a created CRD is served at once), and cleanup of its objects on deletion.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::admission::{AdmissionPlugin, Attributes, Operation};
use crate::error::{ApiError, ApiResult, Cause};
use crate::registry::{PrinterColumn, ResourceInfo, ScaleSpec, Strategy};
use crate::shard::Shard;
use crate::storage::{self, DeleteOptions};
use crate::store::{Event, EventType, ObjKey, StoreKey, WatchFilter};
use crate::validation::Validator;

/// The finalizer that keeps a CRD until its objects are deleted.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn cause(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Cause {
    Cause {
        reason: reason.into(),
        field: field.into(),
        message: message.into(),
    }
}

/// Validates a CRD as kube-apiserver does: the `schema` module's checks on every write, plus the
/// fields that may not change.
pub(crate) fn validate(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = crate::validation::validate_crd(crd);
    if let Some(old) = old {
        for (ptr, field) in [
            ("/spec/group", "spec.group"),
            ("/spec/names/plural", "spec.names.plural"),
        ] {
            if old.pointer(ptr) != crd.pointer(ptr) {
                out.push(cause(
                    "FieldValueInvalid",
                    field,
                    format!("Invalid value: {:?}: field is immutable", s(crd, ptr)),
                ));
            }
        }
    }
    out
}

/// `status.storedVersions` against `spec.versions`, as apiextensions-apiserver's
/// `ValidateCustomResourceDefinitionStoredVersions` (`pkg/apis/apiextensions/validation/
/// validation.go`): never empty, holding the storage version, and naming only versions the
/// spec still lists — so a version objects may still be stored in cannot be dropped until a
/// storage migration has rewritten them and trimmed the list. Checked on writes of the spec
/// only, as kube-apiserver does: `/status` may set any list.
pub(crate) fn validate_stored_versions(crd: &Value) -> Vec<Cause> {
    const FIELD: &str = "status.storedVersions";
    let listed = crd.pointer("/status/storedVersions");
    let stored = strings(listed);
    // Go prints the list as `%#v` of a []string.
    let go_list = || match listed {
        None | Some(Value::Null) => "[]string(nil)".to_string(),
        Some(_) => format!(
            "[]string{{{}}}",
            stored
                .iter()
                .map(|v| format!("{v:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if stored.is_empty() {
        return vec![cause(
            "FieldValueInvalid",
            FIELD,
            format!(
                "Invalid value: {}: must have at least one stored version",
                go_list()
            ),
        )];
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for version in versions {
        let name = s(version, "/name");
        if version.get("storage").and_then(Value::as_bool) == Some(true)
            && !stored.iter().any(|v| v == name)
        {
            out.push(cause(
                "FieldValueInvalid",
                FIELD,
                format!(
                    "Invalid value: {}: must have the storage version {name}",
                    go_list()
                ),
            ));
        }
    }
    for (i, v) in stored.iter().enumerate() {
        if !versions.iter().any(|version| s(version, "/name") == v) {
            out.push(cause(
                "FieldValueInvalid",
                format!("{FIELD}[{i}]"),
                format!(
                    "Invalid value: {v:?}: missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
                ),
            ));
        }
    }
    out
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A CRD schema with `apiVersion` and `kind` declared, as kube-apiserver completes every custom
/// resource's structural schema (authors rarely declare them; server-side apply needs them typed).
fn with_type_meta(schema: &Value) -> Value {
    let mut s = schema.clone();
    if s.get("properties").is_none() && s.get("x-kubernetes-preserve-unknown-fields").is_none() {
        s["properties"] = serde_json::json!({});
    }
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        for f in ["apiVersion", "kind"] {
            props
                .entry(f)
                .or_insert_with(|| serde_json::json!({"type": "string"}));
        }
    }
    s
}

/// The verbs kube-apiserver's custom resource handler advertises, in its order
/// (apiextensions-apiserver `customresource_handler.go`), which discovery shows as is.
const CUSTOM_RESOURCE_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// The resources a CRD serves, one per served version.
pub(crate) fn resource_infos(crd: &Value) -> Vec<Arc<ResourceInfo>> {
    let group = s(crd, "/spec/group").to_string();
    let plural = s(crd, "/spec/names/plural").to_string();
    let kind = s(crd, "/spec/names/kind").to_string();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| s(v, "/name").to_string())
        .unwrap_or_default();
    let name = s(crd, "/metadata/name");
    let validators = Validator::for_crd(crd);
    let conversion = crate::convert::webhook::WebhookConverter::from_crd(crd, &validators);
    let mut out = Vec::new();
    for v in &versions {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let version = s(v, "/name").to_string();
        let schema = v.pointer("/schema/openAPIV3Schema").cloned();
        let scale = v.pointer("/subresources/scale").map(|sc| ScaleSpec {
            spec_replicas: s(sc, "/specReplicasPath").to_string(),
            status_replicas: s(sc, "/statusReplicasPath").to_string(),
            label_selector: sc
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: s(c, "/name").to_string(),
                        type_: s(c, "/type").to_string(),
                        format: s(c, "/format").to_string(),
                        // kube-apiserver's description for a column that has none.
                        description: match s(c, "/description") {
                            "" => format!(
                                "Custom resource definition column (in JSONPath format): {}",
                                s(c, "/jsonPath")
                            ),
                            given => given.to_string(),
                        },
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: s(c, "/jsonPath").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let field_selectors = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|fs| {
                fs.iter()
                    .map(|f| s(f, "/jsonPath").trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default();
        out.push(Arc::new(ResourceInfo {
            group: group.clone(),
            version: version.clone(),
            resource: plural.clone(),
            singular: s(crd, "/spec/names/singular").to_string(),
            kind: kind.clone(),
            list_kind: crd
                .pointer("/spec/names/listKind")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{kind}List")),
            namespaced: s(crd, "/spec/scope") == "Namespaced",
            short_names: strings(crd.pointer("/spec/names/shortNames")),
            categories: strings(crd.pointer("/spec/names/categories")),
            verbs: CUSTOM_RESOURCE_VERBS
                .iter()
                .map(|v| v.to_string())
                .collect(),
            status: v.pointer("/subresources/status").is_some(),
            scale,
            store: StoreKey::new(&group, &plural),
            storage_api_version: crate::registry::api_version(&group, &storage_version),
            strategy: Strategy::Custom,
            generation: true,
            printer_columns,
            validator: validators.get(&version).cloned(),
            field_selectors,
            shape: Arc::new(match &schema {
                Some(sc) => crate::patch::TypeShape::from_crd_schema(&with_type_meta(sc)),
                None => crate::patch::TypeShape::untyped().with_strategic_merge(false),
            }),
            openapi_schema: schema.map(Arc::new),
            source: format!("crd/{name}"),
            source_uid: crd
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            deprecated: v
                .get("deprecated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            conversion: conversion.clone(),
        }));
    }
    out
}

/// Registers (or unregisters) the resources of a CRD after a committed write.
pub(crate) fn register(shard: &Shard, cluster: &Arc<str>, ev: &Event) {
    let source = format!("crd/{}", ev.object.key.name);
    if ev.kind == EventType::Deleted {
        shard.registry().set_source(cluster, &source, Vec::new());
    } else {
        shard
            .registry()
            .set_source(cluster, &source, resource_infos(&ev.object.value()));
    }
}

/// Deletes the objects of a CRD being deleted, then releases its finalizer.
#[derive(Default)]
pub(crate) struct CrdController {
    pending: BTreeSet<(Arc<str>, String)>,
}

pub(crate) fn start(shard: &Arc<Shard>) {
    let filter = WatchFilter {
        resource: Some(StoreKey::new(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
        )),
        ..Default::default()
    };
    super::spawn(shard, filter, CrdController::default());
}

impl CrdController {
    /// Returns true when the CRD is done (gone or finalizer released).
    fn cleanup(&self, shard: &Shard, cluster: &Arc<str>, name: &str) -> bool {
        let crds = storage::builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let api = shard.api(cluster);
        let Ok(crd) = api.get(&crds, "", name) else {
            return true;
        };
        if !crd.deleting {
            return true;
        }
        let v = crd.value();
        let store = StoreKey::new(s(&v, "/spec/group"), s(&v, "/spec/names/plural"));
        let remaining = cleanup_objects(shard, cluster, &store);
        if remaining > 0 {
            return false;
        }
        let r = api.modify(&crds, "", name, None, |o| {
            let fins = crate::meta::finalizers(o);
            if !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
                return Ok(false);
            }
            let rest: Vec<String> = fins
                .into_iter()
                .filter(|f| f != CLEANUP_FINALIZER)
                .collect();
            crate::meta::set_meta(o, "finalizers", Some(serde_json::json!(rest)));
            Ok(true)
        });
        r.is_ok() || r.is_err_and(|e| e.code == 404)
    }
}

/// Deletes every object of a resource in a logical cluster (honouring finalizers); returns how many
/// remain.
pub(crate) fn cleanup_objects(shard: &Shard, cluster: &Arc<str>, store: &StoreKey) -> usize {
    let Some(info) = shard.registry().by_store(cluster, store) else {
        // Nothing serves the resource any more: remove the objects directly.
        let mut keys: Vec<ObjKey> = Vec::new();
        shard.store().scan(store, Some(cluster), None, None, |o| {
            keys.push(o.key.clone());
            true
        });
        for k in keys {
            let _ = shard.store().commit(
                store,
                &k,
                crate::store::Write::Delete(Default::default(), None),
            );
        }
        return 0;
    };
    let api = shard.api(cluster);
    let objs = api.list(&info, None);
    let mut remaining = 0;
    for o in objs {
        match api.delete(
            &info,
            &o.key.namespace,
            &o.key.name,
            &DeleteOptions::default(),
        ) {
            Ok(storage::Deleted::Gone(_)) => {}
            Err(e) if e.code == 404 => {}
            _ => remaining += 1,
        }
    }
    remaining
}

impl super::Reconciler for CrdController {
    fn event(&mut self, shard: &Shard, ev: &Event) {
        if ev.kind != EventType::Deleted && ev.object.deleting {
            let key = (
                ev.object.key.cluster.clone(),
                ev.object.key.name.to_string(),
            );
            if !self.cleanup(shard, &key.0, &key.1) {
                self.pending.insert(key);
            }
        }
        // Keep the registry in sync with CRDs written before the watch began (resync).
        if ev.prev.is_none() && ev.kind == EventType::Added {
            register(shard, &ev.object.key.cluster, ev);
        }
    }

    fn tick(&mut self, shard: &Shard) -> bool {
        let pending = std::mem::take(&mut self.pending);
        for (cluster, name) in pending {
            if !self.cleanup(shard, &cluster, &name) {
                self.pending.insert((cluster, name));
            }
        }
        !self.pending.is_empty()
    }
}

/// Refuses new custom objects while their CRD is being deleted.
pub(crate) struct TerminatingCrdAdmission;

impl AdmissionPlugin for TerminatingCrdAdmission {
    fn admit(&self, shard: &Shard, a: &mut Attributes<'_>) -> ApiResult<()> {
        if a.operation != Operation::Create
            || a.info.strategy != Strategy::Custom
            || !a.info.source.starts_with("crd/")
        {
            return Ok(());
        }
        let crd_name = &a.info.source["crd/".len()..];
        let key = ObjKey::new(a.cluster.into(), "", crd_name);
        let crd = shard.store().get(
            &StoreKey::new("apiextensions.k8s.io", "customresourcedefinitions"),
            &key,
        );
        if crd.is_some_and(|c| c.deleting) {
            let mut e = ApiError::new(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
            );
            e.details = Some(serde_json::json!({"group": a.info.group, "kind": a.info.resource}));
            return Err(e);
        }
        Ok(())
    }
}
