//! Code generation for `#[service_provider]`: from a checked [`Model`], the Service API and
//! ProviderConfig resource types (kube-derive `CustomResource`s), the runtime's trait impls and
//! the compile-time checks that need the type system.
//!
//! On errors the expansion still runs, on the model built with defaults in place of what could not
//! be read, and the errors are emitted beside it: the resource type then exists, so the author's
//! `impl Reconcile` and every other use of it compile as far as they can and the only errors are
//! the ones in the attribute, as tokio-macros falls back to a default configuration.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Ident, TypePath};

use crate::model::columns::{ColumnTarget, column_target};
use crate::model::options::{self, Access, Workload};
use crate::model::rules::FieldReference;
use crate::model::{self, Model, error};

/// Expands `#[service_provider(args)]` on `input`.
pub(crate) fn service_provider(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = darling::Error::accumulator();
    let options = options::parse(args, &mut errors);
    let item: DeriveInput = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            errors.push(error(
                Span::call_site(),
                "#[service_provider] goes on a struct with named fields, the spec of the Service API: \
                 `pub struct VeleroSpec { pub version: String }`",
            ));
            let mut out = input;
            if let Err(err) = errors.finish() {
                out.extend(err.write_errors());
            }
            return out;
        }
    };
    let model = model::build(options, &item, &mut errors);
    let mut out = match &model {
        Some(model) => generate(&item, model),
        None => without_helper_attributes(item).into_token_stream(),
    };
    if let Err(err) = errors.finish() {
        out.extend(err.write_errors());
    }
    out
}

/// The struct as written minus the attributes only our derives understand (`serde`, `schemars`,
/// `kube`, `x_kube`): emitted without the derives, they would add "cannot find attribute" errors that hide
/// the real ones.
pub(crate) fn without_helper_attributes(mut item: DeriveInput) -> DeriveInput {
    let helper = |a: &syn::Attribute| {
        ["serde", "schemars", "kube", "x_kube"]
            .iter()
            .any(|h| a.path().is_ident(h))
    };
    item.attrs.retain(|a| !helper(a));
    let fields: Vec<&mut syn::Field> = match &mut item.data {
        Data::Struct(data) => data.fields.iter_mut().collect(),
        Data::Enum(data) => data
            .variants
            .iter_mut()
            .flat_map(|v| v.fields.iter_mut())
            .collect(),
        Data::Union(data) => data.fields.named.iter_mut().collect(),
    };
    for field in fields {
        field.attrs.retain(|a| !helper(a));
    }
    if let Data::Enum(data) = &mut item.data {
        for variant in &mut data.variants {
            variant.attrs.retain(|a| !helper(a));
        }
    }
    item
}

/// `tokens` with every span set to `span`, so that an error in code built from them points at the
/// author's tokens rather than at the whole attribute.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = proc_macro2::TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

/// Paths into the facade.
struct Paths {
    private: TokenStream,
}

impl Paths {
    fn new(krate: &syn::Path) -> Self {
        Paths {
            private: quote!(#krate::__private),
        }
    }

    fn string(tokens: TokenStream) -> String {
        tokens.to_string().replace(' ', "")
    }

    /// `#[kube(crates(...))]`: every crate kube-derive names, through the facade.
    fn kube_crates(&self) -> TokenStream {
        let p = &self.private;
        quote! {
            crates(
                kube_core = #p::kube_core,
                kube = #p::kube,
                k8s_openapi = #p::k8s_openapi,
                schemars = #p::schemars,
                serde = #p::serde,
                serde_json = #p::serde_json,
                std = #p::std
            )
        }
    }

    fn serde_crate(&self) -> String {
        let p = &self.private;
        Self::string(quote!(#p::serde))
    }

    fn schemars_crate(&self) -> String {
        let p = &self.private;
        Self::string(quote!(#p::schemars))
    }
}

/// The derive list for a type the framework serializes: serde, schemars, Clone and Debug, except
/// those the author already derives.
pub(crate) fn derives(krate: &syn::Path, derived: &[String], extra: &[TokenStream]) -> TokenStream {
    let p = quote!(#krate::__private);
    let wanted: [(&str, TokenStream); 5] = [
        ("Serialize", quote!(#p::serde::Serialize)),
        ("Deserialize", quote!(#p::serde::Deserialize)),
        ("JsonSchema", quote!(#p::schemars::JsonSchema)),
        ("Clone", quote!(::core::clone::Clone)),
        ("Debug", quote!(::core::fmt::Debug)),
    ];
    let paths = extra.iter().cloned().chain(
        wanted
            .into_iter()
            .filter(|(name, _)| !derived.iter().any(|d| d == name))
            .map(|(_, path)| path),
    );
    quote!(#[derive(#(#paths),*)])
}

fn generate(item: &DeriveInput, model: &Model) -> TokenStream {
    let paths = Paths::new(&model.krate);
    let p = &paths.private;
    let krate = &model.krate;
    let Model {
        group,
        version,
        kind,
        plural,
        singular,
        kcp,
        ..
    } = model;
    let vis = &item.vis;
    let spec_ident = &item.ident;
    let root = Ident::new(kind, Span::call_site());
    let pc_root = format_ident!("{}ProviderConfig", kind);
    let pc_spec = format_ident!("{}ProviderConfigSpec", kind);
    let crates = paths.kube_crates();
    let serde_crate = paths.serde_crate();
    let schemars_crate = paths.schemars_crate();

    let no_status: TypePath = syn::parse_quote!(#p::runtime::NoStatus);
    let no_config: TypePath = syn::parse_quote!(#p::runtime::NoConfig);
    let status_ty = model.status.as_ref().unwrap_or(&no_status);
    let config_ty = model.config.as_ref().unwrap_or(&no_config);
    let status_kube = Paths::string(quote!(#p::runtime::ServiceStatus<#status_ty>));
    let pc_status_kube = Paths::string(quote!(#p::runtime::ProviderConfigStatus));

    // ---- The Service API: the author's struct, derived into a CustomResource.
    let derive = derives(krate, &model.derived, &[quote!(#p::kube::CustomResource)]);
    let shortnames: Vec<TokenStream> = model
        .shortnames
        .iter()
        .map(|s| quote!(shortname = #s,))
        .collect();
    let categories: Vec<TokenStream> = model
        .categories
        .iter()
        .map(|c| quote!(category = #c,))
        .collect();
    let columns: Vec<TokenStream> = model.columns.iter().map(|c| {
        let (name, type_, json_path) = (&c.name, &c.type_, &c.json_path);
        let description = c.description.as_ref().map(|d| quote!(, description = #d));
        let format = c.format.as_ref().map(|f| quote!(, format = #f));
        let priority = c.priority.as_ref().map(|pr| quote!(, priority = #pr));
        quote!(printcolumn(name = #name, type_ = #type_, json_path = #json_path #description #format #priority),)
    }).collect();
    let selectable: Vec<TokenStream> = model
        .selectable
        .iter()
        .map(|s| quote!(selectable = #s,))
        .collect();
    let doc = model.doc.as_ref().map(|d| quote!(doc = #d,));
    let serde_crate_attr = (!model.has_serde_crate).then(|| quote!(#[serde(crate = #serde_crate)]));
    let schemars_crate_attr =
        (!model.has_schemars_crate).then(|| quote!(#[schemars(crate = #schemars_crate)]));
    let camel = model
        .add_camel_case
        .then(|| quote!(#[serde(rename_all = "camelCase")]));
    let attrs = &model.attrs;
    let data = &model.named;
    // The `#[kube(...)]` of a version of the Service API: the hub, or a served version (with
    // its hidden root type's name and deprecation in `extra`).
    let kube_attr = |version: &str, extra: TokenStream| {
        quote! {
            #[kube(
                group = #group,
                version = #version,
                kind = #kind,
                plural = #plural,
                singular = #singular,
                namespaced,
                status = #status_kube,
                #(#shortnames)*
                #(#categories)*
                #(#columns)*
                #(#selectable)*
                #extra
                #crates
            )]
        }
    };
    let hub_kube_attr = kube_attr(version, quote!(#doc));
    let service = quote! {
        #derive
        #hub_kube_attr
        #serde_crate_attr
        #schemars_crate_attr
        #camel
        #(#attrs)*
        #vis struct #spec_ident #data
    };

    // ---- Each other served version: a hidden resource type whose spec is the version's spec type
    // (the hub's when it declares none), for kube-derive to write its CRD version as it writes the
    // hub's, and its conversion to and from the hub.
    let served_versions: Vec<(TokenStream, TokenStream)> = model
        .served_versions
        .iter()
        .map(|served| {
            let name = &served.name;
            let mut upper = name.clone();
            upper[..1].make_ascii_uppercase();
            let version_root = format!("__{kind}{upper}");
            let version_spec = format_ident!("__{kind}{upper}Spec");
            let spec_ty = match &served.spec {
                Some(spec) => spec.to_token_stream(),
                None => spec_ident.to_token_stream(),
            };
            let deprecated = match &served.deprecated {
                None => TokenStream::new(),
                Some(None) => quote!(deprecated,),
                Some(Some(warning)) => quote!(deprecated = #warning,),
            };
            let derive = derives(krate, &[], &[quote!(#p::kube::CustomResource)]);
            let version_kube_attr = kube_attr(name, quote!(root = #version_root, #deprecated));
            let item = quote! {
                #derive
                #version_kube_attr
                #[serde(crate = #serde_crate, transparent)]
                #[schemars(crate = #schemars_crate, transparent)]
                #[allow(dead_code)]
                struct #version_spec(#spec_ty);
            };
            let version_root = Ident::new(&version_root, Span::call_site());
            let storage = served.storage;
            let conversion = match &served.spec {
                Some(_) if served.additive => quote!(::core::option::Option::None),
                Some(spec) => {
                    // On the spec type: a missing `From`/`TryFrom` is reported there.
                    let conversion = respan(quote!(#p::runtime::conversion), spec.span());
                    quote_spanned! {spec.span()=>
                        ::core::option::Option::Some(
                            #conversion::spec_conversion::<#spec, #spec_ident>()
                        )
                    }
                }
                None => quote!(::core::option::Option::None),
            };
            let value = quote! {
                #p::runtime::ServedVersion {
                    name: #name,
                    storage: #storage,
                    crd: <#version_root as #p::kube::CustomResourceExt>::crd,
                    conversion: #conversion,
                }
            };
            (item, value)
        })
        .collect();
    let served_version_items = served_versions.iter().map(|(item, _)| item);
    // An additive version's fields must be the hub's: its objects read as the hub's then, and the
    // hub's read at it lose only the added fields.
    let hub_fields: Vec<String> = model
        .fields
        .iter()
        .filter(|f| !f.json.skipped)
        .map(|f| f.json.name.clone())
        .collect();
    // A flattened field brings fields the macro does not see: nothing to check against.
    let hub_open = model.fields.iter().any(|f| f.json.flatten);
    let additive_checks = model.served_versions.iter().filter(|v| v.additive && !hub_open).filter_map(|served| {
        let spec = served.spec.as_ref()?;
        let message = format!(
            "`{}` is declared `additive`, but a field of `{}` is no field of `{spec_ident}` ({}): the hub's spec may only add fields to it",
            served.name,
            Paths::string(spec.to_token_stream()),
            hub_fields.join(", ")
        );
        let fields = respan(quote!(#p::runtime::fields), spec.span());
        Some(quote_spanned! {spec.span()=>
            const _: () = if !#fields::fields_within::<#spec>(&[#(#hub_fields),*]) {
                ::core::panic!(#message)
            };
        })
    });
    let served_versions_const = if served_versions.is_empty() {
        TokenStream::new()
    } else {
        let values = served_versions.iter().map(|(_, value)| value);
        quote! {
            const SERVED_VERSIONS: &'static [#p::runtime::ServedVersion] = &[#(#values),*];
        }
    };

    // ---- The ProviderConfig: common fields + the author's config fields, cluster-scoped.
    let pc_derive = derives(krate, &[], &[quote!(#p::kube::CustomResource)]);
    let pc_doc = format!(
        "ProviderConfig of the {kind} service provider: the platform operator's settings, one cluster-scoped \
         object on the platform cluster named like the provider."
    );
    let pc_spec_doc = format!(
        "Spec of {pc_root}: the fields every ProviderConfig has and the `config` fields of {kind}."
    );
    let config_tokens = config_ty.to_token_stream();
    let pc_root_str = pc_root.to_string();
    let provider_config = quote! {
        #[doc = #pc_spec_doc]
        #pc_derive
        #[kube(
            group = #group,
            version = #version,
            kind = "ProviderConfig",
            root = #pc_root_str,
            plural = "providerconfigs",
            singular = "providerconfig",
            status = #pc_status_kube,
            doc = #pc_doc,
            #crates
        )]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #pc_spec {
            /// The fields every ProviderConfig has: versions, pollInterval, imagePullSecrets, caBundleRef, kcp, workloadCluster.
            #[serde(flatten)]
            pub common: #p::runtime::ProviderConfigCommon,
            /// The provider's own fields.
            #[serde(flatten)]
            pub config: #config_tokens,
        }
    };

    // ---- The token requests of the runtime's AccessRequests; the trait's defaults are
    // least privilege.
    let access_fn = |name: &str, access: &Option<Access>| {
        let name = format_ident!("{name}");
        let body = match access {
            None | Some(Access::LeastPrivilege) => return TokenStream::new(),
            Some(Access::ClusterAdmin) => {
                quote!(#p::runtime::openmcp::TokenConfig::cluster_admin())
            }
            Some(Access::Function(path)) => quote_spanned!(path.span()=> #path()),
        };
        quote! {
            fn #name() -> #p::runtime::openmcp::TokenConfig {
                #body
            }
        }
    };
    let access_fns = [
        access_fn("mcp_access", &model.mcp_access),
        access_fn("workload_access", &model.workload_access),
    ]
    .into_iter()
    .collect::<TokenStream>();

    // ---- The kinds that hold the uninstall; the trait's default is none.
    let deletion_guards = if model.deletion_guards.is_empty() {
        TokenStream::new()
    } else {
        let guards = model.deletion_guards.iter().map(|g| {
            let (group, version, kind, plural) = (&g.group, &g.version, &g.kind, &g.plural);
            let optional = |value: &Option<String>| match value {
                Some(v) => quote!(::core::option::Option::Some(#v)),
                None => quote!(::core::option::Option::None),
            };
            let (namespace, labels) = (optional(&g.namespace), optional(&g.labels));
            quote! {
                #p::runtime::DeletionGuard {
                    group: #group,
                    version: #version,
                    kind: #kind,
                    plural: #plural,
                    namespace: #namespace,
                    labels: #labels,
                }
            }
        });
        quote! {
            const DELETION_GUARDS: &'static [#p::runtime::DeletionGuard] = &[#(#guards),*];
        }
    };

    // ---- The trait impls the runtime drives.
    let workload = match model.workload {
        Workload::None => quote!(NotDeclared),
        Workload::Optional => quote!(Optional),
        Workload::Required => quote!(Required),
    };
    let status_tokens = status_ty.to_token_stream();
    let impls = quote! {
        #[automatically_derived]
        impl #p::runtime::ServiceProvider for #root {
            type ExtraStatus = #status_tokens;
            type Config = #config_tokens;
            type ProviderConfig = #pc_root;
            type WorkloadCluster = #p::runtime::tenant::workload::#workload;
            const INFO: #p::runtime::ProviderInfo = #p::runtime::ProviderInfo {
                group: #group,
                version: #version,
                kind: #kind,
                plural: #plural,
                kcp: #kcp,
            };
            #deletion_guards
            #served_versions_const
            #access_fns
        }

        #[automatically_derived]
        impl #p::runtime::ProviderConfigResource for #pc_root {
            type Config = #config_tokens;
            fn common(&self) -> &#p::runtime::ProviderConfigCommon {
                &self.spec.common
            }
            fn config(&self) -> &#config_tokens {
                &self.spec.config
            }
        }
    };

    // ---- Compile-time checks, each spanned on the tokens the author must change.
    let clash_check = |ty: &TypePath, common: TokenStream| {
        let fields = respan(quote!(#p::runtime::fields), ty.span());
        quote_spanned! {ty.span()=>
            const _: () = #fields::assert_no_clash::<#ty>(#fields::#common);
        }
    };
    let config_check = model
        .config
        .as_ref()
        .map(|config| clash_check(config, quote!(COMMON_CONFIG_FIELDS)));
    let status_check = model
        .status
        .as_ref()
        .map(|status| clash_check(status, quote!(COMMON_STATUS_FIELDS)));
    let column_checks = model.columns.iter().filter_map(|column| {
        let path = column.json_path.value();
        let Ok(ColumnTarget::Status(field)) = column_target(&path) else { return None };
        let message = match &model.status {
            Some(status) => format!(
                "printer column `{}`: json_path {path:?} names no status field; the status has observedGeneration, \
                 phase, conditions and the fields of `{}`",
                column.name.value(),
                Paths::string(status.to_token_stream())
            ),
            None => format!(
                "printer column `{}`: json_path {path:?} names no status field; the status has observedGeneration, \
                 phase and conditions; declare `status = YourStatus` to add fields",
                column.name.value()
            ),
        };
        Some(quote_spanned! {column.json_path.span()=>
            const _: () = if !#p::runtime::fields::status_has_field::<#status_tokens>(#field) {
                ::core::panic!(#message)
            };
        })
    });
    let rule_checks = rule_checks(&model.rule_references, p);
    let field_checks = model.fields.iter().map(|field| {
        let ty = &field.ty;
        quote_spanned! {ty.span()=> __assert_field::<#ty>();}
    });

    quote! {
        #service
        #provider_config
        const _: () = {
            #(#served_version_items)*
            #impls

            #config_check
            #status_check
            #(#column_checks)*
            #rule_checks
            #(#additive_checks)*

            // The runtime shares objects across its worker threads.
            fn __assert_field<T: ::core::marker::Send + ::core::marker::Sync + 'static>() {}
            fn __assert_fields() {
                #(#field_checks)*
            }
        };
    }
}

/// A constant per `self.<field>` in a rule on a field of the author's own type, failing to compile
/// (on the rule) when the type's `JsonFields` has no such field. A type that does not list its
/// fields gets `JsonFields`' own message: declare it with `#[api_type]`.
pub(crate) fn rule_checks(references: &[FieldReference], p: &TokenStream) -> TokenStream {
    references
        .iter()
        .map(|r| {
            let FieldReference { ty, field, rule } = r;
            let message = format!(
                "this rule names `{field}`, which is no field of `{}` (the type of the field the rule is on)",
                Paths::string(ty.to_token_stream())
            );
            let fields = respan(quote!(#p::runtime::fields), rule.span());
            quote_spanned! {rule.span()=>
                const _: () = if !#fields::has_field::<#ty>(#field) {
                    ::core::panic!(#message)
                };
            }
        })
        .collect()
}
