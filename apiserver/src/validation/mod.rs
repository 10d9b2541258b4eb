//! The seam between request handling and the `schema` module: decode (prune, `fieldValidation`,
//! defaults) and validate objects of one resource version, and validate CRDs; `builtin` holds
//! kube-apiserver's kind-specific rules for built-ins.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::schema::{FieldError, FieldValidation, ResourceSchema};

pub(crate) mod builtin;
mod cron;
mod gojson;

/// The schema of one served resource version.
#[derive(Debug, Clone)]
pub struct Validator {
    schema: ResourceSchema,
}

/// A field error as the `details.causes` entry of a 422.
pub(crate) fn cause(e: &FieldError) -> Cause {
    Cause {
        reason: e.reason.as_str().to_string(),
        message: e.message(),
        field: e.field.clone(),
    }
}

impl Validator {
    /// Wraps a resource schema (kcp: an APIResourceSchema's version).
    pub fn new(schema: ResourceSchema) -> Self {
        Validator { schema }
    }

    /// The schema of a built-in kind, if one is known.
    pub fn builtin(group: &str, version: &str, kind: &str) -> Option<Self> {
        ResourceSchema::builtin(group, version, kind).map(Validator::new)
    }

    /// The validators of a stored CRD's versions, by version name (empty when the schemas do not
    /// compile, which validation of the CRD prevents).
    pub fn for_crd(crd: &Value) -> HashMap<String, Arc<Validator>> {
        match ResourceSchema::from_crd(crd) {
            Ok(versions) => versions
                .into_iter()
                .map(|s| (s.version.clone(), Arc::new(Validator::new(s))))
                .collect(),
            Err(e) => {
                tracing::warn!("CRD schema does not compile: {e}");
                HashMap::new()
            }
        }
    }

    /// The underlying resource schema.
    pub fn schema(&self) -> &ResourceSchema {
        &self.schema
    }

    /// Whether it validates `metadata` (names, labels, annotations) itself.
    pub fn validates_metadata(&self) -> bool {
        self.schema.name_rule.is_some()
    }

    /// Prunes unknown fields (refusing them with 400 under `fieldValidation=Strict`) and applies
    /// defaults; returns the warnings for `Warning` headers.
    pub fn decode(&self, obj: &mut Value, fv: FieldValidation) -> ApiResult<Vec<String>> {
        self.schema
            .decode(obj, fv)
            .map_err(|e| ApiError::bad_request(e.message))
    }

    /// Validates a decoded object (with the stored one on update); the field errors
    /// kube-apiserver would report.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        self.schema.validate(obj, old).iter().map(cause).collect()
    }
}

/// Validates a CustomResourceDefinition as kube-apiserver does on create and update.
pub(crate) fn validate_crd(crd: &Value) -> Vec<Cause> {
    crate::schema::validate_crd(crd).iter().map(cause).collect()
}

/// Parses the `fieldValidation` query parameter (absent: `Warn`, as kube-apiserver).
pub(crate) fn field_validation(param: Option<&str>) -> ApiResult<FieldValidation> {
    let p = param.unwrap_or("");
    FieldValidation::parse(p)
        .ok_or_else(|| ApiError::bad_request(FieldValidation::invalid_message(p)))
}
