//! `metadata.managedFields`: decoding and encoding the entries, and the bookkeeping of non-apply
//! writes (create, update, patch) that kube-apiserver's field manager does.
//!
//! Managers are identified as kube-apiserver identifies them: an `Apply` entry by (manager,
//! subresource), an `Update` entry by (manager, apiVersion, subresource). Entries are written sorted
//! like kube-apiserver sorts them (Apply before Update, then by time, manager, apiVersion,
//! subresource), and at most ten `Update` entries are kept: the oldest are folded into
//! `ancient-changes`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::fieldpath::{FieldSet, PathElement};
use super::shape::TypeShape;
use super::typed::{self, Comparison};

/// What a managedFields entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write (create, update, non-apply patch).
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One decoded managedFields entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManagedEntry {
    /// The field manager's name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The group/version the fields were set through.
    pub api_version: String,
    /// RFC 3339 time of the last change by this manager, if recorded.
    pub time: Option<String>,
    /// The subresource written (`status`), or empty for the main resource.
    pub subresource: String,
    fields: FieldSet,
    /// The `fieldsV1` this entry was decoded from, while `fields` still equals it: unchanged entries
    /// are written back as they were, without encoding them again (as kube-apiserver does).
    encoded: Option<Value>,
}

impl ManagedEntry {
    /// An entry owning `fields`.
    pub(crate) fn new(
        manager: impl Into<String>,
        operation: Operation,
        api_version: impl Into<String>,
        subresource: impl Into<String>,
        time: Option<String>,
        fields: FieldSet,
    ) -> ManagedEntry {
        ManagedEntry {
            manager: manager.into(),
            operation,
            api_version: api_version.into(),
            time,
            subresource: subresource.into(),
            fields,
            encoded: None,
        }
    }

    /// The owned fields.
    pub(crate) fn fields(&self) -> &FieldSet {
        &self.fields
    }

    /// Replaces the owned fields.
    pub(crate) fn set_fields(&mut self, fields: FieldSet) {
        self.fields = fields;
        self.encoded = None;
    }

    /// Takes over `previous`'s encoded `fieldsV1` if it owns the same fields.
    pub(crate) fn inherit_encoding(&mut self, previous: ManagedEntry) {
        if self.encoded.is_none() && previous.fields == self.fields {
            self.encoded = previous.encoded;
        }
    }

    /// Gives up the fields of `other`.
    pub(crate) fn give_up(&mut self, other: &FieldSet) {
        if self.fields.subtract(other) {
            self.encoded = None;
        }
    }

    /// Whether `self` and `other` are the same manager in kube-apiserver's sense.
    pub(crate) fn same_manager(&self, other: &ManagedEntry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// The manager as kube-apiserver names it in conflict messages: `"kubectl"`,
    /// `"kubectl-edit" using v1`, `"x" with subresource "status"`.
    pub(crate) fn display_name(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }

    fn into_json(self) -> Value {
        let mut m = Map::new();
        m.insert("apiVersion".into(), Value::String(self.api_version));
        m.insert("fieldsType".into(), json!("FieldsV1"));
        let fields_v1 = match self.encoded {
            Some(v) => v,
            None => self.fields.to_fields_v1(),
        };
        m.insert("fieldsV1".into(), fields_v1);
        if !self.manager.is_empty() {
            m.insert("manager".into(), Value::String(self.manager));
        }
        m.insert("operation".into(), json!(self.operation.as_str()));
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::String(self.subresource));
        }
        if let Some(t) = self.time {
            m.insert("time".into(), Value::String(t));
        }
        Value::Object(m)
    }

    fn from_json(v: Value) -> Result<ManagedEntry, String> {
        let Value::Object(mut m) = v else {
            return Err("managedFields entries must be objects".into());
        };
        let mut s = |k: &str| match m.remove(k) {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        let manager = s("manager");
        let api_version = s("apiVersion");
        let subresource = s("subresource");
        let fields_type = s("fieldsType");
        let operation = match s("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("unknown operation {other:?}")),
        };
        if fields_type != "FieldsV1" {
            return Err(format!(
                "error decoding versioned set: unknown fieldsType {fields_type}"
            ));
        }
        let time = match m.remove("time") {
            Some(Value::String(t)) => Some(t),
            _ => None,
        };
        let (fields, encoded) = match m.remove("fieldsV1") {
            None | Some(Value::Null) => (FieldSet::new(), None),
            Some(f) => (FieldSet::from_fields_v1(&f)?, Some(f)),
        };
        Ok(ManagedEntry {
            manager,
            operation,
            api_version,
            time,
            subresource,
            fields,
            encoded,
        })
    }
}

/// All managers of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Managed {
    /// The entries, one per manager identity.
    pub(crate) entries: Vec<ManagedEntry>,
}

/// The name of the Update entry that collects the oldest updates once there are too many.
const ANCIENT_CHANGES: &str = "ancient-changes";
/// kube-apiserver's cap on Update entries.
const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager that owns what an object held before its first apply, if it had no managedFields.
pub(crate) const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Paths no manager owns: identity and server-maintained metadata (kube-apiserver's strip set).
pub(crate) fn strip_meta(set: &FieldSet) -> FieldSet {
    set.difference(strip_set())
}

/// [`strip_meta`] on an entry, in place.
pub(crate) fn strip_meta_in_place(entry: &mut ManagedEntry) {
    entry.give_up(strip_set());
}

fn strip_set() -> &'static FieldSet {
    static STRIP: OnceLock<FieldSet> = OnceLock::new();
    STRIP.get_or_init(|| {
        let f = |s: &str| PathElement::Field(s.to_string());
        let mut strip = FieldSet::new();
        strip.insert(&[f("apiVersion")]);
        strip.insert(&[f("kind")]);
        strip.insert(&[f("metadata")]);
        for name in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            strip.insert(&[f("metadata"), f(name)]);
        }
        strip
    })
}

impl Managed {
    /// Decodes `metadata.managedFields` of an object (absent or null: no managers).
    pub fn from_object(obj: &Value) -> Result<Managed, String> {
        match obj.pointer("/metadata/managedFields") {
            None => Ok(Managed::default()),
            Some(v) => Managed::from_value(v.clone()),
        }
    }

    /// Decodes a `managedFields` list (null: no managers), keeping each entry's `fieldsV1`.
    pub(crate) fn from_value(v: Value) -> Result<Managed, String> {
        match v {
            Value::Null => Ok(Managed::default()),
            Value::Array(items) => {
                let mut managed = Managed::default();
                for item in items {
                    let entry = ManagedEntry::from_json(item)?;
                    // A repeated identity replaces the earlier entry, as decoding into a map does.
                    managed.entries.retain(|e| !e.same_manager(&entry));
                    managed.entries.push(entry);
                }
                Ok(managed)
            }
            _ => Err("metadata.managedFields must be a list".into()),
        }
    }

    /// Whether there is no manager.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, who: &ManagedEntry) -> Option<usize> {
        self.entries.iter().position(|e| e.same_manager(who))
    }

    /// Removes managers that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|e| !e.fields.is_empty());
    }

    /// Writes the entries into `metadata.managedFields` (removing the field when there are none).
    pub fn write_to(mut self, obj: &mut Value) {
        self.drop_empty();
        self.entries.sort_by(|p, q| {
            p.operation
                .cmp(&q.operation)
                .then_with(|| time_seconds(&p.time).cmp(&time_seconds(&q.time)))
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
        let Some(meta) = metadata_mut(obj) else {
            return;
        };
        if self.entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert(
                "managedFields".into(),
                Value::Array(
                    self.entries
                        .into_iter()
                        .map(ManagedEntry::into_json)
                        .collect(),
                ),
            );
        }
    }

    /// Folds the oldest Update entries into `ancient-changes` (one per apiVersion) beyond ten.
    pub(crate) fn cap_updates(&mut self) {
        let mut updaters: Vec<usize> = (0..self.entries.len())
            .filter(|&i| self.entries[i].operation == Operation::Update)
            .collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        updaters.sort_by(|&a, &b| {
            let (ea, eb) = (&self.entries[a], &self.entries[b]);
            time_seconds(&ea.time)
                .cmp(&time_seconds(&eb.time))
                .then_with(|| ea.manager.cmp(&eb.manager))
        });
        let mut count = updaters.len();
        let mut first_of_version: Vec<(String, usize)> = Vec::new();
        let mut removed = vec![false; self.entries.len()];
        for &i in &updaters {
            if count <= MAX_UPDATE_MANAGERS {
                break;
            }
            let version = self.entries[i].api_version.clone();
            match first_of_version.iter().find(|(v, _)| *v == version) {
                Some(&(_, bucket)) => {
                    // The bucket takes the fields and the more recent time of the folded entry.
                    let folded = self.entries[i].clone();
                    let b = &mut self.entries[bucket];
                    b.manager = ANCIENT_CHANGES.to_string();
                    b.subresource = String::new();
                    let union = b.fields.union(&folded.fields);
                    b.set_fields(union);
                    b.time = folded.time;
                    removed[i] = true;
                    count -= 1;
                }
                None => first_of_version.push((version, i)),
            }
        }
        let mut i = 0;
        self.entries.retain(|_| {
            let keep = !removed[i];
            i += 1;
            keep
        });
    }
}

/// Orders RFC 3339 timestamps by the second, as kube-apiserver does; an absent time sorts first.
fn time_seconds(t: &Option<String>) -> String {
    // Timestamps are written as `YYYY-MM-DDTHH:MM:SSZ`, which orders lexicographically; fractions and
    // offsets are not produced by the server.
    t.as_deref()
        .map(|s| s.get(..19).unwrap_or(s).to_string())
        .unwrap_or_default()
}

pub(crate) fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let o = obj.as_object_mut()?;
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// Which part of an object a write targets, for field ownership.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The group/version the request was served at, e.g. `apps/v1` or `v1`.
    pub api_version: &'a str,
    /// The subresource written (`Some("status")`), or `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// Whether the resource has a status subresource (then writes to the main resource do not own
    /// `.status`, and writes to `/status` own only `.status`).
    pub status_subresource: bool,
}

impl Target<'_> {
    /// Restricts a comparison to the fields this target may own (kube-apiserver's reset fields).
    pub(crate) fn filter(&self, c: Comparison) -> Comparison {
        let status = [PathElement::Field("status".into())];
        match self.subresource {
            Some("status") => c.only(&status),
            None if self.status_subresource => c.without(&status),
            _ => c,
        }
    }

    fn subresource_name(&self) -> String {
        self.subresource.unwrap_or("").to_string()
    }
}

/// The manager name for a non-apply write: the `fieldManager` parameter, else the user agent up to
/// its first `/` (printable characters, at most 128 bytes), else `unknown` — as kube-apiserver does.
pub(crate) fn update_manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let prefix = user_agent.unwrap_or("").split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > 128 {
            break;
        }
        out.push(c);
    }
    if out.is_empty() {
        "unknown".to_string()
    } else {
        out
    }
}

/// Checks a `fieldManager` parameter like kube-apiserver (at most 128 characters, all printable).
/// The error is the `field.Error` text for `fieldManager`.
pub(crate) fn validate_field_manager(name: &str) -> Result<(), String> {
    if name.len() > 128 {
        return Err("fieldManager: Too long: may not be more than 128 bytes".to_string());
    }
    if let Some((i, c)) = name.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(format!(
            "fieldManager[{i}]: Invalid value: {name:?}: invalid character {:?}",
            c
        ));
    }
    Ok(())
}

/// Records a non-apply write (create, update, JSON/merge/strategic patch) in `new`'s managedFields.
///
/// `old` is the stored object (`None` on create). Fields the write added or changed become owned by
/// `manager` (an `Update` entry for `target.api_version`) and are taken from every other manager;
/// removed fields are dropped from everyone. A write that sets `metadata.managedFields` itself
/// replaces the stored entries with its own (an empty list or `[{}]` clears them), as in
/// kube-apiserver; on a subresource the stored entries are always kept. An object that has no
/// managedFields when it is updated stays without them. `now` is the RFC 3339 time to record.
///
/// This never fails: bookkeeping problems leave the object without managedFields, like
/// kube-apiserver's `UpdateNoErrors`.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    shape: &TypeShape,
    target: &Target,
    now: &str,
) {
    let empty = Value::Object(Map::new());
    let old_obj = old.unwrap_or(&empty);
    let live_managed = || Managed::from_object(old_obj).unwrap_or_default();
    let managed = if target.subresource.is_some() {
        live_managed()
    } else {
        match new.pointer("/metadata/managedFields") {
            None | Some(Value::Null) => live_managed(),
            Some(Value::Array(items)) if items.is_empty() => Managed::default(),
            Some(Value::Array(items))
                if items.len() == 1 && items[0].as_object().is_some_and(Map::is_empty) =>
            {
                Managed::default()
            }
            Some(_) => {
                let given = metadata_mut(new).and_then(|m| m.remove("managedFields"));
                match Managed::from_value(given.unwrap_or(Value::Null)) {
                    Ok(m) if !m.is_empty() => m,
                    _ => live_managed(),
                }
            }
        }
    };
    if let Some(meta) = metadata_mut(new) {
        meta.remove("managedFields");
    }
    // Objects updated without managedFields stay without them (kube's skip of non-applied objects).
    if managed.is_empty() && old.is_some() {
        return;
    }
    let managed = update_managed(managed, old_obj, new, manager, shape, target, now);
    managed.write_to(new);
}

/// The Update bookkeeping on decoded managers (`metadata.managedFields` of `old`/`new` is ignored).
pub(crate) fn update_managed(
    mut managed: Managed,
    old: &Value,
    new: &Value,
    manager: &str,
    shape: &TypeShape,
    target: &Target,
    now: &str,
) -> Managed {
    let compare = target.filter(typed::compare(shape, old, new));
    let changed = compare.added.union(&compare.modified);
    for e in &mut managed.entries {
        // Everyone (the writer's own earlier entry included) loses what was removed; others lose what
        // the writer changed, which the writer takes over below.
        e.give_up(&changed);
        e.give_up(&compare.removed);
    }
    let taken = strip_meta(&changed);
    let me = ManagedEntry::new(
        manager,
        Operation::Update,
        target.api_version,
        target.subresource_name(),
        Some(now.to_string()),
        FieldSet::new(),
    );
    match managed.position(&me) {
        Some(i) if !taken.is_empty() => {
            let e = &mut managed.entries[i];
            let union = e.fields.union(&taken);
            e.set_fields(union);
            e.time = Some(now.to_string());
        }
        // The write changed nothing the writer can own: its entry keeps its time.
        Some(_) => {}
        None if !taken.is_empty() => managed.entries.push(ManagedEntry {
            fields: taken,
            ..me
        }),
        None => {}
    }
    managed.drop_empty();
    managed.cap_updates();
    managed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape() -> TypeShape {
        TypeShape::from_crd_schema(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }
        }))
    }

    const MAIN: Target = Target {
        api_version: "x.io/v1",
        subresource: None,
        status_subresource: true,
    };
    const STATUS: Target = Target {
        api_version: "x.io/v1",
        subresource: Some("status"),
        status_subresource: true,
    };

    fn entries(obj: &Value) -> Vec<Value> {
        obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn create_records_an_update_entry_without_identity_fields() {
        let mut new = json!({"apiVersion": "x.io/v1", "kind": "K", "metadata": {"name": "n", "labels": {"l": "1"}},
                             "spec": {"a": "1"}, "status": {"phase": "x"}});
        record_update(
            None,
            &mut new,
            "kubectl-create",
            &shape(),
            &MAIN,
            "2024-01-01T00:00:00Z",
        );
        assert_eq!(
            entries(&new),
            vec![json!({
                "apiVersion": "x.io/v1", "fieldsType": "FieldsV1", "manager": "kubectl-create",
                "operation": "Update", "time": "2024-01-01T00:00:00Z",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:l": {}}}, "f:spec": {".": {}, "f:a": {}}}
            })]
        );
    }

    #[test]
    fn update_moves_ownership_and_removal_drops_it() {
        let s = shape();
        let mut obj = json!({"metadata": {"name": "n"}, "spec": {"a": "1", "b": "1"}});
        record_update(None, &mut obj, "one", &s, &MAIN, "2024-01-01T00:00:00Z");
        let mut next = obj.clone();
        next["spec"]["a"] = json!("2");
        next["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        record_update(
            Some(&obj),
            &mut next,
            "two",
            &s,
            &MAIN,
            "2024-01-01T00:00:01Z",
        );
        let m = Managed::from_object(&next).unwrap();
        assert_eq!(m.entries.len(), 2);
        assert_eq!(m.entries[0].manager, "one");
        assert_eq!(
            m.entries[0].fields().to_fields_v1(),
            json!({"f:spec": {".": {}, "f:b": {}}})
        );
        assert_eq!(
            m.entries[1].fields().to_fields_v1(),
            json!({"f:spec": {"f:a": {}}})
        );
        // Removing b drops it from "one", which then owns only the spec map itself.
        let mut third = next.clone();
        third["spec"].as_object_mut().unwrap().remove("b");
        record_update(
            Some(&next),
            &mut third,
            "two",
            &s,
            &MAIN,
            "2024-01-01T00:00:02Z",
        );
        let m = Managed::from_object(&third).unwrap();
        assert_eq!(m.entries[0].fields().to_fields_v1(), json!({"f:spec": {}}));
    }

    #[test]
    fn status_is_owned_only_through_the_status_subresource() {
        let s = shape();
        let mut obj =
            json!({"metadata": {"name": "n"}, "spec": {"a": "1"}, "status": {"phase": "A"}});
        record_update(None, &mut obj, "ctl", &s, &MAIN, "2024-01-01T00:00:00Z");
        assert_eq!(
            entries(&obj)[0]["fieldsV1"],
            json!({"f:spec": {".": {}, "f:a": {}}})
        );
        let mut next = obj.clone();
        next["status"]["phase"] = json!("B");
        next["spec"]["a"] = json!("changed-but-ignored");
        record_update(
            Some(&obj),
            &mut next,
            "ctl",
            &s,
            &STATUS,
            "2024-01-01T00:00:01Z",
        );
        let m = Managed::from_object(&next).unwrap();
        let status_entry = m
            .entries
            .iter()
            .find(|e| e.subresource == "status")
            .unwrap();
        assert_eq!(
            status_entry.fields().to_fields_v1(),
            json!({"f:status": {"f:phase": {}}})
        );
    }

    #[test]
    fn explicit_managed_fields_replace_or_reset_and_untracked_objects_stay_untracked() {
        let s = shape();
        let mut obj = json!({"metadata": {"name": "n"}, "spec": {"a": "1"}});
        record_update(None, &mut obj, "one", &s, &MAIN, "2024-01-01T00:00:00Z");
        let mut reset = obj.clone();
        reset["metadata"]["managedFields"] = json!([{}]);
        reset["spec"]["a"] = json!("2");
        record_update(
            Some(&obj),
            &mut reset,
            "two",
            &s,
            &MAIN,
            "2024-01-01T00:00:01Z",
        );
        assert!(reset["metadata"].get("managedFields").is_none());
        let mut next = reset.clone();
        next["spec"]["a"] = json!("3");
        record_update(
            Some(&reset),
            &mut next,
            "three",
            &s,
            &MAIN,
            "2024-01-01T00:00:02Z",
        );
        assert!(next["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn update_entries_are_capped_at_ten() {
        let s = shape();
        let mut obj = json!({"metadata": {"name": "n"}, "spec": {"a": "0"}});
        record_update(None, &mut obj, "m0", &s, &MAIN, "2024-01-01T00:00:00Z");
        for i in 1..=11 {
            let mut next = obj.clone();
            next["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
            next["metadata"]["labels"] = json!({format!("l{i}"): "x"});
            if let Some(l) = obj["metadata"].get("labels").and_then(Value::as_object) {
                for (k, v) in l {
                    next["metadata"]["labels"][k] = v.clone();
                }
            }
            record_update(
                Some(&obj),
                &mut next,
                &format!("m{i}"),
                &s,
                &MAIN,
                &format!("2024-01-01T00:00:{i:02}Z"),
            );
            obj = next;
        }
        let m = Managed::from_object(&obj).unwrap();
        assert_eq!(m.entries.len(), 10);
        assert!(m.entries.iter().any(|e| e.manager == ANCIENT_CHANGES));
    }

    #[test]
    fn manager_names_follow_kube_defaults() {
        assert_eq!(
            update_manager_name(Some("ctl"), Some("kubectl/v1.30")),
            "ctl"
        );
        assert_eq!(
            update_manager_name(None, Some("kubectl/v1.30.0 (linux/amd64)")),
            "kubectl"
        );
        assert_eq!(update_manager_name(Some(""), None), "unknown");
        assert!(validate_field_manager("ok").is_ok());
        assert!(validate_field_manager(&"x".repeat(129)).is_err());
        assert!(validate_field_manager("a\u{7}").is_err());
    }

    #[test]
    fn display_names_match_conflict_messages() {
        let e = ManagedEntry::new(
            "kubectl",
            Operation::Update,
            "v1",
            "",
            None,
            FieldSet::new(),
        );
        assert_eq!(e.display_name(), r#""kubectl" using v1"#);
        let a = ManagedEntry {
            operation: Operation::Apply,
            subresource: "status".into(),
            ..e
        };
        assert_eq!(a.display_name(), r#""kubectl" with subresource "status""#);
    }
}
