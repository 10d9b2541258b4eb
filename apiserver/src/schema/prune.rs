//! Removing fields a schema does not declare (pruning), and `fieldValidation` — how a request
//! learns about the fields that were removed.
//!
//! For custom resources this is apiextensions' `pruning.Prune` plus `objectmeta.Coerce`; for
//! built-ins it stands in for Go's typed decoding, which drops unknown fields (and `null`s).
//! Either way the removed paths are returned so the caller can apply the request's
//! `fieldValidation`: `Strict` rejects with 400, `Warn` adds `Warning` headers, `Ignore` says
//! nothing.

use serde_json::Value;

use super::errors::{FieldError, child, index};
use super::objectmeta::coerce_metadata;
use super::structural::{Additional, NodeId, Structural};

/// The `fieldValidation` query parameter of create, update and patch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Unknown fields are an error (kubectl's default since 1.27).
    Strict,
    /// Unknown fields are dropped and reported as warnings (the server default).
    #[default]
    Warn,
    /// Unknown fields are dropped silently.
    Ignore,
}

impl FieldValidation {
    /// Parses the query parameter; `None` for a value kube rejects. An absent parameter is
    /// [`FieldValidation::Warn`].
    pub fn parse(s: &str) -> Option<FieldValidation> {
        match s {
            "Strict" => Some(FieldValidation::Strict),
            "Warn" | "" => Some(FieldValidation::Warn),
            "Ignore" => Some(FieldValidation::Ignore),
            _ => None,
        }
    }

    /// kube's 400 message for a `fieldValidation` value it does not know.
    pub fn invalid_message(s: &str) -> String {
        format!(
            "fieldValidation parameter unsupported: {s}. Supported values are Strict, Warn, and Ignore"
        )
    }
}

/// `unknown field "spec.foo"`: one `Warning` header text (Warn) or one part of the Strict error.
pub(crate) fn unknown_field_warning(path: &str) -> String {
    format!("unknown field \"{path}\"")
}

/// The message of the 400 `BadRequest` kube answers in Strict mode:
/// `Foo in version "v1" cannot be handled as a Foo: strict decoding error: unknown field "spec.x"`.
pub(crate) fn strict_error_message(kind: &str, version: &str, unknown: &[String]) -> String {
    let fields: Vec<String> = unknown.iter().map(|p| unknown_field_warning(p)).collect();
    format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
        fields.join(", ")
    )
}

impl Structural {
    /// Prunes `obj` (a resource root) in place and returns the paths of removed fields
    /// (`spec.foo`, `spec.items[0].bar`, `metadata.foo`), sorted.
    ///
    /// `apiVersion`, `kind` and `metadata` are kept at the root and in embedded resources,
    /// where `metadata` is reduced to `ObjectMeta`'s fields instead; below
    /// `x-kubernetes-preserve-unknown-fields` nothing is removed except what nested schemas
    /// specify. A `metadata` that does not decode as `ObjectMeta` is an error.
    pub fn prune(&self, obj: &mut Value) -> Result<Vec<String>, FieldError> {
        let mut unknown = Vec::new();
        self.prune_at(self.root, obj, "", true, false, &mut unknown)?;
        unknown.sort();
        Ok(unknown)
    }

    /// Prunes an object read from storage: like [`Structural::prune`], but malformed metadata
    /// fields are dropped rather than reported (kube's `dropInvalidFields` when decoding from
    /// etcd after a schema change).
    pub fn prune_stored(&self, obj: &mut Value) {
        let mut unknown = Vec::new();
        // With drop_invalid no error can occur.
        let _ = self.prune_at(self.root, obj, "", true, true, &mut unknown);
    }

    /// Prunes a value at node `id` (a `default`, say) and returns the removed paths.
    pub(crate) fn prune_value(&self, id: NodeId, v: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        // drop_invalid: malformed metadata inside is dropped, never an error.
        let _ = self.prune_at(id, v, "", false, true, &mut unknown);
        unknown
    }

    fn prune_at(
        &self,
        id: NodeId,
        v: &mut Value,
        path: &str,
        resource: bool,
        drop_invalid: bool,
        unknown: &mut Vec<String>,
    ) -> Result<(), FieldError> {
        let node = self.node(id);
        match v {
            Value::Object(obj) => {
                let resource = resource || node.embedded;
                if resource && let Some(meta) = obj.get_mut("metadata") {
                    coerce_metadata(
                        meta,
                        &child(path, "metadata"),
                        &mut Some(&mut *unknown),
                        drop_invalid,
                    )?;
                }
                if self.builtin {
                    obj.retain(|_, x| !x.is_null());
                }
                let preserve = node.preserve_unknown;
                let mut removed = Vec::new();
                for (k, x) in obj.iter_mut() {
                    if resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    if let Some(c) = node.field(k) {
                        // Scalars have nothing to prune; only containers need their path.
                        if x.is_object() || x.is_array() {
                            self.prune_at(c, x, &child(path, k), false, drop_invalid, unknown)?;
                        }
                    } else if matches!(node.additional, Additional::Bool(true)) || preserve {
                        // Allowed as is (preserve-unknown-fields keeps unspecified fields).
                    } else {
                        removed.push(k.clone());
                        unknown.push(child(path, k));
                    }
                }
                for k in removed {
                    obj.remove(&k);
                }
            }
            Value::Array(items) => {
                if self.builtin {
                    items.retain(|x| !x.is_null());
                }
                if let Some(item) = node.items {
                    for (i, x) in items.iter_mut().enumerate() {
                        if x.is_object() || x.is_array() {
                            self.prune_at(item, x, &index(path, i), false, drop_invalid, unknown)?;
                        }
                    }
                } else if !node.preserve_unknown {
                    // An array without an item schema: prune(v, nil) empties every object in it.
                    for (i, x) in items.iter_mut().enumerate() {
                        if let Value::Object(o) = x {
                            for k in o.keys() {
                                unknown.push(child(&index(path, i), k));
                            }
                            o.clear();
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s() -> Structural {
        Structural::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string"},
                        "list": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"typed": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {"y": {"type": "string"}}}}}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn removes_unknown_fields_and_reports_paths() {
        let mut obj = json!({
            "apiVersion": "example.io/v1", "kind": "Foo", "metadata": {"name": "x", "bogus": 1},
            "spec": {"a": "1", "b": 2, "list": [{"k": "1", "z": 1}], "labels": {"any": "thing"},
                     "free": {"whatever": {"deep": 1}, "typed": {"x": "1", "gone": 2}},
                     "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1}, "spec": {"y": "1", "nope": 1}, "extra": 1}},
            "other": true
        });
        let unknown = s().prune(&mut obj).unwrap();
        assert_eq!(
            unknown,
            [
                "metadata.bogus",
                "other",
                "spec.b",
                "spec.free.typed.gone",
                "spec.list[0].z",
                "spec.template.extra",
                "spec.template.metadata.junk",
                "spec.template.spec.nope"
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "example.io/v1", "kind": "Foo", "metadata": {"name": "x"},
                "spec": {"a": "1", "list": [{"k": "1"}], "labels": {"any": "thing"},
                         "free": {"whatever": {"deep": 1}, "typed": {"x": "1"}},
                         "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"y": "1"}}}
            })
        );
    }

    #[test]
    fn malformed_metadata_is_an_error_unless_read_from_storage() {
        let mut obj = json!({"metadata": {"name": 5}});
        let e = s().prune(&mut obj).unwrap_err();
        assert!(
            e.to_string().contains(
                "json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"
            ),
            "{e}"
        );
        s().prune_stored(&mut obj);
        assert_eq!(obj, json!({"metadata": {}}));
    }

    #[test]
    fn field_validation_messages() {
        assert_eq!(
            FieldValidation::parse("Strict"),
            Some(FieldValidation::Strict)
        );
        assert_eq!(FieldValidation::parse(""), Some(FieldValidation::Warn));
        assert_eq!(FieldValidation::parse("strict"), None);
        assert_eq!(
            FieldValidation::invalid_message("strict"),
            "fieldValidation parameter unsupported: strict. Supported values are Strict, Warn, and Ignore"
        );
        assert_eq!(
            unknown_field_warning("spec.foo"),
            "unknown field \"spec.foo\""
        );
        assert_eq!(
            strict_error_message("Foo", "v1", &["spec.a".into(), "spec.b".into()]),
            "Foo in version \"v1\" cannot be handled as a Foo: strict decoding error: unknown field \"spec.a\", unknown field \"spec.b\""
        );
    }
}
