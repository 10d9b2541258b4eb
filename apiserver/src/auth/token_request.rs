//! The TokenRequest API (`POST …/serviceaccounts/<name>/token`): validation, defaulting and the
//! response, as kube-apiserver's `serviceaccounts/token` storage produces them.

use serde_json::{Map, Value, json};

use crate::auth::serviceaccount::{
    DEFAULT_EXPIRATION_SECONDS, KUBE_MAX_EXPIRATION_SECONDS, ObjectLookup, ServiceAccountRef,
    TokenIssuer,
};
use crate::error::{ApiError, Cause, go_quote};

const GROUP: &str = "authentication.k8s.io";

/// The answer to a TokenRequest: the response body (201 Created) and the warnings to send in
/// `Warning` headers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TokenResponse {
    /// The TokenRequest with defaulted `spec` and `status.token` / `status.expirationTimestamp`.
    pub body: Value,
    /// kube-apiserver's warnings, e.g. when the expiration was shortened to the maximum.
    pub warnings: Vec<String>,
}

/// A string field of a JSON object; absent and `null` read as empty.
pub(crate) fn string_field<'a>(
    object: &'a Value,
    field: &str,
    path: &str,
) -> Result<&'a str, ApiError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ApiError::bad_request(format!(
            "{path}{field}: expected a string, got {other}"
        ))),
    }
}

/// A list-of-strings field of a JSON object; absent and `null` read as empty.
pub(crate) fn strings_field(
    object: &Value,
    field: &str,
    path: &str,
) -> Result<Vec<String>, ApiError> {
    let bad = || ApiError::bad_request(format!("{path}{field}: expected a list of strings"));
    match object.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(bad))
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// The object under `field`, or an empty one when absent or `null`.
pub(crate) fn object_field<'a>(
    object: &'a Value,
    field: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, ApiError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(ApiError::bad_request(format!(
            "{path}{field}: expected an object, got {other}"
        ))),
    }
}

/// Checks `apiVersion`/`kind` of a request body when given.
pub(crate) fn check_kind(body: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(format!(
            "the request body is not a {kind} object"
        )));
    }
    let given_kind = string_field(body, "kind", "")?;
    let given_version = string_field(body, "apiVersion", "")?;
    if (!given_kind.is_empty() && given_kind != kind)
        || (!given_version.is_empty() && given_version != api_version)
    {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {given_version}, Kind={given_kind}"
        )));
    }
    Ok(())
}

/// Answers a TokenRequest for the ServiceAccount `namespace/name` in `cluster` (the kcp logical
/// cluster, `None` on a plain cluster), minted by `issuer`.
///
/// The body's `metadata.name`/`namespace` must match the URL when set; `spec.expirationSeconds`
/// defaults to one hour and must be at least the issuer's minimum (600 s in kube-apiserver);
/// `spec.audiences` defaults to the API audiences; `spec.boundObjectRef` may name a Secret in the
/// namespace (the embedded server has no Pods or Nodes).
pub(crate) fn create_token(
    issuer: &TokenIssuer,
    cluster: Option<&str>,
    namespace: &str,
    name: &str,
    body: &Value,
    lookup: &dyn ObjectLookup,
) -> Result<TokenResponse, ApiError> {
    check_kind(body, "authentication.k8s.io/v1", "TokenRequest")?;
    let empty = json!({});
    let metadata = body
        .get("metadata")
        .filter(|m| !m.is_null())
        .unwrap_or(&empty);
    let spec = body.get("spec").filter(|s| !s.is_null()).unwrap_or(&empty);
    if !spec.is_object() || !metadata.is_object() {
        return Err(ApiError::bad_request(
            "TokenRequest metadata and spec must be objects",
        ));
    }

    let mut causes = Vec::new();
    let body_name = string_field(metadata, "name", "metadata.")?;
    if !body_name.is_empty() && body_name != name {
        causes.push(Cause::invalid(
            "metadata.name".to_string(),
            format!(
                "Invalid value: {}: must match the service account name if specified",
                go_quote(body_name)
            ),
        ));
    }
    let body_ns = string_field(metadata, "namespace", "metadata.")?;
    if !body_ns.is_empty() && body_ns != namespace {
        causes.push(Cause::invalid(
            "metadata.namespace".to_string(),
            format!(
                "Invalid value: {}: must match the service account namespace if specified",
                go_quote(body_ns)
            ),
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(GROUP, "TokenRequest", name, causes));
    }

    let config = issuer.config();
    let mut expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "spec.expirationSeconds: expected an integer, got {v}"
            ))
        })?,
    };
    if expiration < config.min_expiration_seconds {
        let limit = if config.min_expiration_seconds == 600 {
            "10 minutes".to_string()
        } else {
            format!("{} seconds", config.min_expiration_seconds)
        };
        causes.push(Cause::invalid(
            "spec.expirationSeconds".to_string(),
            format!("Invalid value: {expiration}: may not specify a duration less than {limit}"),
        ));
    }
    if expiration > KUBE_MAX_EXPIRATION_SECONDS {
        causes.push(Cause::invalid(
            "spec.expirationSeconds".to_string(),
            format!(
                "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
            ),
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(GROUP, "TokenRequest", name, causes));
    }

    let sa = lookup
        .service_account(cluster, namespace, name)
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;

    let mut bound_secret = None;
    if let Some(bound) = object_field(spec, "boundObjectRef", "spec.")? {
        let bound = Value::Object(bound.clone());
        let path = "spec.boundObjectRef.";
        let api_version = string_field(&bound, "apiVersion", path)?;
        let kind = string_field(&bound, "kind", path)?;
        let bound_name = string_field(&bound, "name", path)?;
        let claimed_uid = string_field(&bound, "uid", path)?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let uid = match (group, kind) {
            ("", "Secret") => {
                lookup
                    .secret(cluster, namespace, bound_name)
                    .ok_or_else(|| ApiError::not_found("", "secrets", bound_name))?
                    .uid
            }
            ("", "Pod") => return Err(ApiError::not_found("", "pods", bound_name)),
            ("", "Node") => return Err(ApiError::not_found("", "nodes", bound_name)),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={kind}"
                )));
            }
        };
        if !claimed_uid.is_empty() && claimed_uid != uid {
            return Err(ApiError::conflict_msg(
                "",
                kind,
                bound_name,
                &format!(
                    "the UID in the bound object reference ({claimed_uid}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                ),
            ));
        }
        bound_secret = Some((bound_name.to_string(), uid));
    }

    let mut warnings = Vec::new();
    if let Some(max) = config.max_expiration_seconds
        && expiration > max
    {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {max} seconds"
        ));
        expiration = max;
    }
    let mut audiences = strings_field(spec, "audiences", "spec.")?;
    if audiences.is_empty() {
        audiences = config.api_audiences.clone();
    }

    let sa_ref = ServiceAccountRef {
        cluster,
        namespace,
        name,
        uid: &sa.uid,
    };
    let minted = issuer
        .mint(
            &sa_ref,
            &audiences,
            expiration,
            bound_secret.as_ref().map(|(n, u)| (n.as_str(), u.as_str())),
        )
        .map_err(|e| {
            ApiError::new(
                500,
                "InternalError",
                format!("failed to generate token: {e}"),
            )
        })?;

    let mut out = body.clone();
    out["apiVersion"] = Value::from("authentication.k8s.io/v1");
    out["kind"] = Value::from("TokenRequest");
    if !out.get("metadata").is_some_and(Value::is_object) {
        out["metadata"] = json!({});
    }
    // kube-apiserver answers with the ServiceAccount's identity in the request's metadata.
    out["metadata"]["name"] = Value::from(name);
    out["metadata"]["namespace"] = Value::from(namespace);
    out["metadata"]["uid"] = Value::from(sa.uid.as_str());
    out["metadata"]["creationTimestamp"] = Value::from(crate::meta::now_rfc3339());
    let mut spec = spec.clone();
    if spec.get("boundObjectRef").is_none() {
        spec["boundObjectRef"] = Value::Null;
    }
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(expiration);
    out["spec"] = spec;
    out["status"] = json!({
        "token": minted.token,
        "expirationTimestamp": minted.expiration.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    Ok(TokenResponse {
        body: out,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::auth::authenticator::Authenticator;
    use crate::auth::serviceaccount::TokenIssuerConfig;
    use crate::auth::serviceaccount::tests::Objects;

    fn issuer(config: TokenIssuerConfig) -> TokenIssuer {
        TokenIssuer::new(config).expect("key generation")
    }

    fn objects() -> Objects {
        let mut o = Objects::default();
        o.put(None, "ServiceAccount", "default", "builder", "sa-uid");
        o.put(None, "Secret", "default", "anchor", "secret-uid");
        o
    }

    #[test]
    fn defaults_and_mints_a_working_token() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = Arc::new(issuer(TokenIssuerConfig::kube()));
        let body =
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
        let out = create_token(&issuer, None, "default", "builder", &body, &objects())?;
        assert!(out.warnings.is_empty());
        assert_eq!(out.body["kind"], "TokenRequest");
        assert_eq!(out.body["spec"]["expirationSeconds"], 3600);
        assert_eq!(
            out.body["spec"]["audiences"],
            json!(["https://kubernetes.default.svc.cluster.local"])
        );
        let expiration = out.body["status"]["expirationTimestamp"]
            .as_str()
            .ok_or("no expiration")?;
        assert!(
            expiration.ends_with('Z') && expiration.len() == 20,
            "{expiration}"
        );
        let token = out.body["status"]["token"].as_str().ok_or("no token")?;
        let authn = Authenticator::new(issuer);
        assert_eq!(
            authn.authenticate(token, &objects())?.user.username,
            "system:serviceaccount:default:builder"
        );
        Ok(())
    }

    #[test]
    fn expiration_below_minimum_is_invalid_like_kube() {
        let issuer = issuer(TokenIssuerConfig::kube());
        let body = json!({"spec": {"expirationSeconds": 60}});
        let err = create_token(&issuer, None, "default", "builder", &body, &objects()).err();
        let err = err.expect("refused");
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "TokenRequest.authentication.k8s.io \"builder\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        );
    }

    #[test]
    fn configurable_minimum_allows_short_tokens() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = issuer(TokenIssuerConfig {
            min_expiration_seconds: 1,
            ..TokenIssuerConfig::kube()
        });
        let body = json!({"spec": {"expirationSeconds": 5, "audiences": ["a", "b"]}});
        let out = create_token(&issuer, None, "default", "builder", &body, &objects())?;
        assert_eq!(out.body["spec"]["expirationSeconds"], 5);
        assert_eq!(out.body["spec"]["audiences"], json!(["a", "b"]));
        let err = create_token(
            &issuer,
            None,
            "default",
            "builder",
            &json!({"spec": {"expirationSeconds": 0}}),
            &objects(),
        )
        .err()
        .ok_or("zero accepted")?;
        assert!(
            err.message
                .ends_with("may not specify a duration less than 1 seconds"),
            "{}",
            err.message
        );
        Ok(())
    }

    #[test]
    fn maximum_shortens_with_a_warning() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = issuer(TokenIssuerConfig {
            max_expiration_seconds: Some(1200),
            ..TokenIssuerConfig::kube()
        });
        let out = create_token(
            &issuer,
            None,
            "default",
            "builder",
            &json!({"spec": {"expirationSeconds": 7200}}),
            &objects(),
        )?;
        assert_eq!(out.body["spec"]["expirationSeconds"], 1200);
        assert_eq!(
            out.warnings,
            ["requested expiration of 7200 seconds shortened to 1200 seconds"]
        );
        Ok(())
    }

    #[test]
    fn missing_service_account_is_not_found() {
        let issuer = issuer(TokenIssuerConfig::kube());
        let err = create_token(
            &issuer,
            None,
            "default",
            "ghost",
            &json!({"spec": {}}),
            &objects(),
        )
        .err();
        let err = err.expect("refused");
        assert_eq!(
            (err.code, err.message.as_str()),
            (404, "serviceaccounts \"ghost\" not found")
        );
    }

    #[test]
    fn body_name_must_match_url() {
        let issuer = issuer(TokenIssuerConfig::kube());
        let body = json!({"metadata": {"name": "other"}, "spec": {}});
        let err = create_token(&issuer, None, "default", "builder", &body, &objects())
            .expect_err("refused");
        assert_eq!(err.code, 422);
        assert!(err.message.contains("metadata.name: Invalid value: \"other\": must match the service account name if specified"));
    }

    #[test]
    fn bound_secret_is_checked() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = issuer(TokenIssuerConfig::kube());
        let bound = |uid: &str| json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "anchor", "uid": uid}}});
        let out = create_token(
            &issuer,
            None,
            "default",
            "builder",
            &bound("secret-uid"),
            &objects(),
        )?;
        let token = out.body["status"]["token"].as_str().ok_or("no token")?;
        let (_, claims) = crate::auth::jwt::decode_unverified(token)?;
        assert_eq!(
            claims["kubernetes.io"]["secret"],
            json!({"name": "anchor", "uid": "secret-uid"})
        );

        let err = create_token(
            &issuer,
            None,
            "default",
            "builder",
            &bound("stale"),
            &objects(),
        )
        .err()
        .ok_or("accepted")?;
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Operation cannot be fulfilled on Secret \"anchor\": the UID in the bound object reference (stale) does not match the UID in record (secret-uid). The object might have been deleted and then recreated"
        );
        let deploy = json!({"spec": {"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}});
        let err = create_token(&issuer, None, "default", "builder", &deploy, &objects())
            .err()
            .ok_or("accepted")?;
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                400,
                "cannot bind token to object of type apps/v1, Kind=Deployment"
            )
        );
        Ok(())
    }

    #[test]
    fn kcp_token_request_carries_cluster_name() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = issuer(TokenIssuerConfig::kcp());
        let mut o = Objects::default();
        o.put(Some("ws1"), "ServiceAccount", "default", "default", "u");
        let body =
            json!({"spec": {"audiences": ["https://kcp.default.svc"], "expirationSeconds": 3600}});
        let out = create_token(&issuer, Some("ws1"), "default", "default", &body, &o)?;
        let token = out.body["status"]["token"].as_str().ok_or("no token")?;
        assert_eq!(
            crate::auth::serviceaccount::unverified_cluster_name(token).as_deref(),
            Some("ws1")
        );
        Ok(())
    }
}
