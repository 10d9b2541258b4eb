//! APIExportEndpointSlices: one endpoint per shard that holds at least one APIBinding to the
//! export (every shard when endpoints are published eagerly), each the shard's virtual-workspace
//! URL for the export.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::conditions::{self, Cond, Severity};
use super::{ExportKey, ObjRef, Outcome};
use crate::error::ApiError;
use crate::kcp::apis;
use crate::kcp::server::KcpInner;

fn forget(inner: &KcpInner, r: &ObjRef) {
    let mut st = inner.state.lock();
    if let Some(old) = st.slice_export.remove(r)
        && let Some(set) = st.export_slices.get_mut(&old)
    {
        set.remove(r);
        if set.is_empty() {
            st.export_slices.remove(&old);
        }
    }
}

/// Reconciles one endpoint slice.
pub(super) fn reconcile(inner: &Arc<KcpInner>, r: &ObjRef) -> Result<Outcome, ApiError> {
    let (si, cluster, name) = r;
    let Some(ss) = inner.shard(*si) else {
        return Ok(Outcome::default());
    };
    let info = apis::endpointslices();
    let api = ss.shard.api(cluster);
    let slice = match api.get(&info, "", name) {
        Ok(s) => s,
        Err(e) if e.code == 404 => {
            forget(inner, r);
            return Ok(Outcome::default());
        }
        Err(e) => return Err(e),
    };
    let v = slice.value();
    let path = v
        .pointer("/spec/export/path")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .or_else(|| inner.path_of(cluster).map(|p| p.to_string()))
        .unwrap_or_default();
    let export_name = v
        .pointer("/spec/export/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let entry = inner.resolve(&path);
    let key: Option<ExportKey> = entry
        .as_ref()
        .map(|e| (e.name.clone(), export_name.clone()));
    {
        let mut st = inner.state.lock();
        let old = st.slice_export.get(r).cloned();
        if old != key {
            if let Some(o) = old
                && let Some(set) = st.export_slices.get_mut(&o)
            {
                set.remove(r);
            }
            match &key {
                Some(k) => {
                    st.slice_export.insert(r.clone(), k.clone());
                    st.export_slices
                        .entry(k.clone())
                        .or_default()
                        .insert(r.clone());
                }
                None => {
                    st.slice_export.remove(r);
                }
            }
        }
    }
    let export_exists = entry.as_ref().is_some_and(|e| {
        inner.shard(e.shard).is_some_and(|s| {
            s.shard
                .api(&e.name)
                .get(&apis::apiexports(), "", &export_name)
                .is_ok()
        })
    });
    let mut endpoints = Vec::new();
    if let (Some(k), true) = (&key, export_exists) {
        let eager = inner.publish_eagerly.load(Ordering::SeqCst);
        let counts = inner
            .state
            .lock()
            .export_shards
            .get(k)
            .cloned()
            .unwrap_or_default();
        for s in inner.shards.read().iter() {
            if eager || counts.get(&s.index).is_some_and(|n| *n > 0) {
                endpoints.push(
                    json!({"url": format!("{}/services/apiexport/{}/{}", s.url(), k.0, k.1)}),
                );
            }
        }
    }
    api.modify(&info, "", name, Some("status"), |v| {
        let mut status = v.get("status").cloned().unwrap_or(json!({}));
        let before = status.clone();
        status["endpoints"] = Value::Array(endpoints.clone());
        if export_exists {
            conditions::set(&mut status, &Cond::ok("APIExportValid"));
        } else {
            conditions::set(
                &mut status,
                &Cond::fail(
                    "APIExportValid",
                    "APIExportNotFound",
                    Severity::Error,
                    format!("APIExport {path}:{export_name} not found"),
                ),
            );
        }
        v["status"] = status.clone();
        Ok(status != before)
    })?;
    Ok(Outcome::default())
}
