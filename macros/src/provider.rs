//! `#[service_provider(...)]`: options and spec struct → validated model → a kube-derive
//! `CustomResource` for the Service API and the ProviderConfig, plus the runtime's trait impls.

use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, FieldsNamed, Ident, LitStr, Type, TypePath};

use crate::names;
use crate::options::{self, Access, Column, Options, Workload, did_you_mean};
use crate::serde_attrs::{self, RenameRule};

/// Names of the printer columns the runtime adds (`service_provider::manifests::COMMON_COLUMNS`).
const COMMON_COLUMNS: [&str; 3] = ["Phase", "Ready", "Age"];

/// Fields Kubernetes objects have at the top level; a spec field by these names is refused.
const RESERVED_FIELDS: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

fn error(span: Span, message: impl std::fmt::Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

/// A spec field and its JSON name.
struct SpecField {
    ty: Type,
    json: serde_attrs::FieldJson,
}

/// Everything the expansion needs, validated.
struct Model {
    krate: syn::Path,
    group: String,
    version: String,
    kind: String,
    plural: String,
    singular: String,
    shortnames: Vec<String>,
    categories: Vec<String>,
    columns: Vec<Column>,
    config: Option<TypePath>,
    status: Option<TypePath>,
    workload: Workload,
    mcp_access: Option<Access>,
    workload_access: Option<Access>,
    kcp: bool,
    doc: Option<String>,
    /// `rename_all = "camelCase"` must be added (the author set no rule).
    add_camel_case: bool,
    has_serde_crate: bool,
    has_schemars_crate: bool,
    /// Derives the author already wrote.
    derived: Vec<String>,
    fields: Vec<SpecField>,
}

/// Expands the attribute. On any error the struct is emitted unchanged with every error beside it,
/// so the rest of the crate still sees the type (and IDEs keep completing it).
pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
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
            return with_errors(input, errors);
        }
    };
    let fields = check_shape(&item, &mut errors);
    let model = build(options, &item, fields, &mut errors);
    match (errors.finish(), model) {
        (Ok(()), Some(model)) => generate(&item, &model),
        (result, _) => {
            let mut out = without_helper_attributes(item).into_token_stream();
            if let Err(err) = result {
                out.extend(err.write_errors());
            }
            out
        }
    }
}

/// The struct as written minus the attributes only our derives understand (`serde`, `schemars`,
/// `kube`): emitted without the derives, they would add "cannot find attribute" errors that hide
/// the real ones.
pub(crate) fn without_helper_attributes(mut item: DeriveInput) -> DeriveInput {
    let helper = |a: &syn::Attribute| {
        ["serde", "schemars", "kube"]
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

fn with_errors(mut input: TokenStream, errors: Accumulator) -> TokenStream {
    if let Err(err) = errors.finish() {
        input.extend(err.write_errors());
    }
    input
}

/// The struct must have named fields and no generics.
fn check_shape<'a>(item: &'a DeriveInput, errors: &mut Accumulator) -> Option<&'a FieldsNamed> {
    const HOW: &str =
        "#[service_provider] goes on a struct with named fields, the spec of the Service API";
    let fields = match &item.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named),
            Fields::Unnamed(unnamed) => {
                errors.push(error(
                    unnamed.span(),
                    format!("{HOW}, not a tuple struct: name the fields, e.g. `pub struct {} {{ pub version: String }}`", item.ident),
                ));
                None
            }
            Fields::Unit => {
                errors.push(error(
                    item.ident.span(),
                    format!("{HOW}, not a unit struct: write `pub struct {} {{}}` for a spec without fields", item.ident),
                ));
                None
            }
        },
        Data::Enum(data) => {
            errors.push(error(
                data.enum_token.span(),
                format!("{HOW}, not an enum; put the enum in a field of the spec struct"),
            ));
            None
        }
        Data::Union(data) => {
            errors.push(error(
                data.union_token.span(),
                format!("{HOW}, not a union"),
            ));
            None
        }
    };
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.push(error(
            item.generics.span(),
            "the spec struct cannot be generic: a Service API has exactly one schema; remove the type parameters",
        ));
    }
    fields
}

fn string(lit: &Option<LitStr>) -> Option<String> {
    lit.as_ref().map(LitStr::value)
}

fn check(errors: &mut Accumulator, lit: &LitStr, result: Result<(), String>) {
    if let Err(message) = result {
        errors.push(error(lit.span(), message));
    }
}

fn doc(item: &DeriveInput) -> Option<String> {
    let lines: Vec<String> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn build(
    options: Options,
    item: &DeriveInput,
    fields: Option<&FieldsNamed>,
    errors: &mut Accumulator,
) -> Option<Model> {
    for (name, lit) in [
        ("group", &options.group),
        ("version", &options.version),
        ("kind", &options.kind),
    ] {
        if lit.is_none() {
            let example = match name {
                "group" => "group = \"velero.services.open-control-plane.io\"",
                "version" => "version = \"v1alpha1\"",
                _ => "kind = \"Velero\"",
            };
            errors.push(error(
                Span::call_site(),
                format!("missing option `{name}`: add `{example}`"),
            ));
        }
    }
    if let Some(lit) = &options.group {
        check(errors, lit, names::group(&lit.value()));
    }
    if let Some(lit) = &options.version {
        check(errors, lit, names::version(&lit.value()));
    }
    if let Some(lit) = &options.kind {
        let kind = lit.value();
        check(errors, lit, names::kind(&kind));
        let ident = item.ident.to_string();
        if ident == kind {
            errors.push(error(
                item.ident.span(),
                format!(
                    "this struct is the spec; #[service_provider] generates the resource type `{kind}` from `kind`: rename the struct to `{kind}Spec`"
                ),
            ));
        } else if ident == format!("{kind}ProviderConfig")
            || ident == format!("{kind}ProviderConfigSpec")
        {
            errors.push(error(
                item.ident.span(),
                format!("`{ident}` is generated for the ProviderConfig; rename the struct to `{kind}Spec`"),
            ));
        }
    }
    let singular = match &options.singular {
        Some(lit) => {
            check(errors, lit, names::resource_name("singular", &lit.value()));
            lit.value()
        }
        None => names::singular(&string(&options.kind).unwrap_or_default()),
    };
    let plural = match &options.plural {
        Some(lit) => {
            check(errors, lit, names::resource_name("plural", &lit.value()));
            lit.value()
        }
        None => names::plural(&string(&options.kind).unwrap_or_default()),
    };
    if plural == "providerconfigs"
        && let Some(lit) = options.plural.as_ref().or(options.kind.as_ref())
    {
        errors.push(error(
            lit.span(),
            "the plural `providerconfigs` is taken by the ProviderConfig; choose another",
        ));
    }
    for lit in &options.shortnames {
        check(
            errors,
            lit,
            names::resource_name("short name", &lit.value()),
        );
    }
    for lit in &options.categories {
        check(errors, lit, names::resource_name("category", &lit.value()));
    }

    for attr in &item.attrs {
        if attr.path().is_ident("kube") {
            errors.push(error(
                attr.span(),
                "#[kube(...)] is written by #[service_provider]; use its options instead (group, version, kind, plural, shortnames, printcolumn, ...)",
            ));
        }
    }
    let derived = serde_attrs::derived(&item.attrs);
    for (name, span) in &derived {
        if name == "CustomResource" {
            errors.push(error(
                *span,
                "remove `CustomResource`: #[service_provider] derives it",
            ));
        }
    }

    let container = serde_attrs::container(&item.attrs);
    let rule = container.rename_all.unwrap_or(RenameRule::Camel);
    let spec_fields: Vec<SpecField> = fields
        .map(|named| {
            named
                .named
                .iter()
                .map(|field| SpecField {
                    ty: field.ty.clone(),
                    json: serde_attrs::field(field, rule),
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(named) = fields {
        for (field, spec) in named.named.iter().zip(&spec_fields) {
            if !spec.json.skipped
                && !spec.json.flatten
                && RESERVED_FIELDS.contains(&spec.json.name.as_str())
            {
                let span = field
                    .ident
                    .as_ref()
                    .map_or_else(|| field.span(), Ident::span);
                errors.push(error(
                    span,
                    format!(
                        "the spec cannot have a field named `{}`: apiVersion, kind, metadata and status are the \
                         top-level fields of every Kubernetes object, and a spec field by that name is mistaken \
                         for them; rename it",
                        spec.json.name
                    ),
                ));
            }
        }
    }

    check_columns(&options, item, &spec_fields, errors);
    if let Some((_, span)) = &options.workload_access
        && matches!(options.workload_cluster, None | Some(Workload::None))
    {
        errors.push(error(
            *span,
            "`workload_access` configures the workload cluster's AccessRequest, but this provider \
             has none: add `workload_cluster = optional` or `required`, or remove `workload_access`",
        ));
    }

    Some(Model {
        krate: options
            .krate
            .unwrap_or_else(|| syn::parse_quote!(::service_provider)),
        group: string(&options.group)?,
        version: string(&options.version)?,
        kind: string(&options.kind)?,
        plural,
        singular,
        shortnames: options.shortnames.iter().map(LitStr::value).collect(),
        categories: options.categories.iter().map(LitStr::value).collect(),
        columns: options.printcolumns,
        config: options.config,
        status: options.status,
        workload: options.workload_cluster.unwrap_or(Workload::None),
        mcp_access: options.mcp_access.map(|(a, _)| a),
        workload_access: options.workload_access.map(|(a, _)| a),
        kcp: options.kcp,
        doc: doc(item),
        add_camel_case: container.rename_all.is_none(),
        has_serde_crate: container.has_crate,
        has_schemars_crate: serde_attrs::has_schemars_crate(&item.attrs),
        derived: derived.into_iter().map(|(name, _)| name).collect(),
        fields: spec_fields,
    })
}

/// Where a printer column's JSON path points.
enum ColumnTarget {
    /// `.metadata...`, or a path below a field we cannot see into.
    Unchecked,
    /// `.spec.<field>...`
    Spec(String),
    /// `.status.<field>...`
    Status(String),
}

fn column_target(path: &str) -> Result<ColumnTarget, String> {
    let Some(rest) = path.strip_prefix('.') else {
        return Err(format!(
            "json_path {path:?} must start with `.`, e.g. \".spec.version\""
        ));
    };
    let end = rest.find(['.', '[']).unwrap_or(rest.len());
    let (root, rest) = rest.split_at(end);
    let field = rest
        .strip_prefix('.')
        .map(|r| &r[..r.find(['.', '[']).unwrap_or(r.len())]);
    match (root, field) {
        ("metadata", _) => Ok(ColumnTarget::Unchecked),
        ("spec" | "status", None) => Ok(ColumnTarget::Unchecked),
        ("spec", Some(field)) => Ok(ColumnTarget::Spec(field.to_owned())),
        ("status", Some(field)) => Ok(ColumnTarget::Status(field.to_owned())),
        _ => Err(format!(
            "json_path {path:?} must start with `.spec.`, `.status.` or `.metadata.`"
        )),
    }
}

fn check_columns(
    options: &Options,
    item: &DeriveInput,
    fields: &[SpecField],
    errors: &mut Accumulator,
) {
    let mut names: Vec<String> = Vec::new();
    for column in &options.printcolumns {
        let name = column.name.value();
        if name.trim().is_empty() {
            errors.push(error(
                column.name.span(),
                "the column name is empty; name it, e.g. `name = \"Version\"`",
            ));
        } else if let Some(common) = COMMON_COLUMNS
            .iter()
            .find(|c| c.eq_ignore_ascii_case(&name))
        {
            errors.push(error(
                column.name.span(),
                format!("the column `{common}` is already added by service-provider (with Phase, Ready and Age); remove this one or rename it"),
            ));
        } else if names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            errors.push(error(
                column.name.span(),
                format!("two printer columns are named `{name}`; rename one"),
            ));
        }
        names.push(name);

        let type_ = column.type_.value();
        if !names::COLUMN_TYPES.contains(&type_.as_str()) {
            let hint = did_you_mean(&type_, names::COLUMN_TYPES)
                .map(|t| format!("; did you mean `{t}`?"))
                .unwrap_or_default();
            errors.push(error(
                column.type_.span(),
                format!(
                    "column type `{type_}` is not one of {}{hint}",
                    names::COLUMN_TYPES.join(", ")
                ),
            ));
        }
        if let Some(format) = &column.format
            && !names::COLUMN_FORMATS.contains(&format.value().as_str())
        {
            errors.push(error(
                format.span(),
                format!(
                    "column format `{}` is not one of {}",
                    format.value(),
                    names::COLUMN_FORMATS.join(", ")
                ),
            ));
        }
        if let Some(priority) = &column.priority
            && priority.base10_parse::<i32>().map_or(true, |p| p < 0)
        {
            errors.push(error(
                priority.span(),
                "`priority` is a number from 0 (always shown) upwards (shown with -o wide)",
            ));
        }

        let path = column.json_path.value();
        match column_target(&path) {
            Err(message) => errors.push(error(column.json_path.span(), message)),
            Ok(ColumnTarget::Spec(field)) => {
                let visible: Vec<&str> = fields
                    .iter()
                    .filter(|f| !f.json.skipped && !f.json.flatten)
                    .map(|f| f.json.name.as_str())
                    .collect();
                // A flattened field's own fields are not visible here; trust the author.
                let open = fields.iter().any(|f| f.json.flatten);
                if !open && !visible.contains(&field.as_str()) {
                    let hint = did_you_mean(&field, &visible)
                        .map(|f| format!("; did you mean `{f}`?"))
                        .unwrap_or_default();
                    let list = if visible.is_empty() {
                        "it has none".to_owned()
                    } else {
                        format!("its fields are {}", visible.join(", "))
                    };
                    errors.push(error(
                        column.json_path.span(),
                        format!(
                            "json_path {path:?} names no field of the spec `{}` ({list}){hint}",
                            item.ident
                        ),
                    ));
                }
            }
            Ok(ColumnTarget::Status(_) | ColumnTarget::Unchecked) => {}
        }
    }
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
    let shortnames = model.shortnames.iter().map(|s| quote!(shortname = #s,));
    let categories = model.categories.iter().map(|c| quote!(category = #c,));
    let columns = model.columns.iter().map(|c| {
        let (name, type_, json_path) = (&c.name, &c.type_, &c.json_path);
        let description = c.description.as_ref().map(|d| quote!(, description = #d));
        let format = c.format.as_ref().map(|f| quote!(, format = #f));
        let priority = c.priority.as_ref().map(|pr| quote!(, priority = #pr));
        quote!(printcolumn(name = #name, type_ = #type_, json_path = #json_path #description #format #priority),)
    });
    let doc = model.doc.as_ref().map(|d| quote!(doc = #d,));
    let serde_crate_attr = (!model.has_serde_crate).then(|| quote!(#[serde(crate = #serde_crate)]));
    let schemars_crate_attr =
        (!model.has_schemars_crate).then(|| quote!(#[schemars(crate = #schemars_crate)]));
    let camel = model
        .add_camel_case
        .then(|| quote!(#[serde(rename_all = "camelCase")]));
    let attrs = &item.attrs;
    let data = match &item.data {
        Data::Struct(data) => &data.fields,
        // `check_shape` let only structs with named fields through.
        _ => return item.to_token_stream(),
    };
    let service = quote! {
        #derive
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
            #doc
            #crates
        )]
        #serde_crate_attr
        #schemars_crate_attr
        #camel
        #(#attrs)*
        #vis struct #spec_ident #data
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
            /// The fields every ProviderConfig has: versions, pollInterval, imagePullSecrets, kcp, workloadCluster.
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
            Some(Access::ClusterAdmin) => quote!(#p::runtime::access::cluster_admin()),
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
            type WorkloadCluster = #p::runtime::context::workload::#workload;
            const INFO: #p::runtime::ProviderInfo = #p::runtime::ProviderInfo {
                group: #group,
                version: #version,
                kind: #kind,
                plural: #plural,
                kcp: #kcp,
            };
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
    let field_checks = model.fields.iter().map(|field| {
        let ty = &field.ty;
        quote_spanned! {ty.span()=> __assert_field::<#ty>();}
    });

    quote! {
        #service
        #provider_config
        const _: () = {
            #impls

            #config_check
            #status_check
            #(#column_checks)*

            // The runtime shares objects across its worker threads.
            fn __assert_field<T: ::core::marker::Send + ::core::marker::Sync + 'static>() {}
            fn __assert_fields() {
                #(#field_checks)*
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_paths() {
        assert!(
            matches!(column_target(".spec.version"), Ok(ColumnTarget::Spec(f)) if f == "version")
        );
        assert!(
            matches!(column_target(".spec.plugins[0].name"), Ok(ColumnTarget::Spec(f)) if f == "plugins")
        );
        assert!(
            matches!(column_target(".status.conditions[?(@.type==\"Ready\")].status"), Ok(ColumnTarget::Status(f)) if f == "conditions")
        );
        assert!(matches!(
            column_target(".metadata.name"),
            Ok(ColumnTarget::Unchecked)
        ));
        assert!(column_target("spec.version").is_err());
        assert!(column_target(".specs.version").is_err());
    }
}
