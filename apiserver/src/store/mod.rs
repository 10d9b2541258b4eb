//! A shard's storage: one resourceVersion counter, the objects of every resource and logical cluster,
//! a bounded event history per resource (the watch window), and the watch fan-out.
//!
//! Objects are kept as their serialized JSON (`Bytes`, shared with every response and watch event that
//! carries them) plus the few fields indexes and filters need. The store knows nothing of Kubernetes
//! semantics beyond keys, preconditions and resourceVersions; strategies, admission and validation live
//! in [`crate::storage`].

mod object;

pub use object::StoredObject;
pub(crate) use object::{ObjKey, OwnerRef};

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::mpsc;

/// Where one resource's objects live in a shard: `"<group>/<resource>"`, plus `":<identity>"` for
/// kcp resources bound from an APIExport (whose storage is separate per export identity).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(pub Arc<str>);

impl StoreKey {
    /// The key of a resource without an export identity.
    pub fn new(group: &str, resource: &str) -> Self {
        StoreKey(format!("{group}/{resource}").into())
    }
    /// The key of a resource bound from an APIExport with the given identity hash.
    pub fn with_identity(group: &str, resource: &str, identity: &str) -> Self {
        StoreKey(format!("{group}/{resource}:{identity}").into())
    }
}

impl std::fmt::Display for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind of change a watch event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change. Shared (`Arc`) between the history and every watcher that receives it.
#[derive(Debug)]
pub(crate) struct Event {
    /// The resourceVersion of the change (for deletions: of the deletion).
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// Which resource.
    pub resource: StoreKey,
    /// The object after the change (for deletions: the last state, carrying the deletion's rv).
    pub object: Arc<StoredObject>,
    /// The object before the change, for updates and deletions.
    pub prev: Option<Arc<StoredObject>>,
    line: OnceLock<Bytes>,
    /// When the change was committed (the watch window's age limit counts from here).
    recorded: Instant,
}

impl Event {
    /// The event as one line of a JSON watch stream in the stored representation, built once and
    /// shared by every watcher that needs it in that form.
    pub(crate) fn line(&self) -> Bytes {
        self.line
            .get_or_init(|| watch_line(self.kind.as_str(), &self.object.bytes))
            .clone()
    }
}

/// Builds `{"type":T,"object":O}\n` around already-serialized object bytes.
pub(crate) fn watch_line(kind: &str, object: &[u8]) -> Bytes {
    let mut v = Vec::with_capacity(object.len() + 32);
    v.extend_from_slice(b"{\"type\":\"");
    v.extend_from_slice(kind.as_bytes());
    v.extend_from_slice(b"\",\"object\":");
    v.extend_from_slice(object);
    v.extend_from_slice(b"}\n");
    Bytes::from(v)
}

/// Which objects a watcher receives. Selector transitions are applied by the consumer, which sees
/// `prev` on each event.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchFilter {
    /// One resource, or every resource (controllers such as garbage collection).
    pub resource: Option<StoreKey>,
    /// One logical cluster, or all of them (kcp wildcard watches).
    pub cluster: Option<Arc<str>>,
    /// One namespace.
    pub namespace: Option<String>,
    /// One object name.
    pub name: Option<String>,
}

impl WatchFilter {
    fn matches(&self, ev: &Event) -> bool {
        self.resource.as_ref().is_none_or(|r| *r == ev.resource)
            && self
                .cluster
                .as_deref()
                .is_none_or(|c| c == &*ev.object.key.cluster)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| n == &*ev.object.key.namespace)
            && self
                .name
                .as_deref()
                .is_none_or(|n| n == &*ev.object.key.name)
    }
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WatchStart {
    /// After the given resourceVersion: replay the retained history after it.
    After(u64),
    /// Now: the current matching objects first (as synthetic ADDED events), then changes.
    Now,
}

/// A registered watch: the backlog to send first, then the live channel.
pub(crate) struct WatchStream {
    /// Events to deliver before anything from `rx` (history replay, or the initial objects as ADDED).
    pub backlog: Vec<Arc<Event>>,
    /// The resourceVersion the backlog ends at (for bookmarks right after the initial events).
    pub start_rv: u64,
    /// Live events.
    pub rx: mpsc::Receiver<Arc<Event>>,
}

/// Errors of store operations; the caller turns them into API errors with resource names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StoreError {
    /// No object under the key.
    #[error("not found")]
    NotFound,
    /// An object already exists under the key.
    #[error("already exists")]
    AlreadyExists,
    /// The precondition (resourceVersion or uid) did not hold.
    #[error("conflict")]
    Conflict,
    /// The requested resourceVersion is older than the resource's retained history.
    #[error("too old resource version: {requested} ({oldest})")]
    Expired {
        /// The version asked for.
        requested: u64,
        /// The oldest version still available.
        oldest: u64,
    },
    /// The object could not be serialized (never happens for JSON values).
    #[error("serialization: {0}")]
    Serialize(String),
}

/// A precondition on an existing object.
#[derive(Debug, Clone, Default)]
pub(crate) struct Precondition {
    /// The resourceVersion the caller last saw.
    pub rv: Option<u64>,
    /// The uid the caller expects.
    pub uid: Option<String>,
}

/// Configuration of a store.
///
/// The watch window follows kube-apiserver's watch cache (staging/src/k8s.io/apiserver/pkg/storage/
/// cacher/watch_cache.go): per resource, every event younger than `history_age` is kept (up to
/// `history`), and at least the `history_floor` newest whatever their age; a watch or an exact
/// list from an older version gets 410 Expired.
#[derive(Debug, Clone)]
pub(crate) struct StoreOptions {
    /// The most events retained per resource (the watch cache's upper bound, 100 Ki).
    pub history: usize,
    /// Events per resource retained whatever their age (the watch cache's lower bound, 100).
    pub history_floor: usize,
    /// How long an event beyond the floor is retained (the watch cache's `eventFreshDuration`,
    /// 75 s).
    pub history_age: Duration,
    /// Capacity of each watcher's queue; a watcher that falls this far behind is closed (as
    /// kube-apiserver closes slow watchers) and must re-watch.
    pub watcher_queue: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            history: 100 * 1024,
            history_floor: 100,
            history_age: Duration::from_secs(75),
            watcher_queue: 200_000,
        }
    }
}

type Table = BTreeMap<ObjKey, Arc<StoredObject>>;

struct Watcher {
    filter: WatchFilter,
    tx: mpsc::Sender<Arc<Event>>,
}

struct Inner {
    rv: u64,
    tables: HashMap<StoreKey, Table>,
    /// The retained events of each resource, oldest first.
    history: HashMap<StoreKey, VecDeque<Arc<Event>>>,
    /// Per resource: every event with rv <= this is gone from its history.
    compacted: HashMap<StoreKey, u64>,
    /// For every resource: every event with rv <= this is gone (history expired as a whole).
    floor: u64,
    watchers: Vec<Watcher>,
}

/// One shard's store.
pub struct Store {
    inner: RwLock<Inner>,
    opts: RwLock<StoreOptions>,
}

/// A write to commit.
pub(crate) enum Write {
    /// Create a new object (fails if one exists).
    Create(Value),
    /// Replace an existing object.
    Update(Value, Precondition),
    /// Remove an existing object; the DELETED event carries `last` when given (an update that removed
    /// the last finalizer), else the stored state.
    Delete(Precondition, Option<Value>),
}

impl Store {
    /// An empty store.
    pub(crate) fn new(opts: StoreOptions) -> Self {
        Store {
            inner: RwLock::new(Inner {
                rv: 1,
                tables: HashMap::new(),
                history: HashMap::new(),
                compacted: HashMap::new(),
                floor: 0,
                watchers: Vec::new(),
            }),
            opts: RwLock::new(opts),
        }
    }

    /// Changes how many events are retained per resource (at most `n`, whatever their age).
    pub(crate) fn set_history(&self, n: usize) {
        let opts = {
            let mut o = self.opts.write();
            o.history = n;
            o.history_floor = o.history_floor.min(n);
            o.clone()
        };
        let mut inner = self.inner.write();
        let resources: Vec<StoreKey> = inner.history.keys().cloned().collect();
        let now = Instant::now();
        for r in resources {
            trim_history(&mut inner, &r, &opts, now);
        }
    }

    /// The current resourceVersion (of the last write).
    pub fn current_rv(&self) -> u64 {
        self.inner.read().rv
    }

    /// One object.
    pub(crate) fn get(&self, resource: &StoreKey, key: &ObjKey) -> Option<Arc<StoredObject>> {
        self.inner.read().tables.get(resource)?.get(key).cloned()
    }

    /// Visits the objects of a resource in key order, starting after `after`, within a logical cluster
    /// (or all) and a namespace (or all); `f` returns false to stop. Returns the store's resourceVersion
    /// at the time of the scan.
    pub(crate) fn scan(
        &self,
        resource: &StoreKey,
        cluster: Option<&str>,
        namespace: Option<&str>,
        after: Option<&ObjKey>,
        f: impl FnMut(&Arc<StoredObject>) -> bool,
    ) -> u64 {
        self.scan_at(resource, None, cluster, namespace, after, f)
            .unwrap_or_default()
    }

    /// [`Store::scan`] of the objects as they were at resourceVersion `at` (`None`, or a version not
    /// older than the current one: as they are now), rebuilt from the retained history — the
    /// snapshot a paginated list keeps serving from its first page on, as etcd serves every page
    /// at the first page's revision. Returns the version the scan saw; [`StoreError::Expired`] when
    /// the history no longer reaches back to `at`.
    pub(crate) fn scan_at(
        &self,
        resource: &StoreKey,
        at: Option<u64>,
        cluster: Option<&str>,
        namespace: Option<&str>,
        after: Option<&ObjKey>,
        mut f: impl FnMut(&Arc<StoredObject>) -> bool,
    ) -> Result<u64, StoreError> {
        let inner = self.inner.read();
        let at = at.filter(|&rv| rv < inner.rv);
        let compacted = inner.compacted_of(Some(resource));
        if let Some(rv) = at
            && rv < compacted
        {
            return Err(StoreError::Expired {
                requested: rv,
                oldest: compacted + 1,
            });
        }
        // The objects changed since `at`, with what they were at `at` (`None`: absent then).
        let mut undo: BTreeMap<&ObjKey, Option<&Arc<StoredObject>>> = BTreeMap::new();
        if let Some(rv) = at
            && let Some(history) = inner.history.get(resource)
        {
            let idx = history.partition_point(|e| e.rv <= rv);
            // Newest first, so the oldest change after `at` — whose `prev` is the state at `at` —
            // is the one that stays.
            for e in history.range(idx..).rev() {
                let then = match e.kind {
                    EventType::Added => None,
                    EventType::Modified | EventType::Deleted => e.prev.as_ref(),
                };
                undo.insert(&e.object.key, then);
            }
        }
        let scanned = at.unwrap_or(inner.rv);
        let empty = Table::new();
        let table = inner.tables.get(resource).unwrap_or(&empty);
        let lower = match (after, cluster) {
            (Some(a), _) => Bound::Excluded(a.clone()),
            (None, Some(c)) => Bound::Included(ObjKey::new(c.into(), namespace.unwrap_or(""), "")),
            (None, None) => Bound::Unbounded,
        };
        let mut now = table.range((lower.clone(), Bound::Unbounded)).peekable();
        let lower_ref = match &lower {
            Bound::Excluded(k) => Bound::Excluded(k),
            Bound::Included(k) => Bound::Included(k),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut then = undo
            .range::<&ObjKey, _>((lower_ref, Bound::Unbounded))
            .peekable();
        loop {
            // Merge the current objects with the undone changes, in key order; where both have a
            // key, the undone change says what it was at `at`.
            let order = match (now.peek(), then.peek()) {
                (None, None) => break,
                (Some((n, _)), Some((t, _))) => (*n).cmp(*t),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
            };
            if order == std::cmp::Ordering::Equal {
                now.next();
            }
            let from_now = order == std::cmp::Ordering::Less;
            let next = if from_now {
                now.next().map(|(k, o)| (k, Some(o)))
            } else {
                then.next().map(|(k, o)| (*k, *o))
            };
            let Some((k, o)) = next else { break };
            if let Some(c) = cluster
                && &*k.cluster != c
            {
                break;
            }
            if let Some(ns) = namespace
                && &*k.namespace != ns
            {
                if cluster.is_some() && &*k.namespace > ns {
                    break;
                }
                continue;
            }
            if let Some(o) = o
                && !f(o)
            {
                break;
            }
        }
        Ok(scanned)
    }

    /// The resources that have objects in a logical cluster.
    pub(crate) fn resources_in(&self, cluster: &str) -> Vec<StoreKey> {
        let inner = self.inner.read();
        inner
            .tables
            .iter()
            .filter(|(_, t)| {
                t.range(ObjKey::new(cluster.into(), "", "")..)
                    .next()
                    .is_some_and(|(k, _)| &*k.cluster == cluster)
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Commits one write atomically: checks the precondition, assigns the next resourceVersion (and
    /// writes it into the object), stores the bytes, records the event and fans it out.
    pub(crate) fn commit(
        &self,
        resource: &StoreKey,
        key: &ObjKey,
        write: Write,
    ) -> Result<Arc<Event>, StoreError> {
        let opts = self.opts.read().clone();
        let mut inner = self.inner.write();
        let current = inner.tables.get(resource).and_then(|t| t.get(key)).cloned();
        let next_rv = inner.rv + 1;
        let (kind, object, prev) = match write {
            Write::Create(mut v) => {
                if current.is_some() {
                    return Err(StoreError::AlreadyExists);
                }
                set_rv(&mut v, next_rv);
                (
                    EventType::Added,
                    StoredObject::build(key.clone(), next_rv, &v)?,
                    None,
                )
            }
            Write::Update(mut v, pre) => {
                let cur = current.ok_or(StoreError::NotFound)?;
                check(&cur, &pre)?;
                set_rv(&mut v, next_rv);
                (
                    EventType::Modified,
                    StoredObject::build(key.clone(), next_rv, &v)?,
                    Some(cur),
                )
            }
            Write::Delete(pre, last) => {
                let cur = current.ok_or(StoreError::NotFound)?;
                check(&cur, &pre)?;
                // The DELETED event carries the object's last state at the deletion's version, as the
                // watch cache reports it.
                let mut v: Value = match last {
                    Some(v) => v,
                    None => serde_json::from_slice(&cur.bytes)
                        .map_err(|e| StoreError::Serialize(e.to_string()))?,
                };
                set_rv(&mut v, next_rv);
                (
                    EventType::Deleted,
                    StoredObject::build(key.clone(), next_rv, &v)?,
                    Some(cur),
                )
            }
        };
        inner.rv = next_rv;
        let object = Arc::new(object);
        let table = inner.tables.entry(resource.clone()).or_default();
        if kind == EventType::Deleted {
            table.remove(key);
            if table.is_empty() {
                inner.tables.remove(resource);
            }
        } else {
            table.insert(key.clone(), object.clone());
        }
        let ev = Arc::new(Event {
            rv: next_rv,
            kind,
            resource: resource.clone(),
            object,
            prev,
            line: OnceLock::new(),
            recorded: Instant::now(),
        });
        if opts.history > 0 {
            inner
                .history
                .entry(resource.clone())
                .or_default()
                .push_back(ev.clone());
            trim_history(&mut inner, resource, &opts, ev.recorded);
        } else {
            inner.compacted.insert(resource.clone(), next_rv);
        }
        inner.watchers.retain(|w| {
            if !w.filter.matches(&ev) {
                return !w.tx.is_closed();
            }
            // A full queue means the watcher fell too far behind: dropping the sender ends its stream
            // and the client re-watches from its last resourceVersion.
            w.tx.try_send(ev.clone()).is_ok()
        });
        Ok(ev)
    }

    /// Registers a watch.
    pub(crate) fn watch(
        &self,
        filter: WatchFilter,
        start: WatchStart,
    ) -> Result<WatchStream, StoreError> {
        let cap = self.opts.read().watcher_queue.max(1);
        let mut inner = self.inner.write();
        let (tx, rx) = mpsc::channel(cap);
        let backlog = match start {
            WatchStart::After(rv) => {
                let compacted = inner.compacted_of(filter.resource.as_ref());
                if rv < compacted {
                    return Err(StoreError::Expired {
                        requested: rv,
                        oldest: compacted + 1,
                    });
                }
                let after = |h: &VecDeque<Arc<Event>>| {
                    let idx = h.partition_point(|e| e.rv <= rv);
                    h.range(idx..)
                        .filter(|e| filter.matches(e))
                        .cloned()
                        .collect::<Vec<_>>()
                };
                match &filter.resource {
                    Some(r) => inner.history.get(r).map(after).unwrap_or_default(),
                    None => {
                        let mut all: Vec<Arc<Event>> =
                            inner.history.values().flat_map(after).collect();
                        all.sort_by_key(|e| e.rv);
                        all
                    }
                }
            }
            WatchStart::Now => {
                let mut out = Vec::new();
                let mut push = |resource: &StoreKey, t: &Table| {
                    let range: Box<dyn Iterator<Item = &Arc<StoredObject>>> = match &filter.cluster
                    {
                        Some(c) => Box::new(
                            t.range(
                                ObjKey::new(
                                    c.clone(),
                                    filter.namespace.as_deref().unwrap_or(""),
                                    "",
                                )..,
                            )
                            .take_while(|(k, _)| k.cluster == *c)
                            .map(|(_, o)| o),
                        ),
                        None => Box::new(t.values()),
                    };
                    for o in range {
                        let k = &o.key;
                        if filter
                            .namespace
                            .as_deref()
                            .is_some_and(|n| n != &*k.namespace)
                            || filter.name.as_deref().is_some_and(|n| n != &*k.name)
                        {
                            continue;
                        }
                        out.push(Arc::new(Event {
                            rv: o.rv,
                            kind: EventType::Added,
                            resource: resource.clone(),
                            object: o.clone(),
                            prev: None,
                            line: OnceLock::new(),
                            recorded: Instant::now(),
                        }));
                    }
                };
                match &filter.resource {
                    Some(r) => {
                        if let Some(t) = inner.tables.get(r) {
                            push(r, t);
                        }
                    }
                    None => inner.tables.iter().for_each(|(r, t)| push(r, t)),
                }
                out
            }
        };
        let start_rv = inner.rv;
        inner.watchers.push(Watcher { filter, tx });
        Ok(WatchStream {
            backlog,
            start_rv,
            rx,
        })
    }

    /// Ends every open watch (their streams close; clients re-watch).
    pub(crate) fn drop_watchers(&self) {
        self.inner.write().watchers.clear();
    }

    /// Forgets the whole history: every resume from an earlier version now gets 410 Expired.
    pub(crate) fn expire_history(&self) {
        let mut inner = self.inner.write();
        inner.history.clear();
        inner.compacted.clear();
        inner.floor = inner.rv;
    }

    /// Number of open watchers.
    pub(crate) fn watcher_count(&self) -> usize {
        let mut inner = self.inner.write();
        inner.watchers.retain(|w| !w.tx.is_closed());
        inner.watchers.len()
    }
}

impl Inner {
    /// Every event of `resource` (of every resource: `None`) with rv <= this is gone.
    fn compacted_of(&self, resource: Option<&StoreKey>) -> u64 {
        let own = match resource {
            Some(r) => self.compacted.get(r).copied().unwrap_or(0),
            None => self.compacted.values().copied().max().unwrap_or(0),
        };
        own.max(self.floor)
    }
}

/// Drops the events of `resource` that left the watch window: beyond `history`, and beyond
/// `history_floor` those older than `history_age`.
fn trim_history(inner: &mut Inner, resource: &StoreKey, opts: &StoreOptions, now: Instant) {
    let Some(h) = inner.history.get_mut(resource) else {
        return;
    };
    let floor = opts.history_floor.min(opts.history);
    let mut dropped = None;
    while h.len() > opts.history
        || (h.len() > floor
            && h.front()
                .is_some_and(|e| now.saturating_duration_since(e.recorded) > opts.history_age))
    {
        dropped = h.pop_front().map(|e| e.rv).or(dropped);
    }
    if h.is_empty() {
        inner.history.remove(resource);
    }
    if let Some(rv) = dropped {
        inner.compacted.insert(resource.clone(), rv);
    }
}

fn check(cur: &StoredObject, pre: &Precondition) -> Result<(), StoreError> {
    if pre.rv.is_some_and(|rv| rv != cur.rv) || pre.uid.as_deref().is_some_and(|u| u != &*cur.uid) {
        return Err(StoreError::Conflict);
    }
    Ok(())
}

fn set_rv(v: &mut Value, rv: u64) {
    crate::meta::metadata_mut(v).insert("resourceVersion".into(), Value::String(rv.to_string()));
}
