//! The `#[service_provider]` attribute: parses the declaration, validates it and emits a
//! kube-derive `CustomResource` plus the trait impls the service-provider runtime drives.

use proc_macro::TokenStream;

/// Declares a service provider. See the `service-provider` crate for the full reference.
#[proc_macro_attribute]
pub fn service_provider(_args: TokenStream, input: TokenStream) -> TokenStream {
    input
}
