//! kcp's admission plugins, as one plugin on each kcp shard's chain: Workspace names and immutable
//! scheduling fields, APIResourceSchema validation and immutability (403), APIBinding's `bind`
//! check and export label, APIExport claims, and the `kcp.io/path` annotation.

use std::sync::Weak;

use serde_json::{Value, json};

use super::controller::binding::EXPORT_LABEL;
use super::names::{self, PATH_ANNOTATION};
use super::server::KcpInner;
use crate::admission::{AdmissionPlugin, Attributes as Admission, Operation};
use crate::auth::Attributes;
use crate::error::{ApiError, ApiResult, Cause};
use crate::shard::Shard;

/// The kcp admission plugin of a shard.
pub(crate) struct KcpAdmission {
    pub inner: Weak<KcpInner>,
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn invalid(a: &Admission<'_>, field: &str, message: String) -> ApiError {
    ApiError::invalid(
        &a.info.group,
        &a.info.kind,
        a.name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            field: field.into(),
            message,
        }],
    )
}

/// kcp's admission refusals: 403 Forbidden with the field errors listed.
fn forbidden(a: &Admission<'_>, errors: &[String]) -> ApiError {
    ApiError::forbidden(
        &a.info.group,
        &a.info.resource,
        a.name,
        format!("[{}]", errors.join(", ")),
    )
}

/// Sets `kcp.io/path` to the workspace path of the object's logical cluster (kept on update).
fn stamp_path(inner: &KcpInner, a: &mut Admission<'_>) {
    let path = inner.path_of(a.cluster);
    let old = a
        .old
        .and_then(|o| o.pointer("/metadata/annotations"))
        .and_then(|x| x.get(PATH_ANNOTATION))
        .cloned();
    let Some(obj) = a.object.as_deref_mut() else {
        return;
    };
    let want = match (path, old) {
        (Some(p), _) => json!(&*p),
        (None, Some(o)) => o,
        (None, None) => return,
    };
    let m = crate::meta::metadata_mut(obj);
    let ann = m.entry("annotations").or_insert_with(|| json!({}));
    if let Some(o) = ann.as_object_mut()
        && !o.contains_key(PATH_ANNOTATION)
    {
        o.insert(PATH_ANNOTATION.into(), want);
    }
}

const SINGLE_SEGMENT_GROUPS: &[&str] = &["apps", "batch", "extensions", "policy", "autoscaling"];

fn schema_errors(name: &str, v: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let group = s(v, "/spec/group");
    let plural = s(v, "/spec/names/plural");
    if !plural.is_empty() {
        let g = if group.is_empty() { "core" } else { group };
        let postfix = format!(".{plural}.{g}");
        match name.strip_suffix(&postfix) {
            None => errs.push(format!(
                "metadata.name: Invalid value: {name:?}: must end in {postfix}"
            )),
            Some(prefix) => {
                let ok = prefix.starts_with(|c: char| c.is_ascii_lowercase())
                    && prefix
                        .bytes()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                    && !prefix.ends_with('-');
                if !ok {
                    errs.push(format!(
                        "metadata.name: Invalid value: {name:?}: must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .{plural}.{g}"
                    ));
                }
            }
        }
    }
    if group == "core" {
        errs.push(format!(
            "spec.group: Invalid value: {group:?}: must be empty string for the core group"
        ));
    } else if !group.is_empty() {
        if let Some(p) = crate::meta::check_subdomain(group) {
            errs.push(format!("spec.group: Invalid value: {group:?}: {p}"));
        } else if !group.contains('.') && !SINGLE_SEGMENT_GROUPS.contains(&group) {
            errs.push(format!(
                "spec.group: Invalid value: {group:?}: should be a domain with at least one dot"
            ));
        }
    }
    let versions = v
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions
        .iter()
        .filter(|x| x.get("storage").and_then(Value::as_bool) == Some(true))
        .count()
        != 1
    {
        errs.push(
            "spec.versions: Invalid value: \"array\": must have exactly one version marked as storage version"
                .into(),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, x) in versions.iter().enumerate() {
        let n = s(x, "/name");
        if !seen.insert(n.to_string()) {
            errs.push(
                "spec.versions: Invalid value: \"array\": must contain unique version names".into(),
            );
        }
        if x.get("schema").is_none_or(Value::is_null) {
            errs.push(format!("spec.versions[{i}].schema: Required value"));
        }
    }
    // The schemas themselves are validated as kube-apiserver validates a CRD's (kcp does the same),
    // with the CRD's `schema.openAPIV3Schema` being the schema's `schema`.
    let crd = crate::kcp::controller::schema_as_crd(v);
    for c in crate::validation::validate_crd(&crd) {
        if !c.field.starts_with("spec.versions[") {
            continue;
        }
        let field = c.field.replace(".schema.openAPIV3Schema", ".schema");
        if field.ends_with(".schema") && c.reason == "FieldValueRequired" {
            continue;
        }
        errs.push(format!("{field}: {}", c.message));
    }
    for (field, ptr) in [
        ("plural", "/spec/names/plural"),
        ("singular", "/spec/names/singular"),
        ("kind", "/spec/names/kind"),
        ("listKind", "/spec/names/listKind"),
    ] {
        if s(v, ptr).is_empty() {
            errs.push(format!("spec.names.{field}: Required value"));
        }
    }
    errs
}

impl KcpAdmission {
    fn workspace(&self, a: &mut Admission<'_>) -> ApiResult<()> {
        match a.operation {
            Operation::Create => {
                if let Some(p) = crate::meta::check_label(a.name) {
                    return Err(invalid(
                        a,
                        "metadata.name",
                        format!("Invalid value: {:?}: {p}", a.name),
                    ));
                }
                // The status kcp's CRD defaults a new Workspace to, until the scheduler runs.
                if let Some(obj) = a.object.as_deref_mut() {
                    obj["status"] = json!({"phase": "Scheduling"});
                }
                Ok(())
            }
            Operation::Update => {
                let (Some(obj), Some(old)) = (a.object.as_deref(), a.old) else {
                    return Ok(());
                };
                for (ptr, field, what) in [
                    ("/spec/cluster", "spec.cluster", "cluster"),
                    ("/spec/URL", "spec.URL", "URL"),
                ] {
                    let before = s(old, ptr);
                    if !before.is_empty() && s(obj, ptr) != before {
                        return Err(invalid(
                            a,
                            field,
                            format!("Invalid value: {:?}: {what} is immutable", s(obj, ptr)),
                        ));
                    }
                }
                let (before, after) = (old.pointer("/spec/type"), obj.pointer("/spec/type"));
                if before.is_some() && before != after {
                    return Err(invalid(
                        a,
                        "spec.type",
                        "Invalid value: \"object\": name is immutable".into(),
                    ));
                }
                Ok(())
            }
            Operation::Delete => Ok(()),
        }
    }

    fn schema(&self, a: &mut Admission<'_>) -> ApiResult<()> {
        let Some(obj) = a.object.as_deref() else {
            return Ok(());
        };
        let mut errs = schema_errors(a.name, obj);
        if a.operation == Operation::Update
            && let Some(old) = a.old
            && old.get("spec") != obj.get("spec")
        {
            errs.push("spec: Invalid value: \"object\": is immutable".into());
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(forbidden(a, &errs))
        }
    }

    fn export(&self, a: &mut Admission<'_>) -> ApiResult<()> {
        let Some(obj) = a.object.as_deref() else {
            return Ok(());
        };
        let v2 = crate::kcp::convert::to_storage(a.info, obj.clone());
        let mut causes = Vec::new();
        for (i, r) in v2
            .pointer("/spec/resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let group = s(r, "/group");
            let suffix = format!(
                ".{}.{}",
                s(r, "/name"),
                if group.is_empty() { "core" } else { group }
            );
            if !s(r, "/schema").ends_with(&suffix) {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    field: format!("spec.resources[{i}].schema"),
                    message: format!(
                        "Invalid value: {:?}: schema name must end with {suffix}",
                        s(r, "/schema")
                    ),
                });
            }
        }
        let builtins = super::apis::builtins();
        for (i, c) in v2
            .pointer("/spec/permissionClaims")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let (group, resource) = (s(c, "/group"), s(c, "/resource"));
            let builtin = group == "apis.kcp.io"
                || builtins
                    .all()
                    .any(|b| b.group == group && b.resource == resource);
            if !builtin && s(c, "/identityHash").is_empty() {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    field: format!("spec.permissionClaims[{i}].identityHash"),
                    message: format!(
                        "Invalid value: \"\": identityHash is required for API types that are not built-in ({resource}.{group})"
                    ),
                });
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                &a.info.group,
                &a.info.kind,
                a.name,
                causes,
            ))
        }
    }

    fn binding(&self, inner: &KcpInner, a: &mut Admission<'_>) -> ApiResult<()> {
        let Some(obj) = a.object.as_deref() else {
            return Ok(());
        };
        let export_name = s(obj, "/spec/reference/export/name").to_string();
        let ref_path = s(obj, "/spec/reference/export/path").to_string();
        if a.operation == Operation::Update {
            if let Some(old) = a.old
                && old.pointer("/spec/reference") != obj.pointer("/spec/reference")
            {
                return Err(invalid(
                    a,
                    "spec.reference",
                    "Invalid value: \"object\": APIExport reference must not be changed".into(),
                ));
            }
            return Ok(());
        }
        if a.operation != Operation::Create {
            return Ok(());
        }
        if export_name.is_empty() {
            return Err(forbidden(
                a,
                &["spec.reference.export.name: Required value".into()],
            ));
        }
        let path = if ref_path.is_empty() {
            inner
                .path_of(a.cluster)
                .map(|p| p.to_string())
                .unwrap_or_else(|| a.cluster.to_string())
        } else {
            ref_path
        };
        // `bind` on the export, decided by RBAC in the export's workspace.
        let entry = inner.resolve(&path);
        let allowed = entry.as_ref().is_some_and(|e| {
            inner.shard(e.shard).is_some_and(|ss| {
                // A deep SubjectAccessReview: consumers need not be able to enter the export's
                // workspace to bind it.
                ss.shard
                    .auth
                    .rbac(&e.name)
                    .authorize_deep(
                        a.user,
                        &Attributes::resource(
                            "bind",
                            "apis.kcp.io",
                            "apiexports",
                            "",
                            &export_name,
                        ),
                    )
                    .is_allowed()
            })
        });
        if !allowed {
            return Err(ApiError::forbidden(
                &a.info.group,
                &a.info.resource,
                a.name,
                format!(
                    "unable to create APIBinding: no permission to bind to export {path}:{export_name}"
                ),
            ));
        }
        if let (Some(e), Some(obj)) = (entry, a.object.as_deref_mut()) {
            let m = crate::meta::metadata_mut(obj);
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert(
                    EXPORT_LABEL.into(),
                    json!(names::export_label_value(&e.name, &export_name)),
                );
            }
        }
        Ok(())
    }
}

impl AdmissionPlugin for KcpAdmission {
    fn admit(&self, _shard: &Shard, a: &mut Admission<'_>) -> ApiResult<()> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(());
        };
        if a.operation == Operation::Delete {
            return Ok(());
        }
        match (a.info.group.as_str(), a.info.resource.as_str()) {
            ("tenancy.kcp.io", "workspaces") if a.subresource.is_none() => self.workspace(a),
            ("apis.kcp.io", "apiresourceschemas") => self.schema(a),
            ("apis.kcp.io", "apiexports") => {
                stamp_path(&inner, a);
                if a.subresource.is_none() {
                    self.export(a)?;
                }
                Ok(())
            }
            ("apis.kcp.io", "apibindings") => {
                stamp_path(&inner, a);
                if a.subresource.is_none() {
                    self.binding(&inner, a)?;
                }
                Ok(())
            }
            ("core.kcp.io", "logicalclusters") => {
                stamp_path(&inner, a);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
