//! Managed resources: the objects a provider installs for a tenant, applied as a set with
//! readiness and a deletion policy, Helm charts through Flux, and pull-secret copies.

pub mod apply;
pub mod flux;
pub(crate) mod helm;
pub(crate) mod pull_secrets;
