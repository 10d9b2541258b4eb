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
//! - `store`: one shard's objects (serialized JSON plus indexed fields), its resourceVersion
//!   counter, event history and watch fan-out. Keys are (resource, logical cluster, namespace, name),
//!   so a plain cluster is a shard with one logical cluster and kcp adds more.
//! - `registry`: which resources each logical cluster serves (shared built-ins, per-cluster CRDs).
//! - `storage`: Kubernetes semantics (strategies, admission, finalizers, deletion) for handlers and
//!   controllers alike; `controllers` are tasks reacting to store changes.
//! - `handler`: the request handler below URL routing; `server`: listeners; `cluster` and
//!   [`ClusterHost`]: the public API.
//! - [`kcp`]: kcp mode — shards of logical clusters (workspaces), APIExports and APIBindings, and
//!   the APIExport virtual workspace, routed in front of the same handler
//!   ([`ControlPlane::add_kcp`]).

mod admission;
mod auth;
mod authn;
mod builtin;
mod cluster;
mod controllers;
mod convert;
mod error;
mod faults;
mod handler;
mod host;
mod jsonpath;
pub mod kcp;
pub mod kubeconfig;
mod managed;
mod meta;
pub mod metrics;
mod openapi;
mod patch;
mod patching;
pub mod protobuf;
mod recording;
mod registry;
mod request;
mod schema;
mod selector;
mod server;
mod shard;
mod storage;
mod store;
mod strategy;
pub mod tls;
mod validation;
pub mod wait;

pub use cluster::{ApiServer, Cluster, ClusterOptions, ControlPlane};
pub use error::ApiError;
pub use faults::{FaultRule, Faults};
pub use host::ClusterHost;
pub use kcp::{Kcp, KcpOptions};
pub use metrics::{CounterKey, Counters, LoggedRequest};
pub use wait::{WaitError, conditions, wait_for};

pub use auth::user::{KUBERNETES_ADMIN, parse_service_account_username};
pub use controllers::deployment::{WORKLOADS, available_workload_status};

/// Machinery this crate's own benchmarks measure directly, below the HTTP API. Not an API: it
/// changes whenever the machinery does.
#[doc(hidden)]
pub mod internals {
    /// Authentication and authorization.
    pub mod auth {
        pub use crate::auth::{
            Attributes, Authenticated, Authenticator, Decision, LiveObject, ObjectLookup, Rbac,
            RbacKind, ServiceAccountRef, TokenIssuer, TokenIssuerConfig, UserInfo, bootstrap,
        };
    }
    /// Server-side apply, merge and strategic-merge patches.
    pub mod patch {
        pub use crate::patch::{
            ApplyRequest, Managed, Target, TypeShape, apply, merge, record_update, strategic,
        };
    }
    /// Schemas: validation, pruning, defaulting and OpenAPI.
    pub mod schema {
        pub use crate::schema::{
            FieldValidation, OpenApiDocuments, OpenApiResource, ResourceSchema, Structural,
        };
    }
    /// Storage of one resource.
    pub mod storage {
        pub use crate::storage::core;
    }
    pub use crate::shard::{DEFAULT_LOGICAL_CLUSTER, Shard};
    pub use crate::storage::ClusterApi;
    pub use crate::store::{Store, StoredObject};

    /// The shard behind `cluster`: its store and in-process API, without HTTP.
    pub fn shard_of(cluster: &crate::Cluster) -> &std::sync::Arc<Shard> {
        cluster.shard()
    }
}

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
    /// The ServiceAccount token issuer could not be set up.
    #[error("the ServiceAccount token issuer could not be set up: {0}")]
    TokenIssuer(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io("binding 127.0.0.1".into(), e)
    }
}
