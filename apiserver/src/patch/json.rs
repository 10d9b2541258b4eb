//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902), with kube-apiserver's error behaviour.
//!
//! The patch semantics come from the `json-patch` crate; this module adds what kube-apiserver does
//! around them: a malformed patch is a 400, a patch that does not apply (failing `test`, missing path)
//! is a 422 with the generic "the server rejected our request" message, and more than 10,000
//! operations is a 413.

use serde_json::Value;

use super::error::{MAX_JSON_PATCH_OPERATIONS, PatchError};

/// Applies a JSON merge patch (`application/merge-patch+json`) to `doc`.
///
/// Only an object patch is accepted, as an object is what every Kubernetes resource is; kube-apiserver
/// answers other documents with 400 `Invalid JSON Patch`. `null` members delete, objects merge
/// recursively, everything else replaces.
pub fn merge(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    if !patch.is_object() {
        return Err(PatchError::BadRequest("Invalid JSON Patch".to_string()));
    }
    json_patch::merge(doc, patch);
    Ok(())
}

/// Applies a JSON patch (`application/json-patch+json`) to `doc`. On error `doc` is unchanged.
pub(crate) fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            go_type(patch)
        )));
    };
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations(ops.len()));
    }
    let mut parsed = Vec::with_capacity(ops.len());
    for op in ops {
        if !op.is_object() {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                go_type(op)
            )));
        }
        // kube-apiserver decodes operations lazily, so a bad operation fails at apply time (422).
        let operation: json_patch::PatchOperation = serde_json::from_value(op.clone())
            .map_err(|e| PatchError::NotApplicable(describe_bad_op(op, &e)))?;
        parsed.push(operation);
    }
    let mut patched = doc.clone();
    for (index, operation) in parsed.iter().enumerate() {
        if tests_absent_as_null(&patched, operation) {
            continue;
        }
        json_patch::patch_unsafe(&mut patched, std::slice::from_ref(operation)).map_err(
            |mut e| {
                e.operation = index;
                PatchError::NotApplicable(describe_failure(ops, &e))
            },
        )?;
    }
    *doc = patched;
    Ok(())
}

/// Whether `operation` is a `test` for `null` of a member that is absent from an existing object:
/// evanphx/json-patch (and so kube-apiserver) lets that pass, where RFC 6902 and the `json-patch`
/// crate fail it. kube-runtime's `finalizer` helper relies on it to add the first finalizer
/// (`test /metadata/finalizers null`, then `add`).
fn tests_absent_as_null(doc: &Value, operation: &json_patch::PatchOperation) -> bool {
    let json_patch::PatchOperation::Test(test) = operation else {
        return false;
    };
    if !test.value.is_null() || test.path.resolve(doc).is_ok() {
        return false;
    }
    test.path
        .parent()
        .and_then(|parent| parent.resolve(doc).ok())
        .is_some_and(|parent| parent.is_object() || parent.is_array())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn describe_bad_op(op: &Value, e: &serde_json::Error) -> String {
    match op.get("op").and_then(Value::as_str) {
        None => "Unexpected kind: unknown".to_string(),
        Some(kind @ ("add" | "remove" | "replace" | "move" | "copy" | "test")) => {
            format!("{kind} operation is invalid: {e}")
        }
        Some(kind) => format!("Unexpected kind: {kind}"),
    }
}

/// Words a failed operation like evanphx/json-patch, which kube-apiserver uses.
fn describe_failure(ops: &[Value], e: &json_patch::PatchError) -> String {
    let op = &ops[e.operation.min(ops.len().saturating_sub(1))];
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
    let path = op.get("path").and_then(Value::as_str).unwrap_or("");
    match e.kind {
        json_patch::PatchErrorKind::TestFailed => {
            format!("testing value {path} failed: test failed")
        }
        json_patch::PatchErrorKind::InvalidFromPointer => {
            let from = op.get("from").and_then(Value::as_str).unwrap_or("");
            format!(
                "{kind} operation does not apply: doc is missing from path: {from}: missing value"
            )
        }
        json_patch::PatchErrorKind::CannotMoveInsideItself => {
            format!("{kind} operation does not apply: cannot move {path} inside itself")
        }
        _ => {
            format!("{kind} operation does not apply: doc is missing path: {path:?}: missing value")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2], "d": 1});
        merge(
            &mut doc,
            &json!({"a": {"b": null, "e": {"x": null, "y": 1}}, "l": [3], "d": null}),
        )
        .unwrap();
        assert_eq!(doc, json!({"a": {"c": 2, "e": {"y": 1}}, "l": [3]}));
    }

    #[test]
    fn test_for_null_passes_on_an_absent_member_like_kube_apiserver() {
        let mut doc = json!({"metadata": {"name": "a"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]},
        ]);
        json_patch(&mut doc, &patch).unwrap();
        assert_eq!(doc, json!({"metadata": {"name": "a", "finalizers": ["f"]}}));
        // Present now: the same test fails, and a missing parent still fails.
        assert!(matches!(
            json_patch(&mut doc, &patch),
            Err(PatchError::NotApplicable(_))
        ));
        let missing_parent = json!([{"op": "test", "path": "/spec/x", "value": null}]);
        assert!(json_patch(&mut doc, &missing_parent).is_err());
    }

    #[test]
    fn non_object_merge_patch_is_bad_request() {
        let mut doc = json!({"a": 1});
        for p in [json!(null), json!([1]), json!(3)] {
            let e = merge(&mut doc, &p).unwrap_err();
            assert_eq!(
                (e.code(), e.to_string()),
                (400, "Invalid JSON Patch".to_string())
            );
        }
        assert_eq!(doc, json!({"a": 1}));
    }

    #[test]
    fn json_patch_applies_operations() {
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2]}});
        json_patch(
            &mut doc,
            &json!([
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "add", "path": "/spec/list/-", "value": 3},
                {"op": "replace", "path": "/spec/list/0", "value": 0},
                {"op": "copy", "from": "/spec/list", "path": "/spec/copy"},
                {"op": "move", "from": "/spec/copy", "path": "/spec/moved"}
            ]),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"labels": {"b": "2"}}, "spec": {"list": [0, 2, 3], "moved": [0, 2, 3]}})
        );
    }

    #[test]
    fn failing_test_is_422_and_leaves_the_document() {
        let mut doc = json!({"metadata": {"name": "a"}});
        let e = json_patch(
            &mut doc,
            &json!([{"op": "add", "path": "/x", "value": 1}, {"op": "test", "path": "/metadata/name", "value": "b"}]),
        )
        .unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(e.reason(), "Invalid");
        assert_eq!(
            e.to_string(),
            "the server rejected our request due to an error in our request"
        );
        assert_eq!(
            e,
            PatchError::NotApplicable("testing value /metadata/name failed: test failed".into())
        );
        assert_eq!(doc, json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn missing_path_and_unknown_ops_are_422() {
        let mut doc = json!({});
        let e = json_patch(
            &mut doc,
            &json!([{"op": "replace", "path": "/spec/x", "value": 1}]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            PatchError::NotApplicable(r#"replace operation does not apply: doc is missing path: "/spec/x": missing value"#.into())
        );
        let e = json_patch(&mut doc, &json!([{"op": "frobnicate", "path": "/x"}])).unwrap_err();
        assert_eq!(
            e,
            PatchError::NotApplicable("Unexpected kind: frobnicate".into())
        );
    }

    #[test]
    fn malformed_json_patch_is_400_and_huge_is_413() {
        let mut doc = json!({});
        let e = json_patch(&mut doc, &json!({"op": "add"})).unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.to_string(),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        let e = json_patch(&mut doc, &json!(["x"])).unwrap_err();
        assert_eq!(e.code(), 400);
        let many = Value::Array(vec![
            json!({"op": "test", "path": "", "value": {}});
            MAX_JSON_PATCH_OPERATIONS + 1
        ]);
        assert_eq!(json_patch(&mut doc, &many).unwrap_err().code(), 413);
    }
}
