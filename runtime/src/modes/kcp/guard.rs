//! The client the author gets for a kcp workspace, and what it watches for on the way back: a 401
//! (the minted token was revoked or expired: get a new one) and a 404 for a workload resource (a
//! workspace runs no workloads: say so, and point at the workload cluster).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};
use kube::client::Body;

use crate::access::clients::ScopedService;
use crate::error::Error;

/// Reason of the `Ready` condition when a provider installs workloads into a workspace.
pub const REASON_WORKLOADS: &str = "WorkloadsNotServedInWorkspace";
/// The cause the rewritten 404 carries, by which [`classify`] recognises it.
const CAUSE: &str = "NotServedInKcpWorkspace";
/// kube-apiserver's message for a resource type it does not serve in a group version it serves
/// (the core group's `pods` in a workspace).
const NOT_SERVED: &str = "the server could not find the requested resource";
/// The plain-text page kube-apiserver's mux answers for a group version nobody serves (`apps/v1`
/// in a workspace): not a Status.
const NOT_ROUTED: &[u8] = b"404 page not found";

/// Built-in resources that run or expose workloads, which kcp does not serve: the core group's
/// and whole groups.
const CORE_WORKLOADS: &[&str] = &[
    "pods",
    "services",
    "endpoints",
    "replicationcontrollers",
    "persistentvolumeclaims",
    "persistentvolumes",
    "nodes",
];
const WORKLOAD_GROUPS: &[&str] = &[
    "apps",
    "batch",
    "autoscaling",
    "policy",
    "networking.k8s.io",
    "discovery.k8s.io",
    "storage.k8s.io",
    "node.k8s.io",
    "scheduling.k8s.io",
];

/// Called with the token that got a 401.
pub type OnUnauthorized = Arc<dyn Fn() + Send + Sync>;

/// A workspace client: `inner` (the workspace URL with a minted token) plus the two checks.
pub fn guarded_client(
    inner: ScopedService,
    cluster: &str,
    on_unauthorized: OnUnauthorized,
) -> kube::Client {
    kube::Client::new(
        Guard {
            inner,
            cluster: cluster.into(),
            on_unauthorized,
        },
        "default",
    )
}

#[derive(Clone)]
struct Guard {
    inner: ScopedService,
    cluster: Arc<str>,
    on_unauthorized: OnUnauthorized,
}

impl tower::Service<Request<Body>> for Guard {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let workload = workload_resource(request.uri().path());
        let call = self.inner.call(request);
        let cluster = self.cluster.clone();
        let on_unauthorized = self.on_unauthorized.clone();
        Box::pin(async move {
            let response = call.await?;
            match response.status() {
                StatusCode::UNAUTHORIZED => {
                    on_unauthorized();
                    Ok(response)
                }
                StatusCode::NOT_FOUND if workload.is_some() => {
                    let (mut parts, body) = response.into_parts();
                    let bytes = body.collect_bytes().await?;
                    let (group, version, resource) = workload.unwrap_or_default();
                    let not_served = bytes.starts_with(NOT_ROUTED)
                        || serde_json::from_slice::<serde_json::Value>(&bytes)
                            .ok()
                            .is_some_and(|status| status["message"] == NOT_SERVED);
                    let bytes = if not_served {
                        parts.headers.insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/json"),
                        );
                        explain(&cluster, &group, &version, &resource)
                    } else {
                        bytes.to_vec()
                    };
                    Ok(Response::from_parts(parts, Body::from(bytes)))
                }
                _ => Ok(response),
            }
        })
    }
}

/// `(group, version, resource)` when `path` addresses a workload resource.
fn workload_resource(path: &str) -> Option<(String, String, String)> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let resource = match rest {
        ["namespaces", _, resource, ..] => *resource,
        [resource, ..] => *resource,
        [] => return None,
    };
    let workload = if group.is_empty() {
        CORE_WORKLOADS.contains(&resource)
    } else {
        WORKLOAD_GROUPS.contains(&group)
    };
    workload.then(|| (group.to_owned(), version.to_owned(), resource.to_owned()))
}

/// The `Status` a workspace answers for a workload resource, explained.
fn explain(cluster: &str, group: &str, version: &str, resource: &str) -> Vec<u8> {
    let api = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let message = format!(
        "{api} {resource} is not served in kcp workspace {cluster}: a kcp workspace runs no workloads. \
         Install workloads into the workload cluster (declare `workload_cluster = required` and use \
         cx.workload()) and point them at the workspace with cx.mcp().kubeconfig()"
    );
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "NotFound",
        "details": {"group": group, "kind": resource, "causes": [{"reason": CAUSE, "message": message}]},
        "code": 404,
    });
    serde_json::to_vec(&status).unwrap_or_default()
}

/// Turns an error that came from installing a workload into a workspace into invalid input (it
/// cannot succeed on retry: the provider must change), with [`REASON_WORKLOADS`]; other errors
/// pass unchanged.
pub fn classify(err: Error) -> Error {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = err
        .source()
        .map(|s| s as &(dyn std::error::Error + 'static));
    while let Some(current) = cause {
        if let Some(kube::Error::Api(status)) = current.downcast_ref::<kube::Error>()
            && status.code == 404
            && status
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == CAUSE))
        {
            return Error::invalid_input(err.message().to_owned()).with_reason(REASON_WORKLOADS);
        }
        cause = current.source();
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_paths_are_recognised() {
        let w = |p: &str| workload_resource(p).map(|(g, _, r)| format!("{g}/{r}"));
        assert_eq!(
            w("/apis/apps/v1/namespaces/x/deployments/velero"),
            Some("apps/deployments".into())
        );
        assert_eq!(w("/api/v1/namespaces/x/pods"), Some("/pods".into()));
        assert_eq!(w("/api/v1/services"), Some("/services".into()));
        assert_eq!(w("/api/v1/namespaces/x/configmaps/a"), None);
        assert_eq!(w("/api/v1/namespaces/x"), None);
        assert_eq!(w("/apis/velero.io/v1/namespaces/x/backups"), None);
        assert_eq!(w("/apis/batch/v1/jobs"), Some("batch/jobs".into()));
    }

    #[test]
    fn a_rewritten_404_becomes_invalid_input() {
        let body = explain("ws1", "apps", "v1", "deployments");
        let status: kube::core::Status = serde_json::from_slice(&body).unwrap();
        let message = status.message.clone();
        assert!(message.contains("workload cluster"), "{message}");
        let err = Error::from(kube::Error::Api(Box::new(status))).context("applying the worker");
        let err = classify(err);
        assert!(err.is_invalid_input());
        assert_eq!(err.reason(), Some(REASON_WORKLOADS));
        assert!(
            err.message().starts_with("applying the worker: "),
            "{}",
            err.message()
        );
        let other = classify(Error::transient_msg("boom"));
        assert!(!other.is_invalid_input());
    }
}
