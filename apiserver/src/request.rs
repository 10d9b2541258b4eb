//! Parsing a request's path, method and query into what it asks for (kube-apiserver's `RequestInfo`).

use std::collections::HashMap;

/// What a request addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// A request for a resource (else a non-resource path such as `/version` or discovery).
    pub resource_request: bool,
    /// The path (after routing prefixes such as `/clusters/<name>`).
    pub path: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; for
    /// non-resource requests the lower-case HTTP method.
    pub verb: String,
    /// `api` or `apis`.
    pub prefix: String,
    /// API group (empty for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace.
    pub namespace: String,
    /// Resource plural.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Object name.
    pub name: String,
}

impl RequestInfo {
    /// Parses a request as kube-apiserver's RequestInfoFactory does.
    pub(crate) fn parse(method: &http::Method, path: &str, query: &Query) -> Self {
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.as_str().to_lowercase(),
            ..Default::default()
        };
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        let Some(first) = parts.first() else {
            return info;
        };
        if *first != "api" && *first != "apis" {
            return info;
        }
        info.prefix = first.to_string();
        let mut rest = &parts[1..];
        if *first == "apis" {
            if rest.len() < 2 {
                if let Some(g) = rest.first() {
                    info.group = g.to_string();
                }
                return info;
            }
            info.group = rest[0].to_string();
            rest = &rest[1..];
        }
        let Some(version) = rest.first() else {
            return info;
        };
        info.version = version.to_string();
        rest = &rest[1..];
        if rest.is_empty() {
            return info;
        }
        info.resource_request = true;
        let mut watch_path = false;
        if rest[0] == "watch" {
            watch_path = true;
            rest = &rest[1..];
        }
        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            info.namespace = rest[1].to_string();
            // `/namespaces/<ns>/<resource>...` unless what follows is a namespace subresource.
            if rest.len() > 2 && rest[2] != "status" && rest[2] != "finalize" {
                rest = &rest[2..];
            }
        }
        if let Some(r) = rest.first() {
            info.resource = r.to_string();
        }
        if let Some(n) = rest.get(1) {
            info.name = n.to_string();
        }
        if rest.len() > 2 {
            info.subresource = rest[2..].join("/");
        }
        if info.resource == "namespaces" {
            // Namespaces are cluster-scoped objects.
            info.namespace.clear();
        }
        info.verb = match *method {
            http::Method::GET | http::Method::HEAD => {
                if watch_path || query.flag("watch") {
                    "watch"
                } else if info.name.is_empty() {
                    "list"
                } else {
                    "get"
                }
            }
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => {
                if info.name.is_empty() {
                    "deletecollection"
                } else {
                    "delete"
                }
            }
            _ => "unknown",
        }
        .to_string();
        info
    }

    /// The counter label of the resource: plural, with `/subresource` when there is one.
    pub(crate) fn resource_label(&self) -> String {
        if !self.resource_request {
            return self.path.clone();
        }
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// The decoded query string.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query(pub HashMap<String, String>);

impl Query {
    /// Parses `a=b&c=d`.
    pub(crate) fn parse(q: Option<&str>) -> Self {
        Query(
            q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                .unwrap_or_default(),
        )
    }
    /// A parameter.
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    /// A boolean flag (`watch=true`, `watch=1`).
    pub(crate) fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1" | "True"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(m: http::Method, path: &str, q: &str) -> RequestInfo {
        RequestInfo::parse(&m, path, &Query::parse(Some(q)))
    }

    #[test]
    fn parses_paths_like_kube_apiserver() {
        let r = p(
            http::Method::GET,
            "/api/v1/namespaces/default/configmaps/foo",
            "",
        );
        assert_eq!(
            (
                r.verb.as_str(),
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str()
            ),
            ("get", "default", "configmaps", "foo")
        );
        let r = p(
            http::Method::GET,
            "/api/v1/namespaces/default/configmaps",
            "watch=true",
        );
        assert_eq!(r.verb, "watch");
        let r = p(http::Method::GET, "/api/v1/namespaces/kube-system", "");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "kube-system", "")
        );
        let r = p(http::Method::PUT, "/api/v1/namespaces/x/finalize", "");
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_str(),
                r.subresource.as_str(),
                r.verb.as_str()
            ),
            ("namespaces", "x", "finalize", "update")
        );
        let r = p(http::Method::GET, "/api/v1/namespaces", "");
        assert_eq!(
            (r.resource.as_str(), r.verb.as_str()),
            ("namespaces", "list")
        );
        let r = p(
            http::Method::PATCH,
            "/apis/apps/v1/namespaces/a/deployments/d/status",
            "",
        );
        assert_eq!(
            (r.group.as_str(), r.subresource.as_str(), r.verb.as_str()),
            ("apps", "status", "patch")
        );
        let r = p(http::Method::DELETE, "/apis/example.com/v1/widgets", "");
        assert_eq!(r.verb, "deletecollection");
        let r = p(http::Method::GET, "/apis/apps/v1", "");
        assert!(!r.resource_request);
        let r = p(http::Method::GET, "/version", "");
        assert!(!r.resource_request);
        let r = p(
            http::Method::POST,
            "/api/v1/namespaces/ns/serviceaccounts/sa/token",
            "",
        );
        assert_eq!(
            (r.resource.as_str(), r.subresource.as_str(), r.verb.as_str()),
            ("serviceaccounts", "token", "create")
        );
    }
}
