//! Behaviour of the embedded API server as `kube::Client` sees it.

mod apply;
mod builtins;
mod certs;
mod common;
mod conversion;
mod crd;
mod crud;
mod delete;
mod discovery;
mod faults;
#[path = "../support/http2.rs"]
mod http2;
mod list;
mod multi;
mod protobuf;
mod rbac;
mod validation;
mod watch;
mod wire;
