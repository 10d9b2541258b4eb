//! The seam between the write paths and managedFields bookkeeping (owned by the `patch` module):
//! which manager set which fields.

use serde_json::Value;

/// Records a create by `manager`.
pub fn on_create(_obj: &mut Value, _manager: Option<&str>) {}

/// Records an update by `manager` (`sub` is the subresource written).
pub fn on_update(_obj: &mut Value, _old: &Value, _manager: Option<&str>, _sub: Option<&str>) {}
