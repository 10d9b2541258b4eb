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
///
/// The Service API's plural (and so its CRD's name, `<plural>.<group>`) is by default the one
/// controller-gen makes for a Go provider's CRD, `strings.ToLower(flect.Pluralize(kind))`:
/// `Velero` → `veleroes`, `Kro` → `kroes`, `Flux` → `fluxes`, `Policy` → `policies`, `Status` →
/// `statuses`, `Index` → `indices`, `Metrics` → `metrics`, `ExternalSecretsOperator` →
/// `externalsecretsoperators`. The last camel-case word of the kind is inflected: a dictionary
/// word takes its irregular plural, else the first matching suffix rule applies (`-y` after a
/// consonant → `-ies`, `-f`/`-fe` → `-ves`, `-ch`/`-sh`/`-ss`/`-x` → `-es`, `-o` → `-oes` except
/// `-io`/`-ano`/`-lo`/`-to`/`-oo`, `-us` → `-uses`, Latin and Greek endings, …), else a word
/// ending in `s` stays and any other gets `s`. So a provider that replaces a Go one finds the Go
/// provider's CRD. `plural = "..."` overrides it.
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use proc_macro2::TokenStream;
    use quote::ToTokens;

    /// Every use of our attributes in an example: which attribute, its arguments, the item.
    fn invocations(example: &str) -> Vec<(&'static str, TokenStream, TokenStream)> {
        let path = format!(
            "{}/../examples/{example}/main.rs",
            env!("CARGO_MANIFEST_DIR")
        );
        let source = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&source).unwrap();
        let mut found = Vec::new();
        for item in file.items {
            let (attrs, mut item): (Vec<syn::Attribute>, syn::Item) = match item {
                syn::Item::Struct(mut s) => (std::mem::take(&mut s.attrs), syn::Item::Struct(s)),
                syn::Item::Enum(mut e) => (std::mem::take(&mut e.attrs), syn::Item::Enum(e)),
                _ => continue,
            };
            let mut ours = None;
            let mut kept = Vec::new();
            for attr in attrs {
                let which = ["service_provider", "api_type"]
                    .into_iter()
                    .find(|n| attr.path().is_ident(n));
                match (which, &ours) {
                    (Some(which), None) => {
                        let args = match &attr.meta {
                            syn::Meta::List(list) => list.tokens.clone(),
                            _ => TokenStream::new(),
                        };
                        ours = Some((which, args));
                    }
                    _ => kept.push(attr),
                }
            }
            match &mut item {
                syn::Item::Struct(s) => s.attrs = kept,
                syn::Item::Enum(e) => e.attrs = kept,
                _ => {}
            }
            if let Some((which, args)) = ours {
                found.push((which, args, item.to_token_stream()));
            }
        }
        found
    }

    fn expand(which: &str, args: TokenStream, input: TokenStream) -> TokenStream {
        match which {
            "service_provider" => crate::provider::expand(args, input),
            _ => crate::api_type::expand(args, input),
        }
    }

    /// Expands every attribute of the velero example `SP_EXPANSIONS` times (default 2), checks each
    /// expansion is the same as the first (incremental compilation relies on it) and prints the
    /// time to expand them all, which `cargo xtask macro-cost` reads.
    #[test]
    fn velero_expansion_is_deterministic() {
        let uses = invocations("velero");
        assert_eq!(uses.iter().filter(|u| u.0 == "service_provider").count(), 1);
        let runs: usize = std::env::var("SP_EXPANSIONS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2)
            .max(2);
        let first: Vec<String> = uses
            .iter()
            .map(|(w, a, i)| expand(w, a.clone(), i.clone()).to_string())
            .collect();
        for out in &first {
            assert!(
                !out.contains("compile_error"),
                "the velero example must expand cleanly: {out}"
            );
        }
        let mut times: Vec<Duration> = Vec::with_capacity(runs);
        for _ in 0..runs {
            let inputs = uses.clone();
            let start = Instant::now();
            let outputs: Vec<TokenStream> = inputs
                .into_iter()
                .map(|(w, a, i)| expand(w, a, i))
                .collect();
            times.push(start.elapsed());
            let outputs: Vec<String> = outputs.iter().map(ToString::to_string).collect();
            assert_eq!(outputs, first);
        }
        times.sort();
        let median = times[runs / 2];
        let mean = times.iter().sum::<Duration>() / runs as u32;
        let tokens: usize = first.iter().map(|o| o.split_whitespace().count()).sum();
        println!(
            "macro-cost: attributes={} expansions={runs} median_us={:.1} mean_us={:.1} output_tokens={tokens}",
            uses.len(),
            median.as_secs_f64() * 1e6,
            mean.as_secs_f64() * 1e6,
        );
    }
}
