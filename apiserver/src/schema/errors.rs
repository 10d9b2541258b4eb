//! Field errors in kube-apiserver's shape (`field.Error`), and the `Status` a list of them becomes.
//!
//! The wording is the runtime's interface to provider authors: `kubectl` prints these messages, so
//! every string here follows `k8s.io/apimachinery/pkg/util/validation/field/errors.go` and
//! `k8s.io/apimachinery/pkg/api/errors.NewInvalid` to the character, including Go's way of
//! printing values (`%q`, `%v`, `%#v`).

use std::collections::HashSet;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};
use serde_json::Value;

/// Why a field is invalid. [`Reason::as_str`] gives kube's `metav1.CauseType` string
/// (`FieldValueInvalid`, …) that goes into `details.causes[].reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// `FieldValueNotFound`: "Not found".
    NotFound,
    /// `FieldValueRequired`: "Required value".
    Required,
    /// `FieldValueDuplicate`: "Duplicate value".
    Duplicate,
    /// `FieldValueInvalid`: "Invalid value".
    Invalid,
    /// `FieldValueNotSupported`: "Unsupported value" (enums).
    NotSupported,
    /// `FieldValueForbidden`: "Forbidden".
    Forbidden,
    /// `FieldValueTooLong`: "Too long".
    TooLong,
    /// `FieldValueTooMany`: "Too many".
    TooMany,
    /// `InternalError`: "Internal error".
    Internal,
    /// `FieldValueTypeInvalid`: "Invalid value" (the value has the wrong JSON type).
    TypeInvalid,
}

impl Reason {
    /// The cause type string kube-apiserver puts into `details.causes[].reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "FieldValueNotFound",
            Reason::Required => "FieldValueRequired",
            Reason::Duplicate => "FieldValueDuplicate",
            Reason::Invalid => "FieldValueInvalid",
            Reason::NotSupported => "FieldValueNotSupported",
            Reason::Forbidden => "FieldValueForbidden",
            Reason::TooLong => "FieldValueTooLong",
            Reason::TooMany => "FieldValueTooMany",
            Reason::Internal => "InternalError",
            Reason::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// Parses a cause type string; `None` for anything kube does not define.
    pub fn parse(s: &str) -> Option<Reason> {
        Some(match s {
            "FieldValueNotFound" => Reason::NotFound,
            "FieldValueRequired" => Reason::Required,
            "FieldValueDuplicate" => Reason::Duplicate,
            "FieldValueInvalid" => Reason::Invalid,
            "FieldValueNotSupported" => Reason::NotSupported,
            "FieldValueForbidden" => Reason::Forbidden,
            "FieldValueTooLong" => Reason::TooLong,
            "FieldValueTooMany" => Reason::TooMany,
            "InternalError" => Reason::Internal,
            "FieldValueTypeInvalid" => Reason::TypeInvalid,
            _ => return None,
        })
    }

    /// `ErrorType.String()`: the words that start every message body.
    fn summary(self) -> &'static str {
        match self {
            Reason::NotFound => "Not found",
            Reason::Required => "Required value",
            Reason::Duplicate => "Duplicate value",
            Reason::Invalid | Reason::TypeInvalid => "Invalid value",
            Reason::NotSupported => "Unsupported value",
            Reason::Forbidden => "Forbidden",
            Reason::TooLong => "Too long",
            Reason::TooMany => "Too many",
            Reason::Internal => "Internal error",
        }
    }
}

/// The offending value of a [`FieldError`], printed the way Go's `field.Error` prints it.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// Not shown (`field.OmitValueType`).
    Omitted,
    /// A JSON value: strings print quoted (`%q`), numbers and booleans bare (`%v`), `null` as
    /// `"null"`, objects and arrays in Go syntax (`%#v`, e.g. `map[string]interface {}{"a":1}`).
    Json(Value),
    /// A value kube prints from a typed Go value; the text is shown as is.
    Rendered(String),
}

impl BadValue {
    /// A string value (printed `%q`).
    pub fn str(s: impl Into<String>) -> BadValue {
        BadValue::Json(Value::String(s.into()))
    }

    fn render(&self) -> Option<String> {
        match self {
            BadValue::Omitted => None,
            BadValue::Rendered(s) => Some(s.clone()),
            BadValue::Json(v) => Some(match v {
                Value::Null => go_quote("null"),
                Value::String(s) => go_quote(s),
                Value::Bool(_) | Value::Number(_) => go_v(v),
                Value::Array(_) | Value::Object(_) => go_sharp_v(v),
            }),
        }
    }
}

/// One validation failure: kube's `field.Error`.
///
/// `field` is the path as kube renders it (`spec.containers[0].name`, `metadata.labels[app]`, or
/// `<nil>` for errors kube reports without a path); [`FieldError::message`] is the body that goes
/// into `details.causes[].message`; `Display` gives `field: message`, the line of the aggregated
/// `Status.message`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Path of the offending field, rendered like `field.Path.String()`.
    pub field: String,
    /// Why it is invalid.
    pub reason: Reason,
    /// The offending value, if kube shows one for this reason.
    pub value: BadValue,
    /// Free text after the value (`spec.x in body should match '^v'`).
    pub detail: String,
}

/// Renders a field path the way `(*field.Path)(nil).String()` does for an empty path.
fn path_or_nil(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}

impl FieldError {
    fn new(path: &str, reason: Reason, value: BadValue, detail: impl Into<String>) -> FieldError {
        FieldError {
            field: path_or_nil(path),
            reason,
            value,
            detail: detail.into(),
        }
    }

    /// `field.Required`: `spec.name: Required value` (plus `: detail` when given).
    pub fn required(path: &str, detail: impl Into<String>) -> FieldError {
        FieldError::new(path, Reason::Required, BadValue::str(""), detail)
    }

    /// `field.Invalid`: `spec.x: Invalid value: "abc": detail`.
    pub fn invalid(path: &str, value: BadValue, detail: impl Into<String>) -> FieldError {
        FieldError::new(path, Reason::Invalid, value, detail)
    }

    /// `field.TypeInvalid`: like [`FieldError::invalid`] with reason `FieldValueTypeInvalid`.
    pub fn type_invalid(path: &str, value: BadValue, detail: impl Into<String>) -> FieldError {
        FieldError::new(path, Reason::TypeInvalid, value, detail)
    }

    /// `field.NotSupported`: `spec.x: Unsupported value: "c": supported values: "a", "b"`.
    pub fn not_supported<S: AsRef<str>>(
        path: &str,
        value: BadValue,
        supported: &[S],
    ) -> FieldError {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError::new(path, Reason::NotSupported, value, detail)
    }

    /// `field.Forbidden`: `spec.x: Forbidden: detail`.
    pub fn forbidden(path: &str, detail: impl Into<String>) -> FieldError {
        FieldError::new(path, Reason::Forbidden, BadValue::str(""), detail)
    }

    /// `field.TooLong`: `spec.x: Too long: may not be more than 5 bytes` (the value is never shown).
    pub fn too_long(path: &str, max: Option<i64>) -> FieldError {
        let detail = match max {
            Some(1) => "may not be more than 1 byte".to_string(),
            Some(max) if max >= 0 => format!("may not be more than {max} bytes"),
            _ => "value is too long".to_string(),
        };
        FieldError::new(path, Reason::TooLong, BadValue::Omitted, detail)
    }

    /// `field.TooMany`: `spec.x: Too many: 3: must have at most 2 items`.
    pub fn too_many(path: &str, actual: Option<i64>, max: Option<i64>) -> FieldError {
        let detail = match max {
            Some(1) => "must have at most 1 item".to_string(),
            Some(max) if max >= 0 => format!("must have at most {max} items"),
            _ => "has too many items".to_string(),
        };
        let value = match actual {
            Some(n) if n >= 0 => BadValue::Json(Value::from(n)),
            _ => BadValue::Omitted,
        };
        FieldError::new(path, Reason::TooMany, value, detail)
    }

    /// `field.Duplicate`: `spec.x[1]: Duplicate value: "a"`.
    pub fn duplicate(path: &str, value: BadValue) -> FieldError {
        FieldError::new(path, Reason::Duplicate, value, "")
    }

    /// `field.InternalError`: `spec: Internal error: detail`.
    pub fn internal(path: &str, detail: impl Into<String>) -> FieldError {
        FieldError::new(path, Reason::Internal, BadValue::Omitted, detail)
    }

    /// The message body without the field (`ErrorBody()`): what kube puts into
    /// `details.causes[].message`.
    pub fn message(&self) -> String {
        let mut s = match self.reason {
            Reason::Required | Reason::Forbidden | Reason::TooLong | Reason::Internal => {
                self.reason.summary().to_string()
            }
            _ => match self.value.render() {
                Some(v) => format!("{}: {}", self.reason.summary(), v),
                None => self.reason.summary().to_string(),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The `StatusCause` kube-apiserver reports for this error.
    pub fn to_cause(&self) -> StatusCause {
        StatusCause {
            field: Some(self.field.clone()),
            message: Some(self.message()),
            reason: Some(self.reason.as_str().to_string()),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

impl std::error::Error for FieldError {}

/// `ErrorList.ToAggregate().Error()`: one message, or `[a, b]` for several, duplicates removed.
pub(crate) fn aggregate(errs: &[FieldError]) -> String {
    let mut seen = HashSet::new();
    let msgs: Vec<String> = errs
        .iter()
        .map(ToString::to_string)
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match msgs.len() {
        1 => msgs.into_iter().next().unwrap_or_default(),
        _ => format!("[{}]", msgs.join(", ")),
    }
}

/// `Kind.group`, or `Kind` for the core group: how kube names a kind in messages.
pub(crate) fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// The `message` of a 422 `Invalid` Status:
/// `Velero.example.io "x" is invalid: spec.version: Invalid value: …`.
pub(crate) fn invalid_message(group: &str, kind: &str, name: &str, errs: &[FieldError]) -> String {
    let qk = qualified_kind(group, kind);
    if errs.is_empty() {
        format!("{qk} {} is invalid", go_quote(name))
    } else {
        format!("{qk} {} is invalid: {}", go_quote(name), aggregate(errs))
    }
}

/// The complete 422 `Invalid` Status kube-apiserver answers for `errs` (`apierrors.NewInvalid`).
pub(crate) fn invalid_status(group: &str, kind: &str, name: &str, errs: &[FieldError]) -> Status {
    Status {
        code: Some(422),
        message: Some(invalid_message(group, kind, name, errs)),
        reason: Some("Invalid".to_string()),
        status: Some("Failure".to_string()),
        details: Some(StatusDetails {
            causes: Some(errs.iter().map(FieldError::to_cause).collect()),
            group: Some(group.to_string()),
            kind: Some(kind.to_string()),
            name: Some(name.to_string()),
            ..StatusDetails::default()
        }),
        ..Status::default()
    }
}

// ---- Go value printing -------------------------------------------------------------------

pub(crate) use crate::error::go_quote;

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which is what `%v` prints for a `float64`:
/// shortest digits, exponent form when the exponent is below -4 or at least 6 (`1e+06`).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if (-4..6).contains(&exp) {
        format!("{f}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// `%v` of a JSON scalar as Go's unstructured decoding holds it (`int64` or `float64`).
pub(crate) fn go_v(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        other => go_sharp_v(other),
    }
}

/// `%#v` of an unstructured JSON value: `map[string]interface {}{"a":1, "b":"c"}` (keys
/// sorted), `[]interface {}{"a", 1}`, `interface {}(nil)` for a nested null.
pub(crate) fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(_) | Value::Number(_) => go_v(v),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", go_quote(k), go_sharp_v(&map[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// `%#v` of a Go `[]string`: `[]string{"a", "b"}`.
pub(crate) fn go_string_slice(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

// ---- field.Path rendering ----------------------------------------------------------------

/// `path.Child(name)`: `spec` + `name` → `spec.name`; on the empty (nil) path just `name`.
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path.Index(i)`: `spec.items[3]`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `path.Key(k)`: `metadata.labels[app]`.
pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_formats_match_field_errors_go() {
        // Wording from k8s.io/apimachinery/pkg/util/validation/field/errors.go.
        assert_eq!(
            FieldError::required("spec.name", "").to_string(),
            "spec.name: Required value"
        );
        assert_eq!(
            FieldError::invalid(
                "spec.version",
                BadValue::str("abc"),
                "spec.version in body should match '^v'"
            )
            .to_string(),
            "spec.version: Invalid value: \"abc\": spec.version in body should match '^v'"
        );
        assert_eq!(
            FieldError::type_invalid(
                "spec.replicas",
                BadValue::str("string"),
                "spec.replicas in body must be of type integer: \"string\""
            )
            .to_string(),
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        );
        assert_eq!(
            FieldError::not_supported("spec.mode", BadValue::str("c"), &["a", "b"]).to_string(),
            "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""
        );
        assert_eq!(
            FieldError::forbidden("spec.x", "not allowed").to_string(),
            "spec.x: Forbidden: not allowed"
        );
        assert_eq!(
            FieldError::too_long("spec.x", Some(5)).to_string(),
            "spec.x: Too long: may not be more than 5 bytes"
        );
        assert_eq!(
            FieldError::too_long("spec.x", Some(1)).message(),
            "Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::too_many("spec.list", Some(3), Some(2)).to_string(),
            "spec.list: Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            FieldError::too_many("spec.list", Some(2), Some(1)).message(),
            "Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            FieldError::duplicate("spec.l[1]", BadValue::Json(json!({"name": "a"}))).to_string(),
            "spec.l[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"
        );
        assert_eq!(
            FieldError::invalid("", BadValue::Json(Value::Null), "x").to_string(),
            "<nil>: Invalid value: \"null\": x"
        );
        assert_eq!(
            FieldError::invalid("a", BadValue::Omitted, "x").to_string(),
            "a: Invalid value: x"
        );
        assert_eq!(
            FieldError::internal("a", "boom").to_string(),
            "a: Internal error: boom"
        );
    }

    #[test]
    fn reasons_round_trip() {
        for r in [
            Reason::NotFound,
            Reason::Required,
            Reason::Duplicate,
            Reason::Invalid,
            Reason::NotSupported,
            Reason::Forbidden,
            Reason::TooLong,
            Reason::TooMany,
            Reason::Internal,
            Reason::TypeInvalid,
        ] {
            assert_eq!(Reason::parse(r.as_str()), Some(r));
        }
        assert_eq!(Reason::parse("Bogus"), None);
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        let a = FieldError::required("a", "");
        let b = FieldError::required("b", "");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Required value");
        assert_eq!(
            aggregate(&[a.clone(), b, a]),
            "[a: Required value, b: Required value]"
        );
        assert_eq!(
            invalid_message(
                "example.io",
                "Velero",
                "x",
                &[FieldError::required("spec.name", "")]
            ),
            "Velero.example.io \"x\" is invalid: spec.name: Required value"
        );
        assert_eq!(
            invalid_message("", "ConfigMap", "c", &[]),
            "ConfigMap \"c\" is invalid"
        );
    }

    #[test]
    fn status_has_causes() {
        let s = invalid_status(
            "example.io",
            "Foo",
            "x",
            &[FieldError::required("spec.name", "")],
        );
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["code"], 422);
        assert_eq!(v["reason"], "Invalid");
        assert_eq!(
            v["details"]["causes"][0],
            json!({"reason": "FieldValueRequired", "message": "Required value", "field": "spec.name"})
        );
        assert_eq!(v["details"]["group"], "example.io");
    }

    #[test]
    fn go_printing() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5e-7), "-2.5e-07");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(
            go_sharp_v(&json!([1, "a", null, 1.5, true])),
            "[]interface {}{1, \"a\", interface {}(nil), 1.5, true}"
        );
        assert_eq!(
            go_sharp_v(&json!({"b": 1, "a": {}})),
            "map[string]interface {}{\"a\":map[string]interface {}{}, \"b\":1}"
        );
        assert_eq!(
            go_string_slice(&["a".into(), "b".into()]),
            "[]string{\"a\", \"b\"}"
        );
        assert_eq!(child("", "spec"), "spec");
        assert_eq!(child("spec", "x"), "spec.x");
        assert_eq!(index("spec.x", 2), "spec.x[2]");
        assert_eq!(key("metadata.labels", "app"), "metadata.labels[app]");
    }
}
