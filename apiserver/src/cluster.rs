//! The public face for tests, benchmarks, `dev` mode and the simulated platform: a [`ControlPlane`]
//! holding any number of independent [`Cluster`]s, each with its own URL, kubeconfig, storage,
//! faults and counters.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use parking_lot::Mutex;

use crate::Error;
use crate::faults::Faults;
use crate::handler::{Body, Target};
use crate::metrics::Counters;
use crate::server::{Endpoint, Frontend};
use crate::shard::{DEFAULT_LOGICAL_CLUSTER, LogicalClusterOptions, Shard, ShardOptions};
use crate::store::StoreOptions;

/// How a cluster is set up.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Serve HTTPS (default) or plain HTTP.
    pub tls: bool,
    /// Port on 127.0.0.1; 0 (default) picks a free one.
    pub port: u16,
    /// The most events retained per resource for watch resumption (older resourceVersions get
    /// 410 Expired).
    pub history: usize,
    /// Events per resource retained whatever their age.
    pub history_floor: usize,
    /// How long events beyond the floor are retained.
    pub history_age: std::time::Duration,
    /// The admin token; generated when `None`.
    pub admin_token: Option<String>,
    /// Fill Deployment status as if every replica were Available.
    pub deployments_available: bool,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            tls: true,
            port: 0,
            history: StoreOptions::default().history,
            history_floor: StoreOptions::default().history_floor,
            history_age: StoreOptions::default().history_age,
            admin_token: None,
            deployments_available: false,
        }
    }
}

impl ClusterOptions {
    /// Plain HTTP instead of HTTPS.
    pub fn http(mut self) -> Self {
        self.tls = false;
        self
    }
    /// A fixed port.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }
    /// The most events retained per resource for watch resumption.
    pub fn history(mut self, events: usize) -> Self {
        self.history = events;
        self
    }
    /// The watch window: per resource, events younger than `age` are retained, and at least the
    /// `floor` newest (kube-apiserver's watch cache: 75 s and 100).
    pub fn watch_window(mut self, floor: usize, age: std::time::Duration) -> Self {
        self.history_floor = floor;
        self.history_age = age;
        self
    }
    /// Deployments become Available.
    pub fn deployments_available(mut self, on: bool) -> Self {
        self.deployments_available = on;
        self
    }
}

/// Serves a plain cluster: every path goes to the shard's single logical cluster.
struct ClusterFrontend {
    target: Target,
}

impl Frontend for ClusterFrontend {
    fn serve(
        &self,
        req: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>> {
        let target = self.target.clone();
        Box::pin(async move {
            let path = req.uri().path().to_string();
            crate::handler::handle(target, req, &path).await
        })
    }
}

struct ClusterInner {
    name: String,
    shard: Arc<Shard>,
    endpoint: Arc<Endpoint>,
    ca_pem: Option<String>,
}

/// One embedded Kubernetes cluster. Cheap to clone; dropping the last handle (and the
/// [`ControlPlane`]'s) does not stop it — call [`Cluster::stop`] or drop the control plane's runtime.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<ClusterInner>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.inner.name)
            .field("url", &self.url())
            .finish()
    }
}

impl Cluster {
    /// Starts a cluster (on the current tokio runtime).
    pub async fn start_new(name: &str, opts: ClusterOptions) -> Result<Cluster, Error> {
        let tls = if opts.tls {
            Some(crate::tls::tls()?)
        } else {
            None
        };
        let ca_pem = tls.map(|t| t.ca_pem.clone());
        let shard = Shard::new(
            name,
            ShardOptions {
                store: StoreOptions {
                    history: opts.history,
                    history_floor: opts.history_floor,
                    history_age: opts.history_age,
                    ..StoreOptions::default()
                },
                cluster_annotation: None,
                admin_token: opts.admin_token.clone(),
                root_ca_pem: ca_pem.clone(),
                ..ShardOptions::default()
            },
        );
        shard.set_deployments_available(opts.deployments_available);
        let cluster = shard.add_logical_cluster(
            DEFAULT_LOGICAL_CLUSTER,
            &LogicalClusterOptions::kubernetes(),
        )?;
        let target = Target::new(shard.clone(), cluster, name.into());
        let endpoint = Endpoint::bind(
            SocketAddr::from((Ipv4Addr::LOCALHOST, opts.port)),
            tls.map(|t| t.server.clone()),
            Arc::new(ClusterFrontend { target }),
        )
        .await?;
        Ok(Cluster {
            inner: Arc::new(ClusterInner {
                name: name.to_string(),
                shard,
                endpoint,
                ca_pem,
            }),
        })
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The base URL, e.g. `https://127.0.0.1:41235`.
    pub fn url(&self) -> String {
        self.inner.endpoint.url()
    }

    /// The port the cluster listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.inner.endpoint.addr().port()
    }

    /// The CA certificate (PEM) clients must trust; `None` for plain HTTP.
    pub fn ca_pem(&self) -> Option<&str> {
        self.inner.ca_pem.as_deref()
    }

    /// The admin bearer token (member of `system:masters`).
    pub fn admin_token(&self) -> &str {
        self.inner.shard.admin_token()
    }

    /// A kubeconfig (YAML) for the admin, context and cluster named like the cluster.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_for(&format!("{}-admin", self.name()), self.admin_token())
    }

    /// A kubeconfig (YAML) that authenticates with `token` as user `user`.
    pub fn kubeconfig_for(&self, user: &str, token: &str) -> String {
        crate::kubeconfig::kubeconfig(
            self.name(),
            &self.url(),
            self.ca_pem(),
            user,
            token,
            "default",
        )
    }

    /// A kubeconfig (YAML) whose user authenticates with a client certificate signed by the
    /// cluster's CA: `user` is its CN, `group` its O (e.g. `system:masters` for an admin, as k3d
    /// writes it). kube-apiserver's rules apply: the user is who RBAC sees. Fails for plain-HTTP
    /// clusters, which have no TLS to carry a certificate.
    pub fn kubeconfig_with_certificate(
        &self,
        user: &str,
        group: Option<&str>,
    ) -> Result<String, Error> {
        let tls = match self.ca_pem() {
            Some(_) => crate::tls::tls()?,
            None => return Err(Error::NoTls),
        };
        let cert = tls.client_certificate(user, group)?;
        Ok(crate::kubeconfig::kubeconfig_with_certificate(
            self.name(),
            &self.url(),
            self.ca_pem(),
            user,
            &cert,
            "default",
        ))
    }

    /// Writes the admin kubeconfig to a file.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        std::fs::write(path, self.kubeconfig())
            .map_err(|e| Error::Io(format!("writing {}", path.display()), e))
    }

    /// A client configuration for the admin (kube's default retry on 429/503/504 included).
    pub fn config(&self) -> kube::Config {
        self.config_for(self.admin_token())
    }

    /// A client configuration that authenticates with `token`.
    pub fn config_for(&self, token: &str) -> kube::Config {
        let uri: http::Uri = self.url().parse().unwrap_or_default();
        let mut c = kube::Config::new(uri);
        c.default_namespace = "default".into();
        c.root_cert = crate::tls::tls()
            .ok()
            .filter(|_| self.ca_pem().is_some())
            .map(|t| vec![t.ca_der.clone()]);
        if let Ok(v) = http::HeaderValue::from_str(&format!("Bearer {token}")) {
            c.headers.push((http::header::AUTHORIZATION, v));
        }
        c
    }

    /// A `kube::Client` acting as admin. Must be called within a tokio runtime.
    pub fn client(&self) -> kube::Client {
        self.client_for(self.admin_token())
    }

    /// A `kube::Client` that authenticates with `token`. Must be called within a tokio runtime.
    pub fn client_for(&self, token: &str) -> kube::Client {
        // The configuration is built here from known-good parts; failure would be a bug in this crate.
        kube::Client::try_from(self.config_for(token))
            .expect("client from a generated configuration")
    }

    /// Fault injection.
    pub fn faults(&self) -> &Faults {
        self.inner.shard.faults()
    }

    /// Request counters.
    pub fn counters(&self) -> &Counters {
        self.inner.shard.counters()
    }

    /// Ends every open watch (clients see the stream end and re-watch).
    pub fn drop_watches(&self) {
        self.inner.shard.store().drop_watchers();
    }

    /// Forgets the watch history: resuming from any earlier resourceVersion now gets 410 Expired.
    pub fn expire_resource_versions(&self) {
        self.inner.shard.store().expire_history();
    }

    /// Changes how many events are retained per resource for watch resumption.
    pub fn set_history(&self, events: usize) {
        self.inner.shard.store().set_history(events);
    }

    /// Closes every connection and serves again on the same URL; storage is kept.
    pub async fn restart(&self) -> Result<(), Error> {
        self.inner
            .endpoint
            .restart()
            .await
            .map_err(|e| Error::Io("restarting the listener".into(), e))
    }

    /// Stops serving (connections are refused until [`Cluster::start`]).
    pub async fn stop(&self) {
        self.inner.endpoint.stop().await;
    }

    /// Serves again after [`Cluster::stop`], on the same URL.
    pub async fn start(&self) -> Result<(), Error> {
        self.inner
            .endpoint
            .start()
            .await
            .map_err(|e| Error::Io("starting the listener".into(), e))
    }

    /// Whether the cluster is serving.
    pub fn is_running(&self) -> bool {
        self.inner.endpoint.is_running()
    }

    /// When on, Deployments get a status as if their replicas had become Available.
    pub fn set_deployments_available(&self, on: bool) {
        self.inner.shard.set_deployments_available(on);
    }

    /// The shard behind the cluster (storage, registry, admission).
    pub(crate) fn shard(&self) -> &Arc<Shard> {
        &self.inner.shard
    }
}

/// Several independent clusters in one process (platform, onboarding, MCP, workload, …).
#[derive(Clone, Default)]
pub struct ControlPlane {
    clusters: Arc<Mutex<BTreeMap<String, Cluster>>>,
    kcps: Arc<Mutex<BTreeMap<String, crate::kcp::Kcp>>>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("clusters", &self.clusters.lock().keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ControlPlane {
    /// An empty control plane.
    pub fn new() -> Self {
        ControlPlane::default()
    }

    /// Starts a new cluster. Names are unique within the control plane.
    pub async fn add_cluster(&self, name: &str, opts: ClusterOptions) -> Result<Cluster, Error> {
        if self.clusters.lock().contains_key(name) {
            return Err(Error::ClusterExists(name.to_string()));
        }
        let c = Cluster::start_new(name, opts).await?;
        let mut clusters = self.clusters.lock();
        if clusters.contains_key(name) {
            return Err(Error::ClusterExists(name.to_string()));
        }
        clusters.insert(name.to_string(), c.clone());
        Ok(c)
    }

    /// A cluster by name.
    pub fn cluster(&self, name: &str) -> Option<Cluster> {
        self.clusters.lock().get(name).cloned()
    }

    /// Every cluster, by name.
    pub fn clusters(&self) -> Vec<Cluster> {
        self.clusters.lock().values().cloned().collect()
    }

    /// The kcp installations (see [`ControlPlane::add_kcp`]).
    pub(crate) fn kcp_installations(&self) -> &Mutex<BTreeMap<String, crate::kcp::Kcp>> {
        &self.kcps
    }

    /// Stops and forgets a cluster.
    pub async fn remove_cluster(&self, name: &str) -> Option<Cluster> {
        let c = self.clusters.lock().remove(name)?;
        c.stop().await;
        Some(c)
    }
}

/// Shorthand for a single cluster.
#[derive(Debug)]
pub struct ApiServer;

impl ApiServer {
    /// Starts one HTTPS cluster named `cluster` with default options.
    pub async fn start() -> Result<Cluster, Error> {
        Cluster::start_new("cluster", ClusterOptions::default()).await
    }

    /// Starts one cluster with options.
    pub async fn start_with(name: &str, opts: ClusterOptions) -> Result<Cluster, Error> {
        Cluster::start_new(name, opts).await
    }
}
