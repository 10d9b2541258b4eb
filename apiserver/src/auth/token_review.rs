//! The TokenReview API (`POST /apis/authentication.k8s.io/v1/tokenreviews`) and
//! SelfSubjectReview (`kubectl auth whoami`).

use serde_json::{Value, json};

use crate::auth::authenticator::{Authenticator, AuthnError};
use crate::auth::serviceaccount::ObjectLookup;
use crate::auth::token_request::{check_kind, string_field, strings_field};
use crate::auth::user::UserInfo;
use crate::error::ApiError;

/// Answers a TokenReview: whether `spec.token` authenticates for `spec.audiences` (the API
/// audiences when empty), and as whom. The response is the review with `status` filled in (201).
pub(crate) fn review_token(
    authenticator: &Authenticator,
    body: &Value,
    lookup: &dyn ObjectLookup,
) -> Result<Value, ApiError> {
    check_kind(body, "authentication.k8s.io/v1", "TokenReview")?;
    let empty = json!({});
    let spec = body.get("spec").filter(|s| !s.is_null()).unwrap_or(&empty);
    let token = string_field(spec, "token", "spec.")?;
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview"));
    }
    let audiences = strings_field(spec, "audiences", "spec.")?;
    let requested = (!audiences.is_empty()).then_some(audiences.as_slice());
    let status = match authenticator.authenticate_for(token, requested, lookup) {
        Ok(ok) => {
            json!({"authenticated": true, "user": api_user_info(&ok.user), "audiences": ok.audiences})
        }
        Err(AuthnError::Unknown) => json!({"authenticated": false}),
        Err(AuthnError::Invalid(message)) => json!({"authenticated": false, "error": message}),
    };
    let mut out = body.clone();
    out["apiVersion"] = Value::from("authentication.k8s.io/v1");
    out["kind"] = Value::from("TokenReview");
    if !out.get("metadata").is_some_and(Value::is_object) {
        out["metadata"] = json!({});
    }
    out["status"] = status;
    Ok(out)
}

/// Answers a SelfSubjectReview (`kubectl auth whoami`) for the requesting `user`.
pub(crate) fn self_subject_review(user: &UserInfo) -> Value {
    json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": api_user_info(user)},
    })
}

/// The API form of a user (`authentication.k8s.io/v1` `UserInfo`).
pub(crate) fn api_user_info(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.username, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::serviceaccount::tests::Objects;
    use crate::auth::serviceaccount::{ServiceAccountRef, TokenIssuer, TokenIssuerConfig};

    #[test]
    fn reviews_report_user_audiences_and_errors() -> Result<(), Box<dyn std::error::Error>> {
        let authn = Authenticator::new(Arc::new(TokenIssuer::new(TokenIssuerConfig::kube())?));
        let mut objects = Objects::default();
        objects.put(None, "ServiceAccount", "ns", "sa", "uid-1");
        let sa = ServiceAccountRef {
            cluster: None,
            namespace: "ns",
            name: "sa",
            uid: "uid-1",
        };
        let token = authn
            .issuer()
            .mint(&sa, &["api".into(), "vault".into()], 3600, None)?
            .token;

        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token, "audiences": ["vault"]}});
        let out = review_token(&authn, &body, &objects)?;
        assert_eq!(out["status"]["authenticated"], true);
        assert_eq!(
            out["status"]["user"]["username"],
            "system:serviceaccount:ns:sa"
        );
        assert_eq!(out["status"]["user"]["uid"], "uid-1");
        assert_eq!(
            out["status"]["user"]["groups"],
            json!([
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ])
        );
        assert!(
            out["status"]["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
                .as_str()
                .is_some_and(|s| s.starts_with("JTI="))
        );
        assert_eq!(out["status"]["audiences"], json!(["vault"]));

        // Without audiences the API audience is required, which this token lacks.
        let body = json!({"spec": {"token": token}});
        let out = review_token(&authn, &body, &objects)?;
        assert_eq!(out["status"]["authenticated"], false);
        assert_eq!(
            out["status"]["error"],
            "token audiences [\"api\" \"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]"
        );

        let out = review_token(&authn, &json!({"spec": {"token": "garbage"}}), &objects)?;
        assert_eq!(out["status"], json!({"authenticated": false}));
        let err = review_token(&authn, &json!({"spec": {}}), &objects)
            .err()
            .ok_or("empty token accepted")?;
        assert_eq!(err.code, 400);
        Ok(())
    }

    #[test]
    fn whoami() {
        let out = self_subject_review(&UserInfo::new("alice", ["dev"]));
        assert_eq!(
            out["status"]["userInfo"],
            json!({"username": "alice", "groups": ["dev", "system:authenticated"]})
        );
    }
}
