//! What kube-controller-manager and kubelet would do, for the simulated platform's clusters on
//! real kube-apiservers ([`crate::dev::Hosting::KubeApiservers`]), as ordinary API clients: a
//! workload's status as if every pod had become available (a Job as if it had completed, the
//! status the embedded server's switch writes: one definition,
//! [`service_provider_apiserver::available_workload_status`]), and a
//! namespace being deleted emptied and then finalized. No pod runs: envtest's clusters are the
//! same, and a provider's tests wait for what it installed, not for containers.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams,
    PostParams,
};
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use service_provider_apiserver::{WORKLOADS, available_workload_status};
use tokio::task::JoinHandle;

/// The ServiceAccount (in [`ADMIN_NAMESPACE`]) whose token is a real cluster's admin token.
const ADMIN_ACCOUNT: &str = "service-provider-admin";
/// The namespace of [`ADMIN_ACCOUNT`].
const ADMIN_NAMESPACE: &str = "kube-system";
/// How long the admin token lives: longer than any test or `dev` session.
const ADMIN_TOKEN_SECONDS: i64 = 7 * 24 * 3600;
/// How soon a namespace whose objects are not all gone yet is looked at again (an object with
/// a finalizer waits for whoever owns it).
const NAMESPACE_RECHECK: Duration = Duration::from_millis(250);

/// Whether `user` is the admin ServiceAccount [`admin_token`] mints tokens of.
pub(crate) fn is_admin_account(user: &str) -> bool {
    service_provider_apiserver::parse_service_account_username(user)
        == Some((ADMIN_NAMESPACE, ADMIN_ACCOUNT))
}

/// Mints the admin bearer token of a real cluster with `admin` (its client-certificate admin):
/// a ServiceAccount bound to `cluster-admin`, so every backend hands out token kubeconfigs.
pub(crate) async fn admin_token(admin: &kube::Client) -> Result<String, kube::Error> {
    let namespace = ADMIN_NAMESPACE;
    create_unless_exists(
        &Api::<Namespace>::all(admin.clone()),
        &Namespace {
            metadata: named(namespace, None),
            ..Default::default()
        },
    )
    .await?;
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), namespace);
    create_unless_exists(
        &accounts,
        &ServiceAccount {
            metadata: named(ADMIN_ACCOUNT, Some(namespace)),
            ..Default::default()
        },
    )
    .await?;
    create_unless_exists(
        &Api::<ClusterRoleBinding>::all(admin.clone()),
        &ClusterRoleBinding {
            metadata: named(ADMIN_ACCOUNT, None),
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "ClusterRole".into(),
                name: "cluster-admin".into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: ADMIN_ACCOUNT.into(),
                namespace: Some(namespace.into()),
                ..Default::default()
            }]),
        },
    )
    .await?;
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": { "expirationSeconds": ADMIN_TOKEN_SECONDS },
    }))
    .map_err(kube::Error::SerdeError)?;
    let issued = accounts
        .create_token_request(ADMIN_ACCOUNT, &PostParams::default(), &request)
        .await?;
    Ok(issued.status.and_then(|s| s.token).unwrap_or_default())
}

fn named(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(Into::into),
        ..Default::default()
    }
}

async fn create_unless_exists<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The stand-ins running against one cluster; stopped on [`StandIns::stop`] or drop.
pub(crate) struct StandIns {
    tasks: Vec<JoinHandle<()>>,
}

impl StandIns {
    /// Starts watching `client`'s cluster.
    pub(crate) fn start(client: kube::Client) -> Self {
        let mut tasks: Vec<JoinHandle<()>> = WORKLOADS
            .iter()
            .map(|&(group, version, plural)| {
                tokio::spawn(workloads(client.clone(), group, version, plural))
            })
            .collect();
        tasks.push(tokio::spawn(namespaces(client)));
        StandIns { tasks }
    }

    /// Stops every watch.
    pub(crate) fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for StandIns {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Keeps every workload of one kind at the status it would reach with its pods available.
async fn workloads(client: kube::Client, group: &str, version: &str, plural: &str) {
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: String::new(),
        plural: plural.into(),
    };
    let all = Api::<DynamicObject>::all_with(client.clone(), &resource);
    // With a backoff: a stopped kube-apiserver refuses at once, and a watcher retrying
    // without one never yields, which blocks the runtime it runs on from shutting down.
    let mut events = watcher::watcher(all, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let (Ok(Event::Apply(object)) | Ok(Event::InitApply(object))) = event else {
            continue;
        };
        let Ok(value) = serde_json::to_value(&object) else {
            continue;
        };
        let Some(status) = available_workload_status(plural, &value) else {
            continue;
        };
        let (Some(ns), Some(name)) = (object.metadata.namespace, object.metadata.name) else {
            continue;
        };
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource);
        let patch = serde_json::json!({ "status": status });
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!("stand-in: status of {plural} {ns}/{name}: {e}");
        }
    }
}

/// Empties and finalizes every namespace being deleted, as kube-controller-manager's namespace
/// controller does: one task per namespace until it is gone.
async fn namespaces(client: kube::Client) {
    let finalizing: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let all = Api::<Namespace>::all(client.clone());
    // With a backoff: a stopped kube-apiserver refuses at once, and a watcher retrying
    // without one never yields, which blocks the runtime it runs on from shutting down.
    let mut events = watcher::watcher(all, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let (Ok(Event::Apply(ns)) | Ok(Event::InitApply(ns))) = event else {
            continue;
        };
        let Some(name) = ns.metadata.name.clone() else {
            continue;
        };
        if ns.metadata.deletion_timestamp.is_none()
            || !finalizing.lock().is_ok_and(|mut f| f.insert(name.clone()))
        {
            continue;
        }
        let (client, finalizing) = (client.clone(), finalizing.clone());
        tokio::spawn(async move {
            while let Err(e) = finalize(&client, &name).await {
                tracing::debug!("stand-in: namespace {name} not finalized yet: {e}");
                tokio::time::sleep(NAMESPACE_RECHECK).await;
            }
            if let Ok(mut f) = finalizing.lock() {
                f.remove(&name);
            }
        });
    }
}

/// Deletes what is in `name`; once nothing is left, removes the `kubernetes` finalizer.
async fn finalize(client: &kube::Client, name: &str) -> Result<(), String> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let Some(mut ns) = namespaces.get_opt(name).await.map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|e| e.to_string())?;
    let mut remaining = Vec::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced
                || !caps.supports_operation(verbs::LIST)
                || !caps.supports_operation(verbs::DELETE)
            {
                continue;
            }
            let api = Api::<DynamicObject>::namespaced_with(client.clone(), name, &resource);
            let left = api
                .list_metadata(&ListParams::default())
                .await
                .map_err(|e| format!("listing {}: {e}", resource.plural))?;
            for object in left.items {
                let Some(object_name) = object.metadata.name else {
                    continue;
                };
                if object.metadata.deletion_timestamp.is_none() {
                    match api.delete(&object_name, &DeleteParams::background()).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(e)) if e.code == 404 => continue,
                        Err(e) => return Err(format!("deleting {}: {e}", resource.plural)),
                    }
                }
                remaining.push(format!("{} {object_name}", resource.plural));
            }
        }
    }
    if !remaining.is_empty() {
        return Err(format!("waiting for {}", remaining.join(", ")));
    }
    let Some(spec) = ns.spec.as_mut() else {
        return Ok(());
    };
    let finalizers = spec.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == "kubernetes") {
        return Ok(());
    }
    finalizers.retain(|f| f != "kubernetes");
    match namespaces
        .replace_subresource("finalize", name, &PostParams::default(), &ns)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
