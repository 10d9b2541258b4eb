//! A stored object: its serialized JSON plus the fields that indexes and filters read.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::StoreError;

/// The key of an object within one resource of a shard: logical cluster, namespace (empty for
/// cluster-scoped objects) and name. Ordered so that one logical cluster, and one namespace within it,
/// are contiguous ranges.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    /// The logical cluster.
    pub cluster: Arc<str>,
    /// The namespace, empty for cluster-scoped objects.
    pub namespace: Box<str>,
    /// The name.
    pub name: Box<str>,
}

impl ObjKey {
    /// A key.
    pub fn new(cluster: Arc<str>, namespace: &str, name: &str) -> Self {
        ObjKey {
            cluster,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

/// An owner reference, as garbage collection needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: Box<str>,
    /// `kind` of the owner.
    pub kind: Box<str>,
    /// `name` of the owner.
    pub name: Box<str>,
    /// `uid` of the owner.
    pub uid: Box<str>,
    /// `blockOwnerDeletion`.
    pub block: bool,
}

/// One stored object version.
#[derive(Debug)]
pub struct StoredObject {
    /// Where it is stored.
    pub key: ObjKey,
    /// `metadata.uid`.
    pub uid: Box<str>,
    /// `metadata.resourceVersion`.
    pub rv: u64,
    /// `metadata.labels`, sorted by key.
    pub labels: Box<[(Box<str>, Box<str>)]>,
    /// `metadata.ownerReferences`.
    pub owners: Box<[OwnerRef]>,
    /// `metadata.finalizers` is non-empty.
    pub has_finalizers: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The whole object as JSON, in its stored apiVersion.
    pub bytes: Bytes,
}

/// Buffers larger than this are not kept for the next object.
const SCRATCH_LIMIT: usize = 1 << 20;

thread_local! {
    /// Where objects are serialized before being copied out at their length.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An object's JSON (in Go's key order) in an allocation of exactly its length. The bytes live as
/// long as this version of the object, and a buffer grown while serializing can be a third or more
/// spare capacity (depending on where the longest values fall); shrinking it in place instead
/// leaves the freed tails to fragment the heap, which slows every later allocation.
fn exact_json(v: &Value) -> Result<Bytes, StoreError> {
    SCRATCH.with_borrow_mut(|buf| {
        buf.clear();
        crate::meta::write_json_go_order(buf, v)
            .map_err(|e| StoreError::Serialize(e.to_string()))?;
        let bytes = Bytes::copy_from_slice(buf);
        if buf.capacity() > SCRATCH_LIMIT {
            *buf = Vec::new();
        }
        Ok(bytes)
    })
}

impl StoredObject {
    /// Serializes an object and extracts its indexed fields.
    pub(crate) fn build(key: ObjKey, rv: u64, v: &Value) -> Result<Self, StoreError> {
        let bytes = exact_json(v)?;
        let meta = v.get("metadata");
        let str_of = |f: &str| {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let mut labels: Vec<(Box<str>, Box<str>)> = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|l| {
                l.iter()
                    .map(|(k, v)| (k.as_str().into(), v.as_str().unwrap_or("").into()))
                    .collect()
            })
            .unwrap_or_default();
        labels.sort();
        let owners = meta
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .map(|r| {
                        let s = |f: &str| -> Box<str> {
                            r.get(f).and_then(Value::as_str).unwrap_or("").into()
                        };
                        OwnerRef {
                            api_version: s("apiVersion"),
                            kind: s("kind"),
                            name: s("name"),
                            uid: s("uid"),
                            block: r
                                .get("blockOwnerDeletion")
                                .and_then(Value::as_bool)
                                .unwrap_or(false),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(StoredObject {
            key,
            uid: str_of("uid").into(),
            rv,
            labels: labels.into_boxed_slice(),
            owners,
            has_finalizers: meta
                .and_then(|m| m.get("finalizers"))
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty()),
            deleting: meta
                .and_then(|m| m.get("deletionTimestamp"))
                .is_some_and(|d| !d.is_null()),
            bytes,
        })
    }

    /// A label's value.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.labels[i].1)
    }

    /// The object parsed back into a JSON value (for writes and conversions).
    pub(crate) fn value(&self) -> Value {
        // The bytes were produced by serde_json from a Value, so they always parse.
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}
