//! The runtime of the service-provider framework: everything a provider does besides installing and
//! removing its service.
//!
//! Provider authors do not depend on this crate directly; they use the `service-provider` facade,
//! whose `#[service_provider]` attribute implements [`ServiceProvider`] for their type and whose
//! `run` drives it. The modules below each own one concept.

// The author's API.
pub mod context;
pub mod conversion;
pub(crate) mod deletion_guard;
pub mod error;
pub mod fields;
pub(crate) mod outcome;
pub(crate) mod provider;
pub(crate) mod reconcile;

// The reconcile core, shared by both modes.
pub mod access;
pub(crate) mod cache;
pub mod controller;
pub(crate) mod duration;
pub(crate) mod events;
pub(crate) mod observed;
pub(crate) mod platform;
pub mod provider_config;
pub mod queue;
pub(crate) mod referenced;
pub(crate) mod status;
pub mod tenant;
pub(crate) mod waits;

// Where Service API objects come from: the onboarding cluster or kcp workspaces.
pub mod modes;

// Managed resources: applied sets, Helm through Flux, pull secrets.
pub mod resources;

// The platform APIs: openMCP's and kcp's types.
pub mod kcp_api;
pub mod openmcp;

// What a provider generates from its declaration: CRDs, kcp schema and export, RBAC, deployment.
pub mod manifests;

// The provider binary: its command line, `init`, `run`, `manifests` and `dev`.
pub mod cli;

// Operating a provider: logs, metrics, probes, leader election, shutdown.
pub mod ops;

/// The simulated openMCP platform on the embedded control plane (feature `dev`).
#[cfg(feature = "dev")]
pub mod dev;

pub use cli::{App, run, run_with_args};
pub use context::Context;
pub use deletion_guard::{DeletionGuard, REASON_USER_RESOURCES};
pub use duration::Duration;
pub use error::Error;
pub use events::ObjectEvents;
pub use fields::JsonFields;
pub use manifests::{Manifest, manifests};
pub use outcome::{Deletion, Outcome};
pub use provider::{ProviderInfo, ServedVersion, ServiceProvider, SpecConversion};
pub use provider_config::{
    NoConfig, ProviderConfigCommon, ProviderConfigFields, ProviderConfigResource,
    ProviderConfigStatus, VersionSpec,
};
pub use reconcile::Reconcile;
pub use resources::apply::{ApplySet, DeletionPolicy, MemberRef, Readiness};
pub use resources::ca_bundle::CaBundle;
pub use resources::helm::{ChartKind, ChartPart, ChartSplit, HelmChart, HelmInstall, HelmMembers};
pub use resources::pull_secrets::PullSecrets;
pub use resources::worker::{WorkerAccess, WorkerCredentials};
pub use status::resources::{Location, ManagedResource, ResourcePhase};
pub use status::{ExtraStatus, NoStatus, Phase, ServiceStatus};
pub use tenant::{ClusterAccess, Identity, Mode, WorkloadCluster};
