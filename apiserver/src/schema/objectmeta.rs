//! `metadata` and type meta: coercion of `metadata` to `ObjectMeta`'s fields (dropping unknown
//! ones), and the checks of `ValidateObjectMetaAccessor` (names, namespace, labels,
//! annotations, owner references, finalizers, managed fields) with apimachinery's messages.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::errors::{BadValue, FieldError, child, go_quote, index, key};
use super::structural::{Additional, NodeId, Structural};

/// How an object's `metadata.name` is checked; kube-apiserver picks one per resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: custom resources and most built-ins (configmaps, secrets, …).
    DnsSubdomain,
    /// `NameIsDNSLabel`: namespaces.
    DnsLabel,
    /// `NameIsDNS1035Label`: services.
    Dns1035Label,
    /// `ValidatePathSegmentName`: RBAC objects and embedded resources (not `.`/`..`, no `/`/`%`).
    PathSegment,
}

impl NameRule {
    /// The problems with `name`; `prefix` checks a `generateName` (a trailing `-` is fine).
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name = if prefix
            && matches!(
                self,
                NameRule::DnsSubdomain | NameRule::DnsLabel | NameRule::Dns1035Label
            ) {
            // maskTrailingDash
            masked = match name.strip_suffix('-') {
                Some(s) if !s.is_empty() => format!("{s}a"),
                _ => name.to_string(),
            };
            masked.as_str()
        } else {
            name
        };
        match self {
            NameRule::DnsSubdomain => dns1123_subdomain(name),
            NameRule::DnsLabel => dns1123_label(name),
            NameRule::Dns1035Label => dns1035_label(name),
            NameRule::PathSegment => path_segment(name, prefix),
        }
    }
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn dns1123_subdomain_fmt() -> String {
    format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*")
}

// Constant patterns built from the constants above; the tests exercise each.
static DNS1123_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1123_LABEL_FMT}$")).expect("constant pattern"));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!("^{}$", dns1123_subdomain_fmt())).expect("constant pattern")
});
static DNS1035_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1035_LABEL_FMT}$")).expect("constant pattern"));
static QUALIFIED_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{QUALIFIED_NAME_FMT}$")).expect("constant pattern"));
static LABEL_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^({QUALIFIED_NAME_FMT})?$")).expect("constant pattern"));

/// apimachinery `RegexError` (util/validation/validation.go), whose examples each end in `', `,
/// so that two of them read `'a',  or 'b', regex …`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `IsDNS1123Subdomain`.
pub(crate) fn dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !DNS1123_SUBDOMAIN.is_match(v) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1123Label`.
pub(crate) fn dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1123_LABEL.is_match(v) {
        if DNS1123_SUBDOMAIN.is_match(v) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1035Label`.
pub(crate) fn dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1035_LABEL.is_match(v) {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsValidPathSegmentName` / `IsValidPathSegmentPrefix`.
fn path_segment(v: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if v == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| v.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `IsQualifiedName`: label keys, annotation keys, finalizers.
pub(crate) fn qualified_name(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub(crate) fn label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !LABEL_VALUE.is_match(v) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

fn str_field<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

/// `schema.ParseGroupVersion`: `(group, version)`, or the Go error text.
pub(crate) fn parse_group_version(gv: &str) -> Result<(&str, &str), String> {
    if gv.is_empty() || gv == "/" {
        return Ok(("", ""));
    }
    match gv.matches('/').count() {
        0 => Ok(("", gv)),
        1 => Ok(gv.split_once('/').unwrap_or(("", gv))),
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// `ValidateLabels`: qualified-name keys and label values, reported at `path`.
pub(crate) fn validate_labels(labels: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        for m in qualified_name(k) {
            errs.push(FieldError::invalid(path, BadValue::str(k.clone()), m));
        }
        let v = v.as_str().unwrap_or("");
        for m in label_value(v) {
            errs.push(FieldError::invalid(path, BadValue::str(v), m));
        }
    }
    errs
}

/// `ValidateAnnotations`: qualified-name keys (case-insensitive) and a total size of at most
/// 256 KiB, reported at `path`.
pub(crate) fn validate_annotations(ann: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut size = 0;
    for (k, v) in ann {
        for m in qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, BadValue::str(k.clone()), m));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > 256 * 1024 {
        errs.push(FieldError::too_long(path, Some(256 * 1024)));
    }
    errs
}

/// `ValidateObjectMetaAccessor` for the `metadata` of an object at `path` (`metadata` for a
/// resource root). `namespaced` says whether the resource requires a namespace.
pub(crate) fn validate_object_meta(
    meta: &Map<String, Value>,
    namespaced: bool,
    rule: NameRule,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        for m in rule.check(generate_name, true) {
            errs.push(FieldError::invalid(
                &child(path, "generateName"),
                BadValue::str(generate_name),
                m,
            ));
        }
    }
    let name = str_field(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            &child(path, "name"),
            "name or generateName is required",
        ));
    } else {
        for m in rule.check(name, false) {
            errs.push(FieldError::invalid(
                &child(path, "name"),
                BadValue::str(name),
                m,
            ));
        }
    }
    let namespace = str_field(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(&child(path, "namespace"), ""));
        } else {
            for m in dns1123_label(namespace) {
                errs.push(FieldError::invalid(
                    &child(path, "namespace"),
                    BadValue::str(namespace),
                    m,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            &child(path, "namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64)
        && g < 0
    {
        errs.push(FieldError::invalid(
            &child(path, "generation"),
            BadValue::Json(g.into()),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        errs.extend(validate_labels(labels, &child(path, "labels")));
    }
    if let Some(ann) = meta.get("annotations").and_then(Value::as_object) {
        errs.extend(validate_annotations(ann, &child(path, "annotations")));
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        let p = child(path, "ownerReferences");
        let mut controller = String::new();
        for r in refs.iter().filter_map(Value::as_object) {
            let api_version = str_field(r, "apiVersion");
            let version = parse_group_version(api_version)
                .map(|(_, v)| v)
                .unwrap_or("");
            if version.is_empty() {
                errs.push(FieldError::invalid(
                    &child(&p, "apiVersion"),
                    BadValue::str(api_version),
                    "version must not be empty",
                ));
            }
            for f in ["kind", "name", "uid"] {
                if str_field(r, f).is_empty() {
                    errs.push(FieldError::invalid(
                        &child(&p, f),
                        BadValue::str(""),
                        "must not be empty",
                    ));
                }
            }
            if r.get("controller").and_then(Value::as_bool) == Some(true) {
                let current = format!("{}/{}", str_field(r, "kind"), str_field(r, "name"));
                if controller.is_empty() {
                    controller = current;
                } else {
                    errs.push(FieldError::invalid(
                        &p,
                        BadValue::Json(Value::Array(refs.clone())),
                        format!("Only one reference can have Controller set to true. Found \"true\" in references for {controller} and {current}"),
                    ));
                }
            }
        }
    }
    if let Some(fins) = meta.get("finalizers").and_then(Value::as_array) {
        let p = child(path, "finalizers");
        let names: Vec<&str> = fins.iter().filter_map(Value::as_str).collect();
        for f in &names {
            for m in qualified_name(f) {
                errs.push(FieldError::invalid(&p, BadValue::str(*f), m));
            }
        }
        if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
            errs.push(FieldError::invalid(
                &p,
                BadValue::Rendered(super::errors::go_string_slice(
                    &names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                )),
                "finalizer orphan and foregroundDeletion cannot be both set",
            ));
        }
    }
    if let Some(mf) = meta.get("managedFields").and_then(Value::as_array) {
        let p = child(path, "managedFields");
        for (i, e) in mf.iter().enumerate() {
            let Some(e) = e.as_object() else { continue };
            let op = str_field(e, "operation");
            if op != "Apply" && op != "Update" {
                errs.push(FieldError::invalid(
                    &child(&index(&p, i), "operation"),
                    BadValue::str(op),
                    "must be `Apply` or `Update`",
                ));
            }
            let ft = str_field(e, "fieldsType");
            if !ft.is_empty() && ft != "FieldsV1" {
                errs.push(FieldError::invalid(
                    &child(&index(&p, i), "fieldsType"),
                    BadValue::str(ft),
                    "must be `FieldsV1`",
                ));
            }
            if str_field(e, "manager").len() > 128 {
                errs.push(FieldError::too_long(
                    &child(&index(&p, i), "manager"),
                    Some(128),
                ));
            }
        }
    }
    errs
}

/// The customResourceValidator's type meta check: `kind` and `apiVersion` must name this
/// resource.
pub(crate) fn validate_type_meta(
    obj: &Value,
    group: &str,
    version: &str,
    kind: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let got_kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_kind != kind {
        errs.push(FieldError::invalid(
            "kind",
            BadValue::str(got_kind),
            format!("must be {kind}"),
        ));
    }
    let want = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let got = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if got != want {
        errs.push(FieldError::invalid(
            "apiVersion",
            BadValue::str(got),
            format!("must be {want}"),
        ));
    }
    errs
}

/// `objectmeta.Validate(nil, obj, s, false)`: every embedded resource below the root must have
/// a string `apiVersion` and `kind` and valid metadata.
pub(crate) fn validate_embedded(
    s: &Structural,
    id: NodeId,
    v: &Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let node = s.node(id);
    match v {
        Value::Object(obj) => {
            if node.embedded && !path.is_empty() {
                validate_embedded_resource(obj, path, errs);
            }
            if !node.embedded_below {
                return;
            }
            let relevant = |c: NodeId| s.node(c).embedded || s.node(c).embedded_below;
            for (k, x) in obj {
                if let Some(c) = node.property(k) {
                    if relevant(c) {
                        validate_embedded(s, c, x, &child(path, k), errs);
                    }
                } else if let Additional::Schema(c) = node.additional
                    && relevant(c)
                {
                    validate_embedded(s, c, x, &key(path, k), errs);
                }
            }
        }
        Value::Array(items)
            if node.embedded_below || node.items.is_some_and(|i| s.node(i).embedded) =>
        {
            if let Some(item) = node.items {
                for (i, x) in items.iter().enumerate() {
                    validate_embedded(s, item, x, &index(path, i), errs);
                }
            }
        }
        _ => {}
    }
}

fn validate_embedded_resource(obj: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    if !obj.contains_key("apiVersion") {
        errs.push(FieldError::required(&child(path, "apiVersion"), ""));
    }
    if !obj.contains_key("kind") {
        errs.push(FieldError::required(&child(path, "kind"), ""));
    }
    for (k, v) in obj {
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    &child(path, "apiVersion"),
                    BadValue::Json(v.clone()),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(
                    &child(path, "apiVersion"),
                    BadValue::str(""),
                    "must not be empty",
                )),
                Some(av) => {
                    if let Err(e) = parse_group_version(av) {
                        errs.push(FieldError::invalid(
                            &child(path, "apiVersion"),
                            BadValue::str(av),
                            e,
                        ));
                    }
                }
            },
            "kind" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    &child(path, "kind"),
                    BadValue::Json(v.clone()),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(
                    &child(path, "kind"),
                    BadValue::str(""),
                    "must not be empty",
                )),
                Some(kind) => {
                    let e = dns1035_label(&kind.to_lowercase());
                    if !e.is_empty() {
                        errs.push(FieldError::invalid(
                            &child(path, "kind"),
                            BadValue::str(kind),
                            format!(
                                "may have mixed case, but should otherwise match: {}",
                                e.join(",")
                            ),
                        ));
                    }
                }
            },
            "metadata" => {
                if let Some(meta) = v.as_object() {
                    let mut meta = meta.clone();
                    if str_field(&meta, "name").is_empty() {
                        meta.insert("name".into(), Value::String("fakename".into()));
                    }
                    let namespaced = !str_field(&meta, "namespace").is_empty();
                    errs.extend(validate_object_meta(
                        &meta,
                        namespaced,
                        NameRule::PathSegment,
                        &child(path, "metadata"),
                    ));
                }
            }
            _ => {}
        }
    }
}

// ---- coercion ---------------------------------------------------------------------------------

/// Go type of each `ObjectMeta` field, for messages and for coercion.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MetaType {
    Str,
    Int64,
    Time,
    StrMap,
    StrList,
    OwnerRefs,
    ManagedFields,
}

const META_FIELDS: [(&str, MetaType); 15] = [
    ("annotations", MetaType::StrMap),
    ("creationTimestamp", MetaType::Time),
    ("deletionGracePeriodSeconds", MetaType::Int64),
    ("deletionTimestamp", MetaType::Time),
    ("finalizers", MetaType::StrList),
    ("generateName", MetaType::Str),
    ("generation", MetaType::Int64),
    ("labels", MetaType::StrMap),
    ("managedFields", MetaType::ManagedFields),
    ("name", MetaType::Str),
    ("namespace", MetaType::Str),
    ("ownerReferences", MetaType::OwnerRefs),
    ("resourceVersion", MetaType::Str),
    ("selfLink", MetaType::Str),
    ("uid", MetaType::Str),
];

const OWNER_REF_FIELDS: [(&str, bool); 6] = [
    ("apiVersion", false),
    ("blockOwnerDeletion", true),
    ("controller", true),
    ("kind", false),
    ("name", false),
    ("uid", false),
];
const MANAGED_FIELDS_FIELDS: [&str; 7] = [
    "apiVersion",
    "fieldsType",
    "fieldsV1",
    "manager",
    "operation",
    "subresource",
    "time",
];

fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

fn unmarshal_error(v: &Value, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field ObjectMeta.{field} of type {go_type}",
        go_json_type(v)
    )
}

/// Normalises a `metav1.Time`: RFC 3339 in, UTC seconds out (Go drops fractions and zones).
fn coerce_time(s: &str) -> Result<String, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        })
        .map_err(|_| {
            format!(
                "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse {} as \"2006\"",
                go_quote(s),
                go_quote(s)
            )
        })
}

/// `objectmeta.Coerce` for one `metadata` value: checks it decodes as `ObjectMeta`, drops
/// fields `ObjectMeta` does not have (recording `<path>.<field>` in `unknown`), drops empty
/// values as Go's `omitempty` round trip does, and normalises timestamps.
///
/// With `drop_invalid` (reading from storage) malformed fields are dropped instead of
/// reported.
pub(crate) fn coerce_metadata(
    meta: &mut Value,
    path: &str,
    unknown: &mut Option<&mut Vec<String>>,
    drop_invalid: bool,
) -> Result<(), FieldError> {
    let fail =
        |meta: &Value, msg: String| FieldError::invalid(path, BadValue::Json(meta.clone()), msg);
    let snapshot = if drop_invalid {
        Value::Null
    } else {
        meta.clone()
    };
    let Some(m) = meta.as_object_mut() else {
        if meta.is_null() {
            return Ok(());
        }
        let msg = format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            go_json_type(meta)
        );
        return Err(fail(meta, msg));
    };
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        let Some(ty) = META_FIELDS.iter().find(|(n, _)| *n == k).map(|(_, t)| *t) else {
            if let Some(u) = unknown.as_deref_mut() {
                u.push(child(path, &k));
            }
            m.remove(&k);
            continue;
        };
        let v = m.get_mut(&k).map(std::mem::take).unwrap_or(Value::Null);
        let coerced = coerce_meta_field(&k, ty, v, path, unknown);
        match coerced {
            Ok(Some(v)) => {
                m.insert(k, v);
            }
            Ok(None) => {
                m.remove(&k);
            }
            Err(msg) if drop_invalid => {
                let _ = msg;
                m.remove(&k);
            }
            Err(msg) => return Err(fail(&snapshot, msg)),
        }
    }
    Ok(())
}

/// One field: `Ok(None)` drops it (null or empty, as `omitempty` does).
fn coerce_meta_field(
    k: &str,
    ty: MetaType,
    v: Value,
    path: &str,
    unknown: &mut Option<&mut Vec<String>>,
) -> Result<Option<Value>, String> {
    if v.is_null() {
        return Ok(None);
    }
    match ty {
        MetaType::Str => match v {
            Value::String(s) if s.is_empty() => Ok(None),
            Value::String(_) => Ok(Some(v)),
            other => Err(unmarshal_error(&other, k, "string")),
        },
        MetaType::Int64 => match v.as_i64() {
            // generation is a plain int64 (omitempty drops 0); the grace period is a pointer.
            Some(0) if k == "generation" => Ok(None),
            Some(_) => Ok(Some(v)),
            None => Err(unmarshal_error(&v, k, "int64")),
        },
        MetaType::Time => match &v {
            Value::String(s) => coerce_time(s).map(|t| Some(Value::String(t))),
            other => Err(unmarshal_error(other, k, "v1.Time")),
        },
        MetaType::StrMap => match v {
            Value::Object(map) => {
                if map.is_empty() {
                    return Ok(None);
                }
                for (mk, mv) in &map {
                    if !mv.is_string() && !mv.is_null() {
                        let _ = mk;
                        return Err(unmarshal_error(mv, k, "string"));
                    }
                }
                let map: Map<String, Value> = map
                    .into_iter()
                    .map(|(a, b)| {
                        (
                            a,
                            if b.is_null() {
                                Value::String(String::new())
                            } else {
                                b
                            },
                        )
                    })
                    .collect();
                Ok(Some(Value::Object(map)))
            }
            other => Err(unmarshal_error(&other, k, "map[string]string")),
        },
        MetaType::StrList => match v {
            Value::Array(items) => {
                if items.is_empty() {
                    return Ok(None);
                }
                if let Some(bad) = items.iter().find(|x| !x.is_string()) {
                    return Err(unmarshal_error(bad, k, "string"));
                }
                Ok(Some(Value::Array(items)))
            }
            other => Err(unmarshal_error(&other, k, "[]string")),
        },
        MetaType::OwnerRefs | MetaType::ManagedFields => {
            let Value::Array(items) = v else {
                let go = if ty == MetaType::OwnerRefs {
                    "[]v1.OwnerReference"
                } else {
                    "[]v1.ManagedFieldsEntry"
                };
                return Err(unmarshal_error(&v, k, go));
            };
            if items.is_empty() {
                return Ok(None);
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let Value::Object(mut obj) = item else {
                    let go = if ty == MetaType::OwnerRefs {
                        "v1.OwnerReference"
                    } else {
                        "v1.ManagedFieldsEntry"
                    };
                    return Err(unmarshal_error(&item, k, go));
                };
                let item_path = index(&child(path, k), i);
                let names: Vec<String> = obj.keys().cloned().collect();
                for f in names {
                    let known = if ty == MetaType::OwnerRefs {
                        OWNER_REF_FIELDS
                            .iter()
                            .find(|(n, _)| *n == f)
                            .map(|(_, is_bool)| if *is_bool { "bool" } else { "string" })
                    } else {
                        MANAGED_FIELDS_FIELDS
                            .contains(&f.as_str())
                            .then_some(match f.as_str() {
                                "fieldsV1" => "object",
                                "time" => "time",
                                _ => "string",
                            })
                    };
                    let Some(kind) = known else {
                        if let Some(u) = unknown.as_deref_mut() {
                            u.push(child(&item_path, &f));
                        }
                        obj.remove(&f);
                        continue;
                    };
                    let fv = &obj[&f];
                    let ok = match kind {
                        _ if fv.is_null() => true,
                        "bool" => fv.is_boolean(),
                        "object" => fv.is_object(),
                        _ => fv.is_string(),
                    };
                    if !ok {
                        return Err(unmarshal_error(
                            fv,
                            &format!("{k}.{f}"),
                            if kind == "bool" { "bool" } else { "string" },
                        ));
                    }
                    if kind == "time"
                        && let Some(t) = fv.as_str()
                    {
                        let t = coerce_time(t)?;
                        obj.insert(f.clone(), Value::String(t));
                    }
                    if obj[&f].is_null() || obj[&f].as_str() == Some("") {
                        obj.remove(&f);
                    }
                }
                out.push(Value::Object(obj));
            }
            Ok(Some(Value::Array(out)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta_errs(meta: Value, namespaced: bool, rule: NameRule) -> Vec<String> {
        validate_object_meta(meta.as_object().unwrap(), namespaced, rule, "metadata")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn names() {
        assert!(
            meta_errs(
                json!({"name": "ok.name-1", "namespace": "ns"}),
                true,
                NameRule::DnsSubdomain
            )
            .is_empty()
        );
        assert_eq!(
            meta_errs(json!({"name": "Foo_bar"}), false, NameRule::DnsSubdomain),
            [
                "metadata.name: Invalid value: \"Foo_bar\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            meta_errs(json!({}), false, NameRule::DnsSubdomain),
            ["metadata.name: Required value: name or generateName is required"]
        );
        assert!(
            meta_errs(
                json!({"generateName": "web-", "name": "web-x1"}),
                false,
                NameRule::DnsSubdomain
            )
            .is_empty()
        );
        assert_eq!(
            meta_errs(json!({"name": "a.b"}), false, NameRule::DnsLabel),
            ["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        assert_eq!(
            meta_errs(json!({"name": "1abc"}), false, NameRule::Dns1035Label),
            [
                "metadata.name: Invalid value: \"1abc\": a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            meta_errs(json!({"name": "a/b"}), false, NameRule::PathSegment),
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
        );
        assert_eq!(
            meta_errs(json!({"name": ".."}), false, NameRule::PathSegment),
            ["metadata.name: Invalid value: \"..\": may not be '..'"]
        );
        assert!(
            meta_errs(
                json!({"name": "system:admin"}),
                false,
                NameRule::PathSegment
            )
            .is_empty()
        );
        let long = "a".repeat(254);
        assert_eq!(
            meta_errs(json!({"name": long}), false, NameRule::DnsSubdomain)[0],
            format!(
                "metadata.name: Invalid value: \"{long}\": must be no more than 253 characters"
            )
        );
    }

    #[test]
    fn namespace_rules() {
        assert_eq!(
            meta_errs(json!({"name": "a"}), true, NameRule::DnsSubdomain),
            ["metadata.namespace: Required value"]
        );
        assert_eq!(
            meta_errs(
                json!({"name": "a", "namespace": "x"}),
                false,
                NameRule::DnsSubdomain
            ),
            ["metadata.namespace: Forbidden: not allowed on this type"]
        );
    }

    #[test]
    fn labels_annotations_finalizers() {
        let e = meta_errs(
            json!({"name": "a", "labels": {"bad key!": "v", "ok": "bad value!"}}),
            false,
            NameRule::DnsSubdomain,
        );
        assert_eq!(
            e[0],
            "metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            e[1],
            "metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert!(meta_errs(json!({"name": "a", "labels": {"example.com/App": ""}, "annotations": {"Example.com/X": "y"}}), false, NameRule::DnsSubdomain).is_empty());
        assert_eq!(
            meta_errs(
                json!({"name": "a", "annotations": {"/x": "y"}}),
                false,
                NameRule::DnsSubdomain
            ),
            ["metadata.annotations: Invalid value: \"/x\": prefix part must be non-empty"]
        );
        assert_eq!(
            meta_errs(
                json!({"name": "a", "finalizers": ["example.com/f", "a/b/c"]}),
                false,
                NameRule::DnsSubdomain
            )
            .len(),
            1
        );
        assert_eq!(
            meta_errs(
                json!({"name": "a", "annotations": {"k": "x".repeat(256 * 1024)}}),
                false,
                NameRule::DnsSubdomain
            ),
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn owner_references() {
        let e = meta_errs(
            json!({"name": "a", "ownerReferences": [{"apiVersion": "", "kind": "K", "name": "n", "uid": "u", "controller": true},
                                                   {"apiVersion": "v1", "kind": "K", "name": "m", "uid": "v", "controller": true}]}),
            false,
            NameRule::DnsSubdomain,
        );
        assert_eq!(
            e[0],
            "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty"
        );
        assert!(e[1].contains("Only one reference can have Controller set to true. Found \"true\" in references for K/n and K/m"), "{e:?}");
    }

    #[test]
    fn type_meta() {
        let e: Vec<String> = validate_type_meta(
            &json!({"apiVersion": "example.io/v2", "kind": "Bar"}),
            "example.io",
            "v1",
            "Foo",
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            e,
            [
                "kind: Invalid value: \"Bar\": must be Foo",
                "apiVersion: Invalid value: \"example.io/v2\": must be example.io/v1"
            ]
        );
        assert!(
            validate_type_meta(
                &json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                "",
                "v1",
                "ConfigMap"
            )
            .is_empty()
        );
    }

    #[test]
    fn coercion_drops_unknown_and_empty_fields() {
        let mut meta = json!({
            "name": "a", "namespace": "", "foo": 1, "labels": {}, "generation": 0, "creationTimestamp": "2024-01-01T10:00:00.5+02:00",
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u", "extra": true}]
        });
        let mut unknown = Vec::new();
        coerce_metadata(&mut meta, "metadata", &mut Some(&mut unknown), false).unwrap();
        assert_eq!(
            meta,
            json!({"name": "a", "creationTimestamp": "2024-01-01T08:00:00Z", "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"}]})
        );
        assert_eq!(
            unknown,
            ["metadata.foo", "metadata.ownerReferences[0].extra"]
        );
    }

    #[test]
    fn coercion_reports_type_errors() {
        let mut meta = json!({"name": "a", "labels": "x"});
        let e = coerce_metadata(&mut meta, "metadata", &mut None, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "metadata: Invalid value: map[string]interface {}{\"labels\":\"x\", \"name\":\"a\"}: json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string"
        );
        let mut meta = json!({"name": "a", "labels": "x"});
        coerce_metadata(&mut meta, "metadata", &mut None, true).unwrap();
        assert_eq!(meta, json!({"name": "a"}));
        let mut meta = json!({"creationTimestamp": "yesterday"});
        assert!(
            coerce_metadata(&mut meta, "metadata", &mut None, false)
                .unwrap_err()
                .detail
                .starts_with("parsing time \"yesterday\"")
        );
    }
}
