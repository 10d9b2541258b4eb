//! Object-metadata helpers shared by storage, handlers and controllers: timestamps, uids, field access.

use serde_json::{Map, Value};

/// The current time in the RFC 3339 form kube-apiserver writes (`2024-05-01T12:00:00Z`).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A fresh object uid.
pub(crate) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `metadata` of an object, created when missing.
pub(crate) fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Sets or removes (on `None`) a `metadata` field.
pub(crate) fn set_meta(obj: &mut Value, field: &str, value: Option<Value>) {
    let m = metadata_mut(obj);
    match value {
        Some(v) => {
            m.insert(field.to_string(), v);
        }
        None => {
            m.remove(field);
        }
    }
}

/// The finalizers of an object.
pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses a decimal resourceVersion; kube-apiserver answers 400 for anything else.
pub(crate) fn parse_rv(rv: &str) -> Result<u64, crate::error::ApiError> {
    rv.parse::<u64>().map_err(|_| {
        // Go's strconv error, as kube-apiserver quotes it.
        crate::error::ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: \"{rv}\": \
             strconv.ParseUint: parsing \"{rv}\": invalid syntax"
        ))
    })
}

/// The name part a generateName prefix is completed with: five lower-case alphanumerics, as kube does.
pub(crate) fn generate_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Checks a name as an RFC 1123 subdomain; returns kube-apiserver's message when it is not one.
pub(crate) fn check_subdomain(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    if name.split('.').all(is_label) {
        None
    } else {
        Some(DNS1123_SUBDOMAIN_MSG.into())
    }
}

/// Checks a name as an RFC 1123 label; returns kube-apiserver's message when it is not one.
pub(crate) fn check_label(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    if is_label(name) {
        None
    } else {
        Some(DNS1123_LABEL_MSG.into())
    }
}

/// Checks a name the way path segments are checked for names kube accepts loosely (`ValidatePathSegmentName`).
pub(crate) fn check_path_segment(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    if name.contains('/') || name.contains('%') {
        return Some("may not contain '/' or '%'".into());
    }
    None
}

/// The keys Go's API types write first, in this order: `TypeMeta` (`kind`, `apiVersion`) is
/// embedded first in every Kubernetes object and list, `metadata` follows it.
const GO_FIRST_KEYS: [&str; 3] = ["kind", "apiVersion", "metadata"];

/// An object as JSON with its top-level keys in the order kube-apiserver writes them — `kind`,
/// `apiVersion`, `metadata`, then the rest — rather than serde_json's alphabetical order, so
/// clients and people that read the bytes see what a real cluster sends.
pub(crate) fn to_json_go_order(v: &Value) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    write_json_go_order(&mut out, v)?;
    Ok(out)
}

/// [`to_json_go_order`] appending to `out`.
pub(crate) fn write_json_go_order(out: &mut Vec<u8>, v: &Value) -> Result<(), serde_json::Error> {
    let Value::Object(m) = v else {
        return serde_json::to_writer(out, v);
    };
    out.push(b'{');
    let mut first = true;
    let mut write = |out: &mut Vec<u8>, k: &str, v: &Value| -> Result<(), serde_json::Error> {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, v)
    };
    for k in GO_FIRST_KEYS {
        if let Some(v) = m.get(k) {
            write(out, k, v)?;
        }
    }
    for (k, v) in m {
        if !GO_FIRST_KEYS.contains(&k.as_str()) {
            write(out, k, v)?;
        }
    }
    out.push(b'}');
    Ok(())
}
