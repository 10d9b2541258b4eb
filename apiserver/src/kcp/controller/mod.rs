//! kcp's controllers, as one level-triggered work queue for the whole installation: watches on
//! every shard feed keys of changed Workspaces, APIExports, APIResourceSchemas, APIBindings and
//! APIExportEndpointSlices; each key is reconciled from the current state of the stores, so
//! cross-shard effects (a binding on one shard, its export on another) need no extra plumbing.
//!
//! Per-workspace cost is kept flat: no per-workspace tasks or watches, only entries in the
//! installation's indexes.

pub(crate) mod binding;
pub(crate) mod conditions;
pub(crate) mod export;
pub(crate) mod slice;
pub(crate) mod workspace;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::server::{KcpInner, ShardState};
use crate::error::ApiError;
use crate::registry::ResourceInfo;
use crate::shard::Shard;
use crate::store::{Event, StoreKey, WatchFilter};

/// An object the controllers reconcile: (shard index, logical cluster, name).
pub(crate) type ObjRef = (usize, Arc<str>, String);
/// An APIExport: (logical cluster name, export name).
pub(crate) type ExportKey = (Arc<str>, String);

/// A unit of work.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Item {
    /// A Workspace (in its parent's logical cluster).
    Workspace(ObjRef),
    /// An APIExport.
    Export(ObjRef),
    /// An APIResourceSchema.
    Schema(ObjRef),
    /// An APIBinding.
    Binding(ObjRef),
    /// An APIExportEndpointSlice.
    Slice(ObjRef),
}

/// The indexes the controllers keep across shards.
#[derive(Default)]
pub(crate) struct ApiState {
    /// The export each binding references (once resolved).
    pub binding_export: HashMap<ObjRef, ExportKey>,
    /// The bindings of each export.
    pub export_bindings: HashMap<ExportKey, HashSet<ObjRef>>,
    /// How many bindings to each export each shard holds (endpoint slices list shards with ≥1).
    pub export_shards: HashMap<ExportKey, BTreeMap<usize, usize>>,
    /// The export each endpoint slice references.
    pub slice_export: HashMap<ObjRef, ExportKey>,
    /// The endpoint slices of each export.
    pub export_slices: HashMap<ExportKey, HashSet<ObjRef>>,
    /// Export identity hash → export.
    pub identities: HashMap<String, ExportKey>,
    /// Bumped whenever `identities` changes (virtual-workspace caches compare it).
    pub identity_gen: u64,
    /// Workspace (shard, parent cluster, name) → its logical cluster.
    pub workspaces: HashMap<ObjRef, Arc<str>>,
}

impl ApiState {
    /// Every endpoint slice, as work items.
    pub(crate) fn all_slices(&self) -> Vec<Item> {
        self.slice_export.keys().cloned().map(Item::Slice).collect()
    }

    /// Records that `binding` references `export` (or nothing); returns the exports whose set of
    /// bindings changed.
    pub(crate) fn set_binding_export(
        &mut self,
        binding: &ObjRef,
        export: Option<ExportKey>,
    ) -> Vec<ExportKey> {
        let old = self.binding_export.get(binding).cloned();
        if old == export {
            return Vec::new();
        }
        let mut changed = Vec::new();
        if let Some(o) = old {
            self.binding_export.remove(binding);
            if let Some(set) = self.export_bindings.get_mut(&o) {
                set.remove(binding);
                if set.is_empty() {
                    self.export_bindings.remove(&o);
                }
            }
            if let Some(counts) = self.export_shards.get_mut(&o)
                && let Some(n) = counts.get_mut(&binding.0)
            {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.remove(&binding.0);
                }
            }
            changed.push(o);
        }
        if let Some(e) = export {
            self.binding_export.insert(binding.clone(), e.clone());
            self.export_bindings
                .entry(e.clone())
                .or_default()
                .insert(binding.clone());
            *self
                .export_shards
                .entry(e.clone())
                .or_default()
                .entry(binding.0)
                .or_default() += 1;
            changed.push(e);
        }
        changed
    }

    /// Follow-up work for everything depending on an export: its bindings and endpoint slices.
    pub(crate) fn dependents(&self, export: &ExportKey) -> Vec<Item> {
        let mut out: Vec<Item> = self
            .export_bindings
            .get(export)
            .into_iter()
            .flatten()
            .cloned()
            .map(Item::Binding)
            .collect();
        out.extend(self.slices_of(export));
        out
    }

    /// The endpoint slices of an export, as work items.
    pub(crate) fn slices_of(&self, export: &ExportKey) -> Vec<Item> {
        self.export_slices
            .get(export)
            .into_iter()
            .flatten()
            .cloned()
            .map(Item::Slice)
            .collect()
    }
}

/// What a reconcile asks of the queue.
#[derive(Default)]
pub(crate) struct Outcome {
    /// Reconcile the same item again after this long.
    pub retry: Option<Duration>,
    /// Other items to reconcile.
    pub follow: Vec<Item>,
}

impl Outcome {
    fn retry(d: Duration) -> Self {
        Outcome {
            retry: Some(d),
            follow: Vec::new(),
        }
    }
}

/// Forwards changes of kcp's types on one shard to the installation's queue.
struct Forwarder {
    shard: usize,
    tx: mpsc::UnboundedSender<Item>,
}

impl crate::controllers::Reconciler for Forwarder {
    fn event(&mut self, _shard: &Shard, ev: &Event) {
        let k = &ev.object.key;
        let r: ObjRef = (self.shard, k.cluster.clone(), k.name.to_string());
        let item = match &*ev.resource.0 {
            "tenancy.kcp.io/workspaces" => Item::Workspace(r),
            "apis.kcp.io/apiexports" => Item::Export(r),
            "apis.kcp.io/apiresourceschemas" => Item::Schema(r),
            "apis.kcp.io/apibindings" => Item::Binding(r),
            "apis.kcp.io/apiexportendpointslices" => Item::Slice(r),
            _ => return,
        };
        let _ = self.tx.send(item);
    }
}

/// Starts forwarding a shard's changes to the queue.
pub(crate) fn watch_shard(inner: &Arc<KcpInner>, shard: &Arc<ShardState>) {
    crate::controllers::spawn(
        &shard.shard,
        WatchFilter::default(),
        Forwarder {
            shard: shard.index,
            tx: inner.queue.clone(),
        },
    );
}

/// How many items are handled before the loop yields to other tasks (tests run on one thread).
const BATCH: usize = 64;

/// Starts the work queue.
pub(crate) fn spawn(inner: &Arc<KcpInner>, rx: mpsc::UnboundedReceiver<Item>) {
    let weak = Arc::downgrade(inner);
    tokio::spawn(run(weak, rx));
}

async fn run(weak: Weak<KcpInner>, mut rx: mpsc::UnboundedReceiver<Item>) {
    let mut queue: VecDeque<Item> = VecDeque::new();
    let mut queued: HashSet<Item> = HashSet::new();
    let mut retry: HashMap<Item, tokio::time::Instant> = HashMap::new();
    let push = |queue: &mut VecDeque<Item>, queued: &mut HashSet<Item>, it: Item| {
        if queued.insert(it.clone()) {
            queue.push_back(it);
        }
    };
    loop {
        if queue.is_empty() {
            let next = retry.values().min().copied();
            let received = match next {
                Some(at) => tokio::select! {
                    r = rx.recv() => Some(r),
                    _ = tokio::time::sleep_until(at) => None,
                },
                None => Some(rx.recv().await),
            };
            match received {
                Some(None) => return,
                Some(Some(it)) => push(&mut queue, &mut queued, it),
                None => {}
            }
        }
        while let Ok(it) = rx.try_recv() {
            push(&mut queue, &mut queued, it);
        }
        let now = tokio::time::Instant::now();
        let due: Vec<Item> = retry
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(it, _)| it.clone())
            .collect();
        for it in due {
            retry.remove(&it);
            push(&mut queue, &mut queued, it);
        }
        let Some(inner) = weak.upgrade() else { return };
        for _ in 0..BATCH {
            let Some(it) = queue.pop_front() else { break };
            queued.remove(&it);
            let outcome = match reconcile(&inner, &it) {
                Ok(o) => o,
                Err(e) => {
                    tracing::debug!("kcp: reconciling {it:?} failed, retrying: {e}");
                    Outcome::retry(Duration::from_millis(200))
                }
            };
            if let Some(d) = outcome.retry {
                let at = tokio::time::Instant::now() + d;
                retry
                    .entry(it.clone())
                    .and_modify(|t| *t = (*t).min(at))
                    .or_insert(at);
            } else {
                retry.remove(&it);
            }
            for f in outcome.follow {
                push(&mut queue, &mut queued, f);
            }
        }
        drop(inner);
        tokio::task::yield_now().await;
    }
}

fn reconcile(inner: &Arc<KcpInner>, it: &Item) -> Result<Outcome, ApiError> {
    match it {
        Item::Workspace(r) => workspace::reconcile(inner, r),
        Item::Export(r) => export::reconcile(inner, r),
        Item::Schema(r) => export::reconcile_schema(inner, r),
        Item::Binding(r) => binding::reconcile(inner, r),
        Item::Slice(r) => slice::reconcile(inner, r),
    }
}

/// The resources an APIResourceSchema defines, stored under an export identity: one per served
/// version, built once per (schema uid, identity) and shared by every binding and virtual
/// workspace (bound resources cost no memory per workspace).
pub(crate) fn schema_infos(
    inner: &KcpInner,
    schema: &Value,
    identity: &str,
) -> Vec<Arc<ResourceInfo>> {
    let uid = schema
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let key = (uid, identity.to_string());
    if let Some(found) = inner.schema_infos.lock().get(&key) {
        return found.clone();
    }
    let crd = schema_as_crd(schema);
    let name = schema
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let infos: Vec<Arc<ResourceInfo>> = crate::controllers::crd::resource_infos(&crd)
        .into_iter()
        .map(|i| {
            let mut i = (*i).clone();
            i.store = StoreKey::with_identity(&i.group, &i.resource, identity);
            i.source = format!("apiresourceschema/{name}");
            Arc::new(i)
        })
        .collect();
    inner.schema_infos.lock().insert(key, infos.clone());
    infos
}

/// An APIResourceSchema as the CRD it stands for (kcp serves bound resources through CRDs too):
/// `schema` wrapped in `openAPIV3Schema`, `served` defaulted.
pub(crate) fn schema_as_crd(schema: &Value) -> Value {
    let spec = schema.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec
        .pointer("/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let versions: Vec<Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                let s = o.remove("schema").unwrap_or(Value::Null);
                o.insert("schema".into(), serde_json::json!({"openAPIV3Schema": s}));
                o.entry("served").or_insert(Value::Bool(true));
            }
            v
        })
        .collect();
    let mut crd_spec = spec.clone();
    crd_spec["versions"] = Value::Array(versions);
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{plural}.{}", if group.is_empty() { "core" } else { group }),
            "uid": schema.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
        },
        "spec": crd_spec,
    })
}

/// The bound resources of the export with this identity hash (for the wildcard's
/// `<resource>:<identity>` and claims on other exports).
pub(crate) fn identity_infos(inner: &KcpInner, identity: &str) -> Vec<Arc<ResourceInfo>> {
    let Some((cluster, name)) = inner.state.lock().identities.get(identity).cloned() else {
        return Vec::new();
    };
    let Some(ss) = inner.shard_of(&cluster) else {
        return Vec::new();
    };
    let api = ss.shard.api(&cluster);
    let Ok(export) = api.get(&super::apis::apiexports(), "", &name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in export
        .value()
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(s) = r.get("schema").and_then(Value::as_str) else {
            continue;
        };
        if let Ok(schema) = api.get(&super::apis::apiresourceschemas(), "", s) {
            out.extend(schema_infos(inner, &schema.value(), identity));
        }
    }
    out
}
