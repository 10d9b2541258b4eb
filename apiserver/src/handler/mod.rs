//! The common request handler: everything below URL routing. A routing layer (a plain cluster's
//! endpoint, or kcp's `/clusters/<name>` and virtual-workspace fronts) resolves a [`Target`] — shard,
//! logical cluster(s), surface — and hands the request here.

mod discovery;
pub(crate) mod negotiate;
mod read;
pub(crate) mod response;
pub(crate) mod table;
mod watch;
mod write;

use crate::tls::PeerCertificates;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::BodyExt;

use crate::auth::Attributes;
use crate::auth::UserInfo;
use crate::error::{ApiError, ApiResult};
use crate::registry::{GroupInfo, ResourceInfo};
use crate::request::{Query, RequestInfo};
use crate::shard::Shard;
use negotiate::{Allowed, Output, negotiate};
pub(crate) use response::Body;
use response::{error_response_as, text_response};

/// The logical clusters a request addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClusterScope {
    /// One logical cluster.
    One(Arc<str>),
    /// Every logical cluster of the shard (kcp `/clusters/*`): list and watch only.
    Wildcard,
}

/// What serves a request: which resources exist, who the caller is, what they may do. The default
/// surface is the shard itself; kcp's virtual workspaces restrict and re-route it.
pub(crate) trait Surface: Send + Sync {
    /// A resource by group, version and plural.
    fn lookup(
        &self,
        t: &Target,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        match &t.cluster {
            ClusterScope::One(c) => t.shard.registry().lookup(c, group, version, resource),
            ClusterScope::Wildcard => t.shard.registry().lookup("", group, version, resource),
        }
    }
    /// The groups discovery shows.
    fn groups(&self, t: &Target) -> Vec<GroupInfo> {
        match &t.cluster {
            ClusterScope::One(c) => t.shard.registry().groups(c),
            ClusterScope::Wildcard => t.shard.registry().groups(""),
        }
    }
    /// Resolves the caller from the connection's client certificate and the `Authorization`
    /// header (neither: `system:anonymous`).
    fn authenticate(
        &self,
        t: &Target,
        authorization: Option<&str>,
        cert: Option<&PeerCertificates>,
    ) -> ApiResult<UserInfo> {
        t.shard.auth.authenticate(&t.shard, authorization, cert)
    }
    /// Authorizes a request with the RBAC of its logical cluster.
    fn authorize(&self, t: &Target, user: &UserInfo, attrs: &Attributes) -> ApiResult<()> {
        let cluster = match &t.cluster {
            ClusterScope::One(c) => c.as_ref(),
            ClusterScope::Wildcard => "*",
        };
        t.shard.auth.authorize(cluster, user, attrs)
    }
    /// Adjusts an object the caller creates through this surface (kcp's virtual workspace applies
    /// the `matchLabels` of the permission claim that allows the write).
    fn prepare_create(&self, _t: &Target, _info: &ResourceInfo, _obj: &mut serde_json::Value) {}
    /// Whether aggregated discovery is served (kcp's virtual workspaces serve legacy discovery only,
    /// and clients fall back to it).
    fn aggregated_discovery(&self) -> bool {
        true
    }
    /// The faults injected into requests on this surface.
    fn faults<'a>(&'a self, t: &'a Target) -> &'a crate::faults::Faults {
        t.shard.faults()
    }
    /// Which stored objects of a resource the caller sees (`None`: all of them). Objects it does
    /// not see are absent from lists and watches and 404 when addressed by name (kcp's virtual
    /// workspace shows claimed objects only where a binding accepted the claim).
    fn filter(&self, _t: &Target, _info: &ResourceInfo) -> Option<ObjectFilter> {
        None
    }
}

/// A predicate on stored objects (see [`Surface::filter`]).
pub(crate) type ObjectFilter = Arc<dyn Fn(&crate::store::StoredObject) -> bool + Send + Sync>;

/// The shard's own resources, users and RBAC.
pub(crate) struct ShardSurface;

impl Surface for ShardSurface {}

/// A resolved request target.
#[derive(Clone)]
pub(crate) struct Target {
    /// The shard.
    pub shard: Arc<Shard>,
    /// The logical cluster(s).
    pub cluster: ClusterScope,
    /// The `cluster` label of request counters.
    pub label: Arc<str>,
    /// The surface.
    pub surface: Arc<dyn Surface>,
}

impl Target {
    /// A target for one logical cluster of a shard with the default surface.
    pub(crate) fn new(shard: Arc<Shard>, cluster: Arc<str>, label: Arc<str>) -> Self {
        Target {
            shard,
            cluster: ClusterScope::One(cluster),
            label,
            surface: Arc::new(ShardSurface),
        }
    }
}

/// Everything a verb handler needs.
pub(crate) struct Ctx<'a> {
    pub target: &'a Target,
    pub info: Arc<ResourceInfo>,
    pub ri: &'a RequestInfo,
    pub query: &'a Query,
    pub user: &'a UserInfo,
    pub output: Output,
    pub headers: &'a HeaderMap,
}

impl Ctx<'_> {
    /// The one logical cluster; 405 for wildcard requests that are not list or watch.
    pub(crate) fn cluster(&self) -> ApiResult<&Arc<str>> {
        match &self.target.cluster {
            ClusterScope::One(c) => Ok(c),
            ClusterScope::Wildcard => {
                // kcp's WithWildcardListWatchGuard: MethodNotSupported plus the cluster.
                let mut e = ApiError::method_not_supported(
                    &self.info.group,
                    &self.info.resource,
                    &self.ri.verb,
                );
                e.message.push_str(" in the `*` logical cluster");
                Err(e)
            }
        }
    }

    /// The namespace of the request ("" for cluster-scoped resources).
    pub(crate) fn namespace(&self) -> &str {
        if self.info.namespaced {
            &self.ri.namespace
        } else {
            ""
        }
    }

    /// `dryRun=All`.
    pub(crate) fn dry_run(&self) -> ApiResult<bool> {
        match self.query.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(invalid_dry_run(&self.ri.verb, &[other])),
        }
    }
}

/// kube-apiserver's answer to a `dryRun` other than `All`: the request's options are invalid
/// (apimachinery `ValidateDryRun`).
pub(crate) fn invalid_dry_run(verb: &str, values: &[&str]) -> ApiError {
    let kind = match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        _ => "DeleteOptions",
    };
    let quoted: Vec<String> = values
        .iter()
        .map(|v| serde_json::Value::from(*v).to_string())
        .collect();
    ApiError::invalid(
        "meta.k8s.io",
        kind,
        "",
        vec![crate::error::Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: [{}]: supported values: \"All\"",
                quoted.join(",")
            ),
            field: "dryRun".into(),
        }],
    )
}

/// Whether a resource's objects have a protobuf encoding: built-in kinds whose message is known
/// (custom resources are JSON-only, as in kube-apiserver).
pub(crate) fn has_protobuf(info: &ResourceInfo) -> bool {
    info.strategy != crate::registry::Strategy::Custom
        && crate::protobuf::supports(&info.api_version(), &info.kind)
}

/// Largest request body accepted (kube-apiserver's limit is 3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Reads a request body in full (the server does, before routing).
pub(crate) async fn read_body(body: hyper::body::Incoming) -> ApiResult<Bytes> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::new(
                    413,
                    "RequestEntityTooLarge",
                    "the request body is too large",
                ))
            } else {
                Err(ApiError::bad_request(format!(
                    "could not read the request body: {e}"
                )))
            }
        }
    }
}

/// Handles one request for a resolved target. `path` is the request path below any routing prefix.
pub(crate) async fn handle(target: Target, req: Request<Bytes>, path: &str) -> Response<Body> {
    let (parts, body) = req.into_parts();
    crate::recording::record(&parts.method, path, parts.uri.query(), &parts.headers);
    let query = Query::parse(parts.uri.query());
    let ri = RequestInfo::parse(&parts.method, path, &query);
    // Errors after content negotiation are answered in the negotiated encoding.
    let mut negotiated = Output::Json;
    let mut user = String::new();
    let cert = parts.extensions.get::<PeerCertificates>();
    let resp = match handle_inner(
        &target,
        &parts.method,
        &parts.headers,
        cert,
        &ri,
        &query,
        body,
        &mut negotiated,
        &mut user,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => error_response_as(&e, negotiated),
    };
    let verb = if ri.resource_request {
        ri.verb.clone()
    } else {
        parts.method.as_str().to_lowercase()
    };
    let counters = target.shard.counters();
    let key = crate::metrics::CounterKey {
        cluster: target.label.to_string(),
        verb,
        resource: ri.resource_label(),
        code: resp.status().as_u16(),
        user,
    };
    counters.log_request(&key, &ri.namespace, &ri.name);
    counters.record(key);
    resp
}

#[allow(clippy::too_many_arguments)]
async fn handle_inner(
    target: &Target,
    method: &Method,
    headers: &HeaderMap,
    cert: Option<&PeerCertificates>,
    ri: &RequestInfo,
    query: &Query,
    body: Bytes,
    negotiated: &mut Output,
    // Who asked, once authenticated: the request's counter says so whatever the answer.
    asker: &mut String,
) -> ApiResult<Response<Body>> {
    let path = ri.path.trim_end_matches('/');
    // Public endpoints, as kube-apiserver's system:public-info-viewer allows them.
    match path {
        "/healthz" | "/livez" | "/readyz" => {
            return Ok(text_response(200, "ok", "text/plain; charset=utf-8"));
        }
        "/version" => {
            return Ok(response::value_response(
                200,
                &discovery::version(),
                Output::Json,
            ));
        }
        _ => {}
    }
    let authorization = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let user = target.surface.authenticate(target, authorization, cert)?;
    asker.clone_from(&user.username);
    let latency = target.surface.faults(target).latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if !ri.resource_request {
        target
            .surface
            .authorize(target, &user, &Attributes::non_resource(&ri.verb, path))?;
        return discovery::non_resource(target, method, headers, path, ri).await;
    }
    let Some(info) = target
        .surface
        .lookup(target, &ri.group, &ri.version, &ri.resource)
    else {
        let served = target
            .surface
            .groups(target)
            .iter()
            .any(|g| g.name == ri.group && g.versions.contains(&ri.version));
        if served {
            return Err(ApiError::no_route());
        }
        // No handler is installed for a group version nobody serves: kube-apiserver's mux
        // answers with Go's plain 404 page, not a Status.
        return Ok(response::text_response(
            404,
            "404 page not found\n",
            "text/plain; charset=utf-8",
        ));
    };
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let output = negotiate(
        accept,
        Allowed {
            transforms: true,
            aggregated: false,
            protobuf: has_protobuf(&info),
        },
    )?;
    *negotiated = output;
    if let Some(e) =
        target
            .surface
            .faults(target)
            .check(&ri.verb, &ri.group, &ri.resource_label(), &ri.name)
    {
        return Err(e);
    }
    if target.cluster == ClusterScope::Wildcard && !matches!(ri.verb.as_str(), "list" | "watch") {
        // kcp's WithWildcardListWatchGuard answers before anything else looks at the request.
        let mut e = ApiError::method_not_supported(&info.group, &info.resource, &ri.verb);
        e.message.push_str(" in the `*` logical cluster");
        return Err(e);
    }
    let attrs = crate::authn::resource_attributes(
        &ri.verb,
        &ri.group,
        &ri.version,
        &ri.resource,
        &ri.subresource,
        if info.namespaced { &ri.namespace } else { "" },
        &ri.name,
    );
    target.surface.authorize(target, &user, &attrs)?;
    if !info.namespaced && !ri.namespace.is_empty() {
        // A cluster-scoped resource has no routes below `/namespaces/<ns>/` (for custom
        // resources: the CRD handler hands such requests to the 404 delegate).
        return Err(ApiError::no_route());
    }
    if info.namespaced && ri.namespace.is_empty() && !matches!(ri.verb.as_str(), "list" | "watch") {
        // Namespaced objects are addressed under `/namespaces/<ns>/`; the bare path only lists.
        return Err(ApiError::no_route());
    }
    let cx = Ctx {
        target,
        info,
        ri,
        query,
        user: &user,
        output,
        headers,
    };
    if !cx.info.has_verb(&ri.verb) && ri.subresource.is_empty() {
        return Err(ApiError::method_not_supported(
            &cx.info.group,
            &cx.info.resource,
            &ri.verb,
        ));
    }
    match ri.verb.as_str() {
        "get" => read::get(&cx),
        "list" => read::list(&cx),
        "watch" => watch::watch(&cx),
        "create" => write::create(&cx, body),
        "update" => write::update(&cx, body),
        "patch" => write::patch(&cx, body),
        "delete" => write::delete(&cx, body),
        "deletecollection" => write::delete_collection(&cx, body),
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )),
    }
}
