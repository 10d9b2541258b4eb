//! Conversion between a resource's served versions and its stored representation.
//!
//! Custom resources use their CRD's strategy: `None` (only `apiVersion` changes) or `Webhook`
//! ([`webhook`]: the CRD's conversion webhook converts, and conversion can fail, so every function
//! here that may convert returns a result); events.k8s.io/v1 Events are a
//! field-renamed view of core/v1 Events, which is how kube-apiserver stores both; autoscaling/v1
//! HorizontalPodAutoscalers are a CPU-only view of the stored autoscaling/v2 ones.

pub(crate) mod webhook;
pub(crate) mod webhook_client;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::registry::{ResourceInfo, Strategy};
use crate::store::StoredObject;

/// A failed webhook conversion as kube-apiserver answers it: the converter's error is not an
/// API status, so it becomes a 500 with no reason and the error as the message
/// (apiserver `endpoints/handlers/responsewriters/status.go` `ErrorToAPIStatus`).
fn conversion_failed(message: String) -> ApiError {
    ApiError::new(500, "", message)
}

/// core/v1 Event field ↔ events.k8s.io/v1 Event field.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn rename(obj: &mut Map<String, Value>, pairs: impl Iterator<Item = (&'static str, &'static str)>) {
    let mut moved = Vec::new();
    for (from, to) in pairs {
        if let Some(v) = obj.remove(from) {
            moved.push((to, v));
        }
    }
    for (to, v) in moved {
        obj.insert(to.to_string(), v);
    }
}

/// Converts a request body (in `info`'s served version) to the stored representation.
pub(crate) fn to_storage(info: &ResourceInfo, obj: Value) -> ApiResult<Value> {
    if let Some(webhook) = &info.conversion {
        return webhook
            .convert(obj, &info.storage_api_version)
            .map_err(conversion_failed);
    }
    // kcp's APIExports and APIBindings have versions with different fields.
    let mut obj = crate::kcp::convert::to_storage(info, obj);
    if info.strategy == Strategy::EventsV1
        && let Value::Object(m) = &mut obj
    {
        rename(m, EVENT_FIELDS.iter().map(|(core, v1)| (*v1, *core)));
    }
    if info.strategy == Strategy::Autoscaling && info.version == "v1" {
        hpa_v1_to_v2(&mut obj);
    }
    obj["apiVersion"] = Value::String(info.storage_api_version.clone());
    Ok(obj)
}

/// autoscaling/v1 → v2: the CPU target becomes a `Resource` metric (pkg/apis/autoscaling/v1
/// conversion).
fn hpa_v1_to_v2(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(cpu) = spec.remove("targetCPUUtilizationPercentage")
    {
        spec.insert(
            "metrics".into(),
            serde_json::json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": cpu}}}]),
        );
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut)
        && let Some(cpu) = status.remove("currentCPUUtilizationPercentage")
    {
        status.insert(
            "currentMetrics".into(),
            serde_json::json!([{"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": cpu}}}]),
        );
    }
}

/// autoscaling/v2 → v1: only a CPU utilization target has a v1 field; other metrics and the
/// conditions are not shown in v1.
fn hpa_v2_to_v1(obj: &mut Value) {
    let cpu = |metrics: Option<Value>, field: &str| {
        metrics
            .as_ref()
            .and_then(Value::as_array)
            .and_then(|ms| {
                ms.iter().find(|m| {
                    m.get("type").and_then(Value::as_str) == Some("Resource")
                        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
                })
            })
            .and_then(|m| m.pointer(&format!("/resource/{field}/averageUtilization")))
            .cloned()
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = spec.remove("metrics");
        spec.remove("behavior");
        if let Some(c) = cpu(metrics, "target") {
            spec.insert("targetCPUUtilizationPercentage".into(), c);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let metrics = status.remove("currentMetrics");
        status.remove("conditions");
        if let Some(c) = cpu(metrics, "current") {
            status.insert("currentCPUUtilizationPercentage".into(), c);
        }
    }
}

/// Converts a stored object to `info`'s served version.
pub(crate) fn from_storage(info: &ResourceInfo, obj: Value) -> ApiResult<Value> {
    if let Some(webhook) = &info.conversion {
        // From the version the object is stored at, which is not the CRD's storage version
        // when that changed after the object was written.
        return webhook
            .convert(obj, &info.api_version())
            .map_err(conversion_failed);
    }
    let mut obj = crate::kcp::convert::from_storage(info, obj);
    if info.strategy == Strategy::EventsV1
        && let Value::Object(m) = &mut obj
    {
        rename(m, EVENT_FIELDS.iter().copied());
        // Go writes these fields of events.k8s.io/v1 even when unset (a struct and two times
        // without `omitzero`).
        m.entry("deprecatedSource")
            .or_insert_with(|| serde_json::json!({}));
        m.entry("deprecatedFirstTimestamp").or_insert(Value::Null);
        m.entry("deprecatedLastTimestamp").or_insert(Value::Null);
        // events.k8s.io/v1 requires eventTime; core events written by older clients lack it.
        if m.get("eventTime").is_none_or(Value::is_null) {
            let t = m
                .get("deprecatedFirstTimestamp")
                .or_else(|| m.get("metadata").and_then(|md| md.get("creationTimestamp")))
                .and_then(Value::as_str)
                .map(|s| s.replace('Z', ".000000Z"));
            if let Some(t) = t {
                m.insert("eventTime".into(), Value::String(t));
            }
        }
    }
    if info.strategy == Strategy::Autoscaling && info.version == "v1" {
        hpa_v2_to_v1(&mut obj);
    }
    let served = info.api_version();
    let converted = obj.get("apiVersion").and_then(Value::as_str) != Some(served.as_str());
    obj["apiVersion"] = Value::String(served);
    // A custom resource read at another version than it is stored at is pruned and defaulted by
    // that version's schema, as kube's storage codec does after any conversion, `None` included
    // (customresource_handler.go `schemaCoercingConverter`): fields the version does not have are
    // not served.
    if converted
        && info.strategy == Strategy::Custom
        && let Some(validator) = &info.validator
    {
        validator.schema().read(&mut obj);
    }
    Ok(obj)
}

/// Are the stored bytes already the served representation (same apiVersion, no field mapping)?
///
/// Stored JSON starts with `kind` and `apiVersion`, in Go's order
/// ([`crate::meta::to_json_go_order`]); checking the prefix avoids parsing.
pub(crate) fn stored_form_matches(info: &ResourceInfo, obj: &StoredObject) -> bool {
    if info.strategy == Strategy::EventsV1 {
        return false;
    }
    let Some(rest) = after_api_version_key(&obj.bytes) else {
        return false;
    };
    // `<group>/<version>"` or `<version>"`, compared without building the string.
    let rest = if info.group.is_empty() {
        rest
    } else {
        match rest
            .strip_prefix(info.group.as_bytes())
            .and_then(|r| r.strip_prefix(b"/"))
        {
            Some(r) => r,
            None => return false,
        }
    };
    rest.strip_prefix(info.version.as_bytes())
        .is_some_and(|r| r.first() == Some(&b'"'))
}

/// Whether the object is stored at `info`'s storage version. Writing an object back unchanged
/// still writes it when it is not (kube-apiserver compares the new encoding with the stored
/// bytes): that is how a storage migration moves objects to a CRD's new storage version.
pub(crate) fn stored_at_storage_version(info: &ResourceInfo, obj: &StoredObject) -> bool {
    after_api_version_key(&obj.bytes).is_some_and(|rest| {
        rest.strip_prefix(info.storage_api_version.as_bytes())
            .is_some_and(|r| r.first() == Some(&b'"'))
    })
}

/// The stored bytes after `{"kind":"<kind>","apiVersion":"`, where the apiVersion's value begins.
fn after_api_version_key(bytes: &[u8]) -> Option<&[u8]> {
    const KIND: &[u8] = b"{\"kind\":\"";
    const API_VERSION: &[u8] = b"\"apiVersion\":\"";
    let after_kind = bytes.strip_prefix(KIND)?;
    // Kinds are plain identifiers: the next quote ends the string.
    let end = after_kind.iter().position(|b| *b == b'"')?;
    after_kind[end + 1..]
        .strip_prefix(b",")
        .and_then(|r| r.strip_prefix(API_VERSION))
}

/// The stored object as served in `info`'s version: the stored bytes themselves when no conversion
/// is needed (the common case, zero-copy).
pub(crate) fn served_bytes(info: &ResourceInfo, obj: &StoredObject) -> ApiResult<Bytes> {
    if stored_form_matches(info, obj) {
        return Ok(obj.bytes.clone());
    }
    let v = from_storage(info, obj.value())?;
    Ok(Bytes::from(
        crate::meta::to_json_go_order(&v).unwrap_or_default(),
    ))
}

/// Writes stored objects as the items of one served list: without `kind` and `apiVersion` for a
/// built-in type, as kube-apiserver writes them (see [`ResourceInfo::typed`]).
pub(crate) struct ServedItems<'a> {
    info: &'a ResourceInfo,
    /// The TypeMeta a built-in's served bytes begin with (Go's order puts it first), which its
    /// list items leave out; `None` for a custom resource, whose items keep it.
    type_meta: Option<Vec<u8>>,
}

impl<'a> ServedItems<'a> {
    /// The writer of `info`'s list items.
    pub(crate) fn new(info: &'a ResourceInfo) -> Self {
        let type_meta = info.typed().then(|| {
            format!(
                "{{\"kind\":{},\"apiVersion\":{},",
                Value::from(info.kind.as_str()),
                Value::from(info.api_version())
            )
            .into_bytes()
        });
        ServedItems { info, type_meta }
    }

    /// Appends `obj` as an item to `out`.
    pub(crate) fn write(&self, obj: &StoredObject, out: &mut Vec<u8>) -> ApiResult<()> {
        let bytes = served_bytes(self.info, obj)?;
        let Some(type_meta) = &self.type_meta else {
            out.extend_from_slice(&bytes);
            return Ok(());
        };
        match bytes.strip_prefix(type_meta.as_slice()) {
            Some(rest) => {
                out.push(b'{');
                out.extend_from_slice(rest);
            }
            // Stored in another order: rewritten.
            None => out.extend_from_slice(
                &crate::meta::to_json_go_order(&served_item_value(self.info, obj)?)
                    .unwrap_or_default(),
            ),
        }
        Ok(())
    }
}

/// An item of a served list (see [`ServedItems`]) as a value.
pub(crate) fn served_item_value(info: &ResourceInfo, obj: &StoredObject) -> ApiResult<Value> {
    let mut value = served_value(info, obj)?;
    if info.typed()
        && let Some(map) = value.as_object_mut()
    {
        map.remove("kind");
        map.remove("apiVersion");
    }
    Ok(value)
}

/// The stored object as a served JSON value.
pub(crate) fn served_value(info: &ResourceInfo, obj: &StoredObject) -> ApiResult<Value> {
    from_storage(info, obj.value())
}
