//! URL routing of a kcp shard: `/clusters/<path|name|*>/…` to a workspace (or the wildcard), and
//! `/services/apiexport/<exportCluster>/<export>/clusters/<*|name>/…` to an APIExport virtual
//! workspace. The root shard also acts as the front proxy: it resolves workspace paths and names of
//! every shard.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use http::{Request, Response};

use super::names;
use super::server::KcpInner;
use super::surface::WorkspaceSurface;
use super::vw::VwSurface;
use crate::auth::Attributes;
use crate::error::ApiError;
use crate::handler::response::{Body, error_response};
use crate::handler::{ClusterScope, Target};
use crate::metrics::CounterKey;
use crate::request::{Query, RequestInfo};

/// The counter label of requests to workspaces and the wildcard.
pub const WORKSPACE_SURFACE: &str = "workspace";
/// The counter label of requests through virtual workspaces.
pub const VIRTUAL_WORKSPACE_SURFACE: &str = "virtualworkspace";

/// Why kcp's front proxy refuses a path it cannot resolve.
const ACCESS_NOT_PERMITTED: &str = "workspace access not permitted";

/// The frontend of one kcp shard's endpoint.
pub(crate) struct KcpFrontend {
    pub inner: Weak<KcpInner>,
    pub shard: usize,
}

impl crate::server::Frontend for KcpFrontend {
    fn serve(
        &self,
        req: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>> {
        let inner = self.inner.clone();
        let shard = self.shard;
        Box::pin(async move {
            let Some(inner) = inner.upgrade() else {
                return error_response(&ApiError::service_unavailable("kcp is shutting down"));
            };
            route(inner, shard, req).await
        })
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Splits `<segment>/<rest>` into the segment and `/<rest>` (at least `/`).
fn split_segment(s: &str) -> (&str, String) {
    match s.split_once('/') {
        Some((a, b)) => (a, format!("/{b}")),
        None => (s, "/".to_string()),
    }
}

async fn route(inner: Arc<KcpInner>, this: usize, req: Request<Bytes>) -> Response<Body> {
    let path = req.uri().path().to_string();
    if let Some(rest) = path.strip_prefix("/clusters/") {
        let (x, below) = split_segment(rest);
        let x = percent_decode(x);
        return workspace(inner, this, &x, &below, req).await;
    }
    if let Some(rest) = path.strip_prefix("/services/apiexport/") {
        return virtual_workspace(inner, this, rest, req).await;
    }
    // kcp's in-cluster rewrite: a ServiceAccount token without a `/clusters/` prefix goes to the
    // token's logical cluster.
    let token_cluster = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::auth::authenticator::bearer_token)
        .and_then(crate::auth::serviceaccount::unverified_cluster_name);
    let cluster = token_cluster.unwrap_or_else(|| names::ROOT.to_string());
    workspace(inner, this, &cluster, &path, req).await
}

async fn workspace(
    inner: Arc<KcpInner>,
    this: usize,
    x: &str,
    below: &str,
    req: Request<Bytes>,
) -> Response<Body> {
    let Some(this_shard) = inner.shard(this) else {
        return error_response(&ApiError::service_unavailable("the shard is not running"));
    };
    if x == "*" {
        let target = Target {
            shard: this_shard.shard.clone(),
            cluster: ClusterScope::Wildcard,
            label: WORKSPACE_SURFACE.into(),
            surface: Arc::new(WorkspaceSurface::new(&inner)),
        };
        return crate::handler::handle(target, req, below).await;
    }
    if !names::is_path(x) && !names::is_name(x) {
        return error_response(&ApiError::bad_request(format!(
            "invalid cluster: {x:?} does not match the regex"
        )));
    }
    // The root shard resolves every shard's workspaces (front proxy); other shards serve their own.
    let entry = inner.resolve(x).filter(|e| this == 0 || e.shard == this);
    let Some(entry) = entry else {
        return access_not_permitted(&inner, &this_shard.shard, below, req);
    };
    let Some(shard) = inner.shard(entry.shard) else {
        return access_not_permitted(&inner, &this_shard.shard, below, req);
    };
    let target = Target {
        shard: shard.shard.clone(),
        cluster: ClusterScope::One(entry.name.clone()),
        label: WORKSPACE_SURFACE.into(),
        surface: Arc::new(WorkspaceSurface::new(&inner)),
    };
    crate::handler::handle(target, req, below).await
}

/// The front proxy's 403 for a path it cannot resolve, worded for the authenticated user.
fn access_not_permitted(
    inner: &Arc<KcpInner>,
    shard: &Arc<crate::shard::Shard>,
    below: &str,
    req: Request<Bytes>,
) -> Response<Body> {
    let query = Query::parse(req.uri().query());
    let ri = RequestInfo::parse(req.method(), below, &query);
    let authorization = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let surface = WorkspaceSurface::new(inner);
    let target = Target {
        shard: shard.clone(),
        cluster: ClusterScope::Wildcard,
        label: WORKSPACE_SURFACE.into(),
        surface: Arc::new(WorkspaceSurface::new(inner)),
    };
    let cert = req.extensions().get::<crate::tls::PeerCertificates>();
    let (resp, asker) =
        match crate::handler::Surface::authenticate(&surface, &target, authorization, cert) {
            Err(e) => (error_response(&e), String::new()),
            Ok(user) => {
                let attrs = if ri.resource_request {
                    Attributes::resource(&ri.verb, &ri.group, &ri.resource, &ri.namespace, &ri.name)
                        .with_subresource(&ri.subresource)
                } else {
                    Attributes::non_resource(&ri.verb, below)
                };
                let resp = error_response(&attrs.forbidden(&user.username, ACCESS_NOT_PERMITTED));
                (resp, user.username)
            }
        };
    shard.counters().record(CounterKey {
        cluster: WORKSPACE_SURFACE.into(),
        verb: ri.verb.clone(),
        resource: ri.resource_label(),
        code: resp.status().as_u16(),
        user: asker,
    });
    resp
}

async fn virtual_workspace(
    inner: Arc<KcpInner>,
    this: usize,
    rest: &str,
    req: Request<Bytes>,
) -> Response<Body> {
    // <exportCluster>/<export>/clusters/<*|name>/<below>
    let mut parts = rest.splitn(4, '/');
    let export_cluster = parts.next().unwrap_or_default();
    let export = parts.next().unwrap_or_default();
    let clusters = parts.next().unwrap_or_default();
    let tail = parts.next().unwrap_or_default();
    let (x, below) = split_segment(tail);
    let x = percent_decode(x);
    let Some(this_shard) = inner.shard(this) else {
        return error_response(&ApiError::service_unavailable("the shard is not running"));
    };
    // Discovery and resources are served only below `/clusters/<*|name>`; paths are not names.
    if export_cluster.is_empty()
        || export.is_empty()
        || clusters != "clusters"
        || (x != "*" && !names::is_name(&x))
    {
        let resp = error_response(&ApiError::no_route());
        // Refused before anyone is authenticated.
        this_shard.shard.counters().record(CounterKey {
            cluster: VIRTUAL_WORKSPACE_SURFACE.into(),
            verb: req.method().as_str().to_lowercase(),
            resource: req.uri().path().to_owned(),
            code: 404,
            user: String::new(),
        });
        return resp;
    }
    let cluster = if x == "*" {
        ClusterScope::Wildcard
    } else {
        ClusterScope::One(x.as_str().into())
    };
    let surface = VwSurface::new(&inner, this_shard.clone(), export_cluster, export);
    let target = Target {
        shard: this_shard.shard.clone(),
        cluster,
        label: VIRTUAL_WORKSPACE_SURFACE.into(),
        surface: Arc::new(surface),
    };
    crate::handler::handle(target, req, &below).await
}
