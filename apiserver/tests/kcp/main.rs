//! kcp mode as `kube::Client` (and `kubectl`) see it: workspaces, the wildcard, APIExports and
//! APIBindings, the APIExport virtual workspace, tokens and shards.

mod apis;
mod common;
mod kubectl;
mod shards;
mod tokens;
mod vw;
mod workspaces;
