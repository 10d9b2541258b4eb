//! The seam between the patch handler and the `patch` module: applying a patch body of a given type
//! to the current object, and server-side apply, with the type shape of the resource.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::handler::negotiate::BodyFormat;
use crate::patch::{self, ApplyError, ApplyRequest, PatchError, Target, TypeShape};
use crate::registry::{ResourceInfo, Strategy};

/// Shapes by (group, version, kind); custom resources also remember the schema they were built from,
/// so a changed CRD gets a new shape.
type ShapeCache = HashMap<(String, String, String), (Option<Arc<Value>>, Arc<TypeShape>)>;

static SHAPES: LazyLock<Mutex<ShapeCache>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The type shape of `info`'s objects: built-ins from their k8s-openapi definitions (strategic merge
/// patch supported), custom resources from their CRD schema. Built once and cached.
pub fn shape(info: &ResourceInfo) -> Arc<TypeShape> {
    let key = (info.group.clone(), info.version.clone(), info.kind.clone());
    let schema = (info.strategy == Strategy::Custom)
        .then(|| info.openapi_schema.clone())
        .flatten();
    let mut cache = SHAPES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((cached_schema, shape)) = cache.get(&key) {
        let same = match (cached_schema, &schema) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (None, None) => true,
            _ => false,
        };
        if same {
            return shape.clone();
        }
    }
    let shape = Arc::new(build_shape(info, schema.as_deref()));
    cache.insert(key, (schema, shape.clone()));
    shape
}

fn build_shape(info: &ResourceInfo, crd_schema: Option<&Value>) -> TypeShape {
    if info.strategy == Strategy::Custom {
        return match crd_schema {
            Some(s) => TypeShape::from_crd_schema(s),
            None => TypeShape::untyped(),
        };
    }
    match crate::schema::builtin_by_kind(&info.group, &info.version, &info.kind) {
        Some(b) => TypeShape::from_openapi(
            &json!({"$ref": format!("#/components/schemas/{}", b.definition)}),
            crate::schema::builtin_definitions(),
        ),
        None => TypeShape::untyped().with_strategic_merge(true),
    }
}

/// The `apiVersion` of `info`'s served version (`v1`, `apps/v1`).
pub fn api_version(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.version.clone()
    } else {
        format!("{}/{}", info.group, info.version)
    }
}

fn patch_error(e: PatchError) -> ApiError {
    let mut out = ApiError::new(e.code(), e.reason(), e.to_string());
    out.details = e.details();
    out
}

fn apply_error(e: ApplyError) -> ApiError {
    let mut out = ApiError::new(e.code(), e.reason(), e.to_string());
    out.details = e.details();
    out
}

fn parse_json(body: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// Applies a non-apply patch to the current object (in `info`'s version).
pub fn patch(
    format: BodyFormat,
    info: &ResourceInfo,
    current: &Value,
    body: &[u8],
) -> ApiResult<Value> {
    let mut out = current.clone();
    match format {
        BodyFormat::MergePatch => {
            patch::merge(&mut out, &parse_json(body)?).map_err(patch_error)?
        }
        BodyFormat::JsonPatch => {
            patch::json_patch(&mut out, &parse_json(body)?).map_err(patch_error)?
        }
        BodyFormat::StrategicMergePatch => {
            patch::strategic(&mut out, &parse_json(body)?, &shape(info)).map_err(patch_error)?
        }
        other => {
            return Err(ApiError::unsupported_media_type(
                &format!("{other:?}"),
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ],
            ));
        }
    }
    Ok(out)
}

/// Server-side apply of `body` (YAML or JSON) by `manager` onto `current` (`None`: the object does
/// not exist yet). Returns the new object with its managedFields; the write that stores it must not
/// record it again as an update.
pub fn apply(
    info: &ResourceInfo,
    current: Option<&Value>,
    body: &[u8],
    manager: &str,
    force: bool,
    subresource: Option<&str>,
) -> ApiResult<Value> {
    let applied: Value = serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let api_version = api_version(info);
    let now = crate::meta::now_rfc3339();
    let req = ApplyRequest {
        manager,
        force,
        kind: &info.kind,
        target: Target {
            api_version: &api_version,
            subresource,
            status_subresource: info.status,
        },
        now: &now,
    };
    patch::apply(current, &applied, &shape(info), &req).map_err(apply_error)
}
