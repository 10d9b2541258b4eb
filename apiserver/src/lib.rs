//! Embedded Kubernetes- and kcp-compatible API server for tests, benchmarks and `dev` mode.
//!
//! A small but real API server: storage with resourceVersions and watch history, admission,
//! validation, authorization, and kube-apiserver's wire behaviour, served over HTTPS on 127.0.0.1 so
//! that `kube::Client` and `kubectl` talk to it unchanged.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use service_provider_apiserver::{ClusterOptions, ControlPlane};
//!
//! let cp = ControlPlane::new();
//! let platform = cp.add_cluster("platform", ClusterOptions::default()).await?;
//! let client = platform.client();                 // kube::Client as admin
//! platform.write_kubeconfig("/tmp/platform.kubeconfig")?;
//! platform.faults().inject(service_provider_apiserver::FaultRule::new(503).verb("list").times(1));
//! # let _ = client; Ok(()) }
//! ```
//!
//! # Architecture
//! - [`store`]: one shard's objects (serialized JSON plus indexed fields), its resourceVersion
//!   counter, event history and watch fan-out. Keys are (resource, logical cluster, namespace, name),
//!   so a plain cluster is a shard with one logical cluster and kcp adds more.
//! - [`registry`]: which resources each logical cluster serves (shared built-ins, per-cluster CRDs).
//! - [`storage`]: Kubernetes semantics (strategies, admission, finalizers, deletion) for handlers and
//!   controllers alike; [`controllers`] are tasks reacting to store changes.
//! - [`handler`]: the request handler below URL routing; [`server`]: listeners; [`cluster`]: the
//!   public API.
//! - [`kcp`]: kcp mode — shards of logical clusters (workspaces), APIExports and APIBindings, and
//!   the APIExport virtual workspace, routed in front of the same handler
//!   ([`ControlPlane::add_kcp`]).

pub mod admission;
pub mod auth;
pub mod authn;
pub mod builtin;
pub mod cluster;
pub mod controllers;
pub mod convert;
pub mod error;
pub mod faults;
pub mod handler;
pub mod jsonpath;
pub mod kcp;
pub mod kubeconfig;
pub mod managed;
pub mod meta;
pub mod metrics;
pub mod openapi;
pub mod patch;
pub mod patching;
pub mod protobuf;
mod recording;
pub mod registry;
pub mod request;
pub mod schema;
pub mod selector;
pub mod server;
pub mod shard;
pub mod storage;
pub mod store;
pub mod strategy;
pub mod tls;
pub mod validation;
pub mod wait;

pub use cluster::{ApiServer, Cluster, ClusterOptions, ControlPlane};
pub use error::ApiError;
pub use faults::{FaultRule, Faults};
pub use kcp::{Kcp, KcpOptions};
pub use metrics::{CounterKey, Counters, LoggedRequest};
pub use shard::{LogicalClusterOptions, Shard, ShardOptions};
pub use wait::{WaitError, conditions, wait_for};

/// Errors starting or operating an embedded cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// TLS setup failed.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// A listener could not be bound or a file written.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// The cluster could not be bootstrapped.
    #[error("bootstrapping the cluster failed: {0}")]
    Bootstrap(#[from] ApiError),
    /// Client certificates need TLS, and the cluster serves plain HTTP.
    #[error(
        "the cluster serves plain HTTP, so it cannot authenticate client certificates; start it with TLS"
    )]
    NoTls,
    /// A cluster with this name already exists in the control plane.
    #[error("a cluster named {0:?} already exists in this control plane; pick another name")]
    ClusterExists(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io("binding 127.0.0.1".into(), e)
    }
}
