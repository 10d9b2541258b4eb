//! Server-side apply (`application/apply-patch+yaml`): merging an applied configuration into the live
//! object, pruning what the applier no longer sets, refusing or forcing conflicts, and recording
//! ownership in managedFields — kube-apiserver's field manager stack, in order:
//!
//! 1. the applied configuration must name the served kind and version and carry no managedFields;
//! 2. an object without managedFields gets its current fields attributed to `before-first-apply`;
//! 3. the configuration is merged into the live object; fields the same manager applied last time and
//!    omits now are removed unless another manager owns them;
//! 4. fields the configuration changes that other managers own are conflicts (409) unless forced, in
//!    which case the applier takes them over; `kubectl` may take over fields still matching the
//!    client-side `last-applied-configuration` annotation, which it then keeps in sync;
//! 5. the applier's entry records what it applied (identity and server-set metadata excluded), its
//!    time changes when the object did, and Update entries are capped.
//!
//! With a status subresource, an apply to the main resource ignores `.status` and an apply to
//! `/status` only touches `.status`.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::error::{ApplyError, Conflict};
use super::fieldpath::FieldSet;
use super::managed::{self, BEFORE_FIRST_APPLY, Managed, ManagedEntry, Operation, Target};
use super::shape::TypeShape;
use super::typed;

/// The annotation client-side `kubectl apply` keeps its last configuration in.
pub(crate) const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// One server-side apply request.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// The `fieldManager` query parameter (required for apply).
    pub manager: &'a str,
    /// The `force` query parameter: take over conflicting fields.
    pub force: bool,
    /// The kind served at the request's URL (the configuration must have it).
    pub kind: &'a str,
    /// Version, subresource and status-subresource facts of the request.
    pub target: Target<'a>,
    /// The RFC 3339 time to record for the applier.
    pub now: &'a str,
}

/// Applies `applied` to `live` (`None`: the object does not exist yet and is created by the apply)
/// and returns the new object with updated managedFields.
///
/// The result keeps whatever `metadata.resourceVersion`/`uid` the configuration carried, so the
/// caller's usual optimistic-concurrency checks turn them into preconditions as in kube-apiserver.
/// Creating through a subresource, defaulting and validation are the caller's business.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    shape: &TypeShape,
    req: &ApplyRequest,
) -> Result<Value, ApplyError> {
    if req.manager.is_empty() {
        return Err(ApplyError::InvalidFieldManager(
            "fieldManager: Required value: is required for apply patch".to_string(),
        ));
    }
    managed::validate_field_manager(req.manager).map_err(ApplyError::InvalidFieldManager)?;
    let Value::Object(applied_map) = applied else {
        return Err(ApplyError::BadRequest(
            "error decoding YAML: the applied configuration must be an object".into(),
        ));
    };
    check_type(applied_map, req)?;
    match applied.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => {}
        Some(_) => {
            return Err(ApplyError::BadRequest(
                "metadata.managedFields must be nil".into(),
            ));
        }
    }

    let config = restrict_to_target(applied, &req.target);
    let config_set = typed::to_field_set(shape, &config, true).map_err(|errs| {
        ApplyError::Failed(format!(
            "failed to create typed patch object ({}): {}",
            object_id(applied_map),
            validation_message(&errs)
        ))
    })?;

    let created;
    let live_obj: &Value = match live {
        Some(l) => l,
        None => {
            created = json!({"apiVersion": req.target.api_version, "kind": req.kind});
            &created
        }
    };
    // Only the managedFields list is copied; merging and comparing leave it out of the object.
    let mut managers = Managed::from_object(live_obj)
        .map_err(|e| ApplyError::Failed(format!("failed to decode managed fields: {e}")))?;
    if managers.is_empty() && live.is_some() {
        let empty = json!({"apiVersion": req.target.api_version, "kind": req.kind});
        managers = managed::update_managed(
            managers,
            &empty,
            live_obj,
            BEFORE_FIRST_APPLY,
            shape,
            &req.target,
            req.now,
        );
    }

    // Only kubectl may retry (see below), so only then keep copies for a second attempt.
    let retry = (req.manager == "kubectl").then(|| (config_set.clone(), managers.clone()));
    let outcome = match apply_core(
        live_obj, &config, config_set, managers, shape, req, req.force,
    ) {
        Err(ApplyError::Conflicts(conflicts)) if retry.is_some() => {
            // kubectl moving from client-side to server-side apply may take over fields that still
            // have the value of its last client-side configuration.
            match (allowed_from_last_applied(live_obj, shape), retry) {
                (Some(allowed), Some((config_set, managers))) => {
                    let remaining: Vec<Conflict> = conflicts
                        .iter()
                        .filter(|c| !allowed.contains(&c.field))
                        .cloned()
                        .collect();
                    if remaining.is_empty() {
                        apply_core(live_obj, &config, config_set, managers, shape, req, true)
                    } else {
                        Err(ApplyError::Conflicts(remaining))
                    }
                }
                _ => Err(ApplyError::Conflicts(conflicts)),
            }
        }
        other => other,
    };
    let (merged, managers) = outcome?;
    let mut object = merged.unwrap_or_else(|| live_obj.clone());
    if req.manager == "kubectl" {
        sync_last_applied(&mut object, applied_map);
    }
    managers.write_to(&mut object);
    Ok(object)
}

/// The apply itself (the live object's managedFields are ignored); returns the new object (`None`:
/// unchanged) and managers.
fn apply_core(
    live: &Value,
    config: &Value,
    config_set: FieldSet,
    mut managers: Managed,
    shape: &TypeShape,
    req: &ApplyRequest,
    force: bool,
) -> Result<(Option<Value>, Managed), ApplyError> {
    let mut me = ManagedEntry::new(
        req.manager,
        Operation::Apply,
        req.target.api_version,
        req.target.subresource.unwrap_or(""),
        None,
        config_set,
    );
    let previous = managers
        .entries
        .iter()
        .position(|e| e.same_manager(&me))
        .map(|i| managers.entries.remove(i));
    me.time = previous.as_ref().and_then(|p| p.time.clone());

    let mut merged = typed::merge(shape, live, config);
    if let Some(prev) = previous.as_ref().filter(|p| !p.fields().is_empty()) {
        let mut owned: Vec<&FieldSet> = managers.entries.iter().map(|e| e.fields()).collect();
        owned.push(me.fields());
        typed::prune(shape, &mut merged, prev.fields(), &owned);
    }

    // Conflicts and removals only concern other managers: without any, there is nothing to compare.
    if !managers.entries.is_empty() {
        let comparison = req.target.filter(typed::compare(shape, live, &merged));
        let changed = comparison.added.union(&comparison.modified);
        let mut conflicts = Vec::new();
        let mut others: Vec<&mut ManagedEntry> = managers.entries.iter_mut().collect();
        others.sort_by(|a, b| {
            (&a.manager, a.operation, &a.api_version, &a.subresource).cmp(&(
                &b.manager,
                b.operation,
                &b.api_version,
                &b.subresource,
            ))
        });
        for other in others {
            let clash = other.fields().intersection(&changed);
            if !clash.is_empty() {
                for path in clash.paths() {
                    conflicts.push(Conflict {
                        manager: other.display_name(),
                        field: path.to_string(),
                    });
                }
                other.give_up(&clash);
            }
            other.give_up(&comparison.removed);
        }
        if !conflicts.is_empty() && !force {
            return Err(ApplyError::Conflicts(conflicts));
        }
    }

    let object_changed = !typed::same_content(&merged, live);
    managed::strip_meta_in_place(&mut me);
    if let Some(prev) = previous {
        me.inherit_encoding(prev);
    }
    if object_changed {
        me.time = Some(req.now.to_string());
    }
    managers.entries.push(me);
    managers.drop_empty();
    managers.cap_updates();
    Ok((object_changed.then_some(merged), managers))
}

/// The configuration must be of the kind and version served at the URL.
fn check_type(applied: &Map<String, Value>, req: &ApplyRequest) -> Result<(), ApplyError> {
    let api_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = applied.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != req.target.api_version || kind != req.kind {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    Ok(())
}

/// Drops what this target does not own: `.status` on the main resource of a type with a status
/// subresource, everything but `.status` (and the identity) on `/status`.
fn restrict_to_target<'a>(applied_value: &'a Value, target: &Target) -> Cow<'a, Value> {
    let Value::Object(applied) = applied_value else {
        return Cow::Borrowed(applied_value);
    };
    match target.subresource {
        Some("status") => {
            let mut only = Map::new();
            for k in ["apiVersion", "kind"] {
                if let Some(v) = applied.get(k) {
                    only.insert(k.to_string(), v.clone());
                }
            }
            if let Some(Value::Object(meta)) = applied.get("metadata") {
                let keep: Map<String, Value> = meta
                    .iter()
                    .filter(|(k, _)| {
                        matches!(k.as_str(), "name" | "namespace" | "uid" | "resourceVersion")
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                only.insert("metadata".into(), Value::Object(keep));
            }
            if let Some(status) = applied.get("status") {
                only.insert("status".into(), status.clone());
            }
            Cow::Owned(Value::Object(only))
        }
        None if target.status_subresource => {
            let mut config = applied.clone();
            config.remove("status");
            Cow::Owned(Value::Object(config))
        }
        _ => Cow::Borrowed(applied_value),
    }
}

/// `<namespace>/<name>; <group>/<version>, Kind=<kind>`, as kube-apiserver names the object.
fn object_id(applied: &Map<String, Value>) -> String {
    let s = |p: &str| {
        applied
            .get("metadata")
            .and_then(|m| m.get(p))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let api_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = applied.get("kind").and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}; {group}/{version}, Kind={kind}",
        s("namespace"),
        s("name")
    )
}

fn validation_message(errs: &[String]) -> String {
    if let [only] = errs {
        return only.clone();
    }
    let mut lines = vec!["errors:".to_string()];
    lines.extend(errs.iter().map(|e| format!("  {e}")));
    lines.join("\n")
}

/// The fields of the last client-side configuration that still hold their value in the live object.
fn allowed_from_last_applied(live: &Value, shape: &TypeShape) -> Option<Vec<String>> {
    let text = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()?;
    let last: Value = serde_json::from_str(text).ok()?;
    let set = typed::to_field_set(shape, &last, false).ok()?;
    let differing = typed::compare(shape, &last, live).modified;
    Some(
        set.difference(&differing)
            .paths()
            .into_iter()
            .map(|p| p.to_string())
            .collect(),
    )
}

/// Keeps kubectl's client-side annotation in step with what it applies server-side, if present.
fn sync_last_applied(object: &mut Value, applied: &Map<String, Value>) {
    let has = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .is_some();
    if !has {
        return;
    }
    let mut copy = applied.clone();
    if let Some(Value::Object(meta)) = copy.get_mut("metadata")
        && let Some(Value::Object(annotations)) = meta.get_mut("annotations")
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
    let text = Value::Object(copy).to_string();
    if let Some(Value::Object(annotations)) = object.pointer_mut("/metadata/annotations") {
        annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(text));
    }
}
