//! The `#[service_provider]` attribute: parses the declaration, validates it and emits a
//! kube-derive `CustomResource` plus the trait impls the service-provider runtime drives; and
//! `#[api_type]` for the author's own types inside it.
//!
//! The macro stays thin: everything it can leave to ordinary code (finalizer, CRD labels, kcp
//! schemas, RBAC, manifests) is computed by the runtime from the `ServiceProvider` impl.

mod api_type;
mod names;
mod options;
mod provider;
mod serde_attrs;

use proc_macro::TokenStream;

/// Declares a service provider on the struct that is the spec of its Service API. See the
/// `service-provider` crate for the options.
#[proc_macro_attribute]
pub fn service_provider(args: TokenStream, input: TokenStream) -> TokenStream {
    provider::expand(args.into(), input.into()).into()
}

/// Derives what a type used in a Service API spec, a `config` or a `status` needs (serde,
/// JsonSchema, Clone, Debug) through the `service_provider` crate, with camelCase field names, and
/// lists its JSON fields for `#[service_provider]`'s checks.
#[proc_macro_attribute]
pub fn api_type(args: TokenStream, input: TokenStream) -> TokenStream {
    api_type::expand(args.into(), input.into()).into()
}
