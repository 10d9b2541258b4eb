//! The access-review APIs of `authorization.k8s.io/v1`: SubjectAccessReview,
//! LocalSubjectAccessReview, SelfSubjectAccessReview (`kubectl auth can-i`) and
//! SelfSubjectRulesReview (`kubectl auth can-i --list`), answered by an [`Rbac`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::auth::attributes::{Attributes, NonResourceAttributes, ResourceAttributes};
use crate::auth::rbac::{Decision, Rbac};
use crate::auth::token_request::{check_kind, object_field, string_field, strings_field};
use crate::auth::user::UserInfo;
use crate::error::{ApiError, Cause, go_quote};

const GROUP: &str = "authorization.k8s.io";
const API_VERSION: &str = "authorization.k8s.io/v1";

/// The spec of a review body, checked to be an object.
fn spec_of<'a>(body: &'a Value, kind: &str, empty: &'a Value) -> Result<&'a Value, ApiError> {
    check_kind(body, API_VERSION, kind)?;
    let spec = body.get("spec").filter(|s| !s.is_null()).unwrap_or(empty);
    if !spec.is_object() {
        return Err(ApiError::bad_request(format!(
            "{kind} spec must be an object"
        )));
    }
    Ok(spec)
}

/// The review echoed back with `status`.
fn respond(body: &Value, kind: &str, status: Value) -> Value {
    let mut out = body.clone();
    out["apiVersion"] = Value::from(API_VERSION);
    out["kind"] = Value::from(kind);
    if !out.get("metadata").is_some_and(Value::is_object) {
        out["metadata"] = json!({});
    }
    out["status"] = status;
    out
}

/// `spec.resourceAttributes` / `spec.nonResourceAttributes` → request attributes, with
/// kube-apiserver's validation (exactly one of them).
fn attributes(spec: &Value, causes: &mut Vec<Cause>) -> Result<Option<Attributes>, ApiError> {
    let resource = object_field(spec, "resourceAttributes", "spec.")?;
    let non_resource = object_field(spec, "nonResourceAttributes", "spec.")?;
    Ok(match (resource, non_resource) {
        (Some(_), Some(_)) => {
            causes.push(Cause::invalid(
                "spec.nonResourceAttributes",
                "Invalid value: \"object\": cannot be specified in combination with resourceAttributes",
            ));
            None
        }
        (None, None) => {
            causes.push(Cause::invalid(
                "spec.resourceAttributes",
                "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
            None
        }
        (Some(r), None) => {
            let r = Value::Object(r.clone());
            let path = "spec.resourceAttributes.";
            let s = |field: &str| string_field(&r, field, path).map(str::to_string);
            Some(Attributes::Resource(ResourceAttributes {
                verb: s("verb")?,
                group: s("group")?,
                version: s("version")?,
                resource: s("resource")?,
                subresource: s("subresource")?,
                namespace: s("namespace")?,
                name: s("name")?,
            }))
        }
        (None, Some(n)) => {
            let n = Value::Object(n.clone());
            let path = "spec.nonResourceAttributes.";
            Some(Attributes::NonResource(NonResourceAttributes {
                verb: string_field(&n, "verb", path)?.to_string(),
                path: string_field(&n, "path", path)?.to_string(),
            }))
        }
    })
}

fn status(decision: Decision) -> Value {
    let (allowed, reason) = match decision {
        Decision::Allow { reason } => (true, reason),
        Decision::Deny(denial) => (false, denial.reason),
    };
    let mut status = json!({"allowed": allowed});
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    status
}

/// Answers a SubjectAccessReview: may `spec.user`/`spec.groups` do `spec.*Attributes`? The
/// identity is taken as given (no `system:authenticated` is added).
pub(crate) fn subject_access_review(rbac: &Rbac, body: &Value) -> Result<Value, ApiError> {
    let empty = json!({});
    let spec = spec_of(body, "SubjectAccessReview", &empty)?;
    let mut causes = Vec::new();
    let attrs = attributes(spec, &mut causes)?;
    let user = string_field(spec, "user", "spec.")?.to_string();
    let groups = strings_field(spec, "groups", "spec.")?;
    if user.is_empty() && groups.is_empty() {
        causes.push(Cause::invalid(
            "spec.user",
            format!(
                "Invalid value: {}: at least one of user or group must be specified",
                go_quote(&user)
            ),
        ));
    }
    let (Some(attrs), true) = (attrs, causes.is_empty()) else {
        return Err(ApiError::invalid(GROUP, "SubjectAccessReview", "", causes));
    };
    let extra: BTreeMap<String, Vec<String>> = match spec.get("extra") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|_| ApiError::bad_request("spec.extra: expected a map of string lists"))?,
    };
    let subject = UserInfo {
        username: user,
        uid: string_field(spec, "uid", "spec.")?.to_string(),
        groups,
        extra,
    };
    Ok(respond(
        body,
        "SubjectAccessReview",
        status(rbac.authorize(&subject, &attrs)),
    ))
}

/// Answers a LocalSubjectAccessReview posted to `namespace`: a SubjectAccessReview limited to
/// resource requests in that namespace.
pub(crate) fn local_subject_access_review(
    rbac: &Rbac,
    namespace: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let empty = json!({});
    let spec = spec_of(body, "LocalSubjectAccessReview", &empty)?;
    let mut causes = Vec::new();
    if object_field(spec, "nonResourceAttributes", "spec.")?.is_some() {
        causes.push(Cause::invalid(
            "spec.nonResourceAttributes",
            "Invalid value: \"object\": disallowed on this kind of request",
        ));
    }
    if let Some(resource) = object_field(spec, "resourceAttributes", "spec.")? {
        let ns = resource
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if ns != namespace {
            causes.push(Cause::invalid(
                "spec.resourceAttributes.namespace",
                format!(
                    "Invalid value: {}: must match metadata.namespace",
                    go_quote(ns)
                ),
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            GROUP,
            "LocalSubjectAccessReview",
            "",
            causes,
        ));
    }
    let answered = subject_access_review(rbac, &json!({"spec": spec}))?;
    let mut out = respond(body, "LocalSubjectAccessReview", answered["status"].clone());
    out["metadata"]["namespace"] = Value::from(namespace);
    Ok(out)
}

/// Answers a SelfSubjectAccessReview: may the requesting `user` do `spec.*Attributes`?
pub(crate) fn self_subject_access_review(
    rbac: &Rbac,
    user: &UserInfo,
    body: &Value,
) -> Result<Value, ApiError> {
    let empty = json!({});
    let spec = spec_of(body, "SelfSubjectAccessReview", &empty)?;
    let mut causes = Vec::new();
    let Some(attrs) = attributes(spec, &mut causes)? else {
        return Err(ApiError::invalid(
            GROUP,
            "SelfSubjectAccessReview",
            "",
            causes,
        ));
    };
    Ok(respond(
        body,
        "SelfSubjectAccessReview",
        status(rbac.authorize(user, &attrs)),
    ))
}

/// Answers a SelfSubjectRulesReview: every rule that applies to the requesting `user` in
/// `spec.namespace`.
pub(crate) fn self_subject_rules_review(
    rbac: &Rbac,
    user: &UserInfo,
    body: &Value,
) -> Result<Value, ApiError> {
    let empty = json!({});
    let spec = spec_of(body, "SelfSubjectRulesReview", &empty)?;
    let namespace = string_field(spec, "namespace", "spec.")?;
    let (rules, errors) = rbac.rules_for(user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules {
        if let Some(resources) = rule.resources.as_ref().filter(|r| !r.is_empty()) {
            let mut r = json!({"verbs": rule.verbs, "resources": resources});
            if let Some(groups) = &rule.api_groups {
                r["apiGroups"] = json!(groups);
            }
            if let Some(names) = rule.resource_names.as_ref().filter(|n| !n.is_empty()) {
                r["resourceNames"] = json!(names);
            }
            resource_rules.push(r);
        }
        if let Some(urls) = rule.non_resource_urls.as_ref().filter(|u| !u.is_empty()) {
            non_resource_rules.push(json!({"verbs": rule.verbs, "nonResourceURLs": urls}));
        }
    }
    let mut status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
    match errors.len() {
        0 => {}
        1 => status["evaluationError"] = json!(errors[0]),
        _ => status["evaluationError"] = json!(format!("[{}]", errors.join(", "))),
    }
    Ok(respond(body, "SelfSubjectRulesReview", status))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::auth::bootstrap;
    use crate::auth::rbac::RbacKind;

    fn rbac() -> std::sync::Arc<Rbac> {
        let rbac = bootstrap::policy(false);
        let _ = rbac.update(
            RbacKind::RoleBinding,
            "team",
            "devs-edit",
            0,
            Some(&json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"kind": "Group", "name": "devs"}]})),
        );
        rbac
    }

    #[test]
    fn subject_access_review_answers_for_the_given_subject() -> Result<(), ApiError> {
        let body = json!({"spec": {"user": "alice", "groups": ["devs"],
            "resourceAttributes": {"namespace": "team", "verb": "create", "resource": "configmaps"}}});
        let out = subject_access_review(&rbac(), &body)?;
        assert_eq!(out["status"]["allowed"], true);
        assert_eq!(
            out["status"]["reason"],
            "RBAC: allowed by RoleBinding \"devs-edit/team\" of ClusterRole \"edit\" to Group \"devs\""
        );
        let body = json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "other", "verb": "create", "resource": "configmaps"}}});
        assert_eq!(
            subject_access_review(&rbac(), &body)?["status"],
            json!({"allowed": false})
        );
        Ok(())
    }

    #[test]
    fn subject_access_review_validation() {
        let err = subject_access_review(
            &rbac(),
            &json!({"spec": {"resourceAttributes": {"verb": "get"}}}),
        )
        .err();
        let err = err.expect("refused");
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
        );
        let err =
            subject_access_review(&rbac(), &json!({"spec": {"user": "a"}})).expect_err("refused");
        assert!(err.message.contains(
            "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        ));
    }

    #[test]
    fn can_i_for_self() -> Result<(), ApiError> {
        let me = UserInfo::new("alice", ["devs"]);
        let body = json!({"spec": {"resourceAttributes": {"namespace": "team", "verb": "delete", "group": "apps", "resource": "deployments"}}});
        assert_eq!(
            self_subject_access_review(&rbac(), &me, &body)?["status"]["allowed"],
            true
        );
        let body = json!({"spec": {"nonResourceAttributes": {"verb": "get", "path": "/metrics"}}});
        assert_eq!(
            self_subject_access_review(&rbac(), &me, &body)?["status"]["allowed"],
            false
        );
        let admin = UserInfo::admin();
        assert_eq!(
            self_subject_access_review(&rbac(), &admin, &body)?["status"],
            json!({"allowed": true})
        );
        Ok(())
    }

    #[test]
    fn local_review_must_stay_in_its_namespace() -> Result<(), ApiError> {
        let body = json!({"metadata": {"namespace": "team"}, "spec": {"groups": ["devs"], "resourceAttributes": {"namespace": "team", "verb": "get", "resource": "secrets"}}});
        let out = local_subject_access_review(&rbac(), "team", &body)?;
        assert_eq!(out["status"]["allowed"], true);
        assert_eq!(out["kind"], "LocalSubjectAccessReview");
        let err = local_subject_access_review(&rbac(), "other", &body).expect_err("refused");
        assert!(err.message.contains("spec.resourceAttributes.namespace: Invalid value: \"team\": must match metadata.namespace"));
        Ok(())
    }

    #[test]
    fn rules_review_lists_what_applies() -> Result<(), ApiError> {
        let me = UserInfo::new("alice", ["devs"]);
        let out = self_subject_rules_review(&rbac(), &me, &json!({"spec": {"namespace": "team"}}))?;
        let resource_rules = out["status"]["resourceRules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(resource_rules.iter().any(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|rs| rs.contains(&json!("serviceaccounts/token")))
        }));
        assert!(
            resource_rules.iter().any(|r| r["resources"]
                == json!(["selfsubjectaccessreviews", "selfsubjectrulesreviews"]))
        );
        let non_resource = out["status"]["nonResourceRules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(non_resource.iter().any(|r| {
            r["nonResourceURLs"]
                .as_array()
                .is_some_and(|u| u.contains(&json!("/api")))
        }));
        assert_eq!(out["status"]["incomplete"], false);
        // In another namespace only the cluster-wide rules remain.
        let out = self_subject_rules_review(&rbac(), &me, &json!({"spec": {"namespace": "else"}}))?;
        let rules = out["status"]["resourceRules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(!rules.iter().any(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|rs| rs.contains(&json!("configmaps")))
        }));
        Ok(())
    }
}
