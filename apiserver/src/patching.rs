//! The seam between the patch handler and the `patch` module: applying a patch body of a given type
//! to the current object, and server-side apply, with the module's errors as API errors.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::handler::negotiate::BodyFormat;
use crate::patch::{self, ApplyError, ApplyRequest, PatchError, Target};
use crate::registry::ResourceInfo;

impl From<PatchError> for ApiError {
    fn from(e: PatchError) -> Self {
        ApiError {
            code: e.code(),
            reason: e.reason().to_string(),
            message: e.to_string(),
            details: e.details(),
            retry_after: None,
        }
    }
}

impl From<ApplyError> for ApiError {
    fn from(e: ApplyError) -> Self {
        ApiError {
            code: e.code(),
            reason: e.reason().to_string(),
            message: e.to_string(),
            details: e.details(),
            retry_after: None,
        }
    }
}

fn parse_json(body: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// Applies a JSON merge, JSON or strategic merge patch to the current object (in `info`'s version).
pub(crate) fn patch(
    format: BodyFormat,
    info: &ResourceInfo,
    current: &Value,
    body: &[u8],
) -> ApiResult<Value> {
    let mut out = current.clone();
    let p = parse_json(body)?;
    match format {
        BodyFormat::MergePatch => patch::merge(&mut out, &p)?,
        BodyFormat::JsonPatch => patch::json_patch(&mut out, &p)?,
        BodyFormat::StrategicMergePatch => patch::strategic(&mut out, &p, &info.shape)?,
        other => {
            return Err(ApiError::unsupported_media_type(&format!("{other:?}"), &[]));
        }
    }
    Ok(out)
}

/// The managedFields target of a write to `info` (`sub`: the subresource written).
pub(crate) fn target<'a>(
    info: &ResourceInfo,
    api_version: &'a str,
    sub: Option<&'a str>,
) -> Target<'a> {
    Target {
        api_version,
        subresource: sub,
        status_subresource: info.status,
    }
}

/// Server-side apply of `body` (YAML or JSON) by `manager` onto `current` (`None`: the object does
/// not exist yet). Returns the new object with its managedFields.
pub(crate) fn apply(
    info: &ResourceInfo,
    current: Option<&Value>,
    body: &[u8],
    manager: &str,
    force: bool,
    sub: Option<&str>,
) -> ApiResult<Value> {
    let applied: Value = serde_norway::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let av = info.api_version();
    let now = crate::meta::now_rfc3339();
    let req = ApplyRequest {
        manager,
        force,
        kind: &info.kind,
        target: target(info, &av, sub),
        now: &now,
    };
    Ok(patch::apply(current, &applied, &info.shape, &req)?)
}
