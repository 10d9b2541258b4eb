//! The runtime of the service-provider framework: everything a provider does besides installing and
//! removing its service.
//!
//! Provider authors do not depend on this crate directly; they use the `service-provider` facade,
//! whose `#[service_provider]` attribute implements [`ServiceProvider`] for their type and whose
//! `run` drives it. The modules below each own one concept.

pub mod context;
pub mod duration;
pub mod error;
pub mod outcome;
pub mod provider;
pub mod provider_config;
pub mod status;

pub use context::{ClusterAccess, Context, Identity, Mode};
pub use duration::Duration;
pub use error::Error;
pub use outcome::Outcome;
pub use provider::{ProviderInfo, Reconcile, ServiceProvider, WorkloadCluster};
pub use provider_config::{ProviderConfigCommon, ProviderConfigResource, VersionSpec};
pub use status::{NoStatus, Phase, ServiceStatus};
