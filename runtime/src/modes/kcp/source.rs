//! kcp mode's source: Service API objects from the consumer workspaces bound to the provider's
//! APIExport, through the export's virtual workspace.
//!
//! - The APIExportEndpointSlice (in the provider workspace) lists one virtual-workspace URL per
//!   shard with at least one binding. For each URL the source runs exactly two wildcard watches
//!   (`<url>/clusters/*`): the Service API objects and the APIBindings — so the number of open
//!   watches is endpoints × 2, whatever the number of workspaces.
//! - Objects are keyed by [`Identity`] with the logical cluster from their `kcp.io/cluster`
//!   annotation, never by namespace and name alone; each endpoint has its own caches, because
//!   resourceVersions of different shards cannot be compared.
//! - A workspace is engaged while it has a Ready binding ([`Workspaces`]); only engaged
//!   workspaces that hash to this replica's share ([`Sharding`](super::Sharding)) are reconciled.
//! - Reads and status writes for one workspace go to `<url>/clusters/<name>` over the endpoint's
//!   shared connection pool; the author's client for the workspace carries a minted token
//!   ([`Credentials`]) and talks to the workspace URL directly.
//! - One object per workspace is served: the oldest (`KcpSource::admit`).
//! - An object that leaves while it still holds the runtime's finalizer (its workspace's last
//!   binding went, or someone removed the finalizer) becomes *detached*: the runtime runs the
//!   delete path on its last known state to give everything back.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use futures::future::BoxFuture;
use kube::core::DeserializeGuard;
use kube::core::error_boundary::InvalidObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::access::AccessState;
use crate::access::clients::scoped_client;
use crate::cache::needs_reconcile;
use crate::cache::{Cache, Change, compact_meta, reflect};
use crate::controller::source::{AccessRoute, Invalid, Refusal, Resolved, Source, Tenant, Writer};
use crate::error::Error;
use crate::events::EventRecorder;
use crate::kcp_api::v1alpha1::APIExportEndpointSlice;
use crate::kcp_api::v1alpha2::APIBinding;
use crate::modes::kcp::credentials::Credentials;
use crate::modes::kcp::provider_workspace::ProviderWorkspace;
use crate::modes::kcp::settings::KcpSettings;
use crate::modes::kcp::workspaces::Workspaces;
use crate::modes::kcp::{CLUSTER_ANNOTATION, guard};
use crate::platform::Platform;
use crate::provider::{ServiceProvider, compact_object};
use crate::queue::Triggers;
use crate::tenant::{Identity, Mode};

/// Reason of the `Ready` condition of an object that is not served because an older one serves
/// its workspace.
pub const REASON_DUPLICATE: &str = "DuplicateInWorkspace";

/// A binding's key: (logical cluster, name).
type BindingKey = (String, String);

/// One virtual-workspace endpoint (one shard) and what its two watches saw.
pub struct Endpoint<P: ServiceProvider> {
    url: Arc<str>,
    client: kube::Client,
    objects: Cache<Identity, P>,
    bindings: Cache<BindingKey, APIBinding>,
    stop: CancellationToken,
}

impl<P: ServiceProvider> Endpoint<P> {
    /// The URL, as the endpoint slice lists it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The Service API objects seen through this endpoint.
    pub fn objects(&self) -> &Cache<Identity, P> {
        &self.objects
    }
}

/// The kcp-mode source. Cheap to share (`Arc`).
pub struct KcpSource<P: ServiceProvider> {
    platform: Arc<Platform<P>>,
    provider: Arc<ProviderWorkspace>,
    settings: KcpSettings,
    credentials: Arc<Credentials>,
    endpoints: RwLock<BTreeMap<String, Arc<Endpoint<P>>>>,
    workspaces: Mutex<Workspaces>,
    ghosts: Mutex<HashMap<Identity, Arc<P>>>,
    slice: Cache<String, APIExportEndpointSlice>,
    finalizer: String,
    shutdown: CancellationToken,
}

impl<P: ServiceProvider> std::fmt::Debug for KcpSource<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KcpSource")
            .field("provider", &self.provider)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A kcp object's identity: its logical cluster (annotation `kcp.io/cluster`), namespace and name.
pub fn kcp_identity<K: Resource>(object: &K) -> Option<Identity> {
    let meta = object.meta();
    Some(Identity {
        cluster: Some(meta.annotations.as_ref()?.get(CLUSTER_ANNOTATION)?.clone()),
        namespace: meta.namespace.clone()?,
        name: meta.name.clone()?,
    })
}

fn binding_key<K: Resource>(binding: &K) -> Option<BindingKey> {
    let meta = binding.meta();
    Some((
        meta.annotations.as_ref()?.get(CLUSTER_ANNOTATION)?.clone(),
        meta.name.clone()?,
    ))
}

/// What decides which object serves a workspace: holding the finalizer first (an incumbent keeps
/// its workspace), then the oldest, then namespace and name (creation times have seconds only).
fn rank<P: Resource>(object: &P, finalizer: &str) -> (bool, Option<String>, String, String) {
    let meta = object.meta();
    (
        !meta.finalizers.iter().flatten().any(|f| f == finalizer),
        meta.creation_timestamp.as_ref().map(|t| t.0.to_string()),
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

impl<P: ServiceProvider> KcpSource<P> {
    /// The source for the provider connected as `provider`, configured by `settings`.
    pub fn new(
        platform: Arc<Platform<P>>,
        provider: Arc<ProviderWorkspace>,
        settings: KcpSettings,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let credentials = Arc::new(Credentials::new(
            provider.clone(),
            platform.provider_name(),
            settings.credentials.clone(),
            platform.access().kubeconfigs().clone(),
        ));
        Arc::new(KcpSource {
            platform,
            provider,
            settings,
            credentials,
            endpoints: RwLock::new(BTreeMap::new()),
            workspaces: Mutex::new(Workspaces::default()),
            ghosts: Mutex::new(HashMap::new()),
            slice: Cache::new(),
            finalizer: P::INFO.finalizer(),
            shutdown,
        })
    }

    /// The provider's kcp connection.
    pub fn provider(&self) -> &Arc<ProviderWorkspace> {
        &self.provider
    }

    /// The workspace credentials.
    pub fn credentials(&self) -> &Arc<Credentials> {
        &self.credentials
    }

    /// The URLs of the endpoints being watched.
    pub fn endpoint_urls(&self) -> Vec<String> {
        self.endpoint_list()
            .iter()
            .map(|e| e.url.to_string())
            .collect()
    }

    /// How many workspaces are engaged.
    pub fn engaged(&self) -> usize {
        self.workspaces().engaged_count()
    }

    /// Whether workspace `cluster` is engaged.
    pub fn is_engaged(&self, cluster: &str) -> bool {
        self.workspaces().is_engaged(cluster)
    }

    fn workspaces(&self) -> MutexGuard<'_, Workspaces> {
        self.workspaces.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ghosts(&self) -> MutexGuard<'_, HashMap<Identity, Arc<P>>> {
        self.ghosts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn endpoint_list(&self) -> Vec<Arc<Endpoint<P>>> {
        self.endpoints
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn endpoint(&self, url: &str) -> Option<Arc<Endpoint<P>>> {
        self.endpoints
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(url)
            .cloned()
    }

    /// The endpoint `cluster` is reached through.
    fn home(&self, cluster: &str) -> Option<Arc<Endpoint<P>>> {
        let url = self.workspaces().home(cluster)?;
        self.endpoint(&url)
    }

    /// The live object (not a detached one) from the endpoint caches.
    fn lookup(&self, id: &Identity) -> Option<Arc<P>> {
        let home = id
            .cluster
            .as_deref()
            .and_then(|c| self.workspaces().home(c));
        self.lookup_at(id, home.as_deref())
    }

    /// [`lookup`](Self::lookup) with the workspace's endpoint known (the registry is locked).
    fn lookup_at(&self, id: &Identity, home: Option<&str>) -> Option<Arc<P>> {
        if let Some(ep) = home.and_then(|url| self.endpoint(url))
            && let Some(o) = ep.objects.get(id)
        {
            return Some(o);
        }
        self.endpoint_list().iter().find_map(|e| e.objects.get(id))
    }

    /// Whether this replica reconciles `cluster`'s objects now.
    fn served(&self, cluster: &str) -> bool {
        self.settings.sharding.owns(cluster) && self.workspaces().is_engaged(cluster)
    }

    fn trigger(&self, id: &Identity) {
        self.platform.triggers().trigger(id.clone());
    }

    /// A client for `cluster` through its virtual-workspace endpoint, as the provider.
    fn vw_client(&self, cluster: &str) -> kube::Client {
        let prefix = format!("/clusters/{cluster}");
        match self.home(cluster) {
            Some(ep) => scoped_client(&ep.client, &prefix, None),
            // Not bound (any more): requests fail as they should, at the workspace itself.
            None => self.provider.workspace_client(cluster),
        }
    }

    /// Runs the watches until `shutdown`: the endpoint slice, and through it every endpoint.
    pub async fn run(self: Arc<Self>) {
        let refresh = {
            let this = self.clone();
            async move {
                let credentials = this.credentials.clone();
                credentials
                    .run_refresh(|cluster| this.refresh_due(cluster))
                    .await;
            }
        };
        tokio::select! {
            _ = self.clone().watch_slice() => {}
            _ = refresh => {}
            _ = self.shutdown.cancelled() => {}
        }
        for ep in self.endpoint_list() {
            ep.stop.cancel();
        }
    }

    /// Waits until the endpoint slice and every endpoint known by then delivered their first
    /// complete lists.
    pub async fn wait_synced(&self) {
        self.slice.wait_synced().await;
        for ep in self.endpoint_list() {
            ep.objects.wait_synced().await;
            ep.bindings.wait_synced().await;
        }
    }

    async fn watch_slice(self: Arc<Self>) {
        let api: Api<DeserializeGuard<APIExportEndpointSlice>> =
            Api::all(self.provider.client().clone());
        let config = watcher::Config::default()
            .fields(&format!("metadata.name={}", self.settings.endpoint_slice));
        let stream = watcher(api, config).default_backoff();
        let this = self.clone();
        reflect(
            stream,
            self.slice.clone(),
            |s: &DeserializeGuard<APIExportEndpointSlice>| s.meta().name.clone(),
            compact_meta,
            move |_, change| {
                let urls: BTreeSet<String> = change
                    .new
                    .and_then(|s| s.status.as_ref())
                    .map(|s| s.endpoints.iter().map(|e| e.url.clone()).collect())
                    .unwrap_or_default();
                this.set_endpoints(urls);
            },
            |_, _| {},
        )
        .await;
    }

    /// Starts watching new endpoint URLs and stops watching vanished ones.
    fn set_endpoints(self: &Arc<Self>, urls: BTreeSet<String>) {
        let current: BTreeSet<String> = self
            .endpoint_list()
            .iter()
            .map(|e| e.url.to_string())
            .collect();
        for gone in current.difference(&urls) {
            tracing::info!(endpoint = %gone, "virtual-workspace endpoint gone");
            let clusters = self.workspaces().engaged_through(gone);
            for cluster in clusters {
                if self.workspaces().drop_engagement(&cluster) {
                    self.detach(&cluster);
                }
            }
            let removed = self
                .endpoints
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .remove(gone);
            if let Some(ep) = removed {
                ep.stop.cancel();
            }
        }
        for new in urls.difference(&current) {
            let client = match self.provider.endpoint_client(new) {
                Ok(client) => client,
                Err(err) => {
                    tracing::error!(endpoint = %new, error = %err, "cannot watch a virtual-workspace endpoint");
                    continue;
                }
            };
            tracing::info!(endpoint = %new, "watching virtual-workspace endpoint");
            let ep = Arc::new(Endpoint {
                url: new.as_str().into(),
                client,
                objects: Cache::new(),
                bindings: Cache::new(),
                stop: self.shutdown.child_token(),
            });
            self.endpoints
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(new.clone(), ep.clone());
            tokio::spawn(self.clone().watch_endpoint(ep));
        }
    }

    /// The two wildcard watches of one endpoint.
    async fn watch_endpoint(self: Arc<Self>, ep: Arc<Endpoint<P>>) {
        let wildcard = scoped_client(&ep.client, "/clusters/*", None);
        let objects = watcher(
            Api::<DeserializeGuard<P>>::all(wildcard.clone()),
            watcher::Config::default(),
        )
        .default_backoff();
        let bindings = watcher(
            Api::<DeserializeGuard<APIBinding>>::all(wildcard),
            watcher::Config::default(),
        )
        .default_backoff();
        let (this, url) = (self.clone(), ep.url.clone());
        let objects = reflect(
            objects,
            ep.objects.clone(),
            kcp_identity,
            compact_object,
            move |id, change| this.object_changed(&url, id, change),
            {
                let this = self.clone();
                move |id: &Identity, _: Option<&InvalidObject>| {
                    if id
                        .cluster
                        .as_deref()
                        .is_some_and(|c| this.settings.sharding.owns(c))
                    {
                        this.trigger(id);
                    }
                }
            },
        );
        let (this, url) = (self.clone(), ep.url.clone());
        let bindings = reflect(
            bindings,
            ep.bindings.clone(),
            binding_key,
            compact_meta,
            move |key, change| this.binding_changed(&url, key, change),
            // An undecodable binding neither engages nor disengages its workspace.
            |_, _| {},
        );
        tokio::select! {
            _ = futures::future::join(objects, bindings) => {}
            _ = ep.stop.cancelled() => {}
        }
    }

    fn object_changed(&self, endpoint: &Arc<str>, id: &Identity, change: Change<'_, P>) {
        let Some(cluster) = id.cluster.as_deref() else {
            return;
        };
        let owned = self.settings.sharding.owns(cluster);
        if change.new.is_some() {
            let engaged = {
                let mut ws = self.workspaces();
                ws.add_object(id, endpoint);
                ws.is_engaged(cluster)
            };
            if engaged {
                // Back in a bound workspace: it is reachable again.
                self.ghosts().remove(id);
                if owned && needs_reconcile(&change) {
                    self.trigger(id);
                }
            }
            return;
        }
        self.workspaces().remove_object(id);
        // A deletion the runtime finished itself (the finalizer removal raced its own echo) left
        // nothing behind; anything else holding the finalizer did.
        let finished = change
            .old
            .is_some_and(|o| o.meta().deletion_timestamp.is_some())
            && self.credentials.released(cluster);
        if let Some(old) = change.old
            && !finished
            && self.make_ghost(id, old)
        {
            tracing::info!(object = %id, "the object left with the finalizer still on it; giving its access back");
        }
        if owned {
            self.trigger(id);
        }
    }

    fn binding_changed(
        &self,
        endpoint: &Arc<str>,
        key: &BindingKey,
        change: Change<'_, APIBinding>,
    ) {
        let (cluster, name) = key;
        match change.new {
            Some(binding) if binding.is_ready() => {
                let objects = {
                    let mut ws = self.workspaces();
                    ws.engage(cluster, name, endpoint)
                        .then(|| ws.objects(cluster))
                };
                if let Some(objects) = objects {
                    tracing::debug!(workspace = %cluster, binding = %name, "engaged workspace");
                    if self.settings.sharding.owns(cluster) {
                        for id in objects {
                            self.trigger(&id);
                        }
                    }
                }
            }
            // Not Ready (yet, or for a while): an engaged workspace stays engaged.
            Some(_) => {}
            None => {
                if self.workspaces().disengage(cluster, name) {
                    tracing::info!(workspace = %cluster, "the workspace's last binding is gone; disengaging");
                    self.detach(cluster);
                }
            }
        }
    }

    /// Detaches every object of `cluster` that holds the finalizer, so its access is given back.
    fn detach(&self, cluster: &str) {
        let objects = self.workspaces().objects(cluster);
        let owned = self.settings.sharding.owns(cluster);
        for id in objects {
            if let Some(object) = self.lookup(&id)
                && self.make_ghost(&id, &object)
                && owned
            {
                self.trigger(&id);
            }
        }
    }

    /// Keeps the last state of `object` as a detached object marked deleting, when it holds the
    /// finalizer (otherwise nothing was given to it); true when it is detached now.
    fn make_ghost(&self, id: &Identity, object: &P) -> bool {
        if !object.finalizers().contains(&self.finalizer) {
            return false;
        }
        let mut ghosts = self.ghosts();
        if ghosts.contains_key(id) {
            return true;
        }
        let mut ghost = object.clone();
        if ghost.meta().deletion_timestamp.is_none() {
            ghost.meta_mut().deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::now(),
                ));
        }
        ghosts.insert(id.clone(), Arc::new(ghost));
        true
    }

    /// A workspace's token is due for refresh: reconcile the object it serves.
    fn refresh_due(&self, cluster: &str) {
        let owner = self.workspaces().owner(cluster).cloned();
        if let Some(owner) = owner {
            tracing::debug!(workspace = cluster, object = %owner, "refreshing the workspace token");
            self.trigger(&owner);
        }
    }

    /// Whether `id` serves its workspace; an object holding the finalizer of a workspace nobody
    /// serves yet (after a restart) takes it over.
    fn is_owner(&self, id: &Identity) -> bool {
        let Some(cluster) = id.cluster.as_deref() else {
            return false;
        };
        let holds = self
            .get(id)
            .is_some_and(|o| o.finalizers().contains(&self.finalizer));
        let mut ws = self.workspaces();
        match ws.owner(cluster) {
            Some(owner) => owner == id,
            None if holds => {
                ws.set_owner(id);
                true
            }
            None => false,
        }
    }
}

impl<P: ServiceProvider> Source<P> for KcpSource<P> {
    fn mode(&self) -> Mode {
        Mode::Kcp
    }

    /// Builds the workspace's virtual-workspace client once; the object's API handle, its Event
    /// recorder and the route to the workspace all share it.
    fn resolve(&self, id: &Identity) -> Resolved<P> {
        let Some(cluster) = id.cluster.clone() else {
            return Resolved::Gone;
        };
        let Some(object) = self.get(id) else {
            let Some(invalid) = self.invalid(id) else {
                return Resolved::Gone;
            };
            let vw = self.vw_client(&cluster);
            let owner = invalid.metadata.deletion_timestamp.is_some() && self.is_owner(id);
            return Resolved::Invalid(Invalid {
                writer: Some(self.writer(id, vw.clone())),
                access: self.workspace_access(id, cluster, vw, false, owner),
                object: invalid,
            });
        };
        let detached = self.detached(id);
        let vw = self.vw_client(&cluster);
        let deleting = object.meta().deletion_timestamp.is_some();
        let admission = if deleting || detached {
            Ok(())
        } else {
            self.admit(id)
        };
        // Only the object serving the workspace was ever given access.
        let owner = deleting && self.is_owner(id);
        let writer = (!detached).then(|| self.writer(id, vw.clone()));
        Resolved::Found(Tenant {
            object,
            writer,
            admission,
            access: self.workspace_access(id, cluster, vw, detached, owner),
        })
    }

    fn keys(&self) -> Vec<Identity> {
        let endpoints = self.endpoint_list();
        let mut keys: BTreeSet<Identity> = BTreeSet::new();
        {
            let ws = self.workspaces();
            for ep in &endpoints {
                keys.extend(ep.objects.keys().into_iter().filter(|id| {
                    id.cluster
                        .as_deref()
                        .is_some_and(|c| ws.is_engaged(c) && self.settings.sharding.owns(c))
                }));
            }
        }
        keys.extend(
            self.ghosts()
                .keys()
                .filter(|id| {
                    id.cluster
                        .as_deref()
                        .is_some_and(|c| self.settings.sharding.owns(c))
                })
                .cloned(),
        );
        keys.into_iter().collect()
    }

    fn observe(&self, id: &Identity, mut object: P) {
        compact_object(&mut object);
        let home = id.cluster.as_deref().and_then(|c| self.home(c));
        if let Some(ep) = home {
            ep.objects.insert_if_newer(id.clone(), Arc::new(object));
        }
    }

    fn forget(&self, id: &Identity) {
        self.ghosts().remove(id);
        let Some(cluster) = id.cluster.as_deref() else {
            return;
        };
        let others = {
            let mut ws = self.workspaces();
            ws.clear_owner(id).then(|| ws.objects(cluster))
        };
        if let Some(others) = others {
            self.credentials.forget(cluster);
            // The next oldest object may serve the workspace now.
            if self.served(cluster) {
                for other in others.iter().filter(|o| *o != id) {
                    self.trigger(other);
                }
            }
        }
    }

    fn classify(&self, err: Error) -> Error {
        guard::classify(err)
    }
}

impl<P: ServiceProvider> KcpSource<P> {
    /// The object, when this replica serves it: its workspace is in this replica's share and
    /// engaged (or the object is detached). Triggers from elsewhere (a platform watch seeing
    /// another replica's access requests) thus never make two replicas reconcile one workspace.
    fn get(&self, id: &Identity) -> Option<Arc<P>> {
        let cluster = id.cluster.as_deref()?;
        if !self.settings.sharding.owns(cluster) {
            return None;
        }
        if let Some(ghost) = self.ghosts().get(id) {
            return Some(ghost.clone());
        }
        if !self.workspaces().is_engaged(cluster) {
            return None;
        }
        self.lookup(id)
    }

    fn invalid(&self, id: &Identity) -> Option<Arc<InvalidObject>> {
        let cluster = id.cluster.as_deref()?;
        if !self.settings.sharding.owns(cluster) {
            return None;
        }
        self.endpoint_list()
            .iter()
            .find_map(|e| e.objects.invalid(id))
    }

    /// One object per workspace is served: an object holding the finalizer keeps its workspace;
    /// otherwise the oldest (creation time, then namespace and name) serves it. The others say
    /// which object serves the workspace and wait until it is gone.
    fn admit(&self, id: &Identity) -> Result<(), Refusal> {
        let Some(cluster) = id.cluster.as_deref() else {
            return Ok(());
        };
        let mut ws = self.workspaces();
        let home = ws.home(cluster);
        if let Some(owner) = ws.owner(cluster).cloned() {
            if owner == *id {
                return Ok(());
            }
            if self.ghosts().contains_key(&owner)
                || self.lookup_at(&owner, home.as_deref()).is_some()
            {
                return Err(self.refusal(&owner));
            }
            ws.clear_owner(&owner);
        }
        let winner = ws
            .objects(cluster)
            .into_iter()
            .filter_map(|other| {
                let object = self.lookup_at(&other, home.as_deref())?;
                // A deleting object does not take a workspace over.
                let incumbent = object.finalizers().contains(&self.finalizer);
                (incumbent || object.meta().deletion_timestamp.is_none())
                    .then(|| (rank(&*object, &self.finalizer), other))
            })
            .min()
            .map(|(_, winner)| winner)
            .unwrap_or_else(|| id.clone());
        ws.set_owner(&winner);
        drop(ws);
        if winner == *id {
            Ok(())
        } else {
            self.trigger(&winner);
            Err(self.refusal(&winner))
        }
    }

    fn detached(&self, id: &Identity) -> bool {
        self.ghosts().contains_key(id)
    }

    fn workspace_access(
        &self,
        id: &Identity,
        cluster: String,
        vw: kube::Client,
        detached: bool,
        owner: bool,
    ) -> Box<dyn AccessRoute> {
        Box::new(WorkspaceAccess {
            credentials: self.credentials.clone(),
            triggers: self.platform.triggers().clone(),
            id: id.clone(),
            cluster,
            vw,
            detached,
            owner,
        })
    }

    fn writer(&self, id: &Identity, vw: kube::Client) -> Writer<P> {
        let events = EventRecorder::new(
            vw.clone(),
            self.platform.provider_name(),
            self.platform.pod_name().map(str::to_owned),
        );
        Writer {
            api: Api::namespaced(vw, &id.namespace),
            events,
        }
    }

    fn refusal(&self, owner: &Identity) -> Refusal {
        let kind = P::INFO.kind;
        Refusal {
            reason: REASON_DUPLICATE.to_owned(),
            message: format!(
                "{kind} {}/{} serves this workspace: only one {kind} per workspace is served, the oldest; delete this one, or delete {}/{} to let this one take over",
                owner.namespace, owner.name, owner.namespace, owner.name
            ),
        }
    }
}

/// The route to a consumer workspace: a ServiceAccount token the runtime mints there (or the
/// credentials the platform supplies), given back by deleting the ServiceAccount.
struct WorkspaceAccess {
    credentials: Arc<Credentials>,
    triggers: Triggers,
    id: Identity,
    cluster: String,
    /// The workspace through the virtual workspace, as the provider.
    vw: kube::Client,
    /// The object is out of reach: nothing is written through the virtual workspace.
    detached: bool,
    /// Whether the object serves the workspace (decided for a deleting object only).
    owner: bool,
}

impl AccessRoute for WorkspaceAccess {
    fn ensure(&self) -> BoxFuture<'_, Result<AccessState, Error>> {
        Box::pin(async move {
            let on_unauthorized = {
                let (credentials, triggers) = (self.credentials.clone(), self.triggers.clone());
                let (cluster, owner) = (self.cluster.clone(), self.id.clone());
                move |token: &str| {
                    if credentials.invalidate(&cluster, token) {
                        triggers.trigger(owner.clone());
                    }
                }
            };
            self.credentials
                .access(
                    &self.cluster,
                    &self.id,
                    !self.detached,
                    || self.vw.clone(),
                    on_unauthorized,
                )
                .await
        })
    }

    fn released(&self) -> Result<bool, Error> {
        if !self.owner {
            return Ok(true);
        }
        Ok(self.credentials.released(&self.cluster)
            || (self.detached && !self.credentials.has_token(&self.cluster)))
    }

    fn release(&self) -> BoxFuture<'_, Result<bool, Error>> {
        Box::pin(async move {
            if !self.owner {
                return Ok(true);
            }
            let vw = (!self.detached).then(|| self.vw.clone());
            self.credentials.release(&self.cluster, vw).await
        })
    }
}
