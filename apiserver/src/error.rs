//! API errors as kube-apiserver reports them: `metav1.Status` bodies with its reasons and messages.

use serde_json::{Value, json};

/// One field-level cause of an error, as in `Status.details.causes[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueInvalid`, `FieldValueRequired`.
    pub reason: String,
    /// Human-readable description.
    pub message: String,
    /// The field path, e.g. `spec.replicas`.
    pub field: String,
}

impl Cause {
    /// A `FieldValueInvalid` cause.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Cause {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: field.into(),
        }
    }
}

/// An error answered to an API request as a `metav1.Status`.
///
/// The constructors reproduce kube-apiserver's wording exactly, because clients and people match on
/// it (`kubectl` prints the message; controllers branch on `reason` and `code`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`.
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, when kube-apiserver sets it.
    pub details: Option<Value>,
    /// Seconds for the `Retry-After` header (429, 503, 500 with retry).
    pub retry_after: Option<u32>,
}

/// Shorthand for results of request handling.
pub(crate) type ApiResult<T> = Result<T, ApiError>;

/// The group-qualified resource (`deployments.apps`, or `configmaps` for the core group) used in messages.
pub(crate) fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// `Status.details` for an object: kube's `StatusDetails` omits empty fields.
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

impl ApiError {
    /// A bare error with a code, reason and message.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 404 for an object: `configmaps "foo" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            format!(
                "{} {} not found",
                qualified(group, resource),
                go_quote(name)
            ),
        );
        e.details = Some(details(group, resource, name));
        e
    }

    /// 404 for a path the server does not serve. kcp answers it also to identities that may not
    /// see a workspace, so they cannot tell whether it exists.
    pub fn no_route() -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        e.details = Some(json!({}));
        e
    }

    /// 409 AlreadyExists: `configmaps "foo" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let mut e = Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} {} already exists",
                qualified(group, resource),
                go_quote(name)
            ),
        );
        e.details = Some(details(group, resource, name));
        e
    }

    /// 409 Conflict for a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict_msg(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a custom explanation: `Operation cannot be fulfilled on configmaps "foo": <msg>`.
    pub fn conflict_msg(group: &str, resource: &str, name: &str, msg: &str) -> Self {
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {}: {msg}",
                qualified(group, resource),
                go_quote(name)
            ),
        );
        e.details = Some(details(group, resource, name));
        e
    }

    /// 422 Invalid with field causes: `ConfigMap "foo" is invalid: data.x: Invalid value: ...`.
    ///
    /// `kind_group` is the kind qualified like kube-apiserver does (`Deployment.apps`, `ConfigMap`).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified_kind = qualified(group, kind);
        let rendered: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let list = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qualified_kind} {} is invalid: {list}", go_quote(name)),
        );
        let mut d = details(group, kind, name);
        d["causes"] = Value::Array(
            causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect(),
        );
        e.details = Some(d);
        e
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden with kube-apiserver's `NewForbidden` wording: `configmaps "foo" is forbidden:
    /// <why>`, `configmaps is forbidden: <why>` for a collection, `forbidden: <why>` for a
    /// non-resource path.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: impl std::fmt::Display) -> Self {
        let qr = qualified(group, resource);
        let message = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{qr} is forbidden: {why}")
        } else {
            format!("{qr} {} is forbidden: {why}", go_quote(name))
        };
        let mut e = Self::new(403, "Forbidden", message);
        e.details = Some(details(group, resource, name));
        e
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_supported(group: &str, resource: &str, action: &str) -> Self {
        let mut e = Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{action} is not supported on resources of kind \"{}\"",
                qualified(group, resource)
            ),
        );
        e.details = Some(details(group, resource, ""));
        e
    }

    /// 406 NotAcceptable for an `Accept` header the server cannot satisfy.
    pub fn not_acceptable() -> Self {
        Self::not_acceptable_of(&["application/json", "application/yaml"])
    }

    /// 406 NotAcceptable naming the media types the endpoint serves.
    pub fn not_acceptable_of(types: &[&str]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                types.join(", ")
            ),
        )
    }

    /// 410 Expired for a resourceVersion older than the retained history.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 415 UnsupportedMediaType for a body format the endpoint does not take.
    pub fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                if accepted.is_empty() {
                    content_type.to_string()
                } else {
                    accepted.join(", ")
                }
            ),
        )
    }

    /// 429 TooManyRequests with a `Retry-After`.
    pub fn too_many_requests(retry_after: u32) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        );
        e.details = Some(json!({"retryAfterSeconds": retry_after}));
        e.retry_after = Some(retry_after);
        e
    }

    /// 500 InternalError.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        let mut e = Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        );
        e.details = Some(json!({"causes": [{"message": message.to_string()}]}));
        e
    }

    /// 503 ServiceUnavailable.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// An error for a code chosen by a test (fault injection), with kube-apiserver's reason for it.
    pub fn for_code(code: u16, group: &str, resource: &str, name: &str) -> Self {
        match code {
            400 => Self::bad_request("injected fault"),
            401 => Self::unauthorized(),
            403 => Self::forbidden(group, resource, name, "injected fault: forbidden"),
            404 => Self::not_found(group, resource, name),
            405 => Self::method_not_supported(group, resource, "injected fault"),
            409 => Self::conflict(group, resource, name),
            410 => Self::new(410, "Expired", "injected fault: too old resource version"),
            422 => Self::invalid(group, resource, name, vec![]),
            429 => Self::too_many_requests(1),
            500 => Self::internal("injected fault"),
            503 => Self::service_unavailable("injected fault"),
            504 => Self::new(504, "Timeout", "injected fault: timeout"),
            c => Self::new(c, "Unknown", "injected fault"),
        }
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        });
        // `reason` is omitted when empty, as metav1.Status writes it.
        if !self.reason.is_empty() {
            s["reason"] = json!(self.reason);
        }
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}
/// Go's `strconv.Quote` (`%q`): double quotes, `\"` and `\\` escaped, control characters as
/// `\n`, `\t`, `\x00` or `\u0085`; other printable characters, including non-ASCII, kept.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{feff}') =>
            {
                let n = c as u32;
                if n > 0xffff {
                    out.push_str(&format!("\\U{n:08x}"));
                } else {
                    out.push_str(&format!("\\u{n:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_wording_matches_new_forbidden() {
        let e = ApiError::forbidden("", "configmaps", "foo", "User \"x\" cannot get");
        assert_eq!(
            e.message,
            "configmaps \"foo\" is forbidden: User \"x\" cannot get"
        );
        assert_eq!(
            e.details,
            Some(json!({"name": "foo", "kind": "configmaps"}))
        );
        let e = ApiError::forbidden("apps", "deployments", "", "r");
        assert_eq!(e.message, "deployments.apps is forbidden: r");
        let e = ApiError::forbidden("", "", "", "User \"x\" cannot get path \"/metrics\"");
        assert_eq!(
            e.message,
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
        assert_eq!(e.to_status()["code"], 403);
        assert_eq!(e.to_status()["reason"], "Forbidden");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            "sa",
            vec![Cause::invalid(
                "spec.expirationSeconds",
                "Invalid value: 60: may not specify a duration less than 10 minutes",
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
    fn names_are_quoted_like_go() {
        assert_eq!(
            ApiError::not_found("", "configmaps", "a\"b").message,
            "configmaps \"a\\\"b\" not found"
        );
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(go_quote_list(&["a".into(), "b".into()]), "[\"a\" \"b\"]");
    }
}
