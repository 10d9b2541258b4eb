//! The kubeconfigs the platform hands out in AccessRequest Secrets, turned into cluster access and
//! kept while they are in use.
//!
//! Only Secrets that an AccessRequest of this provider points at are kept, and only their
//! `kubeconfig` key; a metadata-only watch over the platform's Secrets says when one changed
//! (token rotation) or went away, and the next use fetches it again. So a tenant costs one GET of
//! its Secret on first use and none afterwards, and the provider never holds the platform's other
//! Secrets in memory.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::access::clients::{ClientError, ClientFactory};
use crate::cache::{ObjectKey, is_newer};
use crate::openmcp::constants::SECRET_KEY_KUBECONFIG;
use crate::tenant::{ClusterAccess, Identity, SecretRef};

/// Why a Secret's kubeconfig could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// Reading the Secret failed.
    #[error("reading Secret {key}: {source}")]
    Read {
        /// The Secret.
        key: ObjectKey,
        /// What failed.
        source: kube::Error,
    },
    /// The Secret has no `kubeconfig` key.
    #[error("Secret {0} has no {SECRET_KEY_KUBECONFIG:?} key")]
    MissingKey(ObjectKey),
    /// The kubeconfig is unusable.
    #[error("Secret {key}: {source}")]
    Client {
        /// The Secret.
        key: ObjectKey,
        /// What is wrong with its kubeconfig.
        source: ClientError,
    },
}

#[derive(Default)]
struct Entry {
    /// The Secret's resourceVersion the cached access was built from, or the newest one the
    /// watch reported.
    resource_version: Option<String>,
    /// The Secret's kubeconfig, compacted.
    ///
    /// Not a client: a built `kube::Client` owns a request buffer (a spawned task and a channel
    /// whose first block holds 32 requests, ~10 KiB) and its request stack holds the token again.
    /// Kept for every tenant that was most of a tenant's memory; a client is built per reconcile
    /// instead, which costs a YAML parse (tens of microseconds) over the shared connection pool.
    kubeconfig: Option<Compact>,
    /// The tenant whose access this is; triggered when the Secret changes.
    owner: Option<Identity>,
}

/// A kubeconfig whose CA bundle line, the same for every tenant behind one API endpoint and
/// often the larger part of the kubeconfig, is shared between Secrets.
struct Compact(Box<[Part]>);

enum Part {
    Own(Box<[u8]>),
    Shared(Arc<[u8]>),
}

/// Lines shorter than this are not worth a lookup.
const SHARED_LINE: usize = 128;

/// Whether `line` is one that tenants share: the CA bundle (not the token, which is the
/// tenant's own).
fn shareable(line: &[u8]) -> bool {
    line.len() >= SHARED_LINE
        && line
            .trim_ascii_start()
            .starts_with(b"certificate-authority-data:")
}

impl Compact {
    fn new(bytes: &[u8], shared: &Mutex<HashSet<Arc<[u8]>>>) -> Self {
        let mut parts = Vec::new();
        let mut own_from = 0;
        let mut start = 0;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if shareable(line) {
                if own_from < start {
                    parts.push(Part::Own(bytes[own_from..start].into()));
                }
                let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
                let interned: Arc<[u8]> = match shared.get(line) {
                    Some(line) => line.clone(),
                    None => {
                        // CA bundles no Secret uses any more go when a new one comes.
                        shared.retain(|l| Arc::strong_count(l) > 1);
                        let line: Arc<[u8]> = line.into();
                        shared.insert(line.clone());
                        line
                    }
                };
                parts.push(Part::Shared(interned));
                own_from = start + line.len();
            }
            start += line.len();
        }
        if own_from < bytes.len() {
            parts.push(Part::Own(bytes[own_from..].into()));
        }
        Compact(parts.into())
    }

    fn to_bytes(&self) -> Arc<[u8]> {
        let mut out = Vec::with_capacity(self.0.iter().map(|p| p.bytes().len()).sum());
        for part in &self.0 {
            out.extend_from_slice(part.bytes());
        }
        out.into()
    }
}

impl Part {
    fn bytes(&self) -> &[u8] {
        match self {
            Part::Own(bytes) => bytes,
            Part::Shared(bytes) => bytes,
        }
    }
}

/// Cluster access built from AccessRequest Secrets, cached per Secret. Cheap to clone.
#[derive(Clone)]
pub struct KubeconfigStore {
    platform: kube::Client,
    factory: ClientFactory,
    entries: Arc<Mutex<HashMap<ObjectKey, Entry>>>,
    shared_lines: Arc<Mutex<HashSet<Arc<[u8]>>>>,
}

impl KubeconfigStore {
    /// An empty store reading Secrets with `platform`.
    pub fn new(platform: kube::Client, factory: ClientFactory) -> Self {
        KubeconfigStore {
            platform,
            factory,
            entries: Arc::default(),
            shared_lines: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ObjectKey, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The access in Secret `key`, for `owner`. Fetches and builds it on first use and after the
    /// Secret changed; `None` when the Secret does not exist (yet).
    pub async fn access(
        &self,
        key: &ObjectKey,
        owner: &Identity,
    ) -> Result<Option<ClusterAccess>, KubeconfigError> {
        let hit = {
            let mut entries = self.lock();
            let entry = entries.entry(key.clone()).or_default();
            entry.owner = Some(owner.clone());
            entry.kubeconfig.as_ref().map(Compact::to_bytes)
        };
        if let Some(kubeconfig) = hit {
            return self.build(key, kubeconfig).await.map(Some);
        }
        let api: Api<Secret> = Api::namespaced(self.platform.clone(), &key.namespace);
        let secret = match api.get_opt(&key.name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => return Ok(None),
            Err(source) => {
                return Err(KubeconfigError::Read {
                    key: key.clone(),
                    source,
                });
            }
        };
        let kubeconfig: Arc<[u8]> = secret
            .data
            .as_ref()
            .and_then(|d| d.get(SECRET_KEY_KUBECONFIG))
            .map(|b| Arc::from(b.0.as_slice()))
            .ok_or_else(|| KubeconfigError::MissingKey(key.clone()))?;
        let access = self.build(key, kubeconfig.clone()).await?;
        let compact = Compact::new(&kubeconfig, &self.shared_lines);
        let read_version = secret.metadata.resource_version;
        let mut entries = self.lock();
        let entry = entries.entry(key.clone()).or_default();
        // The watch may have reported a newer version while we were reading; then what we read
        // is usable once, but not worth keeping.
        if !is_newer(entry.resource_version.as_deref(), read_version.as_deref()) {
            entry.resource_version = read_version;
            entry.kubeconfig = Some(compact);
        }
        Ok(Some(access))
    }

    /// Access with a client built from `kubeconfig`, the content of Secret `key`.
    async fn build(
        &self,
        key: &ObjectKey,
        kubeconfig: Arc<[u8]>,
    ) -> Result<ClusterAccess, KubeconfigError> {
        let client =
            self.factory
                .client(&kubeconfig)
                .await
                .map_err(|source| KubeconfigError::Client {
                    key: key.clone(),
                    source,
                })?;
        let secret_ref = SecretRef {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        };
        Ok(ClusterAccess::new(client, kubeconfig, Some(secret_ref)))
    }

    /// The watch saw Secret `key` at `resource_version`; returns the tenant to reconcile when it
    /// changed (a cached access became stale, or a Secret its tenant waited for appeared).
    pub fn changed(&self, key: &ObjectKey, resource_version: Option<&str>) -> Option<Identity> {
        let mut entries = self.lock();
        let entry = entries.get_mut(key)?;
        if entry.resource_version.as_deref() == resource_version {
            return None;
        }
        if is_newer(entry.resource_version.as_deref(), resource_version) {
            return None;
        }
        entry.resource_version = resource_version.map(str::to_owned);
        // The kept kubeconfig is stale now; a tenant that found no usable Secret yet may find one.
        entry.kubeconfig = None;
        entry.owner.clone()
    }

    /// Secret `key` is gone; returns the tenant that used it.
    pub fn deleted(&self, key: &ObjectKey) -> Option<Identity> {
        let mut entries = self.lock();
        let entry = entries.get_mut(key)?;
        entry.resource_version = None;
        entry.kubeconfig.take().and(entry.owner.clone())
    }

    /// Stops keeping Secret `key` (its AccessRequest is gone).
    pub fn forget(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }

    /// How many Secrets are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no Secret is kept.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_kubeconfigs_share_long_lines_and_give_back_the_same_bytes() {
        let ca = "eA==".repeat(500);
        let a = format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: https://a\nusers:\n- user:\n    token: a\n"
        );
        let b = a
            .replace("https://a", "https://b")
            .replace("token: a", "token: b");
        let shared = Mutex::default();
        let (ca, cb) = (
            Compact::new(a.as_bytes(), &shared),
            Compact::new(b.as_bytes(), &shared),
        );
        assert_eq!(&*ca.to_bytes(), a.as_bytes());
        assert_eq!(&*cb.to_bytes(), b.as_bytes());
        assert_eq!(shared.lock().unwrap().len(), 1);
        let no_newline = Compact::new(b"token: t", &shared);
        assert_eq!(&*no_newline.to_bytes(), b"token: t");
    }
}
