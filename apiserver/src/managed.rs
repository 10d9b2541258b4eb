//! managedFields bookkeeping of plain writes (create, update, non-apply patches), delegated to the
//! `patch` module: which manager set which fields.

use serde_json::Value;

use crate::registry::ResourceInfo;

/// Who a write is recorded for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldManager<'a> {
    /// Record the write for this manager (an `Update` entry).
    Record(&'a str),
    /// The object already carries its managedFields (server-side apply computed them).
    Keep,
}

/// Records a create.
pub(crate) fn on_create(info: &ResourceInfo, obj: &mut Value, manager: FieldManager<'_>) {
    if let FieldManager::Record(m) = manager {
        let av = info.api_version();
        let now = crate::meta::now_rfc3339();
        crate::patch::record_update(
            None,
            obj,
            m,
            &info.shape,
            &crate::patching::target(info, &av, None),
            &now,
        );
    }
}

/// Records an update (`sub` is the subresource written).
pub(crate) fn on_update(
    info: &ResourceInfo,
    obj: &mut Value,
    old: &Value,
    manager: FieldManager<'_>,
    sub: Option<&str>,
) {
    if let FieldManager::Record(m) = manager {
        let av = info.api_version();
        let now = crate::meta::now_rfc3339();
        crate::patch::record_update(
            Some(old),
            obj,
            m,
            &info.shape,
            &crate::patching::target(info, &av, sub),
            &now,
        );
    }
}
