//! The kcp API types (`apis.kcp.io`) the runtime reads and writes, which kcp publishes no Rust
//! bindings for: they follow the Go types in `github.com/kcp-dev/sdk/apis` field by field, with the
//! fields the runtime uses plus those needed to round-trip what kcp returns, as kube
//! `CustomResource`s without a derived schema (kcp owns their CRDs).

mod api_resource_schema;
mod condition;
pub mod v1alpha1;
pub mod v1alpha2;

pub use api_resource_schema::{APIResourceSchema, APIResourceSchemaSpec, APIResourceVersion};
pub use condition::Condition;

/// The API group of every kcp API type here.
pub const GROUP: &str = "apis.kcp.io";
