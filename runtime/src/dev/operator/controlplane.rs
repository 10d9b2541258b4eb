//! The ControlPlane controller, as openmcp-operator's: for a ControlPlane on the onboarding
//! cluster, its `mcp--<uuid>` namespace on the platform cluster and its ClusterRequest (named
//! like the ControlPlane, purpose `mcp`); status Ready once the request is granted. Deletion
//! deletes the ControlPlane's Service API objects of every kind in
//! `ServiceProvider.status.resources` and waits for them to go, then its ClusterRequests, then
//! the namespace, then lets the ControlPlane go.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::scheduler::condition;
use super::{
    Context, ObjKey, ReconcileError, Result, Shared, code, operation, set_finalizers,
    watch_until_gone, without_finalizer,
};
use crate::dev::queue::Next;
use crate::openmcp::clusters::ClusterRequestSpec;
use crate::openmcp::constants::{
    CLUSTER_REQUEST_FINALIZER_PREFIX, CONDITION_ALL_CLUSTER_REQUESTS_DELETED,
    CONDITION_ALL_SERVICES_DELETED, CONDITION_CLUSTER_REQUEST_READY, MANAGED_BY_LABEL,
    MCP_FINALIZER, MCP_NAME_LABEL, MCP_NAMESPACE_LABEL, PHASE_PROGRESSING, PHASE_READY,
    PHASE_TERMINATING, PURPOSE_MCP,
};
use crate::openmcp::naming::stable_mcp_namespace;
use crate::openmcp::{ClusterRequest, ControlPlane};

/// `openmcp.cloud/managed-by` of the namespace and ClusterRequest a ControlPlane gets.
pub const CONTROLLER_NAME: &str = "ManagedControlPlane";

fn mcp_labels(cp: &ControlPlane) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MCP_NAME_LABEL.to_string(), cp.name_any()),
        (
            MCP_NAMESPACE_LABEL.to_string(),
            cp.namespace().unwrap_or_default(),
        ),
        (MANAGED_BY_LABEL.to_string(), CONTROLLER_NAME.to_string()),
    ])
}

/// Handles one ControlPlane.
pub(crate) async fn reconcile(sh: &Arc<Shared>, key: &ObjKey) -> Result<Next> {
    let Some(cp) = sh.stores.control_planes.get(&key.oref()) else {
        return Ok(Next::Done);
    };
    let api = Api::<ControlPlane>::namespaced(sh.onboarding.clone(), &key.namespace);
    if operation(&api, cp.as_ref()).await? {
        return Ok(Next::Done);
    }
    let platform_ns = stable_mcp_namespace(&key.name, &key.namespace)
        .map_err(|e| ReconcileError::Other(e.to_string()))?;
    if cp.metadata.deletion_timestamp.is_some() {
        return delete(sh, &api, cp.as_ref(), &platform_ns).await;
    }

    // Finalizers: the controller's own and one per ClusterRequest.
    let mut fins = cp.finalizers().to_vec();
    let request_fin = format!("{CLUSTER_REQUEST_FINALIZER_PREFIX}{}", key.name);
    let mut changed = false;
    for f in [MCP_FINALIZER.to_string(), request_fin] {
        if !fins.contains(&f) {
            fins.push(f);
            changed = true;
        }
    }
    let cp = if changed {
        set_finalizers(&api, cp.as_ref(), fins).await?
    } else {
        cp.as_ref().clone()
    };

    // The tenant namespace; a provider may have created it first, so only the labels are
    // ensured then.
    let labels = mcp_labels(&cp);
    let namespaces = Api::<Namespace>::all(sh.platform.clone());
    let existing = match sh
        .stores
        .namespaces
        .get(&ObjKey::new("", &platform_ns).oref_cluster())
    {
        Some(ns) => Some(ns.as_ref().clone()),
        None => namespaces
            .get_opt(&platform_ns)
            .await
            .ctx(|| format!("reading namespace {platform_ns}"))?,
    };
    match existing {
        None => {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(platform_ns.clone()),
                    labels: Some(labels.clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match namespaces.create(&PostParams::default(), &ns).await {
                Ok(_) => {}
                Err(e) if code(&e) == Some(409) => {
                    label_namespace(&namespaces, &platform_ns, &labels).await?
                }
                Err(e) => return Err(e).ctx(|| format!("creating namespace {platform_ns}")),
            }
        }
        Some(ns) if labels.iter().any(|(k, v)| ns.labels().get(k) != Some(v)) => {
            label_namespace(&namespaces, &platform_ns, &labels).await?;
        }
        Some(_) => {}
    }

    // The ClusterRequest, named like the ControlPlane.
    let crs = Api::<ClusterRequest>::namespaced(sh.platform.clone(), &platform_ns);
    let cr_key = ObjKey::new(&platform_ns, &key.name);
    let cr = match sh.stores.cluster_requests.get(&cr_key.oref()) {
        Some(cr) => Some(cr.as_ref().clone()),
        None => crs
            .get_opt(&key.name)
            .await
            .ctx(|| format!("reading ClusterRequest {cr_key}"))?,
    };
    let cr = match cr {
        Some(cr) => cr,
        None => {
            let mut cr = ClusterRequest::new(
                &key.name,
                ClusterRequestSpec {
                    purpose: PURPOSE_MCP.into(),
                    wait_for_cluster_deletion: Some(true),
                },
            );
            cr.metadata.namespace = Some(platform_ns.clone());
            cr.metadata.labels = Some(labels);
            match crs.create(&PostParams::default(), &cr).await {
                Ok(cr) => cr,
                Err(e) if code(&e) == Some(409) => return Ok(Next::Done),
                Err(e) => return Err(e).ctx(|| format!("creating ClusterRequest {cr_key}")),
            }
        }
    };

    let generation = cp.metadata.generation.unwrap_or(0);
    let granted = cr.is_granted();
    let (phase, status, reason, message) = if granted {
        (
            PHASE_READY,
            true,
            "ClusterRequestGranted",
            "ClusterRequest is ready",
        )
    } else {
        (
            PHASE_PROGRESSING,
            false,
            "WaitingForClusterRequest",
            "ClusterRequest is not ready yet",
        )
    };
    write_status(
        &api,
        &cp,
        phase,
        CONDITION_CLUSTER_REQUEST_READY,
        status,
        reason,
        message,
        generation,
    )
    .await?;
    Ok(Next::Done)
}

trait ClusterScoped {
    fn oref_cluster(&self) -> kube::runtime::reflector::ObjectRef<Namespace>;
}

impl ClusterScoped for ObjKey {
    fn oref_cluster(&self) -> kube::runtime::reflector::ObjectRef<Namespace> {
        kube::runtime::reflector::ObjectRef::new(&self.name)
    }
}

async fn label_namespace(
    api: &Api<Namespace>,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<()> {
    let patch = json!({"metadata": {"labels": labels}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .ctx(|| format!("labelling namespace {name}"))?;
    Ok(())
}

/// Writes phase and one condition, unless they are there already.
#[allow(clippy::too_many_arguments)]
async fn write_status(
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    phase: &str,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: i64,
) -> Result<()> {
    let current = cp.status.clone().unwrap_or_default();
    let same = current.common.phase == phase
        && current.common.observed_generation == generation
        && super::scheduler::has_condition(
            &current.common.conditions,
            type_,
            status,
            reason,
            message,
        );
    if same {
        return Ok(());
    }
    let mut conditions: Vec<serde_json::Value> = current
        .common
        .conditions
        .iter()
        .filter(|c| c.type_ != type_)
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    conditions.push(condition(type_, status, reason, message, generation));
    let patch = json!({"status": {
        "phase": phase,
        "observedGeneration": generation,
        "conditions": conditions,
    }});
    match api
        .patch_status(
            &cp.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Gone while we wrote: nothing left to report on.
        Err(e) if code(&e) == Some(404) => Ok(()),
        Err(e) => Err(e).ctx(|| format!("writing the status of ControlPlane {}", cp.name_any())),
    }
}

/// The deletion cascade of openmcp-operator's ControlPlane controller.
async fn delete(
    sh: &Arc<Shared>,
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    platform_ns: &str,
) -> Result<Next> {
    if !cp.finalizers().iter().any(|f| f == MCP_FINALIZER) {
        return Ok(Next::Done);
    }
    let key = ObjKey::new(cp.namespace().unwrap_or_default(), cp.name_any());
    let generation = cp.metadata.generation.unwrap_or(0);

    // 1. Service API objects named like the ControlPlane, of every registered kind.
    let mut remaining: Vec<String> = Vec::new();
    for sp in sh.stores.service_providers.state() {
        let Some(status) = &sp.status else { continue };
        for gvk in &status.resources {
            let Some(objs) =
                super::service_api(sh, &gvk.group, &gvk.version, &gvk.kind, &key.namespace).await?
            else {
                continue;
            };
            let obj = match objs.get_opt(&key.name).await {
                Ok(o) => o,
                Err(e) if code(&e) == Some(404) => None,
                Err(e) => return Err(e).ctx(|| format!("reading {} {key}", gvk.kind)),
            };
            let Some(obj) = obj else { continue };
            if obj.metadata.deletion_timestamp.is_none() {
                match objs.delete(&key.name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(e) if code(&e) == Some(404) => continue,
                    Err(e) => return Err(e).ctx(|| format!("deleting {} {key}", gvk.kind)),
                }
            }
            let api_version = format!("{}/{}", gvk.group, gvk.version);
            remaining.push(format!("[{}]{}.{}", sp.name_any(), gvk.kind, api_version));
            watch_until_gone(
                sh,
                key.clone(),
                objs,
                key.name.clone(),
                api_version,
                gvk.kind.clone(),
            );
        }
    }
    if !remaining.is_empty() {
        let msg = format!(
            "Waiting for the following service resources to be deleted: {}",
            remaining.join(", ")
        );
        write_status(
            api,
            cp,
            PHASE_TERMINATING,
            CONDITION_ALL_SERVICES_DELETED,
            false,
            "WaitingForServiceDeletion",
            &msg,
            generation,
        )
        .await?;
        return Ok(Next::Done);
    }

    // 2. Its ClusterRequests.
    let crs = Api::<ClusterRequest>::namespaced(sh.platform.clone(), platform_ns);
    let mine: Vec<_> = sh
        .stores
        .cluster_requests
        .state()
        .into_iter()
        .filter(|cr| {
            cr.namespace().as_deref() == Some(platform_ns)
                && cr.labels().get(MCP_NAME_LABEL) == Some(&key.name)
                && cr.labels().get(MCP_NAMESPACE_LABEL) == Some(&key.namespace)
        })
        .collect();
    for cr in &mine {
        if cr.metadata.deletion_timestamp.is_none() {
            match crs.delete(&cr.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if code(&e) == Some(404) => {}
                Err(e) => {
                    return Err(e).ctx(|| format!("deleting ClusterRequest {}", cr.name_any()));
                }
            }
        }
    }
    if !mine.is_empty() {
        let names: Vec<String> = mine.iter().map(|c| c.name_any()).collect();
        let msg = format!(
            "Waiting for the following ClusterRequests to be deleted: {}",
            names.join(", ")
        );
        write_status(
            api,
            cp,
            PHASE_TERMINATING,
            CONDITION_ALL_CLUSTER_REQUESTS_DELETED,
            false,
            "WaitingForClusterRequestDeletion",
            &msg,
            generation,
        )
        .await?;
        return Ok(Next::Done);
    }
    let cp = match without_finalizer(
        cp,
        &format!("{CLUSTER_REQUEST_FINALIZER_PREFIX}{}", key.name),
    ) {
        Some(fins) => set_finalizers(api, cp, fins).await?,
        None => cp.clone(),
    };

    // 3. The tenant namespace, if it is ours.
    let namespaces = Api::<Namespace>::all(sh.platform.clone());
    if let Some(ns) = namespaces
        .get_opt(platform_ns)
        .await
        .ctx(|| format!("reading namespace {platform_ns}"))?
    {
        let ours = mcp_labels(&cp)
            .iter()
            .all(|(k, v)| ns.labels().get(k) == Some(v));
        if ours {
            if ns.metadata.deletion_timestamp.is_none() {
                match namespaces
                    .delete(platform_ns, &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(e) if code(&e) == Some(404) => {}
                    Err(e) => return Err(e).ctx(|| format!("deleting namespace {platform_ns}")),
                }
            }
            // The namespace watch wakes us when it is gone.
            return Ok(Next::Done);
        }
    }

    // 4. Let the ControlPlane go.
    if let Some(fins) = without_finalizer(&cp, MCP_FINALIZER) {
        match set_finalizers(api, &cp, fins).await {
            Ok(_) => {}
            Err(ReconcileError::Kube { source, .. }) if code(&source) == Some(404) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Next::Done)
}
