//! APIExports: the identity Secret and `status.identityHash`, the auto-created endpoint slice, and
//! propagation of changes (a swapped schema) to every binding.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};

use super::conditions::{self, Cond, Severity};
use super::{ExportKey, Item, ObjRef, Outcome};
use crate::error::ApiError;
use crate::kcp::apis;
use crate::kcp::names;
use crate::kcp::server::KcpInner;
use crate::storage;

/// The namespace of identity Secrets in the export's workspace.
pub(crate) const IDENTITY_NAMESPACE: &str = "kcp-system";
/// The annotation that turns off the automatic endpoint slice.
pub(crate) const SKIP_ENDPOINTSLICE_ANNOTATION: &str = "apiexports.apis.kcp.io/skip-endpointslice";

fn forget_identity(inner: &KcpInner, key: &ExportKey) {
    let mut st = inner.state.lock();
    let before = st.identities.len();
    st.identities.retain(|_, k| k != key);
    if st.identities.len() != before {
        st.identity_gen += 1;
    }
}

/// Reconciles one APIExport.
pub(super) fn reconcile(inner: &Arc<KcpInner>, r: &ObjRef) -> Result<Outcome, ApiError> {
    let (si, cluster, name) = r;
    let key: ExportKey = (cluster.clone(), name.clone());
    let Some(ss) = inner.shard(*si) else {
        return Ok(Outcome::default());
    };
    let info = apis::apiexports();
    let api = ss.shard.api(cluster);
    let export = match api.get(&info, "", name) {
        Ok(e) => e,
        Err(e) if e.code == 404 => {
            forget_identity(inner, &key);
            let follow = inner.state.lock().dependents(&key);
            return Ok(Outcome {
                retry: None,
                follow,
            });
        }
        Err(e) => return Err(e),
    };
    let v = export.value();
    // The identity: a Secret `kcp-system/<export>` with 256 random bits under `key`, unless the
    // export names its own.
    let (secret_ns, secret_name) = match v.pointer("/spec/identity/secretRef") {
        Some(r) => (
            r.get("namespace")
                .and_then(Value::as_str)
                .unwrap_or(IDENTITY_NAMESPACE)
                .to_string(),
            r.get("name")
                .and_then(Value::as_str)
                .unwrap_or(name)
                .to_string(),
        ),
        None => {
            let n = name.clone();
            api.modify(&info, "", name, None, |v| {
                if v.pointer("/spec/identity/secretRef").is_some() {
                    return Ok(false);
                }
                v["spec"]["identity"] =
                    json!({"secretRef": {"namespace": IDENTITY_NAMESPACE, "name": n}});
                Ok(true)
            })?;
            (IDENTITY_NAMESPACE.to_string(), name.clone())
        }
    };
    let namespaces = storage::core("namespaces");
    if api.get(&namespaces, "", &secret_ns).is_err() {
        match api.create(
            &namespaces,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": secret_ns}}),
        ) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    let secrets = storage::core("secrets");
    let secret = match api.get(&secrets, &secret_ns, &secret_name) {
        Ok(s) => s,
        Err(e) if e.code == 404 => api.create(
            &secrets,
            &secret_ns,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": secret_name, "namespace": secret_ns},
                "type": "Opaque",
                "stringData": {"key": names::random_identity_key()},
            }),
        )?,
        Err(e) => return Err(e),
    };
    let key_bytes = secret
        .value()
        .pointer("/data/key")
        .and_then(Value::as_str)
        .and_then(|k| base64::engine::general_purpose::STANDARD.decode(k).ok());
    let hash = key_bytes.map(|k| names::identity_hash(&k));
    let current = v
        .pointer("/status/identityHash")
        .and_then(Value::as_str)
        .map(str::to_string);
    api.modify(&info, "", name, Some("status"), |v| {
        let mut status = v.get("status").cloned().unwrap_or(json!({}));
        let before = status.clone();
        match (&hash, &current) {
            (None, _) => conditions::set(
                &mut status,
                &Cond::fail(
                    "IdentityValid",
                    "IdentityVerificationFailed",
                    Severity::Error,
                    format!("secret {secret_ns}/{secret_name} has no valid data.key"),
                ),
            ),
            (Some(h), Some(c)) if !c.is_empty() && c != h => conditions::set(
                &mut status,
                &Cond::fail(
                    "IdentityValid",
                    "IdentityVerificationFailed",
                    Severity::Error,
                    "hash mismatch: identity secret hash must match status.identityHash".into(),
                ),
            ),
            (Some(h), _) => {
                status["identityHash"] = json!(h);
                conditions::set(&mut status, &Cond::ok("IdentityValid"));
            }
        }
        v["status"] = status.clone();
        Ok(status != before)
    })?;
    let identity = current.filter(|c| !c.is_empty()).or(hash);
    if let Some(h) = identity {
        let mut st = inner.state.lock();
        if st.identities.get(&h) != Some(&key) {
            st.identities.insert(h, key.clone());
            st.identity_gen += 1;
        }
    }
    // The endpoint slice named like the export, owned by it.
    let skip = v
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SKIP_ENDPOINTSLICE_ANNOTATION))
        .is_some();
    let mut follow = Vec::new();
    if !skip {
        let slices = apis::endpointslices();
        if api.get(&slices, "", name).is_err() {
            let path = inner.path_of(cluster).unwrap_or_else(|| cluster.clone());
            match api.create(
                &slices,
                "",
                json!({
                    "apiVersion": "apis.kcp.io/v1alpha1",
                    "kind": "APIExportEndpointSlice",
                    "metadata": {
                        "name": name,
                        "ownerReferences": [{
                            "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                            "name": name, "uid": &*export.uid,
                            "controller": true, "blockOwnerDeletion": true,
                        }],
                    },
                    "spec": {"export": {"path": &*path, "name": name}},
                }),
            ) {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
            follow.push(Item::Slice((*si, cluster.clone(), name.clone())));
        }
    }
    follow.extend(inner.state.lock().dependents(&key));
    Ok(Outcome {
        retry: None,
        follow,
    })
}

/// A changed APIResourceSchema: the bindings of every export in its workspace that uses it.
pub(super) fn reconcile_schema(inner: &Arc<KcpInner>, r: &ObjRef) -> Result<Outcome, ApiError> {
    let (si, cluster, name) = r;
    let Some(ss) = inner.shard(*si) else {
        return Ok(Outcome::default());
    };
    let api = ss.shard.api(cluster);
    let mut follow = Vec::new();
    let st = inner.state.lock();
    for e in api.list(&apis::apiexports(), None) {
        let uses = e
            .value()
            .pointer("/spec/resources")
            .and_then(Value::as_array)
            .is_some_and(|rs| {
                rs.iter()
                    .any(|r| r.get("schema").and_then(Value::as_str) == Some(name))
            });
        if uses {
            follow.extend(st.dependents(&(cluster.clone(), e.key.name.to_string())));
        }
    }
    Ok(Outcome {
        retry: None,
        follow,
    })
}
