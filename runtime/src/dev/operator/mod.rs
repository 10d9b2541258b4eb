//! The simulated platform operator: a small in-process stand-in for openmcp-operator (ControlPlane
//! controller and cluster scheduler) plus a cluster provider that serves embedded clusters.
//!
//! It watches ControlPlanes on the onboarding cluster and ClusterRequests, AccessRequests,
//! Clusters, ServiceProviders and tenant namespaces on the platform cluster; every watch event
//! enqueues the keys it concerns (a granted ClusterRequest wakes the AccessRequests waiting on it,
//! a vanished Service API object wakes the ControlPlane being deleted), and a pool of workers
//! handles them reading from the watch caches. No step polls, so a grant takes a few
//! milliseconds. The three controllers live in `controlplane`, `scheduler` and `access`.

mod access;
mod controlplane;
mod hosted;
mod scheduler;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::dev::DevError;
use crate::dev::hosting::{ClusterHandle, Hosting, SharedHost};
use crate::openmcp::constants::{
    MCP_NAME_LABEL, MCP_NAMESPACE_LABEL, OPERATION_ANNOTATION, OPERATION_IGNORE,
    OPERATION_RECONCILE, PURPOSE_ONBOARDING, PURPOSE_PLATFORM,
};
use crate::openmcp::{AccessRequest, Cluster, ClusterRequest, ControlPlane, ServiceProviderObject};
use crate::queue::Queue;

pub use controlplane::CONTROLLER_NAME as CONTROL_PLANE_CONTROLLER;
use hosted::{Hosted, HostedClusters};

/// The `spec.profile` of every Cluster the simulation creates, and the value of the
/// `clusters.openmcp.cloud/profile` label it puts on AccessRequests.
pub const PROFILE: &str = "dev.embedded.default";
/// The cluster provider the simulation pretends to be (`clusters.openmcp.cloud/provider`).
pub const PROVIDER: &str = "embedded";
/// The environment name hashed into generated names, as a real cluster provider's `--environment`.
pub const ENVIRONMENT: &str = "dev";
/// The finalizer the simulated cluster provider keeps on a Cluster while its embedded cluster
/// runs.
pub const CLUSTER_PROVIDER_FINALIZER: &str = "embedded.clusters.openmcp.cloud/cluster";

/// Settings of the simulated operator.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// Namespace on the platform cluster of the shared Cluster objects (`platform`, `onboarding`,
    /// the workload clusters): the openMCP system namespace.
    pub system_namespace: String,
    /// How many ClusterRequests of purpose `workload` share one workload cluster; 0 = unlimited
    /// (one workload cluster for everybody).
    pub workload_tenancy: usize,
    /// Validity of the tokens in granted kubeconfigs when the AccessRequest has no `spec.ttl`;
    /// they are renewed after 80% of it, as openMCP's cluster providers do.
    pub token_ttl: Duration,
    /// Where MCP and workload clusters are served.
    pub hosting: Hosting,
    /// Concurrent reconciles.
    pub workers: usize,
    /// Namespace, in every target cluster, of the ServiceAccounts created for AccessRequests.
    pub access_namespace: String,
}

impl Default for OperatorConfig {
    fn default() -> Self {
        OperatorConfig {
            system_namespace: "openmcp-system".into(),
            workload_tenancy: 0,
            token_ttl: Duration::from_secs(24 * 3600),
            hosting: Hosting::default(),
            workers: 16,
            access_namespace: "accessrequests".into(),
        }
    }
}

/// `namespace/name` of an object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ObjKey {
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub(crate) fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn of<K: Resource>(o: &K) -> Self {
        ObjKey::new(o.namespace().unwrap_or_default(), o.name_any())
    }

    fn oref<K: Resource<DynamicType = ()>>(&self) -> ObjectRef<K> {
        ObjectRef::new(&self.name).within(&self.namespace)
    }
}

impl std::fmt::Display for ObjKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Key {
    ControlPlane(ObjKey),
    ClusterRequest(ObjKey),
    AccessRequest(ObjKey),
    Cluster(ObjKey),
}

/// Why a reconcile failed (logged, then retried with backoff).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Other(String),
}

pub(crate) type Result<T, E = ReconcileError> = std::result::Result<T, E>;

/// Adds context to a kube error.
pub(crate) trait Context<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, kube::Error> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| ReconcileError::Kube {
            what: what(),
            source,
        })
    }
}

/// The status code of an API error, if it is one.
pub(crate) fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// The reflector caches the controllers read from.
pub(crate) struct Stores {
    pub control_planes: Store<ControlPlane>,
    pub cluster_requests: Store<ClusterRequest>,
    pub access_requests: Store<AccessRequest>,
    pub clusters: Store<Cluster>,
    pub service_providers: Store<ServiceProviderObject>,
    pub namespaces: Store<Namespace>,
}

/// Reverse references, kept from watch events: who must be woken when an object changes.
#[derive(Default)]
pub(crate) struct Index {
    /// ClusterRequest → AccessRequests whose `requestRef` names it.
    pub requests_to_access: HashMap<ObjKey, HashSet<ObjKey>>,
    /// Cluster → AccessRequests whose `clusterRef` names it.
    pub clusters_to_access: HashMap<ObjKey, HashSet<ObjKey>>,
    /// Cluster → ClusterRequests it was granted to.
    pub clusters_to_requests: HashMap<ObjKey, HashSet<ObjKey>>,
    /// AccessRequest → the references it was indexed under.
    access_refs: HashMap<ObjKey, (Option<ObjKey>, Option<ObjKey>)>,
    /// ClusterRequest → the cluster it was indexed under.
    request_refs: HashMap<ObjKey, ObjKey>,
}

impl Index {
    fn set_access(&mut self, ar: ObjKey, request: Option<ObjKey>, cluster: Option<ObjKey>) {
        self.remove_access(&ar);
        if let Some(r) = &request {
            self.requests_to_access
                .entry(r.clone())
                .or_default()
                .insert(ar.clone());
        }
        if let Some(c) = &cluster {
            self.clusters_to_access
                .entry(c.clone())
                .or_default()
                .insert(ar.clone());
        }
        self.access_refs.insert(ar, (request, cluster));
    }

    fn remove_access(&mut self, ar: &ObjKey) {
        if let Some((r, c)) = self.access_refs.remove(ar) {
            if let Some(r) = r
                && let Some(set) = self.requests_to_access.get_mut(&r)
            {
                set.remove(ar);
                if set.is_empty() {
                    self.requests_to_access.remove(&r);
                }
            }
            if let Some(c) = c
                && let Some(set) = self.clusters_to_access.get_mut(&c)
            {
                set.remove(ar);
                if set.is_empty() {
                    self.clusters_to_access.remove(&c);
                }
            }
        }
    }

    fn set_request(&mut self, cr: ObjKey, cluster: Option<ObjKey>) {
        self.remove_request(&cr);
        if let Some(c) = cluster {
            self.clusters_to_requests
                .entry(c.clone())
                .or_default()
                .insert(cr.clone());
            self.request_refs.insert(cr, c);
        }
    }

    fn remove_request(&mut self, cr: &ObjKey) {
        if let Some(c) = self.request_refs.remove(cr)
            && let Some(set) = self.clusters_to_requests.get_mut(&c)
        {
            set.remove(cr);
            if set.is_empty() {
                self.clusters_to_requests.remove(&c);
            }
        }
    }
}

/// Tenancy of a hosted cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// One ClusterRequest only.
    Exclusive,
    /// Up to this many ClusterRequests; 0 = unlimited.
    Shared(usize),
}

/// A token handed out for an AccessRequest.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    /// The AccessRequest generation it was granted for.
    pub generation: i64,
    /// The cluster the ServiceAccount lives in.
    pub cluster: ObjKey,
    /// When to mint a new token (80% of its validity).
    pub renew_at: std::time::SystemTime,
}

/// Everything the controllers share.
pub(crate) struct Shared {
    pub cfg: OperatorConfig,
    pub platform: kube::Client,
    pub onboarding: kube::Client,
    pub stores: Stores,
    pub index: Mutex<Index>,
    pub hosted: Mutex<HostedClusters>,
    pub host: Option<Arc<SharedHost>>,
    pub grants: Mutex<HashMap<String, Grant>>,
    /// (cluster, namespace) pairs known to exist, so grants do not re-create namespaces.
    pub namespaces_ensured: Mutex<HashSet<(ObjKey, String)>>,
    /// Service API objects whose deletion a ControlPlane waits for: (ControlPlane, apiVersion,
    /// kind) with a watch running.
    pub service_watches: Mutex<HashSet<(ObjKey, String, String)>>,
    /// API resources of Service API kinds by (group, version, kind); `None` = not served.
    pub api_resources: tokio::sync::Mutex<HashMap<(String, String, String), ApiResource>>,
    /// Serializes the choice of shared clusters, so none gets more tenants than allowed.
    pub schedule_lock: tokio::sync::Mutex<()>,
    pub queue: Queue<Key>,
    pub stop: CancellationToken,
}

impl Shared {
    /// The hosted cluster behind a Cluster object.
    pub(crate) fn handle(&self, cluster: &ObjKey) -> Option<ClusterHandle> {
        self.hosted.lock().get(cluster).map(|h| h.handle.clone())
    }

    /// Starts serving a new cluster for the Cluster object `key`.
    pub(crate) async fn host_cluster(
        &self,
        key: &ObjKey,
    ) -> std::result::Result<ClusterHandle, DevError> {
        // The Cluster object's name is unique per tenant (it hashes the request's namespace and
        // name); the namespace keeps the name unique when two namespaces reuse it.
        let name = if key.namespace == self.cfg.system_namespace {
            key.name.clone()
        } else {
            format!(
                "{}-{}",
                key.name,
                crate::openmcp::naming::name_hash_shake128_base32(&[&key.namespace])
            )
        };
        match (&self.host, self.cfg.hosting) {
            (Some(host), Hosting::LogicalClusters) => host.add(&name),
            (_, hosting) => ClusterHandle::start_own(&name, hosting).await,
        }
    }
}

/// The running simulated operator. Dropping it does not stop it; call [`Operator::stop`].
pub struct Operator {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("config", &self.shared.cfg)
            .finish_non_exhaustive()
    }
}

impl Operator {
    /// Starts the operator against `platform` (ClusterRequests, AccessRequests, Clusters) and
    /// `onboarding` (ControlPlanes). The openMCP CRDs must be installed on both. Registers the
    /// `platform` and `onboarding` Cluster objects in the system namespace; returns once every
    /// watch cache is filled.
    pub async fn start(
        platform: ClusterHandle,
        onboarding: ClusterHandle,
        cfg: OperatorConfig,
    ) -> std::result::Result<Operator, DevError> {
        let host = match cfg.hosting {
            Hosting::LogicalClusters => {
                // Shorter-lived tokens than kube-apiserver allows, when asked for (tests of
                // credential renewal); never longer minimums than kube-apiserver's.
                let min = i64::try_from(cfg.token_ttl.as_secs())
                    .unwrap_or(i64::MAX)
                    .clamp(1, access::KUBE_MIN_TOKEN_SECONDS);
                Some(SharedHost::start("clusters", min).await?)
            }
            Hosting::Listeners | Hosting::KubeApiservers => None,
        };
        let stop = CancellationToken::new();
        let queue = crate::dev::queue::new_queue();
        let pc = platform.client();
        let oc = onboarding.client();

        let (control_planes, cp_writer) = reflector::store();
        let (cluster_requests, cr_writer) = reflector::store();
        let (access_requests, ar_writer) = reflector::store();
        let (clusters, cl_writer) = reflector::store();
        let (service_providers, sp_writer) = reflector::store();
        let (namespaces, ns_writer) = reflector::store();
        let shared = Arc::new(Shared {
            cfg,
            platform: pc.clone(),
            onboarding: oc.clone(),
            stores: Stores {
                control_planes,
                cluster_requests,
                access_requests,
                clusters,
                service_providers,
                namespaces,
            },
            index: Mutex::new(Index::default()),
            hosted: Mutex::default(),
            host,
            grants: Mutex::new(HashMap::new()),
            namespaces_ensured: Mutex::new(HashSet::new()),
            service_watches: Mutex::new(HashSet::new()),
            api_resources: tokio::sync::Mutex::new(HashMap::new()),
            schedule_lock: tokio::sync::Mutex::new(()),
            queue: queue.clone(),
            stop: stop.clone(),
        });

        let wc = watcher::Config::default();
        spawn_watch(
            &shared,
            Api::<ControlPlane>::all(oc.clone()),
            wc.clone(),
            cp_writer,
            |_, cp, _| vec![Key::ControlPlane(ObjKey::of(cp))],
        );
        spawn_watch(
            &shared,
            Api::<ClusterRequest>::all(pc.clone()),
            wc.clone(),
            cr_writer,
            on_cluster_request,
        );
        spawn_watch(
            &shared,
            Api::<AccessRequest>::all(pc.clone()),
            wc.clone(),
            ar_writer,
            on_access_request,
        );
        spawn_watch(
            &shared,
            Api::<Cluster>::all(pc.clone()),
            wc.clone(),
            cl_writer,
            on_cluster,
        );
        spawn_watch(
            &shared,
            Api::<ServiceProviderObject>::all(pc.clone()),
            wc.clone(),
            sp_writer,
            |_, _, _| Vec::new(),
        );
        spawn_watch(
            &shared,
            Api::<Namespace>::all(pc.clone()),
            wc.labels(&format!(
                "{}={}",
                crate::openmcp::constants::MANAGED_BY_LABEL,
                controlplane::CONTROLLER_NAME
            )),
            ns_writer,
            |_, ns, _| owning_control_plane(ns).into_iter().collect(),
        );

        let s = &shared.stores;
        let ready = async {
            s.control_planes.wait_until_ready().await?;
            s.cluster_requests.wait_until_ready().await?;
            s.access_requests.wait_until_ready().await?;
            s.clusters.wait_until_ready().await?;
            s.service_providers.wait_until_ready().await?;
            s.namespaces.wait_until_ready().await
        };
        tokio::time::timeout(Duration::from_secs(30), ready)
            .await
            .map_err(|_| {
                DevError::Start("the simulated operator's watches did not sync within 30s".into())
            })?
            .map_err(|_| {
                DevError::Start("a watch of the simulated operator ended while syncing".into())
            })?;

        scheduler::register_fixed(&shared, PURPOSE_PLATFORM, platform).await?;
        scheduler::register_fixed(&shared, PURPOSE_ONBOARDING, onboarding).await?;

        let worker_shared = shared.clone();
        crate::dev::queue::run(&queue, shared.cfg.workers, stop, move |key| {
            let sh = worker_shared.clone();
            async move {
                let result = match &key {
                    Key::ControlPlane(k) => controlplane::reconcile(&sh, k).await,
                    Key::ClusterRequest(k) => scheduler::reconcile_request(&sh, k).await,
                    Key::AccessRequest(k) => access::reconcile(&sh, k).await,
                    Key::Cluster(k) => scheduler::reconcile_cluster(&sh, k).await,
                };
                result.map_err(|e| {
                    tracing::debug!(?key, "simulated operator: {e}");
                })
            }
        });
        // Objects that existed before the operator started.
        for cp in shared.stores.control_planes.state() {
            queue.trigger(Key::ControlPlane(ObjKey::of(cp.as_ref())));
        }
        for cr in shared.stores.cluster_requests.state() {
            queue.trigger(Key::ClusterRequest(ObjKey::of(cr.as_ref())));
        }
        for ar in shared.stores.access_requests.state() {
            queue.trigger(Key::AccessRequest(ObjKey::of(ar.as_ref())));
        }
        Ok(Operator { shared })
    }

    /// The cluster behind the Cluster object `namespace/name`, if the simulation serves it.
    pub fn cluster(&self, namespace: &str, name: &str) -> Option<ClusterHandle> {
        self.shared.handle(&ObjKey::new(namespace, name))
    }

    /// Every cluster the simulation serves, by Cluster object (`namespace`, `name`), with its
    /// purpose, in order of creation.
    pub fn clusters(&self) -> Vec<HostedCluster> {
        let hosted = self.shared.hosted.lock();
        let mut v: Vec<(u64, HostedCluster)> = hosted
            .iter()
            .map(|(k, h)| {
                (
                    h.seq(),
                    HostedCluster {
                        namespace: k.namespace.clone(),
                        name: k.name.clone(),
                        purpose: h.purpose.clone(),
                        tenants: h.requests().len(),
                        handle: h.handle.clone(),
                    },
                )
            })
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v.into_iter().map(|(_, c)| c).collect()
    }

    /// The MCP cluster of the ControlPlane `namespace/name`: the cluster granted to its
    /// ClusterRequest, once granted.
    pub fn mcp_cluster(&self, namespace: &str, name: &str) -> Option<ClusterHandle> {
        let ns = crate::openmcp::naming::stable_mcp_namespace(name, namespace).ok()?;
        let cr = self
            .shared
            .stores
            .cluster_requests
            .get(&ObjectRef::new(name).within(&ns))?;
        let c = cr.status.as_ref()?.cluster.as_ref()?;
        self.cluster(&c.namespace, &c.name)
    }

    /// Every ControlPlane on the onboarding cluster (from the operator's cache).
    pub fn control_planes(&self) -> Vec<crate::dev::ControlPlaneRef> {
        let mut v: Vec<_> = self
            .shared
            .stores
            .control_planes
            .state()
            .iter()
            .map(|cp| {
                crate::dev::ControlPlaneRef::new(cp.namespace().unwrap_or_default(), cp.name_any())
            })
            .collect();
        v.sort();
        v
    }

    /// Stops the controllers (the clusters keep serving).
    pub fn stop(&self) {
        self.shared.stop.cancel();
    }
}

/// A cluster the simulation serves.
#[derive(Clone, Debug)]
pub struct HostedCluster {
    /// Namespace of its Cluster object on the platform cluster.
    pub namespace: String,
    /// Name of its Cluster object.
    pub name: String,
    /// What it is for (`platform`, `onboarding`, `mcp`, `workload`).
    pub purpose: String,
    /// How many ClusterRequests it is granted to.
    pub tenants: usize,
    /// The cluster.
    pub handle: ClusterHandle,
}

/// Keys a watch event wakes, computed with the index under lock.
type Mapper<K> = fn(&Shared, &K, bool) -> Vec<Key>;

/// Runs a reflector-backed watch until the operator stops; every event enqueues what `map`
/// returns (`deleted` tells the mapper the object is gone).
fn spawn_watch<K>(
    shared: &Arc<Shared>,
    api: Api<K>,
    wc: watcher::Config,
    writer: reflector::store::Writer<K>,
    map: Mapper<K>,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let sh = shared.clone();
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        // managedFields are never read here and are most of a cached object's size.
        let source = watcher(api, wc).modify(|o: &mut K| o.meta_mut().managed_fields = None);
        let stream = reflector::reflector(writer, source).default_backoff();
        futures::pin_mut!(stream);
        loop {
            let ev = tokio::select! {
                _ = stop.cancelled() => return,
                ev = stream.next() => ev,
            };
            let Some(ev) = ev else { return };
            let keys = match ev {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => map(&sh, &o, false),
                Ok(watcher::Event::Delete(o)) => map(&sh, &o, true),
                Ok(_) => Vec::new(),
                Err(e) => {
                    tracing::debug!("simulated operator: watch error: {e}");
                    Vec::new()
                }
            };
            for k in keys {
                sh.queue.trigger(k);
            }
        }
    });
}

fn owning_control_plane<K: Resource>(o: &K) -> Option<Key> {
    let labels = o.meta().labels.as_ref()?;
    Some(Key::ControlPlane(ObjKey::new(
        labels.get(MCP_NAMESPACE_LABEL)?.clone(),
        labels.get(MCP_NAME_LABEL)?.clone(),
    )))
}

fn on_cluster_request(sh: &Shared, cr: &ClusterRequest, deleted: bool) -> Vec<Key> {
    let key = ObjKey::of(cr);
    let mut keys = vec![Key::ClusterRequest(key.clone())];
    let mut index = sh.index.lock();
    if deleted {
        index.remove_request(&key);
    } else {
        let cluster = cr
            .status
            .as_ref()
            .and_then(|s| s.cluster.as_ref())
            .map(|c| ObjKey::new(&c.namespace, &c.name));
        index.set_request(key.clone(), cluster);
    }
    if let Some(ars) = index.requests_to_access.get(&key) {
        keys.extend(ars.iter().cloned().map(Key::AccessRequest));
    }
    drop(index);
    keys.extend(owning_control_plane(cr));
    keys
}

fn on_access_request(sh: &Shared, ar: &AccessRequest, deleted: bool) -> Vec<Key> {
    let key = ObjKey::of(ar);
    let mut index = sh.index.lock();
    if deleted {
        index.remove_access(&key);
    } else {
        let request = ar
            .spec
            .request_ref
            .as_ref()
            .map(|r| ObjKey::new(&r.namespace, &r.name));
        let cluster = ar
            .spec
            .cluster_ref
            .as_ref()
            .map(|r| ObjKey::new(&r.namespace, &r.name));
        index.set_access(key.clone(), request, cluster);
    }
    vec![Key::AccessRequest(key)]
}

fn on_cluster(sh: &Shared, c: &Cluster, _deleted: bool) -> Vec<Key> {
    let key = ObjKey::of(c);
    let index = sh.index.lock();
    let mut keys = vec![Key::Cluster(key.clone())];
    if let Some(ars) = index.clusters_to_access.get(&key) {
        keys.extend(ars.iter().cloned().map(Key::AccessRequest));
    }
    if let Some(crs) = index.clusters_to_requests.get(&key) {
        keys.extend(crs.iter().cloned().map(Key::ClusterRequest));
    }
    keys
}

/// What the `openmcp.cloud/operation` annotation asks: `Some(true)` to skip the object, and
/// removes a `reconcile` value (the Go controllers' behaviour).
pub(crate) async fn operation<K>(api: &Api<K>, o: &K) -> Result<bool>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let value = o
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(OPERATION_ANNOTATION))
        .map(String::as_str);
    match value {
        Some(OPERATION_IGNORE) => Ok(true),
        Some(OPERATION_RECONCILE) => {
            let patch = json!({"metadata": {"annotations": {OPERATION_ANNOTATION: null}}});
            api.patch(
                &o.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .ctx(|| format!("removing the operation annotation of {}", o.name_any()))?;
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// Sets the finalizer list of `o` with a merge patch guarded by its resourceVersion (a
/// concurrent change gets 409 and the reconcile is retried with fresh state).
pub(crate) async fn set_finalizers<K>(api: &Api<K>, o: &K, finalizers: Vec<String>) -> Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({"metadata": {
        "resourceVersion": o.resource_version(),
        "finalizers": finalizers,
    }});
    api.patch(
        &o.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .ctx(|| format!("setting the finalizers of {}", o.name_any()))
}

/// `o`'s finalizers with `f` added, if it was missing.
pub(crate) fn with_finalizer<K: Resource>(o: &K, f: &str) -> Option<Vec<String>> {
    let mut fins = o.finalizers().to_vec();
    if fins.iter().any(|x| x == f) {
        return None;
    }
    fins.push(f.to_string());
    Some(fins)
}

/// `o`'s finalizers without `f`, if it was there.
pub(crate) fn without_finalizer<K: Resource>(o: &K, f: &str) -> Option<Vec<String>> {
    let fins = o.finalizers();
    if !fins.iter().any(|x| x == f) {
        return None;
    }
    Some(fins.iter().filter(|x| *x != f).cloned().collect())
}

/// Creates `o`; an existing object of that name is fine.
pub(crate) async fn create_if_missing<K>(api: &Api<K>, o: &K) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), o).await {
        Ok(_) => Ok(()),
        Err(e) if code(&e) == Some(409) => Ok(()),
        Err(e) => Err(e).ctx(|| format!("creating {}", o.name_any())),
    }
}

/// The `DynamicObject` API of a Service API kind on the onboarding cluster, `None` when the
/// onboarding cluster does not serve it (its CRD is not installed).
pub(crate) async fn service_api(
    sh: &Shared,
    group: &str,
    version: &str,
    kind: &str,
    namespace: &str,
) -> Result<Option<Api<DynamicObject>>> {
    let key = (group.to_string(), version.to_string(), kind.to_string());
    let mut cache = sh.api_resources.lock().await;
    let ar = match cache.get(&key) {
        Some(ar) => ar.clone(),
        None => {
            let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
            match kube::discovery::pinned_kind(&sh.onboarding, &gvk).await {
                Ok((ar, _)) => {
                    cache.insert(key, ar.clone());
                    ar
                }
                Err(kube::Error::Discovery(_)) => return Ok(None),
                Err(e) if code(&e) == Some(404) => return Ok(None),
                Err(e) => {
                    return Err(e).ctx(|| format!("discovering {kind}.{group}/{version}"));
                }
            }
        }
    };
    Ok(Some(Api::namespaced_with(
        sh.onboarding.clone(),
        namespace,
        &ar,
    )))
}

/// Watches one Service API object until it is gone, then wakes the ControlPlane waiting for it.
pub(crate) fn watch_until_gone(
    sh: &Arc<Shared>,
    cp: ObjKey,
    api: Api<DynamicObject>,
    name: String,
    api_version: String,
    kind: String,
) {
    let marker = (cp.clone(), api_version, kind);
    if !sh.service_watches.lock().insert(marker.clone()) {
        return;
    }
    let sh = sh.clone();
    tokio::spawn(async move {
        let wc = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let stream = watcher(api, wc).default_backoff();
        futures::pin_mut!(stream);
        let mut present = false;
        loop {
            let ev = tokio::select! {
                _ = sh.stop.cancelled() => break,
                ev = stream.try_next() => ev,
            };
            match ev {
                Ok(Some(watcher::Event::Delete(_))) => break,
                Ok(Some(watcher::Event::Init)) => present = false,
                Ok(Some(watcher::Event::InitApply(_) | watcher::Event::Apply(_))) => present = true,
                Ok(Some(watcher::Event::InitDone)) if !present => break,
                Ok(Some(watcher::Event::InitDone)) => {}
                Ok(None) => break,
                Err(e) => tracing::debug!("simulated operator: watching {name}: {e}"),
            }
        }
        sh.service_watches.lock().remove(&marker);
        sh.queue.trigger(Key::ControlPlane(cp));
    });
}
