//! kcp mode: the same provider serves tenants in kcp workspaces that bind its APIExport.
//!
//! - [`settings`], [`flags`]: how the mode is switched on and configured at start-up.
//! - [`provider_workspace`]: the provider's own connection and the clients derived from it.
//! - [`provision`]: the content-addressed APIResourceSchema and the APIExport upsert.
//! - [`source`]: endpoint slice → wildcard watches through the virtual workspace → engaged
//!   workspaces and their objects, keyed by logical cluster; the [`Source`](crate::controller::Source)
//!   the reconcile core runs on.
//! - [`workspaces`]: engagement, the per-workspace object index, and who serves each workspace.
//! - [`credentials`]: the ServiceAccount and minted tokens per workspace (or supplied ones).
//! - [`guard`]: the author's workspace client: token refresh on 401, workloads explained.
//!
//! The `apis.kcp.io` types it talks in live in [`crate::kcp_api`].

pub mod credentials;
pub mod flags;
pub mod guard;
pub mod provider_workspace;
pub mod provision;
pub mod settings;
pub mod source;
pub mod workspaces;

pub use provider_workspace::ProviderWorkspace;
pub use settings::{KcpSettings, Sharding, WorkspaceCredentials};
pub use source::KcpSource;

/// The annotation kcp puts on every object: the logical cluster it lives in.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";
