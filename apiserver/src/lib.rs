//! Embedded Kubernetes- and kcp-compatible API server.
