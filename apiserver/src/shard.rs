//! A shard: one store with one resourceVersion counter, the resource registry of its logical
//! clusters, the admission chain, authentication, faults, counters and the in-process controllers.
//!
//! A plain Kubernetes cluster is a shard with exactly one logical cluster
//! ([`DEFAULT_LOGICAL_CLUSTER`]). kcp mode adds logical clusters to a shard and routes
//! `/clusters/<name>/…` requests to them; everything below routing is shared.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard, RwLock};
use serde_json::json;

use crate::admission::{self, AdmissionPlugin};
use crate::auth::UserInfo;
use crate::builtin;
use crate::error::ApiResult;
use crate::faults::Faults;
use crate::metrics::Counters;
use crate::registry::Registry;
use crate::storage::ClusterApi;
use crate::store::{ObjKey, Store, StoreKey, StoreOptions};

/// The logical cluster of a plain (non-kcp) cluster.
pub const DEFAULT_LOGICAL_CLUSTER: &str = "root";

/// How a shard behaves.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShardOptions {
    /// Store settings (history size for watch resumption, watcher queue).
    pub store: StoreOptions,
    /// An annotation stamped on every stored object with the object's logical cluster
    /// (kcp: `kcp.io/cluster`).
    pub cluster_annotation: Option<String>,
    /// The admin bearer token (generated when `None`).
    pub admin_token: Option<String>,
    /// The CA certificate (PEM) published in every namespace as ConfigMap `kube-root-ca.crt`.
    pub root_ca_pem: Option<String>,
    /// kcp shard: ServiceAccount tokens name their logical cluster, and logical clusters share the
    /// shard's bootstrap RBAC policy instead of holding bootstrap objects.
    pub kcp: bool,
    /// The built-in resources every logical cluster serves (default: kube-apiserver's; kcp shards
    /// serve their own set).
    pub builtins: Option<Arc<crate::registry::ApiSet>>,
    /// The ServiceAccount token issuer (default: a new one with a fresh key). Shards of one kcp
    /// installation share one, so a token minted on one shard authenticates on every shard.
    pub token_issuer: Option<Arc<crate::auth::TokenIssuer>>,
}

/// What a new logical cluster starts with.
#[derive(Debug, Clone)]
pub(crate) struct LogicalClusterOptions {
    /// Namespaces created at once (Kubernetes: `default`, `kube-system`, `kube-public`,
    /// `kube-node-lease`; kcp workspaces: `default`).
    pub namespaces: Vec<String>,
}

impl LogicalClusterOptions {
    /// The namespaces kube-apiserver creates.
    pub(crate) fn kubernetes() -> Self {
        LogicalClusterOptions {
            namespaces: ["default", "kube-system", "kube-public", "kube-node-lease"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// The `default/kubernetes` Service, its Endpoints and EndpointSlice, which kube-apiserver keeps in
/// every cluster (pkg/controlplane/controller/kubernetesservice): the API server's address as seen
/// from inside the cluster.
fn kubernetes_service() -> Vec<(Arc<crate::registry::ResourceInfo>, serde_json::Value)> {
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let mut out = vec![
        (
            crate::storage::core("services"),
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "labels": labels},
                "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                    "sessionAffinity": "None"}}),
        ),
        (
            crate::storage::core("endpoints"),
            json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                    "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]}),
        ),
    ];
    if let Some(slices) = crate::builtin::builtins().get("discovery.k8s.io", "v1", "endpointslices")
    {
        out.push((
            slices,
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}),
        ));
    }
    out
}

/// The ComponentStatuses kube-apiserver reports (deprecated, read-only): every component healthy.
fn component_statuses() -> Vec<serde_json::Value> {
    ["scheduler", "controller-manager", "etcd-0"]
        .iter()
        .map(|n| {
            let message = if *n == "etcd-0" {
                r#"{"health":"true","reason":""}"#
            } else {
                "ok"
            };
            json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": n},
                "conditions": [{"type": "Healthy", "status": "True", "message": message}]})
        })
        .collect()
}

/// One shard.
pub struct Shard {
    name: Arc<str>,
    store: Store,
    registry: Registry,
    clusters: RwLock<BTreeMap<Arc<str>, ()>>,
    admission: RwLock<Vec<Arc<dyn AdmissionPlugin>>>,
    opts: ShardOptions,
    admin_token: String,
    faults: Faults,
    counters: Counters,
    deployments_available: AtomicBool,
    /// Held from choosing a Service's node ports to committing it, so that concurrent Service
    /// writes cannot both take a free port (kube-apiserver's allocator is one object updated
    /// with compare-and-swap). One lock for the shard: Service writes are few.
    node_ports: Mutex<()>,
    pub(crate) auth: crate::authn::Authn,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Shard {
    /// A new shard with no logical clusters, its controllers running on the current tokio runtime.
    pub(crate) fn new(name: &str, opts: ShardOptions) -> Arc<Self> {
        let admin_token = opts
            .admin_token
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
        let shard = Arc::new(Shard {
            name: name.into(),
            store: Store::new(opts.store.clone()),
            registry: Registry::new(opts.builtins.clone().unwrap_or_else(builtin::builtins)),
            clusters: RwLock::new(BTreeMap::new()),
            admission: RwLock::new(admission::default_plugins()),
            // Key generation only fails when the system random number generator does.
            auth: crate::authn::Authn::with_issuer(
                &admin_token,
                opts.kcp,
                opts.token_issuer.clone(),
            )
            .expect("ServiceAccount signing key"),
            admin_token,
            opts,
            faults: Faults::default(),
            counters: Counters::default(),
            deployments_available: AtomicBool::new(false),
            node_ports: Mutex::new(()),
        });
        crate::controllers::start(&shard);
        shard
    }

    /// The shard's name (the cluster name for plain clusters).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serialises node port allocation with the commit of the Service holding the ports.
    pub(crate) fn lock_node_ports(&self) -> MutexGuard<'_, ()> {
        self.node_ports.lock()
    }

    /// The resource registry.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The options it was made with.
    pub(crate) fn options(&self) -> &ShardOptions {
        &self.opts
    }

    /// The admin bearer token.
    pub(crate) fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Fault injection.
    pub(crate) fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Request counters.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Appends an admission plugin to the chain.
    pub(crate) fn add_admission_plugin(&self, plugin: Arc<dyn AdmissionPlugin>) {
        self.admission.write().push(plugin);
    }

    pub(crate) fn admission_plugins(&self) -> Vec<Arc<dyn AdmissionPlugin>> {
        self.admission.read().clone()
    }

    /// When on, Deployments get a status as if their pods had become Available.
    pub(crate) fn set_deployments_available(&self, on: bool) {
        self.deployments_available.store(on, Ordering::SeqCst);
        crate::controllers::deployment::resync(self);
    }

    /// Whether Deployments are made Available.
    pub(crate) fn deployments_available(&self) -> bool {
        self.deployments_available.load(Ordering::SeqCst)
    }

    /// Adds a logical cluster (idempotent) and creates its initial namespaces.
    pub(crate) fn add_logical_cluster(
        &self,
        name: &str,
        opts: &LogicalClusterOptions,
    ) -> ApiResult<Arc<str>> {
        let name: Arc<str> = {
            let mut clusters = self.clusters.write();
            if let Some((k, _)) = clusters.get_key_value(name) {
                return Ok(k.clone());
            }
            let k: Arc<str> = name.into();
            clusters.insert(k.clone(), ());
            k
        };
        if !self.opts.kcp {
            crate::controllers::rbac::bootstrap(self, &name)?;
        }
        let api = self.api(&name);
        let create = |info: Arc<crate::registry::ResourceInfo>,
                      ns: &str,
                      obj: serde_json::Value| match api.create(&info, ns, obj)
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        };
        for ns in &opts.namespaces {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            create(crate::storage::core("namespaces"), "", obj)?;
        }
        let serves = |group: &str, resource: &str| {
            self.registry
                .builtins()
                .all()
                .any(|i| i.group == group && i.resource == resource)
        };
        if opts.namespaces.iter().any(|n| n == "default") && serves("", "services") {
            for (info, obj) in kubernetes_service() {
                create(info, "default", obj)?;
            }
        }
        if serves("", "componentstatuses") {
            for obj in component_statuses() {
                create(crate::storage::core("componentstatuses"), "", obj)?;
            }
        }
        Ok(name)
    }

    /// Removes a logical cluster and everything stored in it.
    pub(crate) fn remove_logical_cluster(&self, name: &str) {
        self.clusters.write().remove(name);
        for resource in self.store.resources_in(name) {
            let mut keys: Vec<ObjKey> = Vec::new();
            self.store.scan(&resource, Some(name), None, None, |o| {
                keys.push(o.key.clone());
                true
            });
            for k in keys {
                let _ = self.store.commit(
                    &resource,
                    &k,
                    crate::store::Write::Delete(Default::default(), None),
                );
            }
        }
        self.registry.remove_cluster(name);
        self.auth.remove_cluster(name);
    }

    /// The interned name of a logical cluster, if it exists.
    pub fn logical_cluster(&self, name: &str) -> Option<Arc<str>> {
        self.clusters
            .read()
            .get_key_value(name)
            .map(|(k, _)| k.clone())
    }

    /// A programmatic client for one logical cluster, acting as a system controller (used by the
    /// in-process controllers and by modes built on top of this crate).
    pub fn api(&self, cluster: &Arc<str>) -> ClusterApi<'_> {
        ClusterApi::new(
            self,
            cluster.clone(),
            UserInfo::new("system:apiserver", ["system:masters"]),
        )
    }

    /// `None` when the namespace does not exist, `Some(terminating)` otherwise.
    pub(crate) fn namespace_phase(&self, cluster: &str, namespace: &str) -> Option<bool> {
        let key = ObjKey::new(cluster.into(), "", namespace);
        let ns = self.store.get(&StoreKey::new("", "namespaces"), &key)?;
        Some(ns.deleting)
    }
}
