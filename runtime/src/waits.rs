//! Waits driven by watches: while a reconcile waits for a managed object (a member not ready
//! yet, a member being deleted), the runtime watches exactly that object, by name in the
//! cluster where it lives, and reconciles the tenant again when it changes or goes. The watches
//! of a tenant are replaced by each reconcile's waits and end with them, so nothing is re-read
//! on a fixed interval; the plan's recheck is only a safety net.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, ResourceExt};

use crate::queue::Triggers;
use crate::tenant::Identity;

/// What ends a wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Until {
    /// The object differs from the version the reconcile read (its status moved on), or went.
    Changed(String),
    /// The object is gone.
    Gone,
}

/// One object a reconcile waits for.
#[derive(Clone)]
pub(crate) struct Wait {
    /// Which of the tenant's clusters (as `Location::describe` names it).
    cluster: &'static str,
    client: kube::Client,
    resource: ApiResource,
    namespace: Option<String>,
    name: String,
    until: Until,
}

impl std::fmt::Debug for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wait")
            .field("key", &self.key())
            .field("until", &self.until)
            .finish()
    }
}

/// Which object, where: one watch per key and tenant.
type WaitKey = (&'static str, String, String, Option<String>, String);

impl Wait {
    pub(crate) fn new(
        cluster: &'static str,
        client: &kube::Client,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        until: Until,
    ) -> Self {
        Wait {
            cluster,
            client: client.clone(),
            resource: resource.clone(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            until,
        }
    }

    fn key(&self) -> WaitKey {
        (
            self.cluster,
            self.resource.api_version.clone(),
            self.resource.plural.clone(),
            self.namespace.clone(),
            self.name.clone(),
        )
    }

    /// Watches the object; triggers `id` once when the wait is over. A watch that fails ends
    /// without a trigger: the next reconcile (the plan's recheck at the latest) starts a new one.
    fn spawn(self, id: Identity, triggers: Triggers) -> WatchTask {
        WatchTask(tokio::spawn(async move {
            let api: Api<DynamicObject> = match &self.namespace {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, &self.resource),
                None => Api::all_with(self.client.clone(), &self.resource),
            };
            let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
            let mut events = std::pin::pin!(watcher(api, config));
            let mut present = false;
            while let Some(event) = events.next().await {
                let over = match event {
                    Ok(Event::Init) => {
                        present = false;
                        false
                    }
                    Ok(Event::InitApply(object) | Event::Apply(object)) => {
                        present = true;
                        match &self.until {
                            Until::Changed(seen) => {
                                object.resource_version().as_deref() != Some(seen.as_str())
                            }
                            Until::Gone => false,
                        }
                    }
                    Ok(Event::InitDone) => !present,
                    Ok(Event::Delete(_)) => true,
                    // Not allowed to watch (a narrowed grant), credentials expired, or the kind
                    // is gone: the plan's recheck reconciles, and that reconcile watches anew.
                    // Triggering here would turn a lasting refusal into a reconcile loop.
                    Err(err) => {
                        tracing::debug!(object = %id, error = %err, "watch of a managed object failed; the recheck takes over");
                        return;
                    }
                };
                if over {
                    triggers.trigger(id);
                    return;
                }
            }
        }))
    }
}

/// A watch task that ends when dropped.
pub(crate) struct WatchTask(tokio::task::JoinHandle<()>);

impl WatchTask {
    /// Starts `task`; it is aborted when the handle is dropped.
    pub(crate) fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Self {
        WatchTask(tokio::spawn(task))
    }

    fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

impl Drop for WatchTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The watches of every tenant that waits for managed objects.
#[derive(Default)]
pub(crate) struct Waits {
    tenants: Mutex<HashMap<Identity, Watched>>,
}

/// A tenant's watches: what ends each wait, and its task.
type Watched = HashMap<WaitKey, (Until, WatchTask)>;

impl Waits {
    /// `id` now waits for exactly `waits`: a watch already running for the same object and end
    /// is kept, the others start, and watches for what `id` no longer waits for end.
    pub(crate) fn wait_for(&self, id: &Identity, waits: Vec<Wait>, triggers: &Triggers) {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        if waits.is_empty() {
            tenants.remove(id);
            return;
        }
        let mut old = tenants.remove(id).unwrap_or_default();
        let mut now = HashMap::with_capacity(waits.len());
        for wait in waits {
            let key = wait.key();
            let kept = old
                .remove(&key)
                .filter(|(until, task)| *until == wait.until && !task.is_finished());
            let entry = match kept {
                Some(entry) => entry,
                None => (wait.until.clone(), wait.spawn(id.clone(), triggers.clone())),
            };
            now.insert(key, entry);
        }
        tenants.insert(id.clone(), now);
    }

    /// `id`'s watches end (it is gone).
    pub(crate) fn stop(&self, id: &Identity) {
        self.tenants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
    use service_provider_apiserver::{Cluster, ClusterOptions};

    use super::*;
    use crate::queue::{BackoffPolicy, Queue};
    use crate::tenant::Mode;

    async fn triggered(queue: &Queue<Identity>) -> Option<Identity> {
        tokio::time::timeout(Duration::from_secs(10), queue.next())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wait_ends_with_a_trigger_when_its_object_changes_or_goes() {
        let cluster = Cluster::start_new("waits", ClusterOptions::default())
            .await
            .expect("the embedded cluster starts");
        let client = cluster.client();
        let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some("member".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let created = maps.create(&PostParams::default(), &map).await.unwrap();
        let queue = Queue::new(BackoffPolicy::default());
        let triggers = Triggers::default();
        triggers.register(Mode::Standard, queue.clone(), Vec::new);
        let id = Identity {
            cluster: None,
            namespace: "tenants".into(),
            name: "a".into(),
        };
        let resource = ApiResource::erase::<ConfigMap>(&());
        let wait = |until| {
            Wait::new(
                "tenant cluster",
                &client,
                &resource,
                Some("default"),
                "member",
                until,
            )
        };
        let waits = Waits::default();

        // The reconcile read this version: a change after it ends the wait.
        let seen = created.metadata.resource_version.clone().unwrap();
        waits.wait_for(&id, vec![wait(Until::Changed(seen))], &triggers);
        let patch = serde_json::json!({ "data": { "ready": "true" } });
        maps.patch("member", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        assert_eq!(triggered(&queue).await, Some(id.clone()));
        queue.done(&id, crate::queue::Requeue::Never);

        // Being deleted: the wait ends when it is gone.
        waits.wait_for(&id, vec![wait(Until::Gone)], &triggers);
        maps.delete("member", &DeleteParams::default())
            .await
            .unwrap();
        assert_eq!(triggered(&queue).await, Some(id.clone()));
        queue.done(&id, crate::queue::Requeue::Never);

        // Nothing waited for: no watch is left.
        waits.wait_for(&id, Vec::new(), &triggers);
        assert!(waits.tenants.lock().unwrap().is_empty());
    }
}
