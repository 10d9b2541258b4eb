//! The seam between the write paths and managedFields bookkeeping (owned by the `patch` module):
//! which manager set which fields. Server-side apply records its own entries (see
//! [`crate::patching::apply`]); its writes pass no manager here.

use serde_json::Value;

use crate::patch::{self, Target};
use crate::patching::{api_version, shape};
use crate::registry::ResourceInfo;

/// Records a create by `manager` (`None`: not recorded).
pub fn on_create(info: &ResourceInfo, obj: &mut Value, manager: Option<&str>) {
    let Some(manager) = manager else { return };
    let api_version = api_version(info);
    let target = Target {
        api_version: &api_version,
        subresource: None,
        status_subresource: info.status,
    };
    patch::record_update(
        None,
        obj,
        manager,
        &shape(info),
        &target,
        &crate::meta::now_rfc3339(),
    );
}

/// Records an update by `manager` (`sub` is the subresource written; `None` manager: not recorded).
pub fn on_update(
    info: &ResourceInfo,
    obj: &mut Value,
    old: &Value,
    manager: Option<&str>,
    sub: Option<&str>,
) {
    let Some(manager) = manager else { return };
    let api_version = api_version(info);
    let target = Target {
        api_version: &api_version,
        subresource: sub,
        status_subresource: info.status,
    };
    patch::record_update(
        Some(old),
        obj,
        manager,
        &shape(info),
        &target,
        &crate::meta::now_rfc3339(),
    );
}
