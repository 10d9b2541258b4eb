//! Admission: a chain of plugins every write passes through after defaulting and before validation
//! and storage. Modes extend it (kcp adds its own plugins); the built-in chain holds
//! `NamespaceLifecycle`.

use std::sync::Arc;

use serde_json::Value;

use crate::auth::UserInfo;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceInfo;
use crate::shard::Shard;

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// create (also server-side apply creating an object)
    Create,
    /// update, patch
    Update,
    /// delete
    Delete,
}

/// What a plugin sees and may change.
pub(crate) struct Attributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// The resource (in the version of the request).
    pub info: &'a ResourceInfo,
    /// The subresource, if any (`status`, `scale`).
    pub subresource: Option<&'a str>,
    /// The logical cluster.
    pub cluster: &'a str,
    /// The namespace (empty for cluster-scoped resources).
    pub namespace: &'a str,
    /// The object name.
    pub name: &'a str,
    /// The requesting user.
    pub user: &'a UserInfo,
    /// The new object (create, update); mutating plugins change it.
    pub object: Option<&'a mut Value>,
    /// The current object (update, delete).
    pub old: Option<&'a Value>,
}

/// An admission plugin (mutating and validating in one: it may change `object` or refuse).
pub(crate) trait AdmissionPlugin: Send + Sync {
    /// Admits (possibly after changing the object) or refuses the request.
    fn admit(&self, shard: &Shard, attrs: &mut Attributes<'_>) -> ApiResult<()>;
}

/// The default chain.
pub(crate) fn default_plugins() -> Vec<Arc<dyn AdmissionPlugin>> {
    vec![Arc::new(NamespaceLifecycle)]
}

/// Refuses content in namespaces that do not exist or are being deleted, and the deletion of the
/// namespaces the system needs.
pub(crate) struct NamespaceLifecycle;

/// Namespaces that cannot be deleted.
pub(crate) const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

impl AdmissionPlugin for NamespaceLifecycle {
    fn admit(&self, shard: &Shard, a: &mut Attributes<'_>) -> ApiResult<()> {
        if a.info.group.is_empty() && a.info.resource == "namespaces" {
            if a.operation == Operation::Delete && IMMORTAL_NAMESPACES.contains(&a.name) {
                return Err(ApiError::forbidden(
                    "",
                    "namespaces",
                    a.name,
                    "this namespace may not be deleted",
                ));
            }
            return Ok(());
        }
        if !a.info.namespaced || a.namespace.is_empty() || a.operation != Operation::Create {
            return Ok(());
        }
        // Review-style resources (localsubjectaccessreviews) do not need the namespace to exist.
        if !a.info.stores_objects() {
            return Ok(());
        }
        match shard.namespace_phase(a.cluster, a.namespace) {
            None => Err(ApiError::not_found("", "namespaces", a.namespace)),
            Some(true) => {
                let mut e = ApiError::forbidden(
                    &a.info.group,
                    &a.info.resource,
                    a.name,
                    format!(
                        "unable to create new content in namespace {} because it is being terminated",
                        a.namespace
                    ),
                );
                if let Some(d) = e.details.as_mut() {
                    d["causes"] = serde_json::json!([{
                        "reason": "NamespaceTerminating",
                        "message": format!("namespace {} is being terminated", a.namespace),
                        "field": "metadata.namespace"
                    }]);
                }
                Err(e)
            }
            Some(false) => Ok(()),
        }
    }
}
