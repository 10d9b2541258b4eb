//! Managed resources: the objects a provider installs for a tenant, applied as a set with
//! readiness and a deletion policy, Helm charts through Flux, pull-secret and CA-bundle copies,
//! and credentials for workers.

pub mod apply;
pub(crate) mod ca_bundle;
pub mod flux;
pub(crate) mod helm;
pub(crate) mod pull_secrets;
pub(crate) mod worker;
