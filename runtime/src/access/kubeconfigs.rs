//! The kubeconfigs the platform hands out in AccessRequest Secrets, turned into cluster access and
//! kept while they are in use.
//!
//! Only Secrets that an AccessRequest of this provider points at are kept, and only their
//! `kubeconfig` key; a metadata-only watch over the platform's Secrets says when one changed
//! (token rotation) or went away, and the next use fetches it again. So a tenant costs one GET of
//! its Secret on first use and none afterwards, and the provider never holds the platform's other
//! Secrets in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::access::clients::{ClientError, ClientFactory};
use crate::cache::{ObjectKey, is_newer};
use crate::context::{ClusterAccess, Identity, SecretRef};
use crate::openmcp::constants::SECRET_KEY_KUBECONFIG;

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
    access: Option<ClusterAccess>,
    /// The tenant whose access this is; triggered when the Secret changes.
    owner: Option<Identity>,
}

/// Cluster access built from AccessRequest Secrets, cached per Secret. Cheap to clone.
#[derive(Clone)]
pub struct KubeconfigStore {
    platform: kube::Client,
    factory: ClientFactory,
    entries: Arc<Mutex<HashMap<ObjectKey, Entry>>>,
}

impl KubeconfigStore {
    /// An empty store reading Secrets with `platform`.
    pub fn new(platform: kube::Client, factory: ClientFactory) -> Self {
        KubeconfigStore {
            platform,
            factory,
            entries: Arc::default(),
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
        {
            let mut entries = self.lock();
            let entry = entries.entry(key.clone()).or_default();
            entry.owner = Some(owner.clone());
            if let Some(access) = &entry.access {
                return Ok(Some(access.clone()));
            }
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
        let client =
            self.factory
                .client(&kubeconfig)
                .await
                .map_err(|source| KubeconfigError::Client {
                    key: key.clone(),
                    source,
                })?;
        let access = ClusterAccess::new(
            client,
            kubeconfig,
            Some(SecretRef {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            }),
        );
        let read_version = secret.metadata.resource_version;
        let mut entries = self.lock();
        let entry = entries.entry(key.clone()).or_default();
        // The watch may have reported a newer version while we were reading; then what we read
        // is usable once, but not worth keeping.
        if !is_newer(entry.resource_version.as_deref(), read_version.as_deref()) {
            entry.resource_version = read_version;
            entry.access = Some(access.clone());
        }
        Ok(Some(access))
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
        // A cached client is stale now; a tenant that found no usable Secret yet may find one.
        entry.access = None;
        entry.owner.clone()
    }

    /// Secret `key` is gone; returns the tenant that used it.
    pub fn deleted(&self, key: &ObjectKey) -> Option<Identity> {
        let mut entries = self.lock();
        let entry = entries.get_mut(key)?;
        entry.resource_version = None;
        entry.access.take().and(entry.owner.clone())
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
