//! Workspaces: scheduling (a logical cluster name and a shard, by `spec.location.selector` or in
//! turn), initialization (the logical cluster with namespace `default` and its `LogicalCluster`
//! object), Ready, and deletion of everything inside when the Workspace goes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use super::conditions::{self, Cond, Severity};
use super::{ObjRef, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::kcp::apis;
use crate::kcp::names::{self, PATH_ANNOTATION};
use crate::kcp::server::KcpInner;
use crate::shard::{LogicalClusterOptions, Shard};

/// The annotation kcp's scheduler puts on a Workspace naming the shard it was placed on.
pub(crate) const SHARD_ANNOTATION: &str = "internal.tenancy.kcp.io/shard";
/// The finalizer that keeps a Workspace until its logical cluster is gone.
pub(crate) const LOGICALCLUSTER_FINALIZER: &str = "core.kcp.io/logicalcluster";

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Creates the `LogicalCluster` object `cluster` of a new logical cluster, Ready.
pub(crate) fn create_logical_cluster_object(
    shard: &Shard,
    cluster: &Arc<str>,
    path: &str,
    url: &str,
    owner: Option<Value>,
) -> ApiResult<()> {
    let info = apis::logicalclusters();
    let api = shard.api(cluster);
    let mut obj = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": "cluster", "annotations": {PATH_ANNOTATION: path}},
        "spec": {},
    });
    if let Some(o) = owner {
        obj["spec"]["owner"] = o;
    }
    match api.create(&info, "", obj) {
        Ok(_) => {}
        Err(e) if e.code == 409 => {}
        Err(e) => return Err(e),
    }
    api.modify(&info, "", "cluster", Some("status"), |v| {
        let want = json!({"URL": url, "phase": "Ready"});
        if v.pointer("/status/phase") == want.get("phase")
            && v.pointer("/status/URL") == want.get("URL")
        {
            return Ok(false);
        }
        let mut status = v.get("status").cloned().unwrap_or(json!({}));
        status["URL"] = want["URL"].clone();
        status["phase"] = want["phase"].clone();
        v["status"] = status;
        Ok(true)
    })?;
    Ok(())
}

/// Removes a workspace's logical cluster (and, through the store events it causes, its nested
/// workspaces).
fn remove(inner: &KcpInner, r: &ObjRef) {
    let known = inner.state.lock().workspaces.remove(r);
    let cluster = known.or_else(|| {
        let parent = inner.path_of(&r.1)?;
        let path = format!("{parent}:{}", r.2);
        inner.index.read().by_path(&path).map(|e| e.name.clone())
    });
    let Some(cluster) = cluster else { return };
    let Some(entry) = inner.index.write().remove(&cluster) else {
        return;
    };
    if let Some(ss) = inner.shard(entry.shard) {
        ss.bindings.write().remove(&cluster);
        ss.shard.remove_logical_cluster(&cluster);
    }
    inner.index_changed.notify_waiters();
}

fn matches_selector(labels: &BTreeMap<String, String>, selector: &Value) -> bool {
    selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str())
}

/// Reconciles one Workspace.
pub(super) fn reconcile(inner: &Arc<KcpInner>, r: &ObjRef) -> Result<Outcome, ApiError> {
    let (si, parent, name) = r;
    let Some(ss) = inner.shard(*si) else {
        return Ok(Outcome::default());
    };
    let info = apis::workspaces();
    let api = ss.shard.api(parent);
    let ws = match api.get(&info, "", name) {
        Ok(w) => w,
        Err(e) if e.code == 404 => {
            remove(inner, r);
            return Ok(Outcome::default());
        }
        Err(e) => return Err(e),
    };
    if ws.deleting {
        remove(inner, r);
        api.modify(&info, "", name, None, |v| {
            let fins = crate::meta::finalizers(v);
            if !fins.iter().any(|f| f == LOGICALCLUSTER_FINALIZER) {
                return Ok(false);
            }
            let rest: Vec<String> = fins
                .into_iter()
                .filter(|f| f != LOGICALCLUSTER_FINALIZER)
                .collect();
            crate::meta::set_meta(v, "finalizers", Some(json!(rest)));
            Ok(true)
        })?;
        return Ok(Outcome::default());
    }
    let Some(parent_path) = inner.path_of(parent) else {
        // The parent is being set up or torn down.
        return Ok(Outcome::retry(Duration::from_millis(100)));
    };
    let path = format!("{parent_path}:{name}");
    let mut v = ws.value();
    if s(&v, "/spec/cluster").is_empty() {
        let selector = v
            .pointer("/spec/location/selector")
            .cloned()
            .unwrap_or(json!({}));
        let shards = inner.shards.read().clone();
        let candidates: Vec<_> = shards
            .iter()
            .filter(|s| matches_selector(&s.labels, &selector))
            .collect();
        if candidates.is_empty() {
            api.modify(&info, "", name, Some("status"), |v| {
                let mut status = v.get("status").cloned().unwrap_or(json!({}));
                let before = status.clone();
                status["phase"] = json!("Scheduling");
                conditions::set(
                    &mut status,
                    &Cond::fail(
                        "WorkspaceScheduled",
                        "Unschedulable",
                        Severity::Error,
                        "No available shards to schedule the workspace".into(),
                    ),
                );
                v["status"] = status.clone();
                Ok(status != before)
            })?;
            return Ok(Outcome::retry(Duration::from_secs(1)));
        }
        let pick = candidates[inner.round_robin.fetch_add(1, Ordering::Relaxed) % candidates.len()];
        let cluster = loop {
            let c = names::random_cluster_name();
            if inner.index.read().by_name(&c).is_none() {
                break c;
            }
        };
        let url = format!("{}/clusters/{path}", inner.front_url());
        let shard_name = pick.name.clone();
        api.modify(&info, "", name, None, |v| {
            if !s(v, "/spec/cluster").is_empty() {
                return Ok(false);
            }
            v["spec"]["cluster"] = json!(cluster);
            v["spec"]["URL"] = json!(url);
            if v.pointer("/spec/type").is_none() {
                v["spec"]["type"] = json!({"name": "universal", "path": "root"});
            }
            let m = crate::meta::metadata_mut(v);
            let ann = m.entry("annotations").or_insert_with(|| json!({}));
            ann[SHARD_ANNOTATION] = json!(shard_name);
            let mut fins = crate::meta::finalizers(v);
            if !fins.iter().any(|f| f == LOGICALCLUSTER_FINALIZER) {
                fins.push(LOGICALCLUSTER_FINALIZER.into());
            }
            crate::meta::set_meta(v, "finalizers", Some(json!(fins)));
            Ok(true)
        })?;
        v = api.get(&info, "", name)?.value();
    }
    let cluster: Arc<str> = s(&v, "/spec/cluster").into();
    let url = s(&v, "/spec/URL").to_string();
    if s(&v, "/status/phase") == "Ready" && inner.index.read().by_name(&cluster).is_some() {
        inner.state.lock().workspaces.insert(r.clone(), cluster);
        return Ok(Outcome::default());
    }
    let shard_name = v
        .pointer(&format!(
            "/metadata/annotations/{}",
            SHARD_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let target = inner
        .shards
        .read()
        .iter()
        .find(|s| s.name == shard_name)
        .cloned()
        .or_else(|| inner.shard(0));
    let Some(target) = target else {
        return Ok(Outcome::retry(Duration::from_secs(1)));
    };
    let lc = target.shard.add_logical_cluster(
        &cluster,
        &LogicalClusterOptions {
            namespaces: vec!["default".into()],
        },
    )?;
    let owner = json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "resource": "workspaces",
        "name": name,
        "cluster": &**parent,
        "uid": &*ws.uid,
    });
    create_logical_cluster_object(&target.shard, &lc, &path, &url, Some(owner))?;
    inner.state.lock().workspaces.insert(r.clone(), lc.clone());
    inner.index.write().insert(&lc, target.index, &path);
    api.modify(&info, "", name, Some("status"), |v| {
        let mut status = v.get("status").cloned().unwrap_or(json!({}));
        let before = status.clone();
        status["phase"] = json!("Ready");
        conditions::set(&mut status, &Cond::ok("WorkspaceScheduled"));
        conditions::set(&mut status, &Cond::ok("WorkspaceInitialized"));
        v["status"] = status.clone();
        Ok(status != before)
    })?;
    inner.index_changed.notify_waiters();
    Ok(Outcome::default())
}
