//! The cluster scheduler and the simulated cluster provider: grants ClusterRequests by purpose
//! (onboarding and platform → the fixed clusters; `mcp` → a new exclusive cluster; `workload` →
//! a shared cluster holding up to the configured number of requests, a new one when all are
//! full), keeps the Cluster objects and their `request.clusters.openmcp.cloud/<uid>` finalizers
//! as openmcp-operator's scheduler does, and serves and removes the embedded clusters behind them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::{
    CLUSTER_PROVIDER_FINALIZER, Context, Hosted, ObjKey, PROFILE, PROVIDER, ReconcileError, Result,
    Shared, Sharing, code, create_if_missing, operation, set_finalizers, with_finalizer,
    without_finalizer,
};
use crate::dev::DevError;
use crate::dev::hosting::ClusterHandle;
use crate::dev::queue::Next;
use crate::openmcp::clusters::{ClusterSpec, Tenancy};
use crate::openmcp::constants::{
    CLUSTER_ACCESS_FINALIZER, DELETE_WITHOUT_REQUESTS_LABEL, PHASE_READY, PROVIDER_LABEL,
    PURPOSE_MCP, PURPOSE_ONBOARDING, PURPOSE_PLATFORM, PURPOSE_WORKLOAD, REQUEST_DENIED,
    REQUEST_FINALIZER_ON_CLUSTER_PREFIX, REQUEST_GRANTED,
};
use crate::openmcp::naming::{
    K8S_MAX_NAME_LENGTH, name_hash_shake128_base32, shorten_to_x_characters,
};
use crate::openmcp::{Cluster, ClusterRequest};

/// Condition the simulation puts on requests: whether (and why not) they were granted.
pub(crate) const CONDITION_GRANTED: &str = "Granted";

/// The finalizer a ClusterRequest puts on its Cluster (`FinalizerForCluster`).
fn request_finalizer(uid: &str) -> String {
    format!("{REQUEST_FINALIZER_ON_CLUSTER_PREFIX}{uid}")
}

/// How a purpose is served (the scheduler's `ClusterDefinition`).
enum Definition {
    /// One fixed cluster (platform, onboarding), shared without limit.
    Fixed(&'static str),
    /// A new cluster per request.
    Exclusive,
    /// Shared by up to this many requests (0 = unlimited).
    Shared(usize),
}

fn definition(sh: &Shared, purpose: &str) -> Option<Definition> {
    match purpose {
        PURPOSE_PLATFORM => Some(Definition::Fixed(PURPOSE_PLATFORM)),
        PURPOSE_ONBOARDING => Some(Definition::Fixed(PURPOSE_ONBOARDING)),
        PURPOSE_MCP => Some(Definition::Exclusive),
        PURPOSE_WORKLOAD => Some(Definition::Shared(sh.cfg.workload_tenancy)),
        _ => None,
    }
}

/// A condition as JSON, stamped now.
pub(crate) fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: i64,
) -> serde_json::Value {
    json!({
        "type": type_,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
    })
}

/// Whether `conditions` already holds `type_` with this status, reason and message.
pub(crate) fn has_condition(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
) -> bool {
    conditions.iter().any(|c| {
        c.type_ == type_
            && c.status == if status { "True" } else { "False" }
            && c.reason == reason
            && c.message == message
    })
}

/// The status patch that marks a request (ClusterRequest or AccessRequest) `Denied` for
/// `reason`; `None` when its status says exactly that already, so a denial is written once.
pub(crate) fn denial(
    status: &crate::openmcp::common::CommonStatus,
    generation: i64,
    reason: &str,
    message: &str,
) -> Option<serde_json::Value> {
    let written = status.phase == REQUEST_DENIED
        && status.observed_generation == generation
        && has_condition(
            &status.conditions,
            CONDITION_GRANTED,
            false,
            reason,
            message,
        );
    (!written).then(|| {
        json!({"status": {
            "phase": REQUEST_DENIED,
            "observedGeneration": generation,
            "conditions": [condition(CONDITION_GRANTED, false, reason, message, generation)],
        }})
    })
}

/// Registers a fixed cluster (platform or onboarding) with its Cluster object `<purpose>` in
/// the system namespace.
pub(crate) async fn register_fixed(
    sh: &Arc<Shared>,
    purpose: &'static str,
    handle: ClusterHandle,
) -> std::result::Result<(), DevError> {
    let key = ObjKey::new(&sh.cfg.system_namespace, purpose);
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(sh.cfg.system_namespace.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let start = |e: ReconcileError| DevError::Start(e.to_string());
    create_if_missing(&Api::<Namespace>::all(sh.platform.clone()), &ns)
        .await
        .map_err(start)?;
    let api = Api::<Cluster>::namespaced(sh.platform.clone(), &key.namespace);
    let mut cluster = Cluster::new(
        purpose,
        ClusterSpec {
            profile: PROFILE.into(),
            purposes: vec![purpose.into()],
            tenancy: Tenancy::Shared,
            ..Default::default()
        },
    );
    cluster.metadata.namespace = Some(key.namespace.clone());
    cluster.metadata.labels = Some([(PROVIDER_LABEL.to_string(), PROVIDER.to_string())].into());
    create_if_missing(&api, &cluster).await.map_err(start)?;
    write_cluster_status(&api, purpose, &handle)
        .await
        .map_err(start)?;
    // Requests granted before a restart of the operator still hold the cluster.
    let requests: Vec<String> = sh
        .stores
        .clusters
        .get(&key.oref())
        .map(|c| {
            c.finalizers()
                .iter()
                .filter_map(|f| f.strip_prefix(REQUEST_FINALIZER_ON_CLUSTER_PREFIX))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    sh.hosted.lock().insert(
        key,
        Hosted::new(handle, purpose, Sharing::Shared(0), true),
        requests,
    );
    Ok(())
}

async fn write_cluster_status(
    api: &Api<Cluster>,
    name: &str,
    handle: &ClusterHandle,
) -> Result<()> {
    let url = handle.url();
    let status = json!({"status": {
        "phase": PHASE_READY,
        "observedGeneration": 1,
        "apiServer": url,
        "endpoints": {crate::openmcp::clusters::API_SERVER_INTERNAL_ENDPOINT: url},
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .ctx(|| format!("writing the status of Cluster {name}"))?;
    Ok(())
}

/// Handles one ClusterRequest.
pub(crate) async fn reconcile_request(sh: &Arc<Shared>, key: &ObjKey) -> Result<Next> {
    let Some(cr) = sh.stores.cluster_requests.get(&key.oref()) else {
        return Ok(Next::Done);
    };
    let api = Api::<ClusterRequest>::namespaced(sh.platform.clone(), &key.namespace);
    if operation(&api, cr.as_ref()).await? {
        return Ok(Next::Done);
    }
    if cr.metadata.deletion_timestamp.is_some() {
        return delete_request(sh, &api, &cr).await;
    }
    let cr = match with_finalizer(cr.as_ref(), CLUSTER_ACCESS_FINALIZER) {
        Some(fins) => set_finalizers(&api, cr.as_ref(), fins).await?,
        None => cr.as_ref().clone(),
    };
    let uid = cr.uid().unwrap_or_default();
    let generation = cr.metadata.generation.unwrap_or(0);

    if let Some(c) = cr.status.as_ref().and_then(|s| s.cluster.clone()) {
        return grant(&api, &cr, &ObjKey::new(c.namespace, c.name), generation).await;
    }
    // A cluster already holding this request (its status write was lost) is the answer.
    let recovered = sh.hosted.lock().holding(&uid).cloned();
    if let Some(cluster) = recovered {
        hold_cluster(sh, &cluster, &uid).await?;
        return grant(&api, &cr, &cluster, generation).await;
    }

    let purpose = cr.spec.purpose.clone();
    let Some(def) = definition(sh, &purpose) else {
        let msg = format!("no cluster definition found for purpose '{purpose}'");
        return deny(&api, &cr, "ConfigurationProblem", &msg).await;
    };
    let cluster = match def {
        Definition::Fixed(name) => {
            let cluster = ObjKey::new(&sh.cfg.system_namespace, name);
            sh.hosted.lock().grant(&cluster, uid.clone());
            hold_cluster(sh, &cluster, &uid).await?;
            cluster
        }
        Definition::Exclusive => {
            let cluster = ObjKey::new(&key.namespace, cluster_name(&purpose, &cr)?);
            if let Some(h) = sh.hosted.lock().get(&cluster) {
                // A previous request of the same name still holds it (being deleted): wait.
                return Err(ReconcileError::Other(format!(
                    "cluster {cluster} still belongs to requests {:?}",
                    h.requests()
                )));
            }
            create_cluster(sh, &cluster, &purpose, Sharing::Exclusive, &uid).await?;
            cluster
        }
        Definition::Shared(limit) => {
            // Choosing and reserving happen under one lock, so concurrent requests never put
            // more tenants on a cluster than the limit allows.
            let _serial = sh.schedule_lock.lock().await;
            let chosen = {
                let mut hosted = sh.hosted.lock();
                let candidate = hosted
                    .iter()
                    .filter(|(_, h)| {
                        h.purpose == purpose
                            && !h.deleting
                            && !h.fixed
                            && (limit == 0 || h.requests().len() < limit)
                    })
                    // Balanced: the emptiest, then the oldest.
                    .min_by_key(|(_, h)| (h.requests().len(), h.seq()))
                    .map(|(k, _)| k.clone());
                candidate.inspect(|k| {
                    hosted.grant(k, uid.clone());
                })
            };
            match chosen {
                Some(cluster) => {
                    drop(_serial);
                    hold_cluster(sh, &cluster, &uid).await?;
                    cluster
                }
                None => {
                    let cluster =
                        ObjKey::new(&sh.cfg.system_namespace, cluster_name(&purpose, &cr)?);
                    create_cluster(sh, &cluster, &purpose, Sharing::Shared(limit), &uid).await?;
                    cluster
                }
            }
        }
    };
    grant(&api, &cr, &cluster, generation).await
}

/// `<purpose>-<hash of the request's namespace and name>` (`GenerateClusterName`).
fn cluster_name(purpose: &str, cr: &ClusterRequest) -> Result<String> {
    let prefix = format!("{purpose}-");
    let hash = name_hash_shake128_base32(&[&cr.namespace().unwrap_or_default(), &cr.name_any()]);
    let suffix = shorten_to_x_characters(&hash, K8S_MAX_NAME_LENGTH.saturating_sub(prefix.len()))
        .map_err(|e| {
        ReconcileError::Other(format!("naming a cluster for purpose {purpose}: {e}"))
    })?;
    Ok(format!("{prefix}{suffix}"))
}

/// Serves a new cluster, reserves it for request `uid`, and makes its Cluster object.
async fn create_cluster(
    sh: &Arc<Shared>,
    key: &ObjKey,
    purpose: &str,
    sharing: Sharing,
    uid: &str,
) -> Result<()> {
    let handle = sh
        .host_cluster(key)
        .await
        .map_err(|e| ReconcileError::Other(e.to_string()))?;
    // A workload cluster comes with Flux, as openMCP's do: providers install Helm charts there.
    if purpose == PURPOSE_WORKLOAD {
        let served: crate::dev::flux::Served = {
            let (sh, key) = (Arc::downgrade(sh), key.clone());
            Arc::new(move || sh.upgrade().is_some_and(|sh| sh.handle(&key).is_some()))
        };
        crate::dev::flux::start(&sh.stop, served, &handle)
            .await
            .map_err(|e| ReconcileError::Other(e.to_string()))?;
    }
    sh.hosted.lock().insert(
        key.clone(),
        Hosted::new(handle, purpose, sharing, false),
        [uid.to_string()],
    );
    hold_cluster(sh, key, uid).await
}

/// The Cluster object of a cluster the scheduler created, held by request `uid`.
fn cluster_object(key: &ObjKey, purpose: &str, sharing: Sharing, uid: &str) -> Cluster {
    let mut cluster = Cluster::new(
        &key.name,
        ClusterSpec {
            profile: PROFILE.into(),
            purposes: vec![purpose.into()],
            tenancy: match sharing {
                Sharing::Exclusive => Tenancy::Exclusive,
                Sharing::Shared(_) => Tenancy::Shared,
            },
            ..Default::default()
        },
    );
    cluster.metadata.namespace = Some(key.namespace.clone());
    cluster.metadata.labels = Some(
        [
            (
                DELETE_WITHOUT_REQUESTS_LABEL.to_string(),
                "true".to_string(),
            ),
            (PROVIDER_LABEL.to_string(), PROVIDER.to_string()),
        ]
        .into(),
    );
    cluster.metadata.finalizers = Some(vec![
        request_finalizer(uid),
        CLUSTER_PROVIDER_FINALIZER.to_string(),
    ]);
    cluster
}

/// Makes the Cluster object of served cluster `key` exist, carry request `uid`'s finalizer and
/// name the address the cluster is served at.
///
/// The cluster is reserved for the request in memory before any of this is written, so every
/// step checks first and a retry finishes what a failed attempt began: a Cluster object whose
/// create was refused is created on the next attempt instead of being waited for forever (by
/// this request and by every later one the scheduler puts on the same cluster).
async fn hold_cluster(sh: &Shared, key: &ObjKey, uid: &str) -> Result<()> {
    let (handle, purpose, sharing, fixed) = {
        let hosted = sh.hosted.lock();
        let h = hosted
            .get(key)
            .ok_or_else(|| ReconcileError::Other(format!("cluster {key} is not served")))?;
        (h.handle.clone(), h.purpose.clone(), h.sharing, h.fixed)
    };
    let api = Api::<Cluster>::namespaced(sh.platform.clone(), &key.namespace);
    let read = || async {
        api.get_opt(&key.name)
            .await
            .ctx(|| format!("reading Cluster {key}"))
    };
    let fin = request_finalizer(uid);
    let mut current = match sh.stores.clusters.get(&key.oref()) {
        Some(c) => Some(c.as_ref().clone()),
        None => read().await?,
    };
    for _ in 0..10 {
        let Some(object) = current else {
            if fixed {
                // Created at start; only someone else can have deleted it.
                return Err(ReconcileError::Other(format!("Cluster {key} is missing")));
            }
            current = match api
                .create(
                    &PostParams::default(),
                    &cluster_object(key, &purpose, sharing, uid),
                )
                .await
            {
                Ok(created) => Some(created),
                Err(e) if code(&e) == Some(409) => read().await?,
                Err(e) => return Err(e).ctx(|| format!("creating Cluster {key}")),
            };
            continue;
        };
        let Some(fins) = with_finalizer(&object, &fin) else {
            let url = handle.url();
            let served_at = object.status.as_ref().and_then(|s| s.api_server.as_deref());
            if served_at != Some(url.as_str()) {
                write_cluster_status(&api, &key.name, &handle).await?;
            }
            return Ok(());
        };
        current = match set_finalizers(&api, &object, fins).await {
            Ok(updated) => Some(updated),
            Err(ReconcileError::Kube { source, .. })
                if matches!(code(&source), Some(409 | 404)) =>
            {
                read().await?
            }
            Err(e) => return Err(e),
        };
    }
    Err(ReconcileError::Other(format!(
        "Cluster {key} kept changing"
    )))
}

/// Removes `request.clusters.openmcp.cloud/<uid>` from the Cluster object (gone is fine).
async fn remove_request_finalizer(sh: &Shared, cluster: &ObjKey, uid: &str) -> Result<()> {
    let api = Api::<Cluster>::namespaced(sh.platform.clone(), &cluster.namespace);
    let fin = request_finalizer(uid);
    for _ in 0..10 {
        let current = match api.get_opt(&cluster.name).await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(()),
            Err(e) => return Err(e).ctx(|| format!("reading Cluster {cluster}")),
        };
        let Some(fins) = without_finalizer(&current, &fin) else {
            return Ok(());
        };
        match set_finalizers(&api, &current, fins).await {
            Ok(_) => return Ok(()),
            Err(ReconcileError::Kube { source, .. }) if code(&source) == Some(409) => {}
            Err(ReconcileError::Kube { source, .. }) if code(&source) == Some(404) => {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    Err(ReconcileError::Other(format!(
        "Cluster {cluster} kept changing"
    )))
}

/// Writes `Granted` with the cluster reference, unless the status says so already.
async fn grant(
    api: &Api<ClusterRequest>,
    cr: &ClusterRequest,
    cluster: &ObjKey,
    generation: i64,
) -> Result<Next> {
    let status = cr.status.clone().unwrap_or_default();
    let current = status
        .cluster
        .as_ref()
        .map(|c| ObjKey::new(&c.namespace, &c.name));
    if status.common.phase == REQUEST_GRANTED
        && status.common.observed_generation == generation
        && current.as_ref() == Some(cluster)
    {
        return Ok(Next::Done);
    }
    let message = format!("granted cluster {cluster}");
    let patch = json!({"status": {
        "phase": REQUEST_GRANTED,
        "observedGeneration": generation,
        "cluster": {"name": cluster.name, "namespace": cluster.namespace},
        "conditions": [condition(CONDITION_GRANTED, true, "Granted", &message, generation)],
    }});
    api.patch_status(
        &cr.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .ctx(|| format!("granting ClusterRequest {}", cr.name_any()))?;
    Ok(Next::Done)
}

/// Writes `Denied` with a reason, unless the status says so already.
async fn deny(
    api: &Api<ClusterRequest>,
    cr: &ClusterRequest,
    reason: &str,
    message: &str,
) -> Result<Next> {
    let generation = cr.metadata.generation.unwrap_or(0);
    let status = cr.status.clone().unwrap_or_default();
    let Some(patch) = denial(&status.common, generation, reason, message) else {
        return Ok(Next::Done);
    };
    api.patch_status(
        &cr.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .ctx(|| format!("denying ClusterRequest {}", cr.name_any()))?;
    Ok(Next::Done)
}

/// Deletion: release the cluster (deleting it when it was the last request and is marked
/// `delete-without-requests`), wait for it to go when `waitForClusterDeletion`, then let the
/// request go.
async fn delete_request(
    sh: &Arc<Shared>,
    api: &Api<ClusterRequest>,
    cr: &ClusterRequest,
) -> Result<Next> {
    if !cr
        .finalizers()
        .iter()
        .any(|f| f == CLUSTER_ACCESS_FINALIZER)
    {
        return Ok(Next::Done);
    }
    let uid = cr.uid().unwrap_or_default();
    let cluster = sh.hosted.lock().holding(&uid).cloned().or_else(|| {
        cr.status
            .as_ref()
            .and_then(|s| s.cluster.as_ref())
            .map(|c| ObjKey::new(&c.namespace, &c.name))
    });
    if let Some(cluster) = cluster {
        // The finalizer goes first: while it is there the request still holds the cluster in
        // memory too, so a retry after a failed removal finds the cluster again.
        remove_request_finalizer(sh, &cluster, &uid).await?;
        let (empty, exclusive, fixed) = {
            let mut hosted = sh.hosted.lock();
            match hosted.release(&cluster, &uid) {
                Some(h) => {
                    let empty = h.requests().is_empty();
                    if empty && !h.fixed {
                        h.deleting = true;
                    }
                    (empty, h.sharing == Sharing::Exclusive, h.fixed)
                }
                None => (false, false, true),
            }
        };
        let capi = Api::<Cluster>::namespaced(sh.platform.clone(), &cluster.namespace);
        let object = capi
            .get_opt(&cluster.name)
            .await
            .ctx(|| format!("reading Cluster {cluster}"))?;
        if let Some(obj) = &object
            && empty
            && !fixed
            && obj
                .labels()
                .get(DELETE_WITHOUT_REQUESTS_LABEL)
                .map(String::as_str)
                == Some("true")
            && obj.metadata.deletion_timestamp.is_none()
        {
            match capi.delete(&cluster.name, &Default::default()).await {
                Ok(_) => {}
                Err(e) if code(&e) == Some(404) => {}
                Err(e) => return Err(e).ctx(|| format!("deleting Cluster {cluster}")),
            }
        }
        let wait = cr.spec.wait_for_cluster_deletion.unwrap_or(exclusive);
        if wait && empty && !fixed && object.is_some() {
            // The Cluster's deletion event wakes this request again.
            return Ok(Next::Done);
        }
    }
    if let Some(fins) = without_finalizer(cr, CLUSTER_ACCESS_FINALIZER) {
        match set_finalizers(api, cr, fins).await {
            Ok(_) => {}
            Err(ReconcileError::Kube { source, .. }) if code(&source) == Some(404) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Next::Done)
}

/// Handles one Cluster object: when it is being deleted and no request holds it any more, stop
/// serving the embedded cluster and let the object go.
pub(crate) async fn reconcile_cluster(sh: &Arc<Shared>, key: &ObjKey) -> Result<Next> {
    let obj = sh.stores.clusters.get(&key.oref());
    let deleting = match &obj {
        None => true,
        Some(c) => c.metadata.deletion_timestamp.is_some(),
    };
    if !deleting {
        return Ok(Next::Done);
    }
    if let Some(c) = &obj
        && c.finalizers()
            .iter()
            .any(|f| f.starts_with(REQUEST_FINALIZER_ON_CLUSTER_PREFIX))
    {
        // Requests still hold it; their deletion removes their finalizers.
        return Ok(Next::Done);
    }
    let removed = {
        let mut hosted = sh.hosted.lock();
        match hosted.get(key) {
            Some(h) if !h.fixed => hosted.remove(key),
            _ => None,
        }
    };
    if let Some(h) = removed {
        h.handle.shut_down().await;
        sh.namespaces_ensured.lock().retain(|(c, _)| c != key);
    }
    if let Some(c) = obj
        && let Some(fins) = without_finalizer(c.as_ref(), CLUSTER_PROVIDER_FINALIZER)
    {
        let api = Api::<Cluster>::namespaced(sh.platform.clone(), &key.namespace);
        match set_finalizers(&api, c.as_ref(), fins).await {
            Ok(_) => {}
            Err(ReconcileError::Kube { source, .. }) if code(&source) == Some(404) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Next::Done)
}
