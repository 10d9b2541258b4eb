//! Errors of patching and server-side apply, with the status code, reason, message and details
//! kube-apiserver answers them with, so the server core can turn them into `metav1.Status` as is.

use serde_json::{Value, json};

/// The patch types kube-apiserver accepts for custom resources, in the order it lists them.
pub(crate) const CUSTOM_RESOURCE_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// kube-apiserver's limit on the number of operations in one JSON patch.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Why a JSON patch, merge patch or strategic merge patch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// 400 BadRequest: the patch document is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// 422 Invalid: the patch is well formed but cannot be applied to this object (a failing `test`,
    /// a missing path). kube-apiserver answers the generic message; the reason is kept here for logs.
    #[error("the server rejected our request due to an error in our request")]
    NotApplicable(String),
    /// 413 RequestEntityTooLarge: more than [`MAX_JSON_PATCH_OPERATIONS`] operations.
    #[error(
        "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {0}"
    )]
    TooManyOperations(usize),
    /// 415 UnsupportedMediaType: strategic merge patch of a custom resource.
    #[error(
        "the body of the request was in an unknown format - accepted media types include: {}",
        CUSTOM_RESOURCE_PATCH_TYPES.join(", ")
    )]
    UnsupportedMediaType,
    /// 500 with no reason: an error kube-apiserver does not classify (e.g. a list item missing its
    /// merge key in a strategic merge patch).
    #[error("{0}")]
    Failed(String),
}

impl PatchError {
    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::NotApplicable(_) => 422,
            PatchError::TooManyOperations(_) => 413,
            PatchError::UnsupportedMediaType => 415,
            PatchError::Failed(_) => 500,
        }
    }

    /// `Status.reason` (empty: none).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::NotApplicable(_) => "Invalid",
            PatchError::TooManyOperations(_) => "RequestEntityTooLarge",
            PatchError::UnsupportedMediaType => "UnsupportedMediaType",
            PatchError::Failed(_) => "",
        }
    }

    /// `Status.details`, when kube-apiserver sets it.
    pub fn details(&self) -> Option<Value> {
        match self {
            PatchError::NotApplicable(_) => Some(json!({})),
            _ => None,
        }
    }
}

/// One field an apply conflicts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager as kube-apiserver prints it: `"kubectl"`, `"kubectl-edit" using v1`.
    pub manager: String,
    /// The field path: `.spec.replicas`, `.spec.containers[name="app"].image`.
    pub field: String,
}

/// Why a server-side apply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// 400 BadRequest: the applied configuration is malformed (wrong kind or version, managedFields
    /// set).
    #[error("{0}")]
    BadRequest(String),
    /// 422 Invalid on `PatchOptions`: the request has no `fieldManager`, or an invalid one.
    #[error("PatchOptions.meta.k8s.io \"\" is invalid: {0}")]
    InvalidFieldManager(String),
    /// 409 Conflict: fields the configuration changes are owned by other managers.
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// 500 with no reason: the configuration does not fit the type (an undeclared field, a list item
    /// without its key), worded as kube-apiserver words it.
    #[error("{0}")]
    Failed(String),
}

impl ApplyError {
    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            ApplyError::BadRequest(_) => 400,
            ApplyError::InvalidFieldManager(_) => 422,
            ApplyError::Conflicts(_) => 409,
            ApplyError::Failed(_) => 500,
        }
    }

    /// `Status.reason` (empty: none).
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::BadRequest(_) => "BadRequest",
            ApplyError::InvalidFieldManager(_) => "Invalid",
            ApplyError::Conflicts(_) => "Conflict",
            ApplyError::Failed(_) => "",
        }
    }

    /// `Status.details`, when kube-apiserver sets it: the conflicting fields as
    /// `FieldManagerConflict` causes, or the invalid `fieldManager` parameter.
    pub fn details(&self) -> Option<Value> {
        match self {
            ApplyError::Conflicts(conflicts) => Some(json!({
                "causes": conflicts.iter().map(|c| json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {}", c.manager),
                    "field": c.field,
                })).collect::<Vec<_>>()
            })),
            ApplyError::InvalidFieldManager(msg) => {
                let (field, message) = msg
                    .split_once(": ")
                    .unwrap_or(("fieldManager", msg.as_str()));
                let reason = if message.starts_with("Required value") {
                    "FieldValueRequired"
                } else if message.starts_with("Too long") {
                    "FieldValueTooLong"
                } else {
                    "FieldValueInvalid"
                };
                Some(json!({
                    "group": "meta.k8s.io",
                    "kind": "PatchOptions",
                    "causes": [{"reason": reason, "message": message, "field": field}]
                }))
            }
            _ => None,
        }
    }
}

/// kube-apiserver's conflict message: one conflict on one line, several grouped by manager.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager, only.field
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", c.field));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_messages_match_kube() {
        let one = ApplyError::Conflicts(vec![Conflict {
            manager: r#""kubectl" using v1"#.into(),
            field: ".spec.replicas".into(),
        }]);
        assert_eq!(
            one.to_string(),
            r#"Apply failed with 1 conflict: conflict with "kubectl" using v1: .spec.replicas"#
        );
        assert_eq!(one.code(), 409);
        assert_eq!(
            one.details().unwrap(),
            json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\" using v1", "field": ".spec.replicas"}]})
        );
        let two = ApplyError::Conflicts(vec![
            Conflict {
                manager: r#""b""#.into(),
                field: ".x".into(),
            },
            Conflict {
                manager: r#""a""#.into(),
                field: ".y".into(),
            },
            Conflict {
                manager: r#""b""#.into(),
                field: ".z".into(),
            },
        ]);
        assert_eq!(
            two.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .y\nconflicts with \"b\":\n- .x\n- .z"
        );
    }

    #[test]
    fn status_fields_of_patch_errors() {
        assert_eq!(PatchError::UnsupportedMediaType.code(), 415);
        assert_eq!(
            PatchError::UnsupportedMediaType.to_string(),
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        assert_eq!(PatchError::NotApplicable("x".into()).reason(), "Invalid");
        assert_eq!(PatchError::TooManyOperations(10_001).code(), 413);
        let missing = ApplyError::InvalidFieldManager(
            "fieldManager: Required value: is required for apply patch".into(),
        );
        assert_eq!(
            missing.to_string(),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        assert_eq!(
            missing.details().unwrap()["causes"][0]["reason"],
            "FieldValueRequired"
        );
    }
}
