//! Set members as watches see them. While a tenant's sets are applied, the runtime watches each
//! kind of member — metadata only, selected by the set's label, in the namespace and cluster
//! where it lives —
//! and remembers, per object, the resourceVersion the last reconcile saw and what it concluded
//! from it (the member's status, the inventory's records). A reconcile whose objects are all as
//! last seen reads nothing: a no-op reconcile of a set makes no API call. An object that changes
//! (someone edited it, its status moved on) or goes triggers the tenant, which then reads it.
//!
//! The watches of a tenant are those its last reconcile used: a reconcile that applies no set
//! (the delete path, a provider that stopped using one) ends them, as does the tenant going.
//! Values a helper keeps between reconciles (a worker's token) live and end the same way. A
//! watch that fails (not allowed to list the kind, the kind not served yet,
//! credentials expired) ends; until it runs again the set reads the object as it always did, so
//! a narrow grant costs reads, never correctness.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event, watcher};

use crate::queue::Triggers;
use crate::tenant::Identity;
use crate::waits::WatchTask;

/// What a reconcile concluded from an object, kept while the object stays as it saw it.
pub(crate) type Memo = Arc<dyn Any + Send + Sync>;

/// One watched collection of a tenant: the objects of one kind carrying one label, in one
/// namespace (or cluster-wide for cluster-scoped kinds) of one of its clusters. By namespace, so
/// that a list reads only the tenant's namespace of a shared workload cluster and a grant
/// limited to that namespace is enough.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Collection {
    /// Which of the tenant's clusters (as `Location::describe` names it).
    cluster: &'static str,
    api_version: String,
    plural: String,
    namespace: Option<String>,
    selector: String,
}

impl Collection {
    /// The objects of `resource` in `namespace` (`None`: cluster-scoped) of `cluster`, labelled
    /// `label=value`.
    pub(crate) fn new(
        cluster: &'static str,
        resource: &ApiResource,
        namespace: Option<&str>,
        label: &str,
        value: &str,
    ) -> Self {
        Collection {
            cluster,
            api_version: resource.api_version.clone(),
            plural: resource.plural.clone(),
            namespace: namespace.map(str::to_owned),
            selector: format!("{label}={value}"),
        }
    }
}

/// An object of a collection: namespace (`None` when cluster-scoped) and name.
type ObjectKey = (Option<String>, String);

/// A watch and what it has seen.
struct Watch {
    state: Arc<Mutex<WatchState>>,
    _task: WatchTask,
}

/// What a tenant's watch has listed, and what the tenant's reconciles saw of it.
#[derive(Default)]
struct WatchState {
    /// The objects present, by resourceVersion, once listed.
    live: HashMap<ObjectKey, String>,
    /// A (re-)list in progress.
    listing: Option<HashMap<ObjectKey, String>>,
    /// `live` is complete and kept current.
    synced: bool,
    /// The watch ended; the next use starts a new one.
    ended: bool,
    /// Per object, the resourceVersion the last reconcile saw and what it concluded.
    seen: HashMap<ObjectKey, (String, Memo)>,
}

impl WatchState {
    /// Takes in a watch event; `true` when an object the tenant saw changed or went.
    fn take(&mut self, event: Event<PartialObjectMeta<DynamicObject>>) -> bool {
        let differs =
            |seen: &HashMap<ObjectKey, (String, Memo)>, key: &ObjectKey, rv: Option<&str>| {
                seen.get(key)
                    .is_some_and(|(seen, _)| Some(seen.as_str()) != rv)
            };
        match event {
            Event::Init => {
                self.listing = Some(HashMap::new());
                false
            }
            Event::InitApply(object) => {
                if let Some((key, rv)) = version(&object) {
                    self.listing.get_or_insert_default().insert(key, rv);
                }
                false
            }
            Event::InitDone => {
                self.live = self.listing.take().unwrap_or_default();
                self.synced = true;
                self.seen
                    .keys()
                    .any(|key| differs(&self.seen, key, self.live.get(key).map(String::as_str)))
            }
            Event::Apply(object) => {
                let Some((key, rv)) = version(&object) else {
                    return false;
                };
                let changed = differs(&self.seen, &key, Some(&rv));
                self.live.insert(key, rv);
                changed
            }
            Event::Delete(object) => {
                let Some((key, _)) = version(&object) else {
                    return false;
                };
                self.live.remove(&key);
                self.seen.contains_key(&key)
            }
        }
    }

    /// What was concluded of `key`, when it is still the version seen then.
    fn unchanged(&self, key: &ObjectKey) -> Option<Memo> {
        let (seen, memo) = self.seen.get(key)?;
        (self.synced && self.live.get(key) == Some(seen)).then(|| memo.clone())
    }
}

fn version(object: &PartialObjectMeta<DynamicObject>) -> Option<(ObjectKey, String)> {
    let meta = &object.metadata;
    Some((
        (meta.namespace.clone(), meta.name.clone()?),
        meta.resource_version.clone()?,
    ))
}

impl Watch {
    fn start(
        collection: &Collection,
        client: &kube::Client,
        resource: &ApiResource,
        id: Identity,
        triggers: Triggers,
    ) -> Self {
        let state = Arc::new(Mutex::new(WatchState::default()));
        let api: Api<PartialObjectMeta<DynamicObject>> = match &collection.namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
            None => Api::all_with(client.clone(), resource),
        };
        let config = watcher::Config::default().labels(&collection.selector);
        let watched = state.clone();
        let task = WatchTask::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                let changed = match event {
                    Ok(event) => lock(&watched).take(event),
                    // An expired resourceVersion: the watcher lists again on the next poll.
                    Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                        lock(&watched).synced = false;
                        false
                    }
                    // Not allowed, not served, unreachable: reads take over until a later
                    // reconcile starts a new watch. Retrying here would turn a lasting refusal
                    // into a request loop per tenant and kind.
                    Err(err) => {
                        tracing::debug!(object = %id, error = %err, "watch of managed objects ended; the set reads them");
                        let mut state = lock(&watched);
                        state.synced = false;
                        state.ended = true;
                        return;
                    }
                };
                if changed {
                    triggers.trigger(id.clone());
                }
            }
        });
        Watch { state, _task: task }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The watches of every tenant whose sets are applied.
#[derive(Default)]
pub(crate) struct Observed {
    tenants: Mutex<HashMap<Identity, Tenant>>,
}

/// A tenant's watches, and what its reconciles keep between them.
#[derive(Default)]
struct Tenant {
    watches: HashMap<Collection, Watch>,
    /// Values a helper computed and keeps while the tenant's reconciles use them (a worker's
    /// token, so that it is not read back from its Secret).
    kept: HashMap<String, Memo>,
}

impl Observed {
    /// What one reconcile of `id` sees through the watches, and uses of them.
    pub(crate) fn view(self: &Arc<Self>, id: &Identity, triggers: &Triggers) -> TenantView {
        TenantView {
            observed: self.clone(),
            id: id.clone(),
            triggers: triggers.clone(),
            used: Arc::new(Mutex::new(Used::default())),
        }
    }

    /// The reconcile `view` served is over: watches it did not use end, and so does what was
    /// remembered of objects it did not look at.
    pub(crate) fn settle(&self, view: &TenantView) {
        let used = std::mem::take(&mut *lock(&view.used));
        let mut tenants = lock(&self.tenants);
        if used.collections.is_empty() && used.kept.is_empty() {
            tenants.remove(&view.id);
            return;
        }
        let Some(tenant) = tenants.get_mut(&view.id) else {
            return;
        };
        tenant.kept.retain(|key, _| used.kept.contains(key));
        tenant
            .watches
            .retain(|collection, _| used.collections.contains(collection));
        for (collection, watch) in tenant.watches.iter() {
            lock(&watch.state)
                .seen
                .retain(|key, _| used.objects.contains(&(collection.clone(), key.clone())));
        }
    }

    /// `id`'s watches end (it is gone).
    pub(crate) fn stop(&self, id: &Identity) {
        lock(&self.tenants).remove(id);
    }
}

/// What one reconcile used.
#[derive(Default)]
struct Used {
    collections: HashSet<Collection>,
    objects: HashSet<(Collection, ObjectKey)>,
    kept: HashSet<String>,
}

/// One reconcile's access to its tenant's watches.
#[derive(Clone)]
pub(crate) struct TenantView {
    observed: Arc<Observed>,
    id: Identity,
    triggers: Triggers,
    used: Arc<Mutex<Used>>,
}

impl TenantView {
    /// What the last reconcile concluded of the object `namespace/name` of `collection`, when
    /// its watch shows it unchanged since; `None` means "read it". Starts the collection's
    /// watch with `client` when there is none running.
    pub(crate) fn unchanged(
        &self,
        collection: &Collection,
        client: &kube::Client,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Memo> {
        let key = (namespace.map(str::to_owned), name.to_owned());
        self.use_object(collection, &key);
        let mut tenants = lock(&self.observed.tenants);
        let watches = &mut tenants.entry(self.id.clone()).or_default().watches;
        let watch = watches.get(collection).filter(|w| !lock(&w.state).ended);
        match watch {
            Some(watch) => lock(&watch.state).unchanged(&key),
            None => {
                let watch = Watch::start(
                    collection,
                    client,
                    resource,
                    self.id.clone(),
                    self.triggers.clone(),
                );
                watches.insert(collection.clone(), watch);
                None
            }
        }
    }

    /// Whether a change to `collection`'s objects triggers the tenant (its watch is listed and
    /// running), so a reconcile waiting for one of them needs no watch of its own.
    pub(crate) fn watched(&self, collection: &Collection) -> bool {
        lock(&self.observed.tenants)
            .get(&self.id)
            .and_then(|tenant| tenant.watches.get(collection))
            .is_some_and(|watch| lock(&watch.state).synced)
    }

    /// Remembers what this reconcile concluded of the object at resourceVersion `rv`; a change
    /// to it from now on triggers the tenant.
    pub(crate) fn remember(
        &self,
        collection: &Collection,
        namespace: Option<&str>,
        name: &str,
        rv: &str,
        memo: Memo,
    ) {
        let key = (namespace.map(str::to_owned), name.to_owned());
        self.use_object(collection, &key);
        if let Some(watch) = lock(&self.observed.tenants)
            .get(&self.id)
            .and_then(|tenant| tenant.watches.get(collection))
        {
            lock(&watch.state).seen.insert(key, (rv.to_owned(), memo));
        }
    }

    /// Forgets the object (this reconcile deleted it or let it go): its going triggers nothing.
    pub(crate) fn forget(&self, collection: &Collection, namespace: Option<&str>, name: &str) {
        let key = (namespace.map(str::to_owned), name.to_owned());
        if let Some(watch) = lock(&self.observed.tenants)
            .get(&self.id)
            .and_then(|tenant| tenant.watches.get(collection))
        {
            lock(&watch.state).seen.remove(&key);
        }
    }

    /// What this tenant's reconciles keep under `key`; kept as long as each reconcile
    /// [keeps](Self::keep) or recalls it.
    pub(crate) fn recall(&self, key: &str) -> Option<Memo> {
        lock(&self.used).kept.insert(key.to_owned());
        lock(&self.observed.tenants)
            .get(&self.id)
            .and_then(|tenant| tenant.kept.get(key).cloned())
    }

    /// Keeps `value` under `key` for this tenant's next reconciles.
    pub(crate) fn keep(&self, key: &str, value: Memo) {
        lock(&self.used).kept.insert(key.to_owned());
        lock(&self.observed.tenants)
            .entry(self.id.clone())
            .or_default()
            .kept
            .insert(key.to_owned(), value);
    }

    fn use_object(&self, collection: &Collection, key: &ObjectKey) {
        let mut used = lock(&self.used);
        used.collections.insert(collection.clone());
        used.objects.insert((collection.clone(), key.clone()));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
    use service_provider_apiserver::{Cluster, ClusterOptions};

    use super::*;
    use crate::queue::{BackoffPolicy, Queue, Requeue};
    use crate::tenant::Mode;

    async fn triggered(queue: &Queue<Identity>, within: Duration) -> Option<Identity> {
        tokio::time::timeout(within, queue.next())
            .await
            .ok()
            .flatten()
    }

    /// Waits until the view's watch of `collection` has listed.
    async fn listed(view: &TenantView, collection: &Collection) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !view.watched(collection) {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the watch lists within 10 s");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_object_as_last_seen_is_not_read_and_a_change_to_it_triggers_the_tenant() {
        let cluster = Cluster::start_new("observed", ClusterOptions::default())
            .await
            .expect("the embedded cluster starts");
        let client = cluster.client();
        let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let labelled = |name: &str| ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([("set".to_owned(), "a".to_owned())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let member = maps
            .create(&PostParams::default(), &labelled("member"))
            .await
            .unwrap();
        let queue = Queue::new(BackoffPolicy::default());
        let triggers = Triggers::default();
        triggers.register(Mode::Standard, queue.clone(), Vec::new);
        let id = Identity {
            cluster: None,
            namespace: "tenants".into(),
            name: "a".into(),
        };
        let observed = Arc::new(Observed::default());
        let resource = ApiResource::erase::<ConfigMap>(&());
        let collection = Collection::new("tenant cluster", &resource, Some("default"), "set", "a");
        let rv = member.metadata.resource_version.clone().unwrap();
        let memo = || -> Memo { Arc::new("ready") };
        let concluded = |view: &TenantView| {
            view.unchanged(&collection, &client, &resource, Some("default"), "member")
                .and_then(|m| m.downcast_ref::<&str>().copied())
        };

        // First reconcile: nothing known yet, so it reads; it remembers what it read.
        let view = observed.view(&id, &triggers);
        assert_eq!(concluded(&view), None);
        view.remember(&collection, Some("default"), "member", &rv, memo());
        observed.settle(&view);
        listed(&view, &collection).await;

        // Second reconcile, nothing changed: what it concluded before, no read.
        let view = observed.view(&id, &triggers);
        assert_eq!(concluded(&view), Some("ready"));
        observed.settle(&view);

        // An unrelated object of the collection changes: no trigger.
        maps.create(&PostParams::default(), &labelled("other"))
            .await
            .unwrap();
        // The member is edited: the tenant is triggered, and the next reconcile reads it.
        let patch = serde_json::json!({ "data": { "edited": "by hand" } });
        maps.patch("member", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        assert_eq!(
            triggered(&queue, Duration::from_secs(10)).await,
            Some(id.clone())
        );
        queue.done(&id, Requeue::Never);
        let view = observed.view(&id, &triggers);
        assert_eq!(concluded(&view), None);
        let edited = maps.get("member").await.unwrap();
        let rv = edited.metadata.resource_version.unwrap();
        view.remember(&collection, Some("default"), "member", &rv, memo());
        observed.settle(&view);

        // Deleted by someone: triggered again.
        maps.delete("member", &DeleteParams::default())
            .await
            .unwrap();
        assert_eq!(
            triggered(&queue, Duration::from_secs(10)).await,
            Some(id.clone())
        );
        queue.done(&id, Requeue::Never);

        // A reconcile that uses no set ends the tenant's watches.
        let view = observed.view(&id, &triggers);
        observed.settle(&view);
        assert!(lock(&observed.tenants).is_empty());
    }

    #[test]
    fn a_relist_triggers_only_for_objects_seen_at_another_version() {
        let mut state = WatchState::default();
        let memo: Memo = Arc::new(());
        state
            .seen
            .insert((None, "kept".into()), ("1".into(), memo.clone()));
        let object = |name: &str, rv: &str| PartialObjectMeta::<DynamicObject> {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            _phantom: std::marker::PhantomData,
        };
        assert!(!state.take(Event::Init));
        assert!(!state.take(Event::InitApply(object("kept", "1"))));
        assert!(!state.take(Event::InitDone), "as seen: no trigger");
        assert!(state.unchanged(&(None, "kept".into())).is_some());

        state.seen.insert((None, "gone".into()), ("4".into(), memo));
        assert!(!state.take(Event::Init));
        assert!(!state.take(Event::InitApply(object("kept", "1"))));
        assert!(
            state.take(Event::InitDone),
            "a seen object is missing from the list"
        );
        assert!(state.unchanged(&(None, "gone".into())).is_none());
    }
}
