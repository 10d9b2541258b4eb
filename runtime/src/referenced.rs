//! The Secrets and ConfigMaps in the provider's namespace that reconciles copy (pull secrets, a
//! CA bundle), read once per version instead of once per tenant and reconcile: the platform's
//! metadata watches say which version is current, and a copy read at that version is handed
//! out again.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// An object: its kind and name (the namespace is the provider's).
type Key = (&'static str, String);

/// An object as read (a `Secret` or `ConfigMap`), with the version read.
type Read = (String, Arc<dyn Any + Send + Sync>);

/// Objects of the provider's namespace, by the version the watches show and as last read.
#[derive(Default)]
pub(crate) struct Referenced {
    /// The resourceVersion each object has now, as the watches saw it; absent when unknown or
    /// gone.
    current: Mutex<HashMap<Key, String>>,
    /// Each object as last read, with the version read.
    read: Mutex<HashMap<Key, Read>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Referenced {
    /// A watch saw object `kind`/`name` at `version` (`None`: deleted).
    pub(crate) fn saw(&self, kind: &'static str, name: &str, version: Option<&str>) {
        let key = (kind, name.to_owned());
        match version {
            Some(version) => {
                lock(&self.current).insert(key, version.to_owned());
            }
            None => {
                lock(&self.current).remove(&key);
                lock(&self.read).remove(&key);
            }
        }
    }

    /// Object `name` of `api` (the provider's namespace): the copy read before while the
    /// watches show it unchanged, else read now.
    pub(crate) async fn get<K>(&self, api: &Api<K>, name: &str) -> Result<Option<K>, kube::Error>
    where
        K: Resource<DynamicType = ()> + k8s_openapi::Resource,
        K: Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        let key = (<K as k8s_openapi::Resource>::KIND, name.to_owned());
        let current = lock(&self.current).get(&key).cloned();
        if let Some(current) = current {
            let read = lock(&self.read).get(&key).cloned();
            if let Some((version, object)) = read
                && version == current
                && let Ok(object) = object.downcast::<K>()
            {
                return Ok(Some(object.as_ref().clone()));
            }
        }
        let object = api.get_opt(name).await?;
        if let Some(read) = &object
            && let Some(version) = read.meta().resource_version.clone()
        {
            let copy: Arc<dyn Any + Send + Sync> = Arc::new(read.clone());
            lock(&self.read).insert(key, (version, copy));
        }
        Ok(object)
    }
}
