//! Where the simulated platform's clusters are served, and the handle tests get for each: a
//! dedicated embedded cluster (own listener, storage, faults and counters) or a logical cluster
//! of one shared embedded shard, reached at `https://127.0.0.1:<port>/clusters/<name>`.
//!
//! Logical clusters are what make 10,000 tenants affordable: one listener, one store and one
//! connection pool for all of them, while each keeps its own objects, RBAC and ServiceAccount
//! tokens (the shard runs with kcp-style token scoping: a token works only in the logical
//! cluster that minted it). What they share is the shard's fault injection and request counters;
//! counters are labelled with the logical cluster's name, so [`ClusterHandle::requests`] still
//! counts per cluster.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use service_provider_apiserver::auth::{TokenIssuer, TokenIssuerConfig};
use service_provider_apiserver::handler::response::error_response;
use service_provider_apiserver::handler::{Body, Target};
use service_provider_apiserver::server::{Endpoint, Frontend};
use service_provider_apiserver::shard::{LogicalClusterOptions, Shard, ShardOptions};
use service_provider_apiserver::store::StoreOptions;
use service_provider_apiserver::{ApiError, Cluster, ClusterOptions, Counters, Faults};

use crate::dev::DevError;

/// How the clusters the simulated platform creates on demand (MCP and workload clusters) are
/// served. The platform and onboarding clusters are always dedicated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Hosting {
    /// Logical clusters of one shared embedded shard behind one listener (the default: a few
    /// KiB per cluster, so 10,000 tenants fit).
    #[default]
    LogicalClusters,
    /// One embedded cluster with its own listener per cluster: faults and restarts can target a
    /// single tenant, at the price of a shard (registry, controllers, store) per cluster.
    Listeners,
}

/// Routes `/clusters/<name>/…` to the logical cluster `<name>` of the shared shard.
struct HostFrontend {
    shard: Arc<Shard>,
}

impl Frontend for HostFrontend {
    fn serve(
        &self,
        req: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>> {
        let shard = self.shard.clone();
        Box::pin(async move {
            let path = req.uri().path().to_string();
            let Some((cluster, rest)) = path
                .strip_prefix("/clusters/")
                .map(|p| p.split_once('/').map_or((p, "/"), |(c, r)| (c, r)))
            else {
                return error_response(&ApiError::no_route());
            };
            let Some(cluster) = shard.logical_cluster(cluster) else {
                return error_response(&ApiError::not_found("", "clusters", cluster));
            };
            let rest = if rest.starts_with('/') {
                rest.to_string()
            } else {
                format!("/{rest}")
            };
            let target = Target::new(shard.clone(), cluster.clone(), cluster);
            service_provider_apiserver::handler::handle(target, req, &rest).await
        })
    }
}

/// The shared shard and listener behind logical-cluster hosting.
pub(crate) struct SharedHost {
    shard: Arc<Shard>,
    endpoint: Arc<Endpoint>,
    ca_pem: String,
    /// Admin client for the host's base URL; per-cluster clients share its connection pool.
    admin: kube::Client,
    /// The shortest token lifetime a TokenRequest may ask for.
    min_token_seconds: i64,
}

impl SharedHost {
    /// Starts the shared shard and its listener on 127.0.0.1; TokenRequests may ask for tokens
    /// living `min_token_seconds` or longer.
    pub(crate) async fn start(name: &str, min_token_seconds: i64) -> Result<Arc<Self>, DevError> {
        let tls = service_provider_apiserver::tls::tls()
            .map_err(|e| DevError::Start(format!("TLS for the cluster host: {e}")))?;
        let mut issuer = TokenIssuerConfig::kcp();
        issuer.min_expiration_seconds = min_token_seconds;
        let issuer = TokenIssuer::new(issuer)
            .map_err(|e| DevError::Start(format!("token issuer of the cluster host: {e}")))?;
        let opts = ShardOptions {
            token_issuer: Some(Arc::new(issuer)),
            store: StoreOptions::default(),
            root_ca_pem: Some(tls.ca_pem.clone()),
            // Tokens name their logical cluster and die outside it; bootstrap RBAC is shared by
            // reference instead of copied into every logical cluster.
            kcp: true,
            ..ShardOptions::default()
        };
        let shard = Shard::new(name, opts);
        shard.set_deployments_available(true);
        let endpoint = Endpoint::bind(
            std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
            Some(tls.server.clone()),
            Arc::new(HostFrontend {
                shard: shard.clone(),
            }),
        )
        .await
        .map_err(|e| DevError::Start(format!("binding the cluster host: {e}")))?;
        let admin = client_for(&endpoint.url(), shard.admin_token())?;
        Ok(Arc::new(SharedHost {
            shard,
            endpoint,
            ca_pem: tls.ca_pem.clone(),
            admin,
            min_token_seconds,
        }))
    }

    /// Adds a logical cluster with Kubernetes' initial namespaces.
    pub(crate) fn add(self: &Arc<Self>, name: &str) -> Result<ClusterHandle, DevError> {
        let lc = self
            .shard
            .add_logical_cluster(name, &LogicalClusterOptions::kubernetes())
            .map_err(|e| DevError::Start(format!("logical cluster {name}: {}", e.message)))?;
        Ok(ClusterHandle {
            inner: Arc::new(Backend::Logical {
                host: self.clone(),
                name: lc,
            }),
        })
    }

    /// Removes a logical cluster and everything in it.
    pub(crate) fn remove(&self, name: &str) {
        self.shard.remove_logical_cluster(name);
    }
}

/// A client for `url` authenticating with `token`, trusting the embedded CA.
fn client_for(url: &str, token: &str) -> Result<kube::Client, DevError> {
    let config = config_for(url, token)?;
    kube::Client::try_from(config).map_err(|e| DevError::Start(format!("client for {url}: {e}")))
}

fn config_for(url: &str, token: &str) -> Result<kube::Config, DevError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| DevError::Start(format!("cluster URL {url:?}: {e}")))?;
    let mut c = kube::Config::new(uri);
    c.default_namespace = "default".into();
    let tls =
        service_provider_apiserver::tls::tls().map_err(|e| DevError::Start(format!("TLS: {e}")))?;
    c.root_cert = Some(vec![tls.ca_der.clone()]);
    let auth = http::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| DevError::Start("a token with characters no HTTP header allows".into()))?;
    c.headers.push((http::header::AUTHORIZATION, auth));
    Ok(c)
}

/// A client sending every request through `base` with `prefix` (e.g. `/clusters/<name>`) put
/// before its path: a per-cluster client without a connection pool, TLS session or auth of its
/// own. Must be called within a tokio runtime.
pub(crate) fn prefixed_client(base: &kube::Client, prefix: &str) -> kube::Client {
    crate::access::clients::scoped_client(base, prefix, None)
}

enum Backend {
    Dedicated(Cluster),
    Logical {
        host: Arc<SharedHost>,
        name: Arc<str>,
    },
}

/// One cluster of the simulated platform: its URL, credentials, clients, faults and counters.
/// Cheap to clone.
#[derive(Clone)]
pub struct ClusterHandle {
    inner: Arc<Backend>,
}

impl std::fmt::Debug for ClusterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterHandle")
            .field("name", &self.name())
            .field("url", &self.url())
            .finish()
    }
}

impl ClusterHandle {
    /// A dedicated cluster.
    pub(crate) fn dedicated(cluster: Cluster) -> Self {
        ClusterHandle {
            inner: Arc::new(Backend::Dedicated(cluster)),
        }
    }

    /// Starts a dedicated cluster (own listener) named `name`.
    pub(crate) async fn start_dedicated(name: &str) -> Result<Self, DevError> {
        let cluster =
            Cluster::start_new(name, ClusterOptions::default().deployments_available(true))
                .await
                .map_err(|e| DevError::Start(format!("cluster {name}: {e}")))?;
        Ok(Self::dedicated(cluster))
    }

    /// The cluster's name (for a logical cluster, its name on the shared shard).
    pub fn name(&self) -> &str {
        match &*self.inner {
            Backend::Dedicated(c) => c.name(),
            Backend::Logical { name, .. } => name,
        }
    }

    /// The API server URL clients use (a logical cluster's includes `/clusters/<name>`).
    pub fn url(&self) -> String {
        match &*self.inner {
            Backend::Dedicated(c) => c.url(),
            Backend::Logical { host, name } => format!("{}/clusters/{name}", host.endpoint.url()),
        }
    }

    /// The CA certificate (PEM) clients must trust.
    pub fn ca_pem(&self) -> Option<&str> {
        match &*self.inner {
            Backend::Dedicated(c) => c.ca_pem(),
            Backend::Logical { host, .. } => Some(&host.ca_pem),
        }
    }

    /// The admin bearer token (`system:masters`). On a shared host it is valid for every
    /// logical cluster of the host, like a kcp shard's admin token.
    pub fn admin_token(&self) -> &str {
        match &*self.inner {
            Backend::Dedicated(c) => c.admin_token(),
            Backend::Logical { host, .. } => host.shard.admin_token(),
        }
    }

    /// A kubeconfig (YAML) for the admin.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_for(&format!("{}-admin", self.name()), self.admin_token())
    }

    /// A kubeconfig (YAML) authenticating as `user` with `token`.
    pub fn kubeconfig_for(&self, user: &str, token: &str) -> String {
        service_provider_apiserver::kubeconfig::kubeconfig(
            self.name(),
            &self.url(),
            self.ca_pem(),
            user,
            token,
            "default",
        )
    }

    /// Writes the admin kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), DevError> {
        let path = path.as_ref();
        std::fs::write(path, self.kubeconfig()).map_err(|e| DevError::Io {
            what: format!("writing {}", path.display()),
            source: e,
        })
    }

    /// A client acting as admin. For a logical cluster it shares the host's connection pool.
    /// Must be called within a tokio runtime.
    pub fn client(&self) -> kube::Client {
        match &*self.inner {
            Backend::Dedicated(c) => c.client(),
            Backend::Logical { host, name } => {
                prefixed_client(&host.admin, &format!("/clusters/{name}"))
            }
        }
    }

    /// A client authenticating with `token` (its own connection pool). Must be called within a
    /// tokio runtime.
    pub fn client_for(&self, token: &str) -> Result<kube::Client, DevError> {
        client_for(&self.url(), token)
    }

    /// A client configuration authenticating with `token`.
    pub fn config_for(&self, token: &str) -> Result<kube::Config, DevError> {
        config_for(&self.url(), token)
    }

    /// Fault injection. For a logical cluster these are the shared shard's: a rule hits every
    /// cluster of the host.
    pub fn faults(&self) -> &Faults {
        match &*self.inner {
            Backend::Dedicated(c) => c.faults(),
            Backend::Logical { host, .. } => host.shard.faults(),
        }
    }

    /// Request counters. For a logical cluster these are the shared shard's; use
    /// [`ClusterHandle::requests`] to count this cluster's requests only.
    pub fn counters(&self) -> &Counters {
        match &*self.inner {
            Backend::Dedicated(c) => c.counters(),
            Backend::Logical { host, .. } => host.shard.counters(),
        }
    }

    /// Requests this cluster answered with this verb and resource, whatever the code.
    pub fn requests(&self, verb: &str, resource: &str) -> u64 {
        let label = self.counter_label();
        self.counters()
            .snapshot()
            .into_iter()
            .filter(|(k, _)| k.cluster == label && k.verb == verb && k.resource == resource)
            .map(|(_, n)| n)
            .sum()
    }

    /// The `cluster` label of this cluster's request counters.
    pub fn counter_label(&self) -> &str {
        self.name()
    }

    /// The embedded cluster, when this one is dedicated (restart, stop, watch history).
    pub fn dedicated_cluster(&self) -> Option<&Cluster> {
        match &*self.inner {
            Backend::Dedicated(c) => Some(c),
            Backend::Logical { .. } => None,
        }
    }

    /// The shortest token lifetime this cluster's TokenRequests accept (kube-apiserver's 600 s
    /// unless the shared host was started with less).
    pub fn min_token_seconds(&self) -> i64 {
        match &*self.inner {
            Backend::Dedicated(_) => 600,
            Backend::Logical { host, .. } => host.min_token_seconds,
        }
    }

    /// Whether this is a logical cluster of the shared host.
    pub fn is_logical(&self) -> bool {
        matches!(&*self.inner, Backend::Logical { .. })
    }

    /// The shard serving this cluster.
    pub fn shard(&self) -> &Arc<Shard> {
        match &*self.inner {
            Backend::Dedicated(c) => c.shard(),
            Backend::Logical { host, .. } => &host.shard,
        }
    }

    /// Stops serving this cluster and drops its objects (a logical cluster is removed from the
    /// shard; a dedicated one stops listening).
    pub(crate) async fn shut_down(&self) {
        match &*self.inner {
            Backend::Dedicated(c) => c.stop().await,
            Backend::Logical { host, name } => host.remove(name),
        }
    }
}
