//! The seam between the patch handler and the `patch` module: applying a patch body of a given type
//! to the current object, and server-side apply.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::handler::negotiate::BodyFormat;
use crate::registry::ResourceInfo;

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn parse_json(body: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// Applies a non-apply patch to the current object (in `info`'s version).
pub fn patch(
    format: BodyFormat,
    _info: &ResourceInfo,
    current: &Value,
    body: &[u8],
) -> ApiResult<Value> {
    let mut out = current.clone();
    match format {
        BodyFormat::MergePatch | BodyFormat::StrategicMergePatch => {
            merge(&mut out, &parse_json(body)?)
        }
        other => {
            return Err(ApiError::unsupported_media_type(
                &format!("{other:?}"),
                &["application/merge-patch+json"],
            ));
        }
    }
    Ok(out)
}

/// Server-side apply of `body` (YAML or JSON) by `manager` onto `current` (`None`: the object does
/// not exist yet). Returns the new object.
pub fn apply(
    _info: &ResourceInfo,
    current: Option<&Value>,
    body: &[u8],
    _manager: &str,
    _force: bool,
) -> ApiResult<Value> {
    let applied: Value = serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let mut out = current
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    merge(&mut out, &applied);
    Ok(out)
}
