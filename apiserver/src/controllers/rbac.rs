//! RBAC upkeep: the authorizer of each logical cluster follows every RBAC write, ClusterRole
//! aggregation is written back to the aggregating roles (kube-controller-manager's clusterrole
//! aggregation controller), escalation is refused at admission, and new clusters get kube-apiserver's
//! bootstrap roles and bindings.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::admission::{AdmissionPlugin, Attributes, Operation};
use crate::auth::RbacKind;
use crate::error::ApiResult;
use crate::registry::ResourceInfo;
use crate::shard::Shard;
use crate::storage;
use crate::store::{Event, EventType};

/// Indexes a committed RBAC write and writes back changed aggregated ClusterRoles.
pub(crate) fn written(shard: &Shard, cluster: &Arc<str>, info: &ResourceInfo, ev: &Event) {
    let obj = (ev.kind != EventType::Deleted).then(|| ev.object.value());
    let k = &ev.object.key;
    shard.auth.rbac_written(
        cluster,
        &info.resource,
        &k.namespace,
        &k.name,
        ev.rv,
        obj.as_ref(),
    );
    if info.resource == "clusterroles" {
        aggregate(shard, cluster);
    }
}

fn aggregate(shard: &Shard, cluster: &Arc<str>) {
    let updates = shard.auth.rbac(cluster).aggregation_updates();
    if updates.is_empty() {
        return;
    }
    let info = storage::builtin("rbac.authorization.k8s.io", "v1", "clusterroles");
    let api = shard.api(cluster);
    for (name, rules) in updates {
        let rules = serde_json::to_value(&rules).unwrap_or_else(|_| json!([]));
        let _ = api.modify(&info, "", &name, None, |v| {
            if v.get("rules") == Some(&rules) {
                return Ok(false);
            }
            v["rules"] = rules.clone();
            Ok(true)
        });
    }
}

/// Creates kube-apiserver's bootstrap ClusterRoles and ClusterRoleBindings in a logical cluster.
pub(crate) fn bootstrap(shard: &Shard, cluster: &Arc<str>) -> ApiResult<()> {
    let api = shard.api(cluster);
    for (kind, obj) in crate::auth::bootstrap::objects() {
        let resource = match kind {
            RbacKind::ClusterRole => "clusterroles",
            _ => "clusterrolebindings",
        };
        let info = storage::builtin("rbac.authorization.k8s.io", "v1", resource);
        match api.create(&info, "", obj) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Refuses Roles and bindings that would grant more than the writer holds (kube-apiserver's RBAC
/// escalation check), unless the writer has `escalate`/`bind`.
pub(crate) struct EscalationAdmission;

impl AdmissionPlugin for EscalationAdmission {
    fn admit(&self, shard: &Shard, a: &mut Attributes<'_>) -> ApiResult<()> {
        if a.info.group != "rbac.authorization.k8s.io"
            || !matches!(a.operation, Operation::Create | Operation::Update)
        {
            return Ok(());
        }
        if a.user.is_privileged() {
            return Ok(());
        }
        let Some(kind) = RbacKind::from_resource(&a.info.resource) else {
            return Ok(());
        };
        let Some(obj) = a.object.as_deref() else {
            return Ok(());
        };
        let obj: &Value = obj;
        shard
            .auth
            .rbac(a.cluster)
            .check_escalation(a.user, kind, a.namespace, a.name, obj)?;
        Ok(())
    }
}
