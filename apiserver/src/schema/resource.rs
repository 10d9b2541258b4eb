//! One served resource (group, version, kind) and the request-time pipeline around its schema:
//! decode (coerce metadata, prune, apply `fieldValidation`, default), then validate (type meta,
//! object meta, schema, list types, CEL).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde_json::{Map, Value};

use super::builtin::{BuiltinResource, builtin_by_kind, builtin_schema};
use super::errors::{BadValue, FieldError, invalid_status};
use super::objectmeta::{NameRule, validate_object_meta, validate_type_meta};
use super::prune::{FieldValidation, strict_error_message, unknown_field_warning};
use super::structural::{SchemaError, Structural};

/// The schema side of one resource, shared by every request for it. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ResourceSchema {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Resource name in URLs.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// How `metadata.name` is checked; `None` for kinds whose metadata kube does not validate.
    pub name_rule: Option<NameRule>,
    /// A custom resource (type meta checked, CRD semantics) rather than a built-in.
    pub custom: bool,
    structural: Arc<Structural>,
}

/// Why a request body cannot be decoded: kube answers 400 `BadRequest` with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    /// The `Status.message`, e.g. `Foo in version "v1" cannot be handled as a Foo: strict
    /// decoding error: unknown field "spec.x"`.
    pub message: String,
}

impl ResourceSchema {
    /// The schema of a built-in kind, or `None` if the server has no schema for it.
    pub fn builtin(group: &str, version: &str, kind: &str) -> Option<ResourceSchema> {
        let b: &BuiltinResource = builtin_by_kind(group, version, kind)?;
        Some(ResourceSchema {
            group: b.group.into(),
            version: b.version.into(),
            kind: b.kind.into(),
            plural: b.plural.into(),
            namespaced: b.namespaced,
            name_rule: b.name_rule,
            custom: false,
            structural: builtin_schema(b.definition)?,
        })
    }

    /// The schema of a built-in definition that is not a top-level resource, such as
    /// `TokenRequest` (the `token` subresource of service accounts,
    /// [`super::TOKEN_REQUEST_DEFINITION`]). Its metadata is not name-checked.
    pub fn for_definition(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        definition: &str,
    ) -> Option<ResourceSchema> {
        Some(ResourceSchema {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            name_rule: None,
            custom: false,
            structural: builtin_schema(definition)?,
        })
    }

    /// The schemas of every version of a stored (already validated) CRD, in `spec.versions`
    /// order. Validate a CRD a user submits with [`super::validate_crd`] first.
    pub fn from_crd(crd: &Value) -> Result<Vec<ResourceSchema>, SchemaError> {
        let spec = crd.get("spec");
        let s = |p: &str| {
            spec.and_then(|s| s.pointer(p))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (group, kind, plural) = (s("/group"), s("/names/kind"), s("/names/plural"));
        let namespaced = s("/scope") == "Namespaced";
        let mut out = Vec::new();
        for v in spec
            .and_then(|s| s.get("versions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let schema = v
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            out.push(ResourceSchema {
                group: group.clone(),
                version: v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind: kind.clone(),
                plural: plural.clone(),
                namespaced,
                name_rule: Some(NameRule::DnsSubdomain),
                custom: true,
                structural: Arc::new(Structural::compile(&schema)?),
            });
        }
        Ok(out)
    }

    /// A resource with an explicit schema (a kcp API resource schema, a test).
    pub fn new(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        structural: Arc<Structural>,
    ) -> ResourceSchema {
        ResourceSchema {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            name_rule: Some(NameRule::DnsSubdomain),
            custom: true,
            structural,
        }
    }

    /// The compiled schema.
    pub fn structural(&self) -> &Structural {
        &self.structural
    }

    /// Decodes a request body for create, update or patch result: drops fields the schema does
    /// not know (metadata reduced to `ObjectMeta`), applies `field_validation` to them, and
    /// applies defaults. Returns the `Warning` header texts (Warn), or the 400 to answer
    /// (Strict with unknown fields, or metadata that is not `ObjectMeta`).
    ///
    /// Run it before the server fills in generated names and other server-set fields, and
    /// [`ResourceSchema::validate`] after.
    pub fn decode(
        &self,
        obj: &mut Value,
        field_validation: FieldValidation,
    ) -> Result<Vec<String>, DecodeError> {
        let handled_as = |detail: &str| DecodeError {
            message: format!(
                "{} in version \"{}\" cannot be handled as a {}: {detail}",
                self.kind, self.version, self.kind
            ),
        };
        if !obj.is_object() {
            return Err(handled_as("the object must be a JSON object"));
        }
        let unknown = self
            .structural
            .prune(obj)
            .map_err(|e| handled_as(&e.detail))?;
        let warnings = match field_validation {
            FieldValidation::Strict if !unknown.is_empty() => {
                return Err(DecodeError {
                    message: strict_error_message(&self.kind, &self.version, &unknown),
                });
            }
            FieldValidation::Warn => unknown.iter().map(|p| unknown_field_warning(p)).collect(),
            _ => Vec::new(),
        };
        self.structural.default(obj);
        Ok(warnings)
    }

    /// Prunes and defaults an object read from storage, as kube does when it serves a custom
    /// resource after its CRD's schema changed. Built-ins are returned as stored.
    pub fn read(&self, obj: &mut Value) {
        if self.custom {
            self.structural.prune_stored(obj);
            self.structural.default(obj);
        }
    }

    /// Validates a decoded object (`old` is the stored object on update): type meta for custom
    /// resources (reported alone when wrong, as kube does), `metadata`, then the schema. An
    /// empty result means valid; otherwise answer [`ResourceSchema::invalid`].
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        if self.custom {
            let errs = validate_type_meta(obj, &self.group, &self.version, &self.kind);
            if !errs.is_empty() {
                return errs;
            }
        }
        let mut errs = Vec::new();
        if let Some(rule) = self.name_rule {
            let empty = Map::new();
            let meta = obj
                .get("metadata")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            errs.extend(validate_object_meta(
                meta,
                self.namespaced,
                rule,
                "metadata",
            ));
            // ValidateObjectMetaAccessorUpdate: identity fields cannot change.
            if let Some(old_meta) = old
                .and_then(|o| o.get("metadata"))
                .and_then(Value::as_object)
            {
                for f in ["name", "namespace", "uid"] {
                    let new_v = meta.get(f).and_then(Value::as_str).unwrap_or("");
                    let old_v = old_meta.get(f).and_then(Value::as_str).unwrap_or("");
                    if new_v != old_v {
                        errs.push(FieldError::invalid(
                            &format!("metadata.{f}"),
                            BadValue::str(new_v),
                            "field is immutable",
                        ));
                    }
                }
            }
        }
        errs.extend(self.structural.validate(obj, old));
        errs
    }

    /// The 422 `Invalid` Status for `errs` about the object called `name`.
    pub fn invalid(&self, name: &str, errs: &[FieldError]) -> Status {
        invalid_status(&self.group, &self.kind, name, errs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widgets() -> ResourceSchema {
        let crd = json!({
            "spec": {"group": "example.io", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "required": ["version"], "properties": {
                        "version": {"type": "string", "pattern": "^v"}, "replicas": {"type": "integer", "default": 1}}}}}}}]}
        });
        ResourceSchema::from_crd(&crd).unwrap().remove(0)
    }

    #[test]
    fn full_pipeline_for_a_custom_resource() {
        let r = widgets();
        let mut obj = json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
            "spec": {"version": "abc", "extra": 1}});
        assert_eq!(
            r.decode(&mut obj.clone(), FieldValidation::Strict)
                .unwrap_err()
                .message,
            "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.extra\""
        );
        assert_eq!(
            r.decode(&mut obj, FieldValidation::Warn).unwrap(),
            ["unknown field \"spec.extra\""]
        );
        assert_eq!(obj["spec"], json!({"version": "abc", "replicas": 1}));
        let errs = r.validate(&obj, None);
        let status = serde_json::to_value(r.invalid("w", &errs)).unwrap();
        assert_eq!(
            status["message"],
            "Widget.example.io \"w\" is invalid: spec.version: Invalid value: \"abc\": spec.version in body should match '^v'"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.version");
        assert_eq!(
            status["details"]["causes"][0]["reason"],
            "FieldValueInvalid"
        );
    }

    #[test]
    fn type_meta_and_metadata() {
        let r = widgets();
        let errs: Vec<String> = r
            .validate(&json!({"apiVersion": "example.io/v2", "kind": "Widget", "metadata": {"name": "w"}}), None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["apiVersion: Invalid value: \"example.io/v2\": must be example.io/v1"]
        );
        let errs: Vec<String> = r
            .validate(&json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "W", "namespace": "default"}, "spec": {}}), None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errs[0]
                .starts_with("metadata.name: Invalid value: \"W\": a lowercase RFC 1123 subdomain"),
            "{errs:?}"
        );
        assert_eq!(errs[1], "spec.version: Required value");
    }

    #[test]
    fn identity_fields_are_immutable() {
        let r = widgets();
        let old = json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default", "uid": "1"}, "spec": {"version": "v1"}});
        let mut new = old.clone();
        new["metadata"]["uid"] = json!("2");
        assert_eq!(
            r.validate(&new, Some(&old))
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["metadata.uid: Invalid value: \"2\": field is immutable"]
        );
        assert!(r.validate(&old, Some(&old)).is_empty());
    }

    #[test]
    fn builtins() {
        let cm = ResourceSchema::builtin("", "v1", "ConfigMap").unwrap();
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "b"}, "bogus": 1});
        assert_eq!(
            cm.decode(&mut obj, FieldValidation::Ignore).unwrap(),
            Vec::<String>::new()
        );
        assert!(obj.get("bogus").is_none());
        assert!(cm.validate(&obj, None).is_empty());
        let ns = ResourceSchema::builtin("", "v1", "Namespace").unwrap();
        assert_eq!(
            ns.validate(&json!({"metadata": {"name": "a.b"}}), None)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        assert!(ResourceSchema::builtin("", "v1", "Pod").is_some());
        assert!(ResourceSchema::builtin("example.com", "v1", "Widget").is_none());
        let tr = ResourceSchema::for_definition(
            "authentication.k8s.io",
            "v1",
            "TokenRequest",
            "serviceaccounts/token",
            true,
            super::super::builtin::TOKEN_REQUEST_DEFINITION,
        )
        .unwrap();
        assert_eq!(
            tr.validate(&json!({"spec": {"audiences": "x"}}), None)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "spec.audiences: Invalid value: \"string\": spec.audiences in body must be of type array: \"string\""
            ]
        );
    }
}
