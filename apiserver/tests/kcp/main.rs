//! kcp mode as `kube::Client` (and `kubectl`) see it: workspaces, the wildcard, APIExports and
//! APIBindings, the APIExport virtual workspace, tokens and shards.

mod apis;
mod common;
#[path = "../support/http2.rs"]
mod http2;
mod kubectl;
mod shards;
mod tokens;
mod vw;
mod workspaces;
