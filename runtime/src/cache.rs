//! Watch-fed caches: a keyed in-memory copy of a watched collection, and a report of every change
//! to it, so that reconciles read objects without API calls and triggers fire on real changes.
//!
//! kube-runtime's `reflector::Store` keys objects by `ObjectRef` (namespace and name). The caches
//! here take the key from a function instead, so that kcp objects can be keyed by logical cluster
//! as well; they also report the old and the new object of every change, which the trigger filters
//! need (e.g. "only `.status` changed").

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::core::DeserializeGuard;
use kube::core::error_boundary::InvalidObject;
use kube::runtime::watcher;
use tokio::sync::Notify;

/// A namespaced object's key, e.g. of an AccessRequest or a Secret on the platform cluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace of the object.
    pub namespace: String,
    /// Name of the object.
    pub name: String,
}

impl ObjectKey {
    /// The key `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a namespaced object; `None` when it has no name or namespace.
    pub fn of<K: Resource>(object: &K) -> Option<Self> {
        let meta = object.meta();
        Some(ObjectKey::new(meta.namespace.clone()?, meta.name.clone()?))
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A change to a cached object: `old` is what the cache held, `new` what it holds now (`None`
/// when the object is gone).
pub(crate) struct Change<'a, K> {
    /// The object before the change.
    pub old: Option<&'a Arc<K>>,
    /// The object after the change.
    pub new: Option<&'a Arc<K>>,
}

struct Inner<Q, K> {
    map: RwLock<HashMap<Q, Arc<K>>>,
    /// Objects the typed struct cannot decode, kept apart so that one of them never breaks a
    /// (re-)list of the rest.
    invalid: RwLock<HashMap<Q, Arc<InvalidObject>>>,
    synced: AtomicBool,
    synced_notify: Notify,
}

/// A keyed, watch-fed copy of a collection of objects. Cheap to clone.
pub struct Cache<Q, K> {
    inner: Arc<Inner<Q, K>>,
}

impl<Q, K> Clone for Cache<Q, K> {
    fn clone(&self) -> Self {
        Cache {
            inner: self.inner.clone(),
        }
    }
}

impl<Q: Eq + Hash + Clone, K> Default for Cache<Q, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<Q: Eq + Hash + Clone, K> Cache<Q, K> {
    /// An empty, not yet synced cache.
    pub fn new() -> Self {
        Cache {
            inner: Arc::new(Inner {
                map: RwLock::new(HashMap::new()),
                invalid: RwLock::new(HashMap::new()),
                synced: AtomicBool::new(false),
                synced_notify: Notify::new(),
            }),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<Q, Arc<K>>> {
        self.inner.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<Q, Arc<K>>> {
        self.inner.map.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached object under `key`.
    pub fn get(&self, key: &Q) -> Option<Arc<K>> {
        self.read().get(key).cloned()
    }

    /// The object under `key` that the typed struct cannot decode: its metadata and why.
    pub fn invalid(&self, key: &Q) -> Option<Arc<InvalidObject>> {
        self.read_invalid().get(key).cloned()
    }

    /// The keys of every object the typed struct cannot decode.
    pub fn invalid_keys(&self) -> Vec<Q> {
        self.read_invalid().keys().cloned().collect()
    }

    fn read_invalid(&self) -> RwLockReadGuard<'_, HashMap<Q, Arc<InvalidObject>>> {
        self.inner.invalid.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_invalid(&self) -> RwLockWriteGuard<'_, HashMap<Q, Arc<InvalidObject>>> {
        self.inner
            .invalid
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Every key.
    pub fn keys(&self) -> Vec<Q> {
        self.read().keys().cloned().collect()
    }

    /// Every object.
    pub fn values(&self) -> Vec<Arc<K>> {
        self.read().values().cloned().collect()
    }

    /// The objects `filter` accepts.
    pub fn filtered(&self, mut filter: impl FnMut(&K) -> bool) -> Vec<Arc<K>> {
        self.read()
            .values()
            .filter(|k| filter(k))
            .cloned()
            .collect()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Whether the first complete list has arrived.
    pub fn is_synced(&self) -> bool {
        self.inner.synced.load(Ordering::Acquire)
    }

    /// Waits until the first complete list has arrived.
    pub async fn wait_synced(&self) {
        loop {
            let notified = self.inner.synced_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_synced() {
                return;
            }
            notified.await;
        }
    }

    /// Puts `object` under `key` outside the watch, e.g. the response of one of our own writes,
    /// which is newer than what the watch delivered so far. The watch overwrites it later.
    pub fn insert(&self, key: Q, object: Arc<K>) {
        self.write().insert(key, object);
    }

    /// Puts `object` under `key` unless the cache already holds a version at least as new, e.g.
    /// the response of one of our own writes. When the watch later delivers the same version it
    /// is not reported as a change, so our own writes do not trigger reconciles.
    ///
    /// An object that is deleting and has no finalizers left is gone from the server already; it
    /// is not inserted, so a write that raced its own deletion event cannot bring it back.
    pub fn insert_if_newer(&self, key: Q, object: Arc<K>) -> bool
    where
        K: Resource,
    {
        let meta = object.meta();
        if meta.deletion_timestamp.is_some() && meta.finalizers.as_ref().is_none_or(Vec::is_empty) {
            return false;
        }
        let mut map = self.write();
        let newer = match map.get(&key) {
            None => true,
            Some(current) => is_newer(
                object.meta().resource_version.as_deref(),
                current.meta().resource_version.as_deref(),
            ),
        };
        if newer {
            map.insert(key, object);
        }
        newer
    }

    /// Removes `key`, e.g. after we deleted the object ourselves.
    pub fn remove(&self, key: &Q) -> Option<Arc<K>> {
        self.write().remove(key)
    }

    fn mark_synced(&self) {
        if !self.inner.synced.swap(true, Ordering::AcqRel) {
            self.inner.synced_notify.notify_waiters();
        }
    }
}

/// How often a watch that keeps failing is reported at warn; the failures in between are
/// logged at debug.
const WATCH_WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Reports a watch's failures where an operator sees them: at warn, since a watch that fails
/// leaves the provider blind to changes (a missing RBAC rule, an unreachable server). kube's
/// default backoff retries a persistent failure every 30 s at most; this logs it at warn at most
/// once a minute, with the number of failures so far, and says when the watch recovered.
pub(crate) struct WatchHealth {
    what: String,
    failures: u64,
    warned: Option<std::time::Instant>,
}

impl WatchHealth {
    /// The health of the watch of `what` (a kind).
    pub(crate) fn new(what: impl Into<String>) -> Self {
        WatchHealth {
            what: what.into(),
            failures: 0,
            warned: None,
        }
    }

    /// The watch failed; it retries by itself.
    pub(crate) fn failed(&mut self, err: &watcher::Error) {
        self.failures += 1;
        let due = self
            .warned
            .is_none_or(|at| at.elapsed() >= WATCH_WARN_EVERY);
        if due {
            self.warned = Some(std::time::Instant::now());
            tracing::warn!(kind = %self.what, error = %err, failures = self.failures, "watch failed; retrying with backoff");
        } else {
            tracing::debug!(kind = %self.what, error = %err, failures = self.failures, "watch failed; retrying with backoff");
        }
    }

    /// The watch delivered an event.
    pub(crate) fn succeeded(&mut self) {
        if self.failures > 0 {
            tracing::info!(
                kind = %self.what,
                failures = self.failures,
                "watch recovered"
            );
            self.failures = 0;
            self.warned = None;
        }
    }
}

/// `Secret` for `k8s_openapi::api::core::v1::Secret`, `PartialObjectMeta<Secret>` for
/// `kube::core::PartialObjectMeta<…::Secret>`: names a watched type in a log line.
pub(crate) fn short_type_name<K>() -> String {
    let mut out = String::new();
    let mut segment = String::new();
    for c in std::any::type_name::<K>().chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            segment.push(c);
        } else {
            out.push_str(segment.rsplit("::").next().unwrap_or(&segment));
            segment.clear();
            out.push(c);
        }
    }
    out.push_str(segment.rsplit("::").next().unwrap_or(&segment));
    out
}

/// Feeds `cache` from a watcher stream until the stream ends, calling `on_change` for every
/// change (after the cache was updated). `key` picks each object's key (`None` skips the
/// object); `prepare` may trim an object before it is stored (e.g. drop `managedFields`).
///
/// A re-list (after a dropped watch or an expired resourceVersion) is applied as a diff: objects
/// that did not come back are reported as deleted, objects that did not change are not reported.
///
/// Objects are decoded one by one ([`DeserializeGuard`]): one the typed struct cannot decode (a
/// status another controller wrote, an object of an older schema) is logged at warn level once
/// per version, kept apart ([`Cache::invalid`]) and reported to `on_invalid` — `Some` when it
/// became undecodable, `None` when it is gone or decodes again — while every other object is
/// served. Without this, kube's list of the whole collection fails on it, and so does every
/// re-list: nothing would be reconciled.
pub(crate) async fn reflect<K, Q, S>(
    stream: S,
    cache: Cache<Q, K>,
    key: impl Fn(&DeserializeGuard<K>) -> Option<Q>,
    mut prepare: impl FnMut(&mut K),
    mut on_change: impl FnMut(&Q, Change<'_, K>),
    mut on_invalid: impl FnMut(&Q, Option<&InvalidObject>),
) where
    K: Resource + Debug,
    Q: Eq + Hash + Clone + Debug,
    S: Stream<Item = Result<watcher::Event<DeserializeGuard<K>>, watcher::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut relist: Option<HashMap<Q, Arc<K>>> = None;
    let mut health = WatchHealth::new(short_type_name::<K>());
    let mut relist_invalid: HashMap<Q, Arc<InvalidObject>> = HashMap::new();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => {
                health.succeeded();
                event
            }
            Err(err) => {
                // The watcher recovers by itself (with the backoff the caller attached); the
                // cache keeps serving what it has meanwhile.
                health.failed(&err);
                continue;
            }
        };
        match event {
            watcher::Event::Apply(object) => {
                let Some(k) = key(&object) else { continue };
                match object.0 {
                    Ok(mut object) => {
                        prepare(&mut object);
                        let new = Arc::new(object);
                        let old = cache.write().insert(k.clone(), new.clone());
                        if cache.write_invalid().remove(&k).is_some() {
                            on_invalid(&k, None);
                        }
                        if !same_version(old.as_deref(), &new) {
                            on_change(
                                &k,
                                Change {
                                    old: old.as_ref(),
                                    new: Some(&new),
                                },
                            );
                        }
                    }
                    Err(invalid) => {
                        // Not a deletion: the object is still there, only unreadable.
                        cache.write().remove(&k);
                        let invalid = Arc::new(invalid);
                        let old = cache.write_invalid().insert(k.clone(), invalid.clone());
                        if !same_invalid(old.as_deref(), &invalid) {
                            warn_invalid::<K, Q>(&k, &invalid);
                            on_invalid(&k, Some(&invalid));
                        }
                    }
                }
            }
            watcher::Event::Delete(object) => {
                let Some(k) = key(&object) else { continue };
                if cache.write_invalid().remove(&k).is_some() {
                    on_invalid(&k, None);
                }
                let old = cache.write().remove(&k);
                if let Some(old) = old {
                    on_change(
                        &k,
                        Change {
                            old: Some(&old),
                            new: None,
                        },
                    );
                }
            }
            watcher::Event::Init => {
                relist = Some(HashMap::new());
                relist_invalid.clear();
            }
            watcher::Event::InitApply(object) => {
                let Some(k) = key(&object) else { continue };
                match object.0 {
                    Ok(mut object) => {
                        prepare(&mut object);
                        relist
                            .get_or_insert_with(HashMap::new)
                            .insert(k, Arc::new(object));
                    }
                    Err(invalid) => {
                        relist_invalid.insert(k, Arc::new(invalid));
                    }
                }
            }
            watcher::Event::InitDone => {
                let listed = relist.take().unwrap_or_default();
                let previous = std::mem::replace(&mut *cache.write(), listed.clone());
                let listed_invalid = std::mem::take(&mut relist_invalid);
                let previous_invalid =
                    std::mem::replace(&mut *cache.write_invalid(), listed_invalid.clone());
                for (k, invalid) in &listed_invalid {
                    if !same_invalid(previous_invalid.get(k).map(|o| &**o), invalid) {
                        warn_invalid::<K, Q>(k, invalid);
                        on_invalid(k, Some(invalid));
                    }
                }
                for k in previous_invalid.keys() {
                    if !listed_invalid.contains_key(k) {
                        on_invalid(k, None);
                    }
                }
                for (k, new) in &listed {
                    let old = previous.get(k);
                    if !same_version(old.map(|o| &**o), new) {
                        on_change(
                            k,
                            Change {
                                old,
                                new: Some(new),
                            },
                        );
                    }
                }
                for (k, old) in &previous {
                    // An object that turned undecodable did not go away.
                    if !listed.contains_key(k) && !listed_invalid.contains_key(k) {
                        on_change(
                            k,
                            Change {
                                old: Some(old),
                                new: None,
                            },
                        );
                    }
                }
                cache.mark_synced();
            }
        }
    }
}

fn same_invalid(old: Option<&InvalidObject>, new: &InvalidObject) -> bool {
    old.is_some_and(|old| {
        old.metadata.resource_version == new.metadata.resource_version && old.error == new.error
    })
}

fn warn_invalid<K, Q: Debug>(key: &Q, invalid: &InvalidObject) {
    tracing::warn!(
        kind = %short_type_name::<K>(),
        object = ?key,
        error = %invalid.error,
        "cannot decode the object; serving every other one and reporting this one"
    );
}

/// Whether resourceVersion `a` is known to be newer than `b`. resourceVersions are opaque to
/// clients, but every API server the runtime talks to (kube-apiserver on etcd, kcp, the embedded
/// one) issues increasing integers; anything else is treated as "not known to be newer".
pub(crate) fn is_newer(a: Option<&str>, b: Option<&str>) -> bool {
    match (
        a.and_then(|a| a.parse::<u64>().ok()),
        b.and_then(|b| b.parse::<u64>().ok()),
    ) {
        (Some(a), Some(b)) => a > b,
        _ => false,
    }
}

fn same_version<K: Resource>(old: Option<&K>, new: &K) -> bool {
    match (old, &new.meta().resource_version) {
        (Some(old), Some(rv)) => old.meta().resource_version.as_deref() == Some(rv.as_str()),
        _ => false,
    }
}

/// Drops `managedFields`, which the runtime never reads and which can double an object's size,
/// and the spare room of the metadata's lists: a list deserialized from JSON keeps room for four
/// entries when it holds one, and a cached object lives as long as the object does.
pub(crate) fn compact_meta<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(finalizers) = meta.finalizers.as_mut() {
        finalizers.shrink_to_fit();
    }
    if let Some(owners) = meta.owner_references.as_mut() {
        owners.shrink_to_fit();
    }
}

/// Whether a change is worth a reconcile: anything but a change of `.status` alone.
pub(crate) fn needs_reconcile<K: Resource>(change: &Change<'_, K>) -> bool {
    let (Some(old), Some(new)) = (change.old, change.new) else {
        return true;
    };
    let (old, new) = (old.meta(), new.meta());
    old.generation != new.generation
        || old.labels != new.labels
        || old.annotations != new.annotations
        || old.finalizers != new.finalizers
        || old.deletion_timestamp != new.deletion_timestamp
        || old.uid != new.uid
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    #[test]
    fn a_failing_watch_warns_once_a_minute_and_says_when_it_recovered() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let sink = lines.clone();
        let subscriber = crate::ops::logging::subscriber(
            tracing_subscriber::EnvFilter::new("debug"),
            crate::ops::logging::LogFormat::Json,
            move || LineSink(sink.clone()),
        );
        tracing::subscriber::with_default(subscriber, || {
            let mut health = WatchHealth::new(short_type_name::<ConfigMap>());
            for _ in 0..3 {
                health.failed(&watcher::Error::NoResourceVersion);
            }
            health.succeeded();
            health.failed(&watcher::Error::NoResourceVersion);
        });
        let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
        let levels: Vec<(String, String)> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["kind"], "ConfigMap", "{l}");
                (
                    v["level"].as_str().unwrap().to_owned(),
                    v["msg"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected = [
            ("warn", "watch failed; retrying with backoff"),
            ("debug", "watch failed; retrying with backoff"),
            ("debug", "watch failed; retrying with backoff"),
            ("info", "watch recovered"),
            ("warn", "watch failed; retrying with backoff"),
        ]
        .map(|(l, m)| (l.to_owned(), m.to_owned()));
        assert_eq!(levels, expected, "{text}");
        assert_eq!(
            short_type_name::<kube::core::PartialObjectMeta<ConfigMap>>(),
            "PartialObjectMeta<ConfigMap>"
        );
    }

    struct LineSink(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for LineSink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn an_object_deleted_on_the_server_is_not_brought_back() {
        let cache: Cache<String, ConfigMap> = Cache::new();
        let mut gone = cm("a", "7");
        gone.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ));
        assert!(!cache.insert_if_newer("a".into(), Arc::new(gone.clone())));
        assert!(cache.get(&"a".to_owned()).is_none());
        gone.metadata.finalizers = Some(vec!["x/y".into()]);
        assert!(cache.insert_if_newer("a".into(), Arc::new(gone)));
    }

    fn guarded(object: ConfigMap) -> DeserializeGuard<ConfigMap> {
        DeserializeGuard(Ok(object))
    }

    fn broken(name: &str, rv: &str) -> DeserializeGuard<ConfigMap> {
        let value = serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            "data": "not a map",
        });
        serde_json::from_value(value).expect("a guard always decodes")
    }

    #[tokio::test]
    async fn relist_reports_a_diff() {
        let events = vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(guarded(cm("a", "1")))),
            Ok(watcher::Event::InitApply(guarded(cm("b", "1")))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(guarded(cm("a", "2")))),
            Ok(watcher::Event::Apply(guarded(cm("a", "2")))),
            // The watch dropped; the re-list no longer has b, and a is unchanged.
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(guarded(cm("a", "2")))),
            Ok(watcher::Event::InitApply(guarded(cm("c", "5")))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Delete(guarded(cm("c", "5")))),
        ];
        let cache: Cache<String, ConfigMap> = Cache::new();
        let mut seen = Vec::new();
        reflect(
            futures::stream::iter(events),
            cache.clone(),
            |o: &DeserializeGuard<ConfigMap>| o.meta().name.clone(),
            compact_meta,
            |k, change| {
                seen.push(format!(
                    "{k}:{}->{}",
                    change
                        .old
                        .and_then(|o| o.metadata.resource_version.clone())
                        .unwrap_or_default(),
                    change
                        .new
                        .and_then(|o| o.metadata.resource_version.clone())
                        .unwrap_or_default()
                ))
            },
            |_, _| {},
        )
        .await;
        seen.sort();
        assert_eq!(
            seen,
            ["a:->1", "a:1->2", "b:->1", "b:1->", "c:->5", "c:5->"]
        );
        assert!(cache.is_synced());
        assert_eq!(cache.keys(), ["a"]);
    }

    #[tokio::test]
    async fn one_undecodable_object_is_kept_apart_and_the_rest_served() {
        let events = vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(guarded(cm("a", "1")))),
            Ok(watcher::Event::InitApply(broken("b", "1"))),
            Ok(watcher::Event::InitDone),
            // a turns unreadable: not a deletion.
            Ok(watcher::Event::Apply(broken("a", "2"))),
            // The same version again (a re-list) is not reported twice.
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(broken("a", "2"))),
            Ok(watcher::Event::InitApply(broken("b", "1"))),
            Ok(watcher::Event::InitDone),
            // b is fixed; a is deleted.
            Ok(watcher::Event::Apply(guarded(cm("b", "3")))),
            Ok(watcher::Event::Delete(broken("a", "2"))),
        ];
        let cache: Cache<String, ConfigMap> = Cache::new();
        let mut changes = Vec::new();
        let mut invalid = Vec::new();
        reflect(
            futures::stream::iter(events),
            cache.clone(),
            |o: &DeserializeGuard<ConfigMap>| o.meta().name.clone(),
            compact_meta,
            |k, change| {
                changes.push(format!(
                    "{k}:{}",
                    if change.new.is_some() { "+" } else { "-" }
                ))
            },
            |k, object| {
                invalid.push(format!(
                    "{k}:{}",
                    if object.is_some() { "bad" } else { "ok" }
                ))
            },
        )
        .await;
        assert_eq!(changes, ["a:+", "b:+"]);
        assert_eq!(invalid, ["b:bad", "a:bad", "b:ok", "a:ok"]);
        assert_eq!(cache.keys(), ["b"]);
        assert!(cache.invalid_keys().is_empty());
        assert!(cache.is_synced());
    }

    fn versioned(generation: i64, status_only: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                generation: Some(generation),
                resource_version: Some(status_only.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn status_only_changes_do_not_trigger() {
        let (a, b, c) = (versioned(1, "1"), versioned(1, "2"), versioned(2, "3"));
        assert!(!needs_reconcile(&Change {
            old: Some(&a),
            new: Some(&b)
        }));
        assert!(needs_reconcile(&Change {
            old: Some(&b),
            new: Some(&c)
        }));
        assert!(needs_reconcile(&Change {
            old: None,
            new: Some(&a)
        }));
        assert!(needs_reconcile(&Change {
            old: Some(&a),
            new: None
        }));
    }
}
