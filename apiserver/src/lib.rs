//! Embedded Kubernetes- and kcp-compatible API server.

pub mod auth;
pub mod patch;
