//! The runtime of the service-provider framework: everything a provider does besides installing and
//! removing its service.
//!
//! Provider authors do not depend on this crate directly; they use the `service-provider` facade,
//! whose `#[service_provider]` attribute implements [`ServiceProvider`] for their type and whose
//! `run` drives it. The modules below each own one concept.

pub mod access;
pub mod apply;
pub(crate) mod cache;
pub(crate) mod cli;
pub mod context;
pub mod controller;
#[cfg(feature = "dev")]
pub mod dev;
#[cfg(feature = "dev")]
pub mod dev_mode;
pub(crate) mod duration;
pub mod error;
pub(crate) mod events;
pub mod fields;
pub mod flux;
pub(crate) mod helm;
pub mod init;
pub mod kcp;
pub(crate) mod logging;
pub mod manifests;
pub mod openmcp;
pub mod ops;
pub(crate) mod outcome;
pub(crate) mod platform;
pub(crate) mod provider;
pub mod provider_config;
pub(crate) mod pull_secrets;
pub mod queue;
pub(crate) mod rbac;
pub mod runner;
pub(crate) mod standard;
pub(crate) mod status;

pub use apply::{
    ApplySet, DeletionPolicy, Location, ManagedResource, MemberRef, Readiness, ResourcePhase,
};
pub use cli::{App, run, run_with_args};
pub use context::{ClusterAccess, Context, Identity, Mode};
pub use duration::Duration;
pub use error::Error;
pub use events::ObjectEvents;
pub use fields::JsonFields;
pub use helm::{HelmChart, HelmInstall};
pub use manifests::{Manifest, manifests};
pub use outcome::{Apply, Delete, Deletion, Outcome};
pub use provider::{ProviderInfo, Reconcile, ServiceProvider, WorkloadCluster};
pub use provider_config::{
    NoConfig, ProviderConfigCommon, ProviderConfigFields, ProviderConfigResource,
    ProviderConfigStatus, VersionSpec,
};
pub use status::{ExtraStatus, NoStatus, Phase, ServiceStatus};
