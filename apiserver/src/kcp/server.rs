//! The public face of kcp mode: [`Kcp`], one kcp installation (a root shard that is also the
//! front proxy, plus more shards on demand), and [`KcpShard`], one shard of it.

use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use super::controller::{self, Item};
use super::index::{ClusterEntry, Index};
use super::names::{self, CLUSTER_ANNOTATION, PATH_ANNOTATION, ROOT};
use super::vw::VwCache;
use crate::auth::{TokenIssuer, TokenIssuerConfig, UserInfo};
use crate::error::ApiError;
use crate::faults::Faults;
use crate::metrics::Counters;
use crate::registry::ResourceInfo;
use crate::server::Endpoint;
use crate::shard::{LogicalClusterOptions, Shard, ShardOptions};
use crate::store::StoreOptions;

/// How a kcp installation is set up.
#[derive(Debug, Clone)]
pub struct KcpOptions {
    /// Serve HTTPS (default) or plain HTTP.
    pub tls: bool,
    /// Port of the root shard (the front URL); 0 (default) picks a free one. Other shards always
    /// get free ports.
    pub port: u16,
    /// How many shards to start with (at least one, the root shard).
    pub shards: usize,
    /// Watch events retained per shard for resumption (older resourceVersions get 410 Expired).
    pub history: usize,
    /// The admin token (member of `system:masters` on every shard); generated when `None`.
    pub admin_token: Option<String>,
    /// Publish every shard's virtual-workspace URL in endpoint slices at once, instead of only
    /// while the shard holds at least one APIBinding to the export (kcp's behaviour).
    pub publish_endpoints_eagerly: bool,
    /// The shortest `expirationSeconds` a TokenRequest may ask for (kube-apiserver: 600); tests of
    /// token refresh lower it.
    pub min_token_expiration_seconds: Option<i64>,
}

impl Default for KcpOptions {
    fn default() -> Self {
        KcpOptions {
            tls: true,
            port: 0,
            shards: 1,
            history: StoreOptions::default().history,
            admin_token: None,
            publish_endpoints_eagerly: false,
            min_token_expiration_seconds: None,
        }
    }
}

impl KcpOptions {
    /// Plain HTTP instead of HTTPS.
    pub fn http(mut self) -> Self {
        self.tls = false;
        self
    }
    /// A fixed port for the root shard.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }
    /// The number of shards to start with.
    pub fn shards(mut self, n: usize) -> Self {
        self.shards = n.max(1);
        self
    }
    /// The size of each shard's watch history.
    pub fn history(mut self, events: usize) -> Self {
        self.history = events;
        self
    }
    /// Endpoint slices list every shard at once.
    pub fn publish_endpoints_eagerly(mut self, on: bool) -> Self {
        self.publish_endpoints_eagerly = on;
        self
    }
    /// The shortest token lifetime a TokenRequest may ask for, in seconds.
    pub fn min_token_expiration_seconds(mut self, seconds: i64) -> Self {
        self.min_token_expiration_seconds = Some(seconds);
        self
    }
}

/// Errors of kcp mode's Rust API.
#[derive(Debug, thiserror::Error)]
pub enum KcpError {
    /// A listener could not be started.
    #[error(transparent)]
    Server(#[from] crate::Error),
    /// A workspace path is malformed.
    #[error(
        "{0:?} is not a workspace path: use lower-case segments joined by ':' under root, e.g. root:org:ws"
    )]
    InvalidPath(String),
    /// The parent of a workspace to create does not exist.
    #[error("the parent workspace {0:?} does not exist; create it first")]
    ParentNotFound(String),
    /// No shard with this index or name.
    #[error("kcp has no shard {0:?}")]
    NoShard(String),
    /// The API refused the request.
    #[error("the API refused the request: {0}")]
    Api(#[from] ApiError),
    /// A workspace did not become ready in time.
    #[error("workspace {0:?} did not become Ready within {1:?}")]
    Timeout(String, Duration),
}

/// A logical cluster as the Rust API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceInfo {
    /// The logical cluster name (16 base36 characters; `root` for the root workspace).
    pub name: String,
    /// The workspace path (`root:org:ws`).
    pub path: String,
    /// Index of the shard holding it.
    pub shard: usize,
    /// The workspace URL (`<front>/clusters/<path>`).
    pub url: String,
}

/// One shard of a kcp installation (state shared by its handle, routing and controllers).
pub(crate) struct ShardState {
    pub index: usize,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub shard: Arc<Shard>,
    pub endpoint: OnceLock<Arc<Endpoint>>,
    /// Faults of requests through this shard's virtual workspaces.
    pub vw_faults: Faults,
    /// APIBindings of this shard, by consumer logical cluster (the virtual workspace authorizes
    /// and filters with them).
    pub bindings: RwLock<HashMap<Arc<str>, Vec<Arc<super::controller::binding::BoundEntry>>>>,
}

impl ShardState {
    /// The shard's base URL (also its virtual-workspace base URL).
    pub(crate) fn url(&self) -> String {
        self.endpoint.get().map(|e| e.url()).unwrap_or_default()
    }
}

/// Bound-resource definitions by (schema uid, identity hash).
pub(crate) type SchemaInfos = HashMap<(String, String), Vec<Arc<ResourceInfo>>>;

/// Everything one kcp installation shares.
pub(crate) struct KcpInner {
    pub name: String,
    pub tls: bool,
    pub ca_pem: Option<String>,
    pub admin_token: String,
    pub issuer: Arc<TokenIssuer>,
    pub history: usize,
    pub shards: RwLock<Vec<Arc<ShardState>>>,
    pub index: RwLock<Index>,
    pub index_changed: Notify,
    pub publish_eagerly: AtomicBool,
    pub round_robin: AtomicUsize,
    pub queue: mpsc::UnboundedSender<Item>,
    pub state: Mutex<controller::ApiState>,
    pub vw_cache: VwCache,
    /// Bound-resource definitions per (schema uid, identity hash), shared by every binding.
    pub schema_infos: Mutex<SchemaInfos>,
    /// Static user tokens, registered on every shard (also on shards added later).
    pub users: Mutex<Vec<(String, UserInfo)>>,
}

impl KcpInner {
    /// A shard by index.
    pub(crate) fn shard(&self, i: usize) -> Option<Arc<ShardState>> {
        self.shards.read().get(i).cloned()
    }

    /// The front URL (the root shard's).
    pub(crate) fn front_url(&self) -> String {
        self.shard(0).map(|s| s.url()).unwrap_or_default()
    }

    /// Resolves `/clusters/<x>`: a path or a logical cluster name.
    pub(crate) fn resolve(&self, x: &str) -> Option<ClusterEntry> {
        self.index.read().resolve(x).cloned()
    }

    /// The canonical path of a logical cluster.
    pub(crate) fn path_of(&self, cluster: &str) -> Option<Arc<str>> {
        self.index.read().by_name(cluster).map(|e| e.path.clone())
    }

    /// Queues work for the controllers.
    pub(crate) fn enqueue(&self, item: Item) {
        let _ = self.queue.send(item);
    }

    /// The shard a logical cluster lives on.
    pub(crate) fn shard_of(&self, cluster: &str) -> Option<Arc<ShardState>> {
        let i = self.index.read().by_name(cluster)?.shard;
        self.shard(i)
    }
}

/// A running kcp installation. Cheap to clone.
#[derive(Clone)]
pub struct Kcp {
    pub(crate) inner: Arc<KcpInner>,
}

impl std::fmt::Debug for Kcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kcp")
            .field("name", &self.inner.name)
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

/// A handle on one shard: its URL (which is also its virtual-workspace base URL), storage, faults
/// and counters.
#[derive(Clone)]
pub struct KcpShard {
    state: Arc<ShardState>,
}

impl std::fmt::Debug for KcpShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KcpShard")
            .field("name", &self.state.name)
            .field("url", &self.url())
            .finish()
    }
}

impl KcpShard {
    /// The shard's position (0 is the root shard).
    pub fn index(&self) -> usize {
        self.state.index
    }
    /// The shard's name (`root`, `shard-1`, …).
    pub fn name(&self) -> &str {
        &self.state.name
    }
    /// The shard's labels (`name=<shard>`), matched by `spec.location.selector` of Workspaces.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.state.labels
    }
    /// The shard's base URL; its virtual workspaces are served below it
    /// (`<url>/services/apiexport/…`) and its wildcard at `<url>/clusters/*`.
    pub fn url(&self) -> String {
        self.state.url()
    }
    /// The virtual-workspace URL of an APIExport on this shard, as endpoint slices publish it.
    pub fn apiexport_url(&self, export_cluster: &str, export: &str) -> String {
        format!(
            "{}/services/apiexport/{export_cluster}/{export}",
            self.url()
        )
    }
    /// The shard's storage, registry and admission.
    pub(crate) fn shard(&self) -> &Arc<Shard> {
        &self.state.shard
    }
    /// Open watches over the shard's store (every surface and logical cluster).
    pub fn open_watches(&self) -> usize {
        self.state.shard.store().watcher_count()
    }
    /// Faults of requests to workspaces (and the wildcard) on this shard.
    pub fn faults(&self) -> &Faults {
        self.state.shard.faults()
    }
    /// Faults of requests through this shard's virtual workspaces.
    pub fn vw_faults(&self) -> &Faults {
        &self.state.vw_faults
    }
    /// Request counters of this shard; the `cluster` label is the surface, `workspace` or
    /// `virtualworkspace`.
    pub fn counters(&self) -> &Counters {
        self.state.shard.counters()
    }
    /// The shard's current resourceVersion (one counter for all its logical clusters).
    pub fn resource_version(&self) -> u64 {
        self.state.shard.store().current_rv()
    }
    /// Ends every open watch on this shard (wildcard and virtual-workspace watches included).
    pub fn drop_watches(&self) {
        self.state.shard.store().drop_watchers();
    }
    /// Forgets the watch history: resuming from an earlier resourceVersion gets 410 Expired.
    pub fn expire_resource_versions(&self) {
        self.state.shard.store().expire_history();
    }
    /// Closes every connection and serves again on the same URL; storage is kept.
    pub async fn restart(&self) -> Result<(), KcpError> {
        match self.state.endpoint.get() {
            Some(e) => e
                .restart()
                .await
                .map_err(|e| KcpError::Server(crate::Error::Io("restarting".into(), e))),
            None => Ok(()),
        }
    }
    /// Stops serving (connections are refused until [`KcpShard::start`]).
    pub async fn stop(&self) {
        if let Some(e) = self.state.endpoint.get() {
            e.stop().await;
        }
    }
    /// Serves again after [`KcpShard::stop`].
    pub async fn start(&self) -> Result<(), KcpError> {
        match self.state.endpoint.get() {
            Some(e) => e
                .start()
                .await
                .map_err(|e| KcpError::Server(crate::Error::Io("starting".into(), e))),
            None => Ok(()),
        }
    }
}

impl Kcp {
    /// Starts a kcp installation on the current tokio runtime: the root shard (whose URL is the
    /// front URL) with the `root` workspace, and `opts.shards - 1` more shards.
    pub async fn start(name: &str, opts: KcpOptions) -> Result<Kcp, KcpError> {
        let tls = if opts.tls {
            Some(crate::tls::tls().map_err(crate::Error::from)?)
        } else {
            None
        };
        let mut issuer_config = TokenIssuerConfig::kcp();
        if let Some(min) = opts.min_token_expiration_seconds {
            issuer_config.min_expiration_seconds = min;
        }
        let issuer = Arc::new(
            TokenIssuer::new(issuer_config).map_err(|e| KcpError::Api(ApiError::internal(e)))?,
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(KcpInner {
            name: name.to_string(),
            tls: tls.is_some(),
            ca_pem: tls.map(|t| t.ca_pem.clone()),
            admin_token: opts
                .admin_token
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()),
            issuer,
            history: opts.history,
            shards: RwLock::new(Vec::new()),
            index: RwLock::new(Index::default()),
            index_changed: Notify::new(),
            publish_eagerly: AtomicBool::new(opts.publish_endpoints_eagerly),
            round_robin: AtomicUsize::new(0),
            queue: tx,
            state: Mutex::new(controller::ApiState::default()),
            vw_cache: VwCache::default(),
            schema_infos: Mutex::new(HashMap::new()),
            users: Mutex::new(Vec::new()),
        });
        let kcp = Kcp { inner };
        for i in 0..opts.shards.max(1) {
            kcp.start_shard(i, if i == 0 { opts.port } else { 0 })
                .await?;
        }
        controller::spawn(&kcp.inner, rx);
        kcp.bootstrap_root()?;
        Ok(kcp)
    }

    async fn start_shard(&self, i: usize, port: u16) -> Result<KcpShard, KcpError> {
        let inner = &self.inner;
        let name = if i == 0 {
            ROOT.to_string()
        } else {
            format!("shard-{i}")
        };
        let shard = Shard::new(
            &name,
            ShardOptions {
                store: StoreOptions {
                    history: inner.history,
                    ..StoreOptions::default()
                },
                cluster_annotation: Some(CLUSTER_ANNOTATION.into()),
                admin_token: Some(inner.admin_token.clone()),
                root_ca_pem: inner.ca_pem.clone(),
                kcp: true,
                builtins: Some(super::apis::builtins()),
                token_issuer: Some(inner.issuer.clone()),
            },
        );
        for (token, user) in inner.users.lock().iter() {
            shard
                .auth
                .authenticator()
                .add_token(token.clone(), user.clone());
        }
        shard.add_admission_plugin(Arc::new(super::admission::KcpAdmission {
            inner: Arc::downgrade(inner),
        }));
        let state = Arc::new(ShardState {
            index: i,
            labels: BTreeMap::from([("name".to_string(), name.clone())]),
            name,
            shard: shard.clone(),
            endpoint: OnceLock::new(),
            vw_faults: Faults::default(),
            bindings: RwLock::new(HashMap::new()),
        });
        let tls = if inner.tls {
            Some(
                crate::tls::tls()
                    .map_err(crate::Error::from)?
                    .server
                    .clone(),
            )
        } else {
            None
        };
        let endpoint = Endpoint::bind(
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            tls,
            Arc::new(super::routing::KcpFrontend {
                inner: Arc::downgrade(inner),
                shard: i,
            }),
        )
        .await
        .map_err(crate::Error::from)?;
        let _ = state.endpoint.set(endpoint);
        {
            let mut shards = inner.shards.write();
            if shards.len() != i {
                return Err(KcpError::NoShard(format!(
                    "{i} (shards were added concurrently)"
                )));
            }
            shards.push(state.clone());
        }
        controller::watch_shard(inner, &state);
        Ok(KcpShard { state })
    }

    fn bootstrap_root(&self) -> Result<(), KcpError> {
        let root = self.shard(0).ok_or_else(|| KcpError::NoShard("0".into()))?;
        let shard = root.shard();
        let cluster = shard.add_logical_cluster(
            ROOT,
            &LogicalClusterOptions {
                namespaces: vec!["default".into()],
            },
        )?;
        self.inner.index.write().insert(ROOT, 0, ROOT);
        let url = format!("{}/clusters/{ROOT}", self.url());
        controller::workspace::create_logical_cluster_object(shard, &cluster, ROOT, &url, None)?;
        Ok(())
    }

    /// Adds a shard (with its own URL, virtual-workspace base URL and resourceVersion counter).
    pub async fn add_shard(&self) -> Result<KcpShard, KcpError> {
        let i = self.inner.shards.read().len();
        let s = self.start_shard(i, 0).await?;
        // Endpoint slices may list the new shard (eager publishing).
        self.inner
            .state
            .lock()
            .all_slices()
            .into_iter()
            .for_each(|it| self.inner.enqueue(it));
        Ok(s)
    }

    /// The front URL: the root shard's URL, which resolves workspace paths on every shard
    /// (as `kcp start` does), e.g. `https://127.0.0.1:41235`.
    pub fn url(&self) -> String {
        self.inner.front_url()
    }

    /// The URL of a workspace by path or logical cluster name: `<front>/clusters/<x>`.
    pub fn workspace_url(&self, path: &str) -> String {
        format!("{}/clusters/{path}", self.url())
    }

    /// The CA certificate (PEM) clients must trust; `None` for plain HTTP.
    pub fn ca_pem(&self) -> Option<&str> {
        self.inner.ca_pem.as_deref()
    }

    /// The admin bearer token (`system:masters` on every shard).
    pub fn admin_token(&self) -> &str {
        &self.inner.admin_token
    }

    /// The shards, root shard first.
    pub fn shards(&self) -> Vec<KcpShard> {
        self.inner
            .shards
            .read()
            .iter()
            .map(|s| KcpShard { state: s.clone() })
            .collect()
    }

    /// A shard by index.
    pub fn shard(&self, i: usize) -> Option<KcpShard> {
        self.inner.shard(i).map(|state| KcpShard { state })
    }

    /// Stops serving on every shard (open connections and watches end).
    pub async fn stop(&self) {
        for s in self.shards() {
            s.stop().await;
        }
    }

    /// Publishes every shard in endpoint slices at once (`true`), or only shards with at least one
    /// APIBinding to the export (`false`, kcp's behaviour).
    pub fn set_publish_endpoints_eagerly(&self, on: bool) {
        self.inner.publish_eagerly.store(on, Ordering::SeqCst);
        self.inner
            .state
            .lock()
            .all_slices()
            .into_iter()
            .for_each(|it| self.inner.enqueue(it));
    }

    /// Registers a user that authenticates with the returned bearer token on every shard. It has
    /// no permissions until RBAC in a workspace grants them (and verb `access` to enter it).
    pub fn add_user(&self, name: &str, groups: &[&str]) -> String {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let user = UserInfo::new(name, groups.iter().copied());
        for s in self.inner.shards.read().iter() {
            s.shard
                .auth
                .authenticator()
                .add_token(token.clone(), user.clone());
        }
        self.inner.users.lock().push((token.clone(), user));
        token
    }

    /// A logical cluster by path or name, once its workspace is Ready.
    pub fn workspace(&self, path_or_name: &str) -> Option<WorkspaceInfo> {
        let e = self.inner.resolve(path_or_name)?;
        Some(WorkspaceInfo {
            name: e.name.to_string(),
            path: e.path.to_string(),
            shard: e.shard,
            url: self.workspace_url(&e.path),
        })
    }

    /// Creates the workspace `path` (its parent must exist) on the next shard in turn, and waits
    /// until it is Ready and its `default` ServiceAccount exists.
    pub async fn create_workspace(&self, path: &str) -> Result<WorkspaceInfo, KcpError> {
        self.create_workspace_with(path, None).await
    }

    /// Creates the workspace `path` on the given shard and waits until it is Ready (see
    /// [`Kcp::create_workspace`]).
    pub async fn create_workspace_on(
        &self,
        path: &str,
        shard: usize,
    ) -> Result<WorkspaceInfo, KcpError> {
        let s = self
            .shard(shard)
            .ok_or_else(|| KcpError::NoShard(shard.to_string()))?;
        self.create_workspace_with(path, Some(s.name().to_string()))
            .await
    }

    async fn create_workspace_with(
        &self,
        path: &str,
        shard: Option<String>,
    ) -> Result<WorkspaceInfo, KcpError> {
        if !names::is_path(path) || !path.starts_with("root:") {
            return Err(KcpError::InvalidPath(path.to_string()));
        }
        let parent_path = names::parent(path).unwrap_or(ROOT);
        let parent = self
            .inner
            .resolve(parent_path)
            .ok_or_else(|| KcpError::ParentNotFound(parent_path.to_string()))?;
        let ps = self
            .inner
            .shard(parent.shard)
            .ok_or_else(|| KcpError::NoShard(parent.shard.to_string()))?;
        let mut ws = json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": names::base(path)},
            "spec": {},
        });
        if let Some(s) = shard {
            ws["spec"]["location"] = json!({"selector": {"matchLabels": {"name": s}}});
        }
        let api = ps.shard.api(&parent.name);
        match api.create(&super::apis::workspaces(), "", ws) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        let timeout = Duration::from_secs(30);
        let info = self.wait_workspace(path, timeout).await?;
        // Also wait for the `default` ServiceAccount (created right after the namespace), so that
        // a TokenRequest for it works as soon as this returns.
        let shard = self
            .inner
            .shard(info.shard)
            .ok_or_else(|| KcpError::NoShard(info.shard.to_string()))?;
        let cluster = shard
            .shard
            .logical_cluster(&info.name)
            .ok_or_else(|| KcpError::Timeout(path.to_string(), timeout))?;
        let sas = crate::storage::core("serviceaccounts");
        let deadline = tokio::time::Instant::now() + timeout;
        while shard
            .shard
            .api(&cluster)
            .get(&sas, "default", "default")
            .is_err()
        {
            if tokio::time::Instant::now() > deadline {
                return Err(KcpError::Timeout(path.to_string(), timeout));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(info)
    }

    /// Waits until the workspace `path` is Ready.
    pub async fn wait_workspace(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<WorkspaceInfo, KcpError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.index_changed.notified();
            if let Some(w) = self.workspace(path) {
                return Ok(w);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(KcpError::Timeout(path.to_string(), timeout));
            }
        }
    }

    /// A kubeconfig (YAML) for the admin, pointing at a workspace (`root` by default in kcp).
    pub fn kubeconfig(&self, path: &str) -> String {
        self.kubeconfig_for(path, "kcp-admin", self.admin_token())
    }

    /// A kubeconfig (YAML) pointing at a workspace that authenticates with `token`.
    pub fn kubeconfig_for(&self, path: &str, user: &str, token: &str) -> String {
        crate::kubeconfig::kubeconfig(
            &format!("{}-{}", self.inner.name, path.replace(':', "-")),
            &self.workspace_url(path),
            self.ca_pem(),
            user,
            token,
            "default",
        )
    }

    /// Writes the admin kubeconfig for a workspace to a file.
    pub fn write_kubeconfig(&self, path: &str, file: impl AsRef<Path>) -> Result<(), KcpError> {
        let file = file.as_ref();
        std::fs::write(file, self.kubeconfig(path)).map_err(|e| {
            KcpError::Server(crate::Error::Io(format!("writing {}", file.display()), e))
        })
    }

    /// A client configuration for any URL of this installation (a workspace, a shard's wildcard
    /// `…/clusters/*`, a virtual-workspace URL), authenticating with `token`.
    pub fn config_for_url(&self, url: &str, token: &str) -> kube::Config {
        let uri: http::Uri = url.parse().unwrap_or_default();
        let mut c = kube::Config::new(uri);
        c.default_namespace = "default".into();
        c.root_cert = crate::tls::tls()
            .ok()
            .filter(|_| self.inner.tls)
            .map(|t| vec![t.ca_der.clone()]);
        if let Ok(v) = http::HeaderValue::from_str(&format!("Bearer {token}")) {
            c.headers.push((http::header::AUTHORIZATION, v));
        }
        c
    }

    /// A `kube::Client` for any URL of this installation, authenticating with `token`. Must be
    /// called within a tokio runtime.
    pub fn client_for_url(&self, url: &str, token: &str) -> kube::Client {
        // Built from known-good parts; failure would be a bug in this crate.
        kube::Client::try_from(self.config_for_url(url, token))
            .expect("client from a generated configuration")
    }

    /// A `kube::Client` acting as admin in a workspace (path or logical cluster name).
    pub fn client(&self, path: &str) -> kube::Client {
        self.client_for_url(&self.workspace_url(path), self.admin_token())
    }

    /// A `kube::Client` acting as admin on a shard's wildcard (`<shard>/clusters/*`): list and
    /// watch across every logical cluster of the shard.
    pub fn wildcard_client(&self, shard: usize) -> kube::Client {
        let url = self.shard(shard).map(|s| s.url()).unwrap_or_default();
        self.client_for_url(&format!("{url}/clusters/*"), self.admin_token())
    }

    /// The annotation every object carries with its logical cluster name.
    pub fn cluster_of(obj: &Value) -> Option<&str> {
        obj.pointer("/metadata/annotations")
            .and_then(|a| a.get(CLUSTER_ANNOTATION))
            .and_then(Value::as_str)
    }

    /// The canonical path annotation (`kcp.io/path`) of an object, where kcp sets it.
    pub fn path_of(obj: &Value) -> Option<&str> {
        obj.pointer("/metadata/annotations")
            .and_then(|a| a.get(PATH_ANNOTATION))
            .and_then(Value::as_str)
    }
}

impl crate::ControlPlane {
    /// Starts a kcp installation named `name` next to the plain clusters of this control plane.
    pub async fn add_kcp(&self, name: &str, opts: KcpOptions) -> Result<Kcp, KcpError> {
        if self.kcp_installations().lock().contains_key(name) {
            return Err(KcpError::Server(crate::Error::ClusterExists(name.into())));
        }
        let k = Kcp::start(name, opts).await?;
        self.kcp_installations()
            .lock()
            .insert(name.to_string(), k.clone());
        Ok(k)
    }

    /// A kcp installation by name.
    pub fn kcp(&self, name: &str) -> Option<Kcp> {
        self.kcp_installations().lock().get(name).cloned()
    }

    /// Stops and forgets a kcp installation.
    pub async fn remove_kcp(&self, name: &str) -> Option<Kcp> {
        let k = self.kcp_installations().lock().remove(name)?;
        k.stop().await;
        Some(k)
    }
}
