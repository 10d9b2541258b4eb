//! What a request asks to do, in the terms RBAC judges (kube-apiserver's `authorizer.Attributes`),
//! and the 403 message kube-apiserver words from them.

use crate::error::{ApiError, go_quote};

/// A request on a resource: `verb` on `group/resource[/subresource]`, optionally named, in a
/// namespace or at the cluster scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a
    /// special verb (`impersonate`, `bind`, `escalate`, `use`, kcp's `access`/`bind`).
    pub verb: String,
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource (`status`, `token`, …); empty for none.
    pub subresource: String,
    /// Namespace; empty for cluster-scoped resources and for lists across all namespaces.
    pub namespace: String,
    /// Object name; empty for collections (list, watch, create without a name, deletecollection).
    pub name: String,
}

/// A request on a path outside the resource API (`/healthz`, `/api`, `/metrics`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceAttributes {
    /// The lower-case HTTP method (`get`, `post`, …), or kcp's `access`.
    pub verb: String,
    /// The URL path.
    pub path: String,
}

/// The attributes of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attributes {
    /// A resource request.
    Resource(ResourceAttributes),
    /// A non-resource request.
    NonResource(NonResourceAttributes),
}

impl Attributes {
    /// A resource request on `group/resource` in `namespace` (empty for cluster scope) named `name`
    /// (empty for collections).
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..ResourceAttributes::default()
        })
    }

    /// The same request on a subresource.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        if let Attributes::Resource(r) = &mut self {
            r.subresource = subresource.into();
        }
        self
    }

    /// The same request with the API version set (only reported, never matched).
    pub fn with_version(mut self, version: &str) -> Self {
        if let Attributes::Resource(r) = &mut self {
            r.version = version.into();
        }
        self
    }

    /// A non-resource request.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes::NonResource(NonResourceAttributes {
            verb: verb.into(),
            path: path.into(),
        })
    }

    /// The verb.
    pub fn verb(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.verb,
            Attributes::NonResource(n) => &n.verb,
        }
    }

    /// The namespace; empty for cluster-scoped and non-resource requests.
    pub fn namespace(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.namespace,
            Attributes::NonResource(_) => "",
        }
    }

    /// kube-apiserver's `forbiddenMessage`: `User "u" cannot get resource "configmaps" in API
    /// group "" in the namespace "default"`, `… at the cluster scope`, or `User "u" cannot get
    /// path "/metrics"`.
    pub fn forbidden_message(&self, username: &str) -> String {
        let user = go_quote(username);
        match self {
            Attributes::NonResource(n) => {
                format!("User {user} cannot {} path {}", n.verb, go_quote(&n.path))
            }
            Attributes::Resource(r) => {
                let resource = if r.subresource.is_empty() {
                    r.resource.clone()
                } else {
                    format!("{}/{}", r.resource, r.subresource)
                };
                let scope = if r.namespace.is_empty() {
                    "at the cluster scope".to_string()
                } else {
                    format!("in the namespace {}", go_quote(&r.namespace))
                };
                format!(
                    "User {user} cannot {} resource {} in API group {} {scope}",
                    r.verb,
                    go_quote(&resource),
                    go_quote(&r.group)
                )
            }
        }
    }

    /// The 403 kube-apiserver answers when `username` may not do this, with the authorizer's
    /// `reason` appended after a colon when there is one. HTML-significant characters are
    /// escaped like kube-apiserver does.
    pub fn forbidden(&self, username: &str, reason: &str) -> ApiError {
        let message = self
            .forbidden_message(username)
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let message = if reason.is_empty() {
            message
        } else {
            format!("{message}: {reason}")
        };
        match self {
            Attributes::Resource(r) => {
                ApiError::forbidden(&r.group, &r.resource, &r.name, &message)
            }
            Attributes::NonResource(_) => ApiError::forbidden("", "", "", &message),
        }
    }
}

#[cfg(test)]
/// The verb of a resource request, as kube-apiserver's request-info resolver derives it from the
/// HTTP method: `GET` → `get` (named) / `list` / `watch` (with `?watch=true`), `POST` → `create`,
/// `PUT` → `update`, `PATCH` → `patch`, `DELETE` → `delete` (named) / `deletecollection`.
/// Returns `None` for other methods.
pub(crate) fn resource_verb(method: &str, named: bool, watch: bool) -> Option<&'static str> {
    Some(match method.to_ascii_uppercase().as_str() {
        "GET" | "HEAD" if watch => "watch",
        "GET" | "HEAD" if named => "get",
        "GET" | "HEAD" => "list",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if named => "delete",
        "DELETE" => "deletecollection",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SA: &str = "system:serviceaccount:default:x";

    #[test]
    fn namespaced_named_request() {
        let a = Attributes::resource("get", "", "configmaps", "default", "foo");
        let e = a.forbidden(SA, "");
        assert_eq!(
            e.message,
            "configmaps \"foo\" is forbidden: User \"system:serviceaccount:default:x\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
    }

    #[test]
    fn list_without_name_and_cluster_scope() {
        let a = Attributes::resource("list", "", "configmaps", "default", "");
        assert_eq!(
            a.forbidden(SA, "").message,
            "configmaps is forbidden: User \"system:serviceaccount:default:x\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        let a = Attributes::resource("list", "apps", "deployments", "", "");
        assert_eq!(
            a.forbidden(SA, "").message,
            "deployments.apps is forbidden: User \"system:serviceaccount:default:x\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope"
        );
    }

    #[test]
    fn subresource_and_reason() {
        let a = Attributes::resource("create", "", "serviceaccounts", "default", "x")
            .with_subresource("token");
        assert_eq!(
            a.forbidden(
                SA,
                "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
            )
            .message,
            "serviceaccounts \"x\" is forbidden: User \"system:serviceaccount:default:x\" cannot create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"default\": RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
        );
    }

    #[test]
    fn non_resource_path() {
        let a = Attributes::non_resource("get", "/metrics");
        assert_eq!(
            a.forbidden("x", "").message,
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
    }

    #[test]
    fn verbs_from_methods() {
        assert_eq!(resource_verb("GET", true, false), Some("get"));
        assert_eq!(resource_verb("GET", false, false), Some("list"));
        assert_eq!(resource_verb("GET", false, true), Some("watch"));
        assert_eq!(resource_verb("GET", true, true), Some("watch"));
        assert_eq!(resource_verb("POST", false, false), Some("create"));
        assert_eq!(resource_verb("PUT", true, false), Some("update"));
        assert_eq!(resource_verb("PATCH", true, false), Some("patch"));
        assert_eq!(resource_verb("DELETE", true, false), Some("delete"));
        assert_eq!(
            resource_verb("DELETE", false, false),
            Some("deletecollection")
        );
        assert_eq!(resource_verb("OPTIONS", false, false), None);
    }
}
