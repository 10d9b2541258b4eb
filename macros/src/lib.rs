//! The `#[service_provider]` attribute: parses the declaration, validates it and emits a
//! kube-derive `CustomResource` plus the trait impls the service-provider runtime drives; and
//! `#[api_type]` for the author's own types inside it.
//!
//! The macro stays thin: everything it can leave to ordinary code (finalizer, CRD labels, kcp
//! schemas, RBAC, manifests) is computed by the runtime from the `ServiceProvider` impl.

mod api_type;
mod expand;
mod model;

use proc_macro::TokenStream;

/// Declares a service provider on the struct that is the `spec` of its Service API.
///
/// One attribute on one struct is the whole declaration: from it the macro generates the Service
/// API resource type, the provider's `ProviderConfig` resource type, their CRDs (through
/// kube-derive's `CustomResource`) and the trait impls the runtime drives. The author then
/// implements `Reconcile` for the generated type and calls `service_provider::run`. (This
/// example is compiled as the `service-provider` crate's own example.)
///
/// ```ignore
/// use service_provider::prelude::*;
///
/// /// Velero backups for a tenant's control plane.
/// #[service_provider(
///     group = "velero.services.open-control-plane.io",
///     version = "v1alpha1",
///     kind = "Velero",
///     config = VeleroConfig,
///     status = VeleroStatus,
///     workload_cluster = required,
///     kcp,
///     shortnames = ["vel"],
///     categories = ["openmcp"],
///     printcolumn(name = "Version", type = "string", json_path = ".spec.version"),
///     printcolumn(name = "Installed", type = "string", json_path = ".status.installedVersion", priority = 1),
/// )]
/// pub struct VeleroSpec {
///     /// Velero version; must be offered in ProviderConfig `spec.versions`.
///     pub version: String,
/// }
///
/// /// The platform operator's settings for Velero, beside the versions on offer.
/// #[api_type]
/// pub struct VeleroConfig {
///     /// Where the Velero images are pulled from.
///     pub image_repository: String,
/// }
///
/// /// Velero's own status fields.
/// #[api_type]
/// #[derive(Default, PartialEq)]
/// pub struct VeleroStatus {
///     /// The Velero version running for this tenant.
///     pub installed_version: Option<String>,
/// }
///
/// impl Reconcile for Velero {
///     async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
///         let offered = cx.common().resolve_version(&self.spec.version)?;
///         let _workload = cx.workload(); // `&ClusterAccess`: `workload_cluster = required`
///         Ok(Outcome::ready().with_status(VeleroStatus {
///             installed_version: Some(offered.version.clone()),
///         }))
///     }
///     async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion<VeleroStatus>, Error> {
///         Ok(Deletion::done())
///     }
/// }
///
/// fn main() -> std::process::ExitCode {
///     service_provider::run::<Velero>()
/// }
/// ```
///
/// # What is generated
///
/// For `kind = "Velero"` on `struct VeleroSpec`:
///
/// - `Velero`: the Service API resource (namespaced, with a status subresource of type
///   `ServiceStatus<S>`: `observedGeneration`, `phase`, `conditions` and the fields of the
///   `status` type `S`), whose CRD carries the label `openmcp.cloud/cluster: onboarding`. Its
///   printer columns are the `printcolumn`s followed by Phase, Ready and Age.
/// - `VeleroProviderConfig` with spec `VeleroProviderConfigSpec`: kind `ProviderConfig` in the
///   same group and version, cluster-scoped, plural `providerconfigs`; its spec is the fields
///   every ProviderConfig has (`versions`, `pollInterval`, `imagePullSecrets`, `caBundleRef`,
///   `kcp`, `workloadCluster`) flattened together with the fields of the `config` type.
/// - The impls of the runtime's `ServiceProvider` for `Velero` and `ProviderConfigResource` for
///   `VeleroProviderConfig`, and compile-time checks (below).
///
/// The struct's doc comment becomes the CRD's description. The struct gets serde's and schemars'
/// derives through the facade (the author depends on `service-provider` only) and, unless it sets
/// its own `#[serde(rename_all = "...")]`, camelCase JSON field names. A field's
/// `#[serde(default)]` or `#[serde(default = "path")]` value is its `default` in the CRD, so the
/// API server fills it in as the provider would read it (not for a field whose
/// `skip_serializing_if` skips that value).
///
/// # Options
///
/// | Option | Type | Default |
/// |---|---|---|
/// | `group` | string | required |
/// | `version` | string | required |
/// | `kind` | string | required |
/// | `plural` | string | controller-gen's plural of `kind` |
/// | `singular` | string | `kind` in lower case |
/// | `shortnames` | string or list of strings | none |
/// | `categories` | string or list of strings | none |
/// | `printcolumn(...)` | list, repeatable | none (Phase, Ready, Age always) |
/// | `config` | type path | `NoConfig` (no fields) |
/// | `status` | type path | `NoStatus` (no fields) |
/// | `workload_cluster` | `none`, `optional` or `required` | `none` |
/// | `kcp` | flag | off |
/// | `crate` | path, as a string or a path | `::service_provider` |
/// | `selectable` | string or list of strings, repeatable | none |
/// | `served_version(...)` | list, repeatable | none (only `version` is served) |
///
/// Each option may be given once (`printcolumn` and `served_version` as often as there are
/// columns and versions). An unknown
/// option is an error that suggests the closest known one.
///
/// ## `group = "..."` (required)
///
/// The API group of the Service API and the ProviderConfig: a DNS subdomain (lowercase letters,
/// digits, `-` and `.`, at most 253 characters) that contains a dot, because Kubernetes reserves
/// undotted groups for its own APIs.
///
/// ```text
/// group = "velero.services.open-control-plane.io"
/// ```
///
/// ## `version = "..."` (required)
///
/// The API version: `v<N>`, optionally followed by `alpha<N>` or `beta<N>`.
///
/// ```text
/// version = "v1alpha1"
/// ```
///
/// ## `kind = "..."` (required)
///
/// The kind of the Service API in UpperCamelCase (ASCII letters and digits, starting with an
/// upper-case letter). The generated resource type is named after it, so the struct must not be
/// (name it `<Kind>Spec`), nor `<Kind>ProviderConfig` or `<Kind>ProviderConfigSpec`.
///
/// ```text
/// kind = "Velero"
/// ```
///
/// ## `plural = "..."`
///
/// The resource's plural, which also names its CRD (`<plural>.<group>`): a lowercase DNS label.
/// By default the one controller-gen makes for a Go provider's CRD,
/// `strings.ToLower(flect.Pluralize(kind))`: `Velero` → `veleroes`, `Kro` → `kroes`, `Flux` →
/// `fluxes`, `Policy` → `policies`, `Status` → `statuses`, `Index` → `indices`, `Metrics` →
/// `metrics`, `ExternalSecretsOperator` → `externalsecretsoperators`. The last camel-case word of
/// the kind is inflected: a dictionary word takes its irregular plural, else the first matching
/// suffix rule applies (`-y` after a consonant → `-ies`, `-f`/`-fe` → `-ves`,
/// `-ch`/`-sh`/`-ss`/`-x` → `-es`, `-o` → `-oes` except `-io`/`-ano`/`-lo`/`-to`/`-oo`, `-us` →
/// `-uses`, Latin and Greek endings, …), else a word ending in `s` stays and any other gets `s`.
/// So a provider that replaces a Go one finds the Go provider's CRD, and `init` takes it over
/// instead of adding a second one for the same kind. `providerconfigs` is taken by the
/// ProviderConfig.
///
/// ```text
/// plural = "veleros"
/// ```
///
/// ## `singular = "..."`
///
/// The resource's singular name, a lowercase DNS label. Default: the kind in lower case.
///
/// ```text
/// singular = "velero"
/// ```
///
/// ## `shortnames = [...]`
///
/// Short names for `kubectl get`, each a lowercase DNS label. One string, a list
/// (`shortnames = ["vel", "vl"]`) or `shortnames("vel", "vl")`. Default: none.
///
/// ```text
/// shortnames = ["vel"]
/// ```
///
/// ## `categories = [...]`
///
/// Categories the resource belongs to (`kubectl get openmcp` lists every resource in
/// `openmcp`), each a lowercase DNS label; written like `shortnames`. Default: none.
///
/// ```text
/// categories = ["openmcp"]
/// ```
///
/// ## `printcolumn(name = "...", type = "...", json_path = "...", ...)`
///
/// An additional printer column for `kubectl get`, repeatable; the columns appear in the order
/// written, before the Phase, Ready and Age columns every Service API has (so none may be named
/// like those, and no two alike). Keys, all string literals except `priority`:
///
/// - `name` (required): the column header.
/// - `type` (required; kube-derive's spelling `type_` is accepted too): one of `integer`,
///   `number`, `string`, `boolean`, `date`.
/// - `json_path` (required): where the value is, starting with `.spec.`, `.status.` or
///   `.metadata.`. A `.spec.<field>` must name a field of the struct by its JSON name, a
///   `.status.<field>` a field of the status (the common ones or the `status` type's); both are
///   checked at compile time.
/// - `description`: the column's description.
/// - `format`: one of `int32`, `int64`, `float`, `double`, `byte`, `binary`, `date`,
///   `date-time`, `password`.
/// - `priority`: an integer from 0 (always shown, the default) upwards (shown with `-o wide`).
///
/// ```text
/// printcolumn(name = "Version", type = "string", json_path = ".spec.version", description = "Requested version"),
/// printcolumn(name = "Installed", type = "string", json_path = ".status.installedVersion", priority = 1),
/// ```
///
/// ## `config = Type`
///
/// The platform operator's settings, a type path written without quotes (generics allowed). Its
/// fields are flattened into the ProviderConfig's spec beside the common ones and reach the
/// author through `Context::config()`. It must not declare a field named like a common one
/// (`versions`, `pollInterval`, `imagePullSecrets`, `caBundleRef`, `kcp`, `workloadCluster`):
/// checked at compile time. It needs `Clone`, `Debug`, `Serialize`, `Deserialize` and `JsonSchema`, and to list its
/// JSON fields for that check: declare it with [`macro@api_type`]. Default: `NoConfig`, no fields.
///
/// ```text
/// config = VeleroConfig
/// ```
///
/// ## `status = Type`
///
/// Extra status fields beside `observedGeneration`, `phase` and `conditions`, a type path
/// without quotes, set by returning `Outcome::with_status` / `Deletion::with_status`. It must
/// not declare a field named like a common one, and needs what [`macro@api_type`] derives plus
/// `Default` and `PartialEq` (status is patched only when it changed):
/// `#[api_type] #[derive(Default, PartialEq)]`. Default: `NoStatus`, no fields.
///
/// ```text
/// status = VeleroStatus
/// ```
///
/// ## `workload_cluster = none | optional | required`
///
/// Whether tenants get a workload cluster besides their control plane, written as a bare word
/// (or a string):
///
/// - `none` (the default): the provider works in the tenant cluster only; `Context::workload()`
///   does not exist (a compile error names the option to set).
/// - `optional`: the platform operator decides: a workload cluster is ordered when the
///   ProviderConfig has a `workloadCluster` block; `Context::workload()` returns
///   `Option<&ClusterAccess>`.
/// - `required`: every tenant gets one (the workerless pattern); `Context::workload()` returns
///   `&ClusterAccess`.
///
/// ```text
/// workload_cluster = required
/// ```
///
/// ## `kcp`
///
/// A flag: the provider also serves tenants in kcp workspaces, through an APIExport. `<provider>
/// manifests` then writes the APIResourceSchema, the APIExport and the provider workspace's
/// ClusterRole, and `run` serves kcp tenants when the `--kcp-*` flags or the ProviderConfig's
/// `kcp` block say where. Write `kcp`, or `kcp = false` to spell out the default (off).
///
/// ```text
/// kcp
/// ```
///
/// ## `crate = "..."`
///
/// The path of the `service-provider` crate, for a crate that depends on it under another name
/// (`sp = { package = "service-provider", ... }`). The generated code reaches kube,
/// k8s-openapi, schemars and serde through it. Default: `::service_provider`.
///
/// ```text
/// crate = "::sp"
/// ```
///
/// ## `selectable = "..."`
///
/// A field a field selector may name (`kubectl get velero --field-selector spec.version=1.16.1`),
/// the CRD's `selectableFields` (kube-derive's `selectable`): a `.spec.<field>` of the struct
/// (checked at compile time) or a `.status.<field>` path, at most eight. One string, a list, or
/// the option repeated. `metadata.name` and `metadata.namespace` are always selectable.
///
/// ```text
/// selectable = ".spec.version"
/// ```
///
/// ## `served_version(name = "...", spec = Type, additive, storage, deprecated = "...")`
///
/// Another version of the Service API, served beside `version`, which stays the one the
/// reconciler sees (the hub). `name` is required and must differ from `version` and every other
/// `served_version`. Without `spec` the version has the hub's schema and the API server converts
/// it by `apiVersion` alone. With `spec = Type` (an `#[api_type]` struct) it has its own schema
/// and converts through the hub by `TryFrom<Type> for Spec` and `TryFrom<Spec> for Type` (a `From`
/// gives both); a missing conversion is a compile error on `Type`; the provider then serves a
/// conversion webhook, and with `kcp` this is a compile error, since kcp calls no webhook.
/// `additive` says the hub's spec only adds (optional) fields to `Type`: the API server then
/// converts by `apiVersion` alone, no code runs, kcp included; every field of `Type` must be a
/// field of the hub's spec (a compile error otherwise).
/// `storage` stores objects at this version instead of the hub's (one version at most);
/// `deprecated` marks it so clients warn, with the warning if one is given.
///
/// ```text
/// served_version(name = "v1alpha1", spec = VeleroSpecV1alpha1, deprecated = "use v1alpha2")
/// ```
///
/// # Validation rules
///
/// CEL rules in kube-derive's syntax become the CRD's `x-kubernetes-validations`: on a field
/// (`self` is the field's value) or on the struct (`self` is the spec), here and on any
/// [`macro@api_type`] (including the `config` type, whose struct-level rules apply to the
/// ProviderConfig's spec). A rule with `oldSelf` is a transition rule, checked on update:
///
/// ```text
/// #[service_provider(group = "...", version = "v1alpha1", kind = "Velero")]
/// #[x_kube(validation = Rule::new("self.retention <= self.maxRetention").message("retention exceeds maxRetention"))]
/// pub struct VeleroSpec {
///     #[x_kube(validation = Rule::new("self == oldSelf").message("bucket is immutable"))]
///     pub bucket: String,
///     pub retention: u32,
///     pub max_retention: u32,
/// }
/// ```
///
/// `validation` takes a string, a `("rule", "message")` pair, or `Rule::new("rule")` followed by
/// any of `.message("...")`, `.message(Message::Expression("<CEL>"))` (`messageExpression`),
/// `.reason(Reason::FieldValueInvalid | FieldValueForbidden | FieldValueRequired |
/// FieldValueDuplicate)`, `.field_path(".field")` and `.optional_old_self(true)`; `Rule`,
/// `Message` and `Reason` need not be in scope. Checked at compile time, on the rule: it parses as
/// CEL (with the parser of the `cel` crate the embedded API server evaluates rules with), a
/// message expression too, the message is one line, the reason is one kube-apiserver accepts,
/// `optional_old_self` goes with a rule that uses `oldSelf`; and a struct-level rule's
/// `self.<field>` / `oldSelf.<field>` and `field_path` name fields the struct has, by their JSON
/// names. A field-level rule's `self.<field>`s are checked by the compiler when the field's type
/// (under `Option` or `Box`) is one of the author's own types, against its
/// [`macro@api_type`]-generated field list; on strings, numbers, collections and Kubernetes types
/// they are left to the API server. A field's rules are added to those its type declares on
/// itself.
///
/// # Checks on the struct
///
/// Every mistake is a compile error on the offending token with a message that says how to fix
/// it; `ui-tests/fail/` holds each one. Besides the options' values:
///
/// - the struct has named fields and no generic parameters, and none of its fields is named (in JSON) `apiVersion`, `kind`,
///   `metadata` or `status`;
/// - the struct has no `#[kube(...)]` attribute and does not derive `CustomResource` (the macro
///   writes both);
/// - every field's type is `Send + Sync + 'static`: the runtime shares objects across its worker
///   threads.
#[proc_macro_attribute]
pub fn service_provider(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::service_provider(args.into(), input.into()).into()
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
            "service_provider" => crate::expand::service_provider(args, input),
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
