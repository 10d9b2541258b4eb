//! `#[api_type]`: the derives a type inside a Service API or ProviderConfig needs, through the
//! facade, plus the table of its JSON field names that `#[service_provider]` checks against.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Fields};

use crate::expand::derives;
use crate::model::options::did_you_mean;
use crate::model::rules;
use crate::model::serde_attrs::{self, RenameRule};

fn error(span: Span, message: impl std::fmt::Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

/// Expands `#[api_type]` / `#[api_type(crate = "...")]`.
pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = darling::Error::accumulator();
    let mut krate: syn::Path = syn::parse_quote!(::service_provider);
    match darling::ast::NestedMeta::parse_meta_list(args) {
        Ok(items) => {
            for item in items {
                match &item {
                    darling::ast::NestedMeta::Meta(syn::Meta::NameValue(nv))
                        if nv.path.is_ident("crate") =>
                    {
                        match &nv.value {
                            syn::Expr::Lit(syn::ExprLit {
                                lit: syn::Lit::Str(s),
                                ..
                            }) => match s.parse() {
                                Ok(path) => krate = path,
                                Err(_) => errors.push(error(
                                    s.span(),
                                    "`crate` takes a path, e.g. `crate = \"::my_facade\"`",
                                )),
                            },
                            syn::Expr::Path(p) => krate = p.path.clone(),
                            other => errors.push(error(
                                syn::spanned::Spanned::span(other),
                                "`crate` takes a path, e.g. `crate = \"::my_facade\"`",
                            )),
                        }
                    }
                    other => {
                        let name = match other {
                            darling::ast::NestedMeta::Meta(m) => {
                                darling::util::path_to_string(m.path())
                            }
                            _ => String::new(),
                        };
                        let hint = did_you_mean(&name, &["crate"])
                            .map(|c| format!("; did you mean `{c}`?"))
                            .unwrap_or_default();
                        errors.push(error(
                            syn::spanned::Spanned::span(other),
                            format!("#[api_type] takes only `crate = \"path\"`{hint}"),
                        ));
                    }
                }
            }
        }
        Err(err) => errors.push(err.into()),
    }
    let item: DeriveInput = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            errors.push(error(
                Span::call_site(),
                "#[api_type] goes on a struct or an enum",
            ));
            let mut out = input;
            if let Err(err) = errors.finish() {
                out.extend(err.write_errors());
            }
            return out;
        }
    };
    // A mistake in the arguments or a rule still derives everything (through the default crate
    // path), so the types that use this one see no "trait not implemented" cascade.
    let mut item = item;

    let p = quote!(#krate::__private);
    let serde_crate = quote!(#p::serde).to_string().replace(' ', "");
    let schemars_crate = quote!(#p::schemars).to_string().replace(' ', "");
    let derived: Vec<String> = serde_attrs::derived(&item.attrs)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let derive = derives(&krate, &derived, &[]);
    let container = serde_attrs::container(&item.attrs);
    let serde_crate_attr = (!container.has_crate).then(|| quote!(#[serde(crate = #serde_crate)]));
    let schemars_crate_attr = (!serde_attrs::has_schemars_crate(&item.attrs))
        .then(|| quote!(#[schemars(crate = #schemars_crate)]));

    // Kubernetes fields are camelCase; serde's default would keep Rust's snake_case.
    let named = match &item.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named),
            _ => None,
        },
        _ => None,
    };
    let camel = (named.is_some() && container.rename_all.is_none())
        .then(|| quote!(#[serde(rename_all = "camelCase")]));
    let fields_impl = named.map(|named| {
        let rule = container.rename_all.unwrap_or(RenameRule::Camel);
        let json: Vec<_> = named
            .named
            .iter()
            .map(|f| serde_attrs::field(f, rule))
            .collect();
        let names = json
            .iter()
            .filter(|f| !f.skipped && !f.flatten)
            .map(|f| &f.name);
        let open = json.iter().any(|f| f.flatten);
        let ident = &item.ident;
        let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::runtime::JsonFields for #ident #ty_generics #where_clause {
                const FIELDS: &'static [&'static str] = &[#(#names),*];
                const OPEN: bool = #open;
            }
        }
    });
    // An enum's fields depend on the variant: it lists none and accepts any name, so a rule
    // on a field of this type (checked through `JsonFields`) is not refused for naming one.
    let fields_impl = fields_impl.or_else(|| {
        matches!(item.data, Data::Enum(_)).then(|| {
            let ident = &item.ident;
            let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
            quote! {
                #[automatically_derived]
                impl #impl_generics #p::runtime::JsonFields for #ident #ty_generics #where_clause {
                    const FIELDS: &'static [&'static str] = &[];
                    const OPEN: bool = true;
                }
            }
        })
    });

    // An enum's or a newtype's rules see a value whose fields the macro cannot see: not checked.
    let json: Option<Vec<serde_attrs::FieldJson>> = named.map(|named| {
        let rule = container.rename_all.unwrap_or(RenameRule::Camel);
        named
            .named
            .iter()
            .map(|f| serde_attrs::field(f, rule))
            .collect()
    });
    let json: Option<Vec<&serde_attrs::FieldJson>> = json.as_ref().map(|j| j.iter().collect());
    let owner = item.ident.to_string();
    let fields = match &mut item.data {
        Data::Struct(data) => match &mut data.fields {
            Fields::Named(named) => Some(named),
            _ => None,
        },
        _ => None,
    };
    let references = rules::apply(
        &mut item.attrs,
        fields,
        json.as_deref(),
        &owner,
        &krate,
        &mut errors,
    );
    // A check outside the type cannot name its generic parameters; a generic type's field rules
    // are parsed only.
    let rule_checks = (!references.is_empty() && item.generics.params.is_empty()).then(|| {
        let checks = crate::expand::rule_checks(&references, &p);
        quote!(const _: () = { #checks };)
    });
    let errors = errors.finish().err().map(darling::Error::write_errors);
    quote! {
        #derive
        #serde_crate_attr
        #schemars_crate_attr
        #camel
        #item
        #fields_impl
        #rule_checks
        #errors
    }
}
