//! Where Service API objects come from: standard mode (the onboarding cluster, tenants reached
//! through openMCP AccessRequests) and kcp mode (consumer workspaces bound to the APIExport).

pub mod kcp;
pub(crate) mod standard;
