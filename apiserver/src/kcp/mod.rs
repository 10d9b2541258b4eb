//! kcp mode: workspaces (logical clusters) on shards, APIExports and APIBindings, and the APIExport
//! virtual workspace, with kcp's wire behaviour (`shared/reference/kcp.md` is the specification).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use service_provider_apiserver::{ControlPlane, kcp::KcpOptions};
//!
//! let cp = ControlPlane::new();
//! let kcp = cp.add_kcp("kcp", KcpOptions::default()).await?;
//! let provider = kcp.create_workspace("root:provider").await?;  // waits until Ready
//! let client = kcp.client(&provider.path);                      // admin in the workspace
//! println!("{}", provider.url);                                 // <front>/clusters/root:provider
//! # let _ = client; Ok(()) }
//! ```
//!
//! # How it fits the server core
//! - A kcp shard is an ordinary [`crate::shard::Shard`] with kcp's built-in resources
//!   ([`apis`]), `kcp.io/cluster` stamped on every object, kcp token claims and per-workspace
//!   RBAC; its logical clusters are the workspaces.
//! - [`routing`] resolves `/clusters/<path|name|*>` and `/services/apiexport/…` to a target and a
//!   surface ([`surface`] for workspaces, [`vw`] for virtual workspaces) in front of the common
//!   handler.
//! - [`admission`] and [`controller`] implement kcp's admission plugins and controllers (workspace
//!   scheduling, export identity, endpoint slices, bindings) on the shared indexes of
//!   [`server::Kcp`].
//! - Bound resources are stored per (export identity, logical cluster); their definitions are
//!   built once per schema and shared by every workspace.

pub(crate) mod admission;
pub(crate) mod apis;
pub(crate) mod controller;
pub(crate) mod convert;
pub(crate) mod index;
pub(crate) mod names;
pub(crate) mod routing;
pub(crate) mod server;
pub(crate) mod surface;
pub(crate) mod vw;

pub use routing::{VIRTUAL_WORKSPACE_SURFACE, WORKSPACE_SURFACE};
pub use server::{Kcp, KcpError, KcpOptions, KcpShard, WorkspaceInfo};
