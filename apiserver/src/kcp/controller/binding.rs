//! APIBindings: resolve the export, bind its schemas (phase `Binding` → `Bound`), serve the bound
//! resources in the consumer workspace with the schemas' validation, follow the export when its
//! schemas change, record accepted permission claims for the virtual workspace, and on deletion
//! remove the bound objects before releasing the finalizer.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::conditions::{self, Cond, Severity};
use super::{ExportKey, Item, ObjRef, Outcome};
use crate::error::ApiError;
use crate::kcp::apis;
use crate::kcp::server::{KcpInner, ShardState};
use crate::kcp::vw::ExportClaim;
use crate::selector::{LabelSelector, Requirement};
use crate::storage::ClusterApi;
use crate::store::StoreKey;

/// The label kcp sets on an APIBinding with a hash of the export it references.
pub(crate) const EXPORT_LABEL: &str = "internal.apis.kcp.io/export";
/// The finalizer that keeps a binding until its bound objects are deleted.
pub(crate) const FINALIZER: &str = "apis.kcp.io/apibinding-finalizer";

/// A permission claim a consumer accepted, as the virtual workspace checks it.
#[derive(Debug, Clone)]
pub(crate) struct AcceptedClaim {
    pub group: String,
    pub resource: String,
    pub identity_hash: String,
    pub binding_verbs: Vec<String>,
    pub export_verbs: Vec<String>,
    /// `None`: every object (`matchAll`).
    pub selector: Option<LabelSelector>,
    /// The selector's `matchLabels`, applied to objects the provider creates.
    pub match_labels: Vec<(String, String)>,
}

impl AcceptedClaim {
    /// The verbs the provider may use: the binding's and the export's, intersected literally as
    /// kcp does (`*` only matches `*`).
    pub(crate) fn allowed_verbs(&self) -> Vec<String> {
        self.binding_verbs
            .iter()
            .filter(|v| self.export_verbs.contains(v))
            .cloned()
            .collect()
    }
}

/// A Bound APIBinding, as the virtual workspace of its export sees it.
#[derive(Debug)]
pub(crate) struct BoundEntry {
    pub binding: String,
    pub export_cluster: Arc<str>,
    pub export_name: String,
    /// (group, resource) of every bound resource.
    pub resources: Vec<(String, String)>,
    pub claims: Vec<AcceptedClaim>,
    /// The export has `maximalPermissionPolicy.local`: requests on the bound resources are also
    /// checked against RBAC in the export's workspace.
    pub local_policy: bool,
}

/// The prefix kcp gives users and groups when checking a maximal permission policy.
pub(crate) const POLICY_PREFIX: &str = "apis.kcp.io:binding:";

/// kcp's maximal permission policy: a request on a resource bound from an export with
/// `maximalPermissionPolicy.local` must also be allowed by RBAC in the export's workspace, for the
/// user and groups prefixed with `apis.kcp.io:binding:`.
pub(crate) fn check_policy(
    inner: &KcpInner,
    entry: &BoundEntry,
    user: &crate::auth::UserInfo,
    attrs: &crate::auth::Attributes,
) -> Result<(), ApiError> {
    if !entry.local_policy || user.is_privileged() {
        return Ok(());
    }
    let prefixed = crate::auth::UserInfo {
        username: format!("{POLICY_PREFIX}{}", user.username),
        uid: user.uid.clone(),
        groups: user
            .groups
            .iter()
            .map(|g| format!("{POLICY_PREFIX}{g}"))
            .collect(),
        extra: Default::default(),
    };
    let decision = inner.shard_of(&entry.export_cluster).map(|s| {
        s.shard
            .auth
            .rbac(&entry.export_cluster)
            .authorize_deep(&prefixed, attrs)
    });
    match decision {
        Some(crate::auth::Decision::Allow { .. }) => Ok(()),
        other => {
            let reason = match other {
                Some(crate::auth::Decision::Deny(d)) => d.reason,
                _ => String::new(),
            };
            Err(attrs.forbidden(
                &user.username,
                &format!(
                    "API export {:?}|{:?} policy: {reason}",
                    &*entry.export_cluster, entry.export_name
                ),
            ))
        }
    }
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
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

/// A claim's `selector` (`matchAll`, `matchLabels`, `matchExpressions`) as a label selector.
fn selector(v: Option<&Value>) -> Option<LabelSelector> {
    let v = v?;
    if v.get("matchAll").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let mut reqs = Vec::new();
    for (k, val) in v
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        reqs.push(Requirement::Eq(
            k.clone(),
            val.as_str().unwrap_or("").to_string(),
        ));
    }
    for e in v
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = s(e, "/key").to_string();
        let values = strings(e.get("values"));
        reqs.push(match s(e, "/operator") {
            "In" => Requirement::In(key, values),
            "NotIn" => Requirement::NotIn(key, values),
            "Exists" => Requirement::Exists(key),
            _ => Requirement::NotExists(key),
        });
    }
    if reqs.is_empty() {
        return None;
    }
    Some(LabelSelector { requirements: reqs })
}

fn gri(v: &Value) -> (&str, &str, &str) {
    (s(v, "/group"), s(v, "/resource"), s(v, "/identityHash"))
}

/// Writes the binding's status when `f` changes it.
fn write_status(api: &ClusterApi<'_>, name: &str, f: impl Fn(&mut Value)) -> Result<(), ApiError> {
    api.modify(&apis::apibindings(), "", name, Some("status"), |v| {
        let mut status = v.get("status").cloned().unwrap_or(json!({}));
        let before = status.clone();
        f(&mut status);
        v["status"] = status.clone();
        Ok(status != before)
    })?;
    Ok(())
}

/// `Ready` mirrors `InitialBindingCompleted`, which stays True once the binding first completed.
fn summarize(status: &mut Value) {
    match conditions::is_true(status, "InitialBindingCompleted") {
        Some(true) => conditions::set(status, &Cond::ok("Ready")),
        _ => conditions::set(
            status,
            &Cond::fail(
                "Ready",
                "WaitingForEstablished",
                Severity::Info,
                "the initial binding has not completed".into(),
            ),
        ),
    }
}

fn not_bound_yet(status: &mut Value) {
    if status
        .get("phase")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        status["phase"] = json!("Binding");
    }
    if conditions::is_true(status, "InitialBindingCompleted") != Some(true) {
        conditions::set(
            status,
            &Cond::fail(
                "InitialBindingCompleted",
                "WaitingForEstablished",
                Severity::Info,
                "waiting for the bound resources to be established".into(),
            ),
        );
    }
}

/// Forgets a binding that is gone: its resources, its virtual-workspace entry, its export link.
fn forget(inner: &KcpInner, ss: &ShardState, r: &ObjRef) -> Vec<Item> {
    let (_, cluster, name) = r;
    ss.shard
        .registry()
        .set_source(cluster, &format!("apibinding/{name}"), Vec::new());
    remove_entry(ss, cluster, name);
    let mut st = inner.state.lock();
    let changed = st.set_binding_export(r, None);
    changed.iter().flat_map(|k| st.slices_of(k)).collect()
}

fn remove_entry(ss: &ShardState, cluster: &Arc<str>, name: &str) {
    let mut b = ss.bindings.write();
    if let Some(list) = b.get_mut(cluster) {
        list.retain(|e| e.binding != name);
        if list.is_empty() {
            b.remove(cluster);
        }
    }
}

fn set_export(inner: &KcpInner, r: &ObjRef, key: Option<ExportKey>) -> Vec<Item> {
    let mut st = inner.state.lock();
    let changed = st.set_binding_export(r, key);
    changed.iter().flat_map(|k| st.slices_of(k)).collect()
}

/// Deletes the objects of a binding being deleted, then releases its finalizer.
fn finalize(inner: &KcpInner, ss: &ShardState, r: &ObjRef, v: &Value) -> Result<Outcome, ApiError> {
    let (_, cluster, name) = r;
    let mut remaining = 0;
    for b in v
        .pointer("/status/boundResources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let store = StoreKey::with_identity(
            s(b, "/group"),
            s(b, "/resource"),
            s(b, "/schema/identityHash"),
        );
        remaining += crate::controllers::crd::cleanup_objects(&ss.shard, cluster, &store);
    }
    if remaining > 0 {
        return Ok(Outcome::retry(Duration::from_millis(200)));
    }
    let follow = forget(inner, ss, r);
    let api = ss.shard.api(cluster);
    api.modify(&apis::apibindings(), "", name, None, |v| {
        let fins = crate::meta::finalizers(v);
        if !fins.iter().any(|f| f == FINALIZER) {
            return Ok(false);
        }
        let rest: Vec<String> = fins.into_iter().filter(|f| f != FINALIZER).collect();
        crate::meta::set_meta(v, "finalizers", Some(json!(rest)));
        Ok(true)
    })?;
    Ok(Outcome {
        retry: None,
        follow,
    })
}

/// Reconciles one APIBinding.
pub(super) fn reconcile(inner: &Arc<KcpInner>, r: &ObjRef) -> Result<Outcome, ApiError> {
    let (si, cluster, name) = r;
    let Some(ss) = inner.shard(*si) else {
        return Ok(Outcome::default());
    };
    let info = apis::apibindings();
    let api = ss.shard.api(cluster);
    let b = match api.get(&info, "", name) {
        Ok(b) => b,
        Err(e) if e.code == 404 => {
            return Ok(Outcome {
                retry: None,
                follow: forget(inner, &ss, r),
            });
        }
        Err(e) => return Err(e),
    };
    let v = b.value();
    if b.deleting {
        return finalize(inner, &ss, r, &v);
    }
    if !crate::meta::finalizers(&v).iter().any(|f| f == FINALIZER) {
        api.modify(&info, "", name, None, |v| {
            let mut fins = crate::meta::finalizers(v);
            if fins.iter().any(|f| f == FINALIZER) {
                return Ok(false);
            }
            fins.push(FINALIZER.into());
            crate::meta::set_meta(v, "finalizers", Some(json!(fins)));
            Ok(true)
        })?;
    }
    let own_path = inner.path_of(cluster).unwrap_or_else(|| cluster.clone());
    let ref_path = match s(&v, "/spec/reference/export/path") {
        "" => own_path.to_string(),
        p => p.to_string(),
    };
    let export_name = s(&v, "/spec/reference/export/name").to_string();
    let resolved = inner.resolve(&ref_path).and_then(|e| {
        let es = inner.shard(e.shard)?;
        let export = es
            .shard
            .api(&e.name)
            .get(&apis::apiexports(), "", &export_name)
            .ok()?;
        Some((e, es, export))
    });
    let Some((entry, es, export)) = resolved else {
        let follow = set_export(inner, r, None);
        write_status(&api, name, |st| {
            not_bound_yet(st);
            conditions::set(
                st,
                &Cond::fail(
                    "APIExportValid",
                    "APIExportNotFound",
                    Severity::Error,
                    format!("APIExport {ref_path}:{export_name} not found"),
                ),
            );
            summarize(st);
        })?;
        return Ok(Outcome {
            retry: Some(Duration::from_secs(1)),
            follow,
        });
    };
    let key: ExportKey = (entry.name.clone(), export_name.clone());
    let follow = set_export(inner, r, Some(key));
    // The export label (admission sets it when the export's workspace is known at creation).
    let label = crate::kcp::names::export_label_value(&entry.name, &export_name);
    if v.pointer("/metadata/labels")
        .and_then(|l| l.get(EXPORT_LABEL))
        .and_then(Value::as_str)
        != Some(label.as_str())
    {
        api.modify(&info, "", name, None, |v| {
            let m = crate::meta::metadata_mut(v);
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if labels.get(EXPORT_LABEL).and_then(Value::as_str) == Some(label.as_str()) {
                return Ok(false);
            }
            labels[EXPORT_LABEL] = json!(label);
            Ok(true)
        })?;
    }
    let ev = export.value();
    let identity = s(&ev, "/status/identityHash").to_string();
    if identity.is_empty() {
        write_status(&api, name, |st| {
            not_bound_yet(st);
            conditions::set(
                st,
                &Cond::fail(
                    "APIExportValid",
                    "MissingIdentityHash",
                    Severity::Info,
                    format!("APIExport {ref_path}:{export_name} is missing status.identityHash"),
                ),
            );
            summarize(st);
        })?;
        // The export's reconcile follows up once it has an identity.
        return Ok(Outcome {
            retry: None,
            follow,
        });
    }
    // The export's schemas.
    let export_api = es.shard.api(&entry.name);
    let mut bound = Vec::new();
    let mut infos = Vec::new();
    let mut resources = Vec::new();
    for res in ev
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let schema_name = s(res, "/schema");
        let Ok(schema) = export_api.get(&apis::apiresourceschemas(), "", schema_name) else {
            let msg = format!("APIResourceSchema {}:{schema_name} not found", entry.path);
            write_status(&api, name, |st| {
                not_bound_yet(st);
                conditions::set(
                    st,
                    &Cond::fail(
                        "APIExportValid",
                        "InternalError",
                        Severity::Error,
                        msg.clone(),
                    ),
                );
                summarize(st);
            })?;
            return Ok(Outcome {
                retry: None,
                follow,
            });
        };
        let sv = schema.value();
        let storage: Vec<Value> = sv
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|x| x.get("storage").and_then(Value::as_bool) == Some(true))
            .filter_map(|x| x.get("name").cloned())
            .collect();
        let group = s(&sv, "/spec/group").to_string();
        let plural = s(&sv, "/spec/names/plural").to_string();
        bound.push(json!({
            "group": group,
            "resource": plural,
            "schema": {"name": schema_name, "UID": &*schema.uid, "identityHash": identity},
            "storageVersions": storage,
        }));
        infos.extend(super::schema_infos(inner, &sv, &identity));
        resources.push((group, plural));
    }
    // Naming conflicts with other bindings and CRDs of the workspace.
    let conflict = {
        let entries = ss.bindings.read();
        let other = entries.get(cluster).and_then(|list| {
            list.iter()
                .filter(|e| e.binding != *name)
                .find(|e| e.resources.iter().any(|x| resources.contains(x)))
                .map(|e| format!("APIBinding {}", e.binding))
        });
        other.or_else(|| {
            resources.iter().find_map(|(g, p)| {
                let crd = format!("{p}.{g}");
                ss.shard
                    .store()
                    .get(
                        &StoreKey::new("apiextensions.k8s.io", "customresourcedefinitions"),
                        &crate::store::ObjKey::new(cluster.clone(), "", &crd),
                    )
                    .map(|_| format!("CustomResourceDefinition {crd}"))
            })
        })
    };
    if let Some(c) = conflict {
        write_status(&api, name, |st| {
            not_bound_yet(st);
            conditions::set(st, &Cond::ok("APIExportValid"));
            conditions::set(
                st,
                &Cond::fail(
                    "BindingUpToDate",
                    "NamingConflicts",
                    Severity::Error,
                    format!("naming conflict with {c}"),
                ),
            );
            summarize(st);
        })?;
        return Ok(Outcome {
            retry: Some(Duration::from_secs(2)),
            follow,
        });
    }
    // Phase Binding first; a swapped schema makes the binding briefly not up to date.
    let phase = s(&v, "/status/phase").to_string();
    let uids = |bs: &[Value]| -> Vec<String> {
        bs.iter().map(|b| s(b, "/schema/UID").to_string()).collect()
    };
    let old_bound: Vec<Value> = v
        .pointer("/status/boundResources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if phase.is_empty() {
        write_status(&api, name, |st| {
            not_bound_yet(st);
            st["apiExportClusterName"] = json!(&*entry.name);
            conditions::set(st, &Cond::ok("APIExportValid"));
            summarize(st);
        })?;
    } else if phase == "Bound" && uids(&old_bound) != uids(&bound) {
        write_status(&api, name, |st| {
            conditions::set(
                st,
                &Cond::fail(
                    "BindingUpToDate",
                    "WaitingForEstablished",
                    Severity::Info,
                    "waiting for the new schemas to be established".into(),
                ),
            );
        })?;
    }
    // Serve the resources in the consumer workspace.
    ss.shard
        .registry()
        .set_source(cluster, &format!("apibinding/{name}"), infos);
    // Claims: accepted by the binding and asked for by the export.
    let export_claims: Vec<Value> = ev
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let binding_claims: Vec<Value> = v
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut accepted = Vec::new();
    let mut applied = Vec::new();
    let mut invalid = Vec::new();
    for c in &binding_claims {
        let Some(ec) = export_claims.iter().find(|e| gri(e) == gri(c)) else {
            invalid.push(format!("{}/{}", s(c, "/group"), s(c, "/resource")));
            continue;
        };
        if s(c, "/state") != "Accepted" {
            continue;
        }
        let claim = AcceptedClaim {
            group: s(c, "/group").into(),
            resource: s(c, "/resource").into(),
            identity_hash: s(c, "/identityHash").into(),
            binding_verbs: strings(c.get("verbs")),
            export_verbs: ExportClaim::parse(ec).verbs,
            selector: selector(c.get("selector")),
            match_labels: c
                .pointer("/selector/matchLabels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect(),
        };
        let mut a = json!({
            "group": claim.group, "resource": claim.resource,
            "verbs": claim.binding_verbs,
            "selector": c.get("selector").cloned().unwrap_or(json!({"matchAll": true})),
        });
        if !claim.identity_hash.is_empty() {
            a["identityHash"] = json!(claim.identity_hash);
        }
        applied.push(a);
        accepted.push(claim);
    }
    {
        let mut entries = ss.bindings.write();
        let list = entries.entry(cluster.clone()).or_default();
        list.retain(|e| e.binding != *name);
        list.push(Arc::new(BoundEntry {
            binding: name.clone(),
            export_cluster: entry.name.clone(),
            export_name: export_name.clone(),
            resources,
            claims: accepted,
            local_policy: ev.pointer("/spec/maximalPermissionPolicy/local").is_some(),
        }));
    }
    write_status(&api, name, |st| {
        st["apiExportClusterName"] = json!(&*entry.name);
        st["boundResources"] = Value::Array(bound.clone());
        if export_claims.is_empty() {
            if let Some(o) = st.as_object_mut() {
                o.remove("exportPermissionClaims");
            }
        } else {
            st["exportPermissionClaims"] = Value::Array(export_claims.clone());
        }
        if applied.is_empty() {
            if let Some(o) = st.as_object_mut() {
                o.remove("appliedPermissionClaims");
            }
        } else {
            st["appliedPermissionClaims"] = Value::Array(applied.clone());
        }
        st["phase"] = json!("Bound");
        conditions::set(st, &Cond::ok("APIExportValid"));
        conditions::set(st, &Cond::ok("BindingUpToDate"));
        conditions::set(st, &Cond::ok("InitialBindingCompleted"));
        conditions::set(st, &Cond::ok("PermissionClaimsApplied"));
        if invalid.is_empty() {
            conditions::set(st, &Cond::ok("PermissionClaimsValid"));
        } else {
            conditions::set(
                st,
                &Cond::fail(
                    "PermissionClaimsValid",
                    "InvalidPermissionClaims",
                    Severity::Error,
                    format!("claims not requested by the export: {}", invalid.join(", ")),
                ),
            );
        }
        summarize(st);
    })?;
    Ok(Outcome {
        retry: None,
        follow,
    })
}
