//! The `metav1.Status` an authentication or authorization refusal is answered with.

use serde_json::{Value, json};

/// A refusal worded like kube-apiserver's, ready to be written as a `metav1.Status` body.
///
/// The fields mirror the server core's API error so converting is a field-by-field move.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct StatusError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `Forbidden`.
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, when kube-apiserver sets it.
    pub details: Option<Value>,
}

impl StatusError {
    /// A refusal without details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        StatusError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
        }
    }

    /// 401 for a request whose credentials are missing, unknown, expired or revoked. kube-apiserver
    /// never says which: the message is always `Unauthorized`.
    pub fn unauthorized() -> Self {
        StatusError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 404 as kube-apiserver answers a path it does not serve; kcp answers it to identities that
    /// may not see a workspace, so they cannot tell whether it exists.
    pub fn not_found_opaque() -> Self {
        StatusError {
            details: Some(json!({})),
            ..StatusError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }

    /// 404 for a named object: `serviceaccounts "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        StatusError {
            details: Some(details(group, resource, name)),
            ..StatusError::new(
                404,
                "NotFound",
                format!(
                    "{} {} not found",
                    qualified(group, resource),
                    go_quote(name)
                ),
            )
        }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        StatusError::new(400, "BadRequest", message)
    }

    /// 409 Conflict: `Operation cannot be fulfilled on <resource> "<name>": <message>`.
    pub fn conflict(group: &str, resource: &str, name: &str, message: &str) -> Self {
        StatusError {
            details: Some(details(group, resource, name)),
            ..StatusError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} {}: {message}",
                    qualified(group, resource),
                    go_quote(name)
                ),
            )
        }
    }

    /// 422 Invalid with one cause per `(field, message)`:
    /// `<Kind>.<group> "<name>" is invalid: <field>: <message>`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[(String, String)]) -> Self {
        let rendered: Vec<String> = causes
            .iter()
            .map(|(field, message)| format!("{field}: {message}"))
            .collect();
        let list = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let mut d = details(group, kind, name);
        d["causes"] = causes
            .iter()
            .map(|(field, message)| json!({"reason": "FieldValueInvalid", "message": message, "field": field}))
            .collect();
        StatusError {
            details: Some(d),
            ..StatusError::new(
                422,
                "Invalid",
                format!(
                    "{} {} is invalid: {list}",
                    qualified(group, kind),
                    go_quote(name)
                ),
            )
        }
    }

    /// 403 Forbidden for a request on `resource` (group-qualified in the message), named `name`
    /// or a collection when empty, with kube-apiserver's `NewForbidden` wording.
    pub fn forbidden(group: &str, resource: &str, name: &str, reason: &str) -> Self {
        let message = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {reason}")
        } else if name.is_empty() {
            format!("{} is forbidden: {reason}", qualified(group, resource))
        } else {
            format!(
                "{} {} is forbidden: {reason}",
                qualified(group, resource),
                go_quote(name)
            )
        };
        StatusError {
            details: Some(details(group, resource, name)),
            ..StatusError::new(403, "Forbidden", message)
        }
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// `resource.group`, or `resource` for the core group: Go's `schema.GroupResource.String()`.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn details(group: &str, kind: &str, name: &str) -> Value {
    let mut d = serde_json::Map::new();
    if !name.is_empty() {
        d.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        d.insert("kind".into(), json!(kind));
    }
    Value::Object(d)
}

/// Quotes like Go's `%q` (`strconv.Quote`): kube-apiserver's messages quote names this way.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders a list like Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_wording_matches_new_forbidden() {
        let e = StatusError::forbidden("", "configmaps", "foo", "User \"x\" cannot get");
        assert_eq!(
            e.message,
            "configmaps \"foo\" is forbidden: User \"x\" cannot get"
        );
        assert_eq!(
            e.details,
            Some(json!({"name": "foo", "kind": "configmaps"}))
        );
        let e = StatusError::forbidden("apps", "deployments", "", "r");
        assert_eq!(e.message, "deployments.apps is forbidden: r");
        let e = StatusError::forbidden("", "", "", "User \"x\" cannot get path \"/metrics\"");
        assert_eq!(
            e.message,
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
        assert_eq!(e.to_status()["code"], 403);
        assert_eq!(e.to_status()["reason"], "Forbidden");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = StatusError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            "sa",
            &[(
                "spec.expirationSeconds".into(),
                "Invalid value: 60: may not specify a duration less than 10 minutes".into(),
            )],
        );
        assert_eq!(
            e.message,
            "TokenRequest.authentication.k8s.io \"sa\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        );
        assert_eq!(e.code, 422);
        assert_eq!(
            e.details
                .as_ref()
                .and_then(|d| d["causes"][0]["field"].as_str()),
            Some("spec.expirationSeconds")
        );
    }

    #[test]
    fn go_quote_escapes() {
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote_list(&["a".into(), "b".into()]), "[\"a\" \"b\"]");
    }
}
