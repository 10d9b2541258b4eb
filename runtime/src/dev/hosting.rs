//! Where the simulated platform's clusters are served, and the handle tests get for each: a
//! dedicated embedded cluster (own listener, storage, faults and counters), a logical cluster
//! of one shared embedded [`ClusterHost`] (what makes 10,000 tenants affordable; faults and
//! counters are the host's, counters labelled per cluster, so [`ClusterHandle::requests`] still
//! counts per cluster), or a real kube-apiserver ([`Hosting::KubeApiservers`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use service_provider_apiserver::{
    Cluster, ClusterHost, ClusterOptions, CounterKey, Counters, Faults,
};

use crate::dev::DevError;
use crate::dev::realstack::{AuditReader, KubeApiserver};

/// How the clusters the simulated platform creates on demand (MCP and workload clusters) are
/// served. The platform and onboarding clusters are dedicated embedded clusters, or real
/// kube-apiservers with [`Hosting::KubeApiservers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosting {
    /// Logical clusters of one shared embedded shard behind one listener (the default: a few
    /// KiB per cluster, so 10,000 tenants fit).
    LogicalClusters,
    /// One embedded cluster with its own listener per cluster: faults and restarts can target a
    /// single tenant, at the price of a shard (registry, controllers, store) per cluster.
    Listeners,
    /// Every cluster, the platform and onboarding clusters included, is a real kube-apiserver
    /// ([`crate::dev::realstack`]) on one etcd shared by the test process, with
    /// stand-ins doing what kube-controller-manager and kubelet would. Request counters come
    /// from each kube-apiserver's audit log; fault injection is the embedded server's and is
    /// not available here.
    KubeApiservers,
}

impl Hosting {
    /// How long the simulated platform and the test kit wait for a condition unless told
    /// otherwise: 2 minutes on embedded clusters, generous for shared CI machines; 5 minutes on
    /// kube-apiservers, where deleting a CRD can take minutes by itself. Kube's CRD finalizer
    /// lists the instances through storage it creates on first use, is refused while that
    /// storage's watch cache initialises (429 `storage is (re)initializing`, apiserver
    /// `pkg/storage/cacher/cacher.go:768-771`) and retries on a per-CRD exponential backoff
    /// (apiextensions-apiserver `pkg/controller/finalizer/crd_finalizer.go:96-98,:310`);
    /// operator-framework/operator-controller#1437 met the same and waits five minutes too. A
    /// tenant's deletion waits for the CRDs it installed, as an operator's would. Waits end as
    /// soon as their condition holds, so only a failing test takes longer.
    pub fn default_timeout(self) -> Duration {
        match self {
            Hosting::LogicalClusters | Hosting::Listeners => Duration::from_secs(120),
            Hosting::KubeApiservers => Duration::from_secs(300),
        }
    }
}

impl Default for Hosting {
    /// [`Hosting::KubeApiservers`] when `SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver`
    /// ([`crate::dev::realstack::BACKEND_VAR`], set by `cargo xtask test-real`), else
    /// [`Hosting::LogicalClusters`].
    fn default() -> Self {
        if crate::dev::realstack::real_backend_requested() {
            Hosting::KubeApiservers
        } else {
            Hosting::LogicalClusters
        }
    }
}

/// The shared host behind logical-cluster hosting, with an admin client all its clusters'
/// clients share a connection pool with.
pub(crate) struct SharedHost {
    host: ClusterHost,
    /// Admin client for the host's base URL; per-cluster clients share its connection pool.
    admin: kube::Client,
    /// The shortest token lifetime a TokenRequest may ask for.
    min_token_seconds: i64,
}

impl SharedHost {
    /// Starts the shared host on 127.0.0.1; TokenRequests may ask for tokens living
    /// `min_token_seconds` or longer.
    pub(crate) async fn start(name: &str, min_token_seconds: i64) -> Result<Arc<Self>, DevError> {
        let host = ClusterHost::start(name, min_token_seconds)
            .await
            .map_err(|e| DevError::Start(format!("the cluster host: {e}")))?;
        let admin = client_for(&host.url(), host.admin_token())?;
        Ok(Arc::new(SharedHost {
            host,
            admin,
            min_token_seconds,
        }))
    }

    /// Adds a logical cluster with Kubernetes' initial namespaces.
    pub(crate) fn add(self: &Arc<Self>, name: &str) -> Result<ClusterHandle, DevError> {
        let lc = self
            .host
            .add(name)
            .map_err(|e| DevError::Start(format!("logical cluster {name}: {}", e.message)))?;
        Ok(ClusterHandle {
            shut_down: Arc::default(),
            inner: Arc::new(Backend::Logical {
                host: self.clone(),
                name: lc,
            }),
        })
    }

    /// Removes a logical cluster and everything in it.
    pub(crate) fn remove(&self, name: &str) {
        self.host.remove(name);
    }
}

/// A client for `url` authenticating with `token`, trusting the embedded CA.
fn client_for(url: &str, token: &str) -> Result<kube::Client, DevError> {
    client_trusting(url, token, embedded_ca()?)
}

/// A client for `url` authenticating with `token`, trusting `ca_der`.
fn client_trusting(url: &str, token: &str, ca_der: Vec<u8>) -> Result<kube::Client, DevError> {
    let config = config_trusting(url, token, ca_der)?;
    kube::Client::try_from(config).map_err(|e| DevError::Start(format!("client for {url}: {e}")))
}

fn embedded_ca() -> Result<Vec<u8>, DevError> {
    let tls =
        service_provider_apiserver::tls::tls().map_err(|e| DevError::Start(format!("TLS: {e}")))?;
    Ok(tls.ca_der.clone())
}

fn config_trusting(url: &str, token: &str, ca_der: Vec<u8>) -> Result<kube::Config, DevError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| DevError::Start(format!("cluster URL {url:?}: {e}")))?;
    let mut c = kube::Config::new(uri);
    c.default_namespace = "default".into();
    c.root_cert = Some(vec![ca_der]);
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
    Real(Box<RealCluster>),
}

/// A real kube-apiserver of the simulated platform, with an admin ServiceAccount token (so
/// every backend hands out bearer-token kubeconfigs) and the stand-ins running against it.
struct RealCluster {
    name: String,
    url: String,
    ca_pem: String,
    ca_der: Vec<u8>,
    admin_token: String,
    admin: kube::Client,
    /// Taken by [`ClusterHandle::shut_down`]: dropping it kills the process.
    server: std::sync::Mutex<Option<KubeApiserver>>,
    stand_ins: crate::dev::stand_ins::StandIns,
    /// The requests of its audit log read so far, as the embedded server counts its own.
    counters: Counters,
    audit: std::sync::Mutex<AuditReader>,
}

impl RealCluster {
    /// The counters, with what the audit log says since the last call.
    fn counters(&self) -> &Counters {
        let requests = self
            .audit
            .lock()
            .map(|mut audit| audit.next_requests())
            .unwrap_or_default();
        for r in requests {
            let key = CounterKey {
                cluster: self.name.clone(),
                verb: r.verb,
                resource: r.resource,
                code: r.code,
                user: r.user,
            };
            self.counters
                .record_answered(key, &r.namespace, &r.name, r.completed_micros);
        }
        &self.counters
    }
}

/// One cluster of the simulated platform: its URL, credentials, clients, faults and counters.
/// Cheap to clone.
#[derive(Clone)]
pub struct ClusterHandle {
    inner: Arc<Backend>,
    /// Turns true when the cluster is shut down: what is waited for in it is gone with it.
    shut_down: Arc<tokio::sync::watch::Sender<bool>>,
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
            shut_down: Arc::default(),
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

    /// Starts a cluster of its own named `name`: a real kube-apiserver with
    /// [`Hosting::KubeApiservers`], else a dedicated embedded cluster.
    pub(crate) async fn start_own(name: &str, hosting: Hosting) -> Result<Self, DevError> {
        match hosting {
            Hosting::KubeApiservers => Self::start_real(name).await,
            Hosting::LogicalClusters | Hosting::Listeners => Self::start_dedicated(name).await,
        }
    }

    /// Starts a real kube-apiserver named `name` on the test process's shared etcd, mints its
    /// admin token and starts the stand-ins against it.
    pub(crate) async fn start_real(name: &str) -> Result<Self, DevError> {
        let failed =
            |e: &dyn std::fmt::Display| DevError::Start(format!("kube-apiserver {name}: {e}"));
        let stack = crate::dev::realstack::shared_stack()
            .await
            .map_err(|e| failed(&e))?;
        let server = stack.kube_apiserver(name).await.map_err(|e| failed(&e))?;
        let certificate_admin = server.client().await.map_err(|e| failed(&e))?;
        let admin_token = crate::dev::stand_ins::admin_token(&certificate_admin)
            .await
            .map_err(|e| failed(&e))?;
        let ca_der = pem_to_der(server.ca_pem()).map_err(|e| failed(&e))?;
        let admin = client_trusting(server.url(), &admin_token, ca_der.clone())?;
        let stand_ins = crate::dev::stand_ins::StandIns::start(admin.clone());
        let audit = std::sync::Mutex::new(AuditReader::new(server.audit_log()));
        Ok(ClusterHandle {
            shut_down: Arc::default(),
            inner: Arc::new(Backend::Real(Box::new(RealCluster {
                name: name.to_owned(),
                url: server.url().to_owned(),
                ca_pem: server.ca_pem().to_owned(),
                ca_der,
                admin_token,
                admin,
                server: std::sync::Mutex::new(Some(server)),
                stand_ins,
                counters: Counters::default(),
                audit,
            }))),
        })
    }

    /// The cluster's name (for a logical cluster, its name on the shared shard).
    pub fn name(&self) -> &str {
        match &*self.inner {
            Backend::Dedicated(c) => c.name(),
            Backend::Logical { name, .. } => name,
            Backend::Real(c) => &c.name,
        }
    }

    /// The API server URL clients use (a logical cluster's includes `/clusters/<name>`).
    pub fn url(&self) -> String {
        match &*self.inner {
            Backend::Dedicated(c) => c.url(),
            Backend::Logical { host, name } => host.host.cluster_url(name),
            Backend::Real(c) => c.url.clone(),
        }
    }

    /// The CA certificate (PEM) clients must trust.
    pub fn ca_pem(&self) -> Option<&str> {
        match &*self.inner {
            Backend::Dedicated(c) => c.ca_pem(),
            Backend::Logical { host, .. } => Some(host.host.ca_pem()),
            Backend::Real(c) => Some(&c.ca_pem),
        }
    }

    /// The admin bearer token (`system:masters`; on a real kube-apiserver a ServiceAccount
    /// bound to `cluster-admin`). On a shared host it is valid for every logical cluster of the
    /// host, like a kcp shard's admin token.
    pub fn admin_token(&self) -> &str {
        match &*self.inner {
            Backend::Dedicated(c) => c.admin_token(),
            Backend::Logical { host, .. } => host.host.admin_token(),
            Backend::Real(c) => &c.admin_token,
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
            Backend::Real(c) => c.admin.clone(),
        }
    }

    /// A client authenticating with `token` (its own connection pool). Must be called within a
    /// tokio runtime.
    pub fn client_for(&self, token: &str) -> Result<kube::Client, DevError> {
        client_trusting(&self.url(), token, self.ca_der()?)
    }

    /// A client configuration authenticating with `token`.
    pub fn config_for(&self, token: &str) -> Result<kube::Config, DevError> {
        config_trusting(&self.url(), token, self.ca_der()?)
    }

    fn ca_der(&self) -> Result<Vec<u8>, DevError> {
        match &*self.inner {
            Backend::Real(c) => Ok(c.ca_der.clone()),
            Backend::Dedicated(_) | Backend::Logical { .. } => embedded_ca(),
        }
    }

    /// Fault injection. For a logical cluster these are the shared shard's: a rule hits every
    /// cluster of the host.
    ///
    /// # Panics
    /// On a real kube-apiserver, which has no fault injection: a test that injects faults runs
    /// on the embedded backend only.
    pub fn faults(&self) -> &Faults {
        match &*self.inner {
            Backend::Dedicated(c) => c.faults(),
            Backend::Logical { host, .. } => host.host.faults(),
            Backend::Real(c) => embedded_only(&c.name, "fault injection"),
        }
    }

    /// Request counters. For a logical cluster these are the shared shard's; use
    /// [`ClusterHandle::requests`] to count this cluster's requests only. For a real
    /// kube-apiserver they are read from its audit log, which it writes when a response is
    /// complete; what the server asks of itself (as `system:apiserver`) is not counted.
    pub fn counters(&self) -> &Counters {
        match &*self.inner {
            Backend::Dedicated(c) => c.counters(),
            Backend::Logical { host, .. } => host.host.counters(),
            Backend::Real(c) => c.counters(),
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
            Backend::Logical { .. } | Backend::Real(_) => None,
        }
    }

    /// The shortest token lifetime this cluster's TokenRequests accept (kube-apiserver's 600 s
    /// unless the shared host was started with less).
    pub fn min_token_seconds(&self) -> i64 {
        match &*self.inner {
            Backend::Dedicated(_) | Backend::Real(_) => 600,
            Backend::Logical { host, .. } => host.min_token_seconds,
        }
    }

    /// Whether this is a logical cluster of the shared host.
    pub fn is_logical(&self) -> bool {
        matches!(&*self.inner, Backend::Logical { .. })
    }

    /// Returns once the platform has shut this cluster down (its Cluster object was deleted):
    /// nothing in it exists any more, whether or not its server still answers.
    pub async fn gone(&self) {
        let mut shut_down = self.shut_down.subscribe();
        let _ = shut_down.wait_for(|down| *down).await;
    }

    /// Whether the platform has shut this cluster down (see [`ClusterHandle::gone`]).
    pub fn is_shut_down(&self) -> bool {
        *self.shut_down.borrow()
    }

    /// Whether this is a real kube-apiserver.
    pub fn is_real(&self) -> bool {
        matches!(&*self.inner, Backend::Real(_))
    }

    /// Stops serving this cluster and drops its objects (a logical cluster is removed from the
    /// shard; a dedicated one stops listening).
    pub(crate) async fn shut_down(&self) {
        self.shut_down.send_replace(true);
        match &*self.inner {
            Backend::Dedicated(c) => c.stop().await,
            Backend::Logical { host, name } => host.remove(name),
            Backend::Real(c) => {
                c.stand_ins.stop();
                // The audit log goes with the process: what it answered is read into the
                // counters first, so a test that looks after the cluster went still sees it.
                c.counters();
                let server = c.server.lock().map(|mut s| s.take()).unwrap_or(None);
                drop(server);
            }
        }
    }
}

/// Whether `user` asked with a cluster's admin credentials (the test's and the simulated
/// platform's): the embedded server's admin, a real kube-apiserver's client-certificate admin
/// or its admin ServiceAccount.
pub(crate) fn is_admin(user: &str) -> bool {
    user == service_provider_apiserver::KUBERNETES_ADMIN
        || user == crate::dev::realstack::ADMIN_USER
        || crate::dev::stand_ins::is_admin_account(user)
}

/// What a test that needs the embedded server gets on a real kube-apiserver: a panic naming the
/// feature, since a test cannot go on without it.
fn embedded_only(cluster: &str, what: &str) -> ! {
    panic!(
        "{what} of cluster {cluster} exist only on the embedded backend; run this test without {}=kube-apiserver",
        crate::dev::realstack::BACKEND_VAR
    )
}

/// The DER of the first certificate in `pem`.
fn pem_to_der(pem: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| format!("the CA certificate is not PEM: {e}"))
}
