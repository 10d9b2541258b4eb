//! The declaration `#[service_provider(...)]` makes, read from the attribute and the spec struct
//! into a [`Model`] and checked, before any code is generated.
//!
//! Like serde_derive's `internals`, nothing here writes tokens: the expansion (`crate::expand`)
//! reads the model only. Every problem is pushed to the accumulator with the span of the token the
//! author must change, and the model is still built from whatever could be read, with defaults in
//! place of the values that could not, so the expansion can still emit the resource type and the
//! author's `impl Reconcile` elsewhere in the file sees no "cannot find type" cascade.

pub(crate) mod columns;
pub(crate) mod names;
pub(crate) mod options;
pub(crate) mod rules;
pub(crate) mod serde_attrs;

use darling::error::Accumulator;
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Fields, FieldsNamed, Ident, LitStr, Token, Type, TypePath,
};

use options::{Access, Column, Options, Workload};
use serde_attrs::RenameRule;

/// Fields Kubernetes objects have at the top level; a spec field by these names is refused.
const RESERVED_FIELDS: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

/// The group and version the resource type is generated with when the author's are missing or
/// invalid. Only ever compiled next to the error that says so, never run.
const FALLBACK_GROUP: &str = "invalid.example.com";
const FALLBACK_VERSION: &str = "v1";

pub(crate) fn error(span: Span, message: impl std::fmt::Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

/// A spec field and its JSON name.
pub(crate) struct SpecField {
    pub ty: Type,
    pub json: serde_attrs::FieldJson,
}

/// Everything the expansion needs. Without errors in the accumulator it is the author's
/// declaration, validated; with errors, the closest declaration that compiles.
pub(crate) struct Model {
    pub krate: syn::Path,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub shortnames: Vec<String>,
    pub categories: Vec<String>,
    pub columns: Vec<Column>,
    /// `selectableFields`: JSON paths a field selector may name.
    pub selectable: Vec<String>,
    pub deletion_guards: Vec<DeletionGuard>,
    /// The served versions besides `version`, the hub.
    pub served_versions: Vec<ServedVersion>,
    pub config: Option<TypePath>,
    pub status: Option<TypePath>,
    pub workload: Workload,
    pub mcp_access: Option<Access>,
    pub workload_access: Option<Access>,
    pub kcp: bool,
    pub doc: Option<String>,
    /// `rename_all = "camelCase"` must be added (the author set no rule).
    pub add_camel_case: bool,
    pub has_serde_crate: bool,
    pub has_schemars_crate: bool,
    /// Derives the author already wrote.
    pub derived: Vec<String>,
    /// The struct's attributes as they are emitted: without `#[kube]` and a derived
    /// `CustomResource`, which the expansion writes itself, and with its validation rules as
    /// schema attributes.
    pub attrs: Vec<Attribute>,
    /// The struct's fields as they are emitted: validation rules as schema attributes.
    pub named: FieldsNamed,
    /// What the rules on fields of the author's own types select, for the compiler to check.
    pub rule_references: Vec<rules::FieldReference>,
    pub fields: Vec<SpecField>,
}

/// Reads and checks the declaration. `None` only when no resource type can be generated at all:
/// the item is not a struct with named fields, or no kind can be told.
pub(crate) fn build(
    options: Options,
    item: &DeriveInput,
    errors: &mut Accumulator,
) -> Option<Model> {
    let fields = check_shape(item, errors);
    for (name, lit) in [
        ("group", &options.group),
        ("version", &options.version),
        ("kind", &options.kind),
    ] {
        if lit.is_none() {
            missing(name, errors);
        }
    }
    let group = options
        .group
        .as_ref()
        .and_then(|lit| checked_value(lit, names::group, errors));
    let version = options
        .version
        .as_ref()
        .and_then(|lit| checked_value(lit, names::version, errors));
    let kind = kind(&options, item, errors);
    let singular = match &options.singular {
        Some(lit) => checked_value(lit, |s| names::resource_name("singular", s), errors),
        None => None,
    };
    let plural = match &options.plural {
        Some(lit) => checked_value(lit, |s| names::resource_name("plural", s), errors),
        None => None,
    };
    let kind_or_default = kind.clone().unwrap_or_default();
    let mut plural = plural.unwrap_or_else(|| names::plural(&kind_or_default));
    if plural == "providerconfigs"
        && let Some(lit) = options.plural.as_ref().or(options.kind.as_ref())
    {
        errors.push(error(
            lit.span(),
            "the plural `providerconfigs` is taken by the ProviderConfig; choose another",
        ));
        plural = format!("{}s", names::singular(&kind_or_default));
    }
    let singular = singular.unwrap_or_else(|| names::singular(&kind_or_default));
    let shortnames = options
        .shortnames
        .iter()
        .filter_map(|lit| checked_value(lit, |s| names::resource_name("short name", s), errors))
        .collect();
    let categories = options
        .categories
        .iter()
        .filter_map(|lit| checked_value(lit, |s| names::resource_name("category", s), errors))
        .collect();

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
        check_reserved(named, &spec_fields, errors);
    }

    let columns = columns::check(options.printcolumns, item, &spec_fields, errors);
    let selectable = columns::check_selectable(&options.selectable, item, &spec_fields, errors);
    if let Some((_, span)) = &options.workload_access
        && matches!(options.workload_cluster, None | Some(Workload::None))
    {
        errors.push(error(
            *span,
            "`workload_access` configures the workload cluster's AccessRequest, but this provider \
             has none: add `workload_cluster = optional` or `required`, or remove `workload_access`",
        ));
    }

    let deletion_guards = options
        .deletion_guards
        .iter()
        .filter_map(|guard| deletion_guard(guard, errors))
        .collect();

    let served_versions = served_versions(
        &options.served_versions,
        version.as_deref(),
        options.kcp,
        errors,
    );

    // Only a struct with named fields can become a resource's spec.
    let mut named = fields?.clone();
    let mut attrs = emitted_attrs(&item.attrs);
    let krate = options
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::service_provider));
    let json: Vec<&serde_attrs::FieldJson> = spec_fields.iter().map(|f| &f.json).collect();
    let rule_references = rules::apply(
        &mut attrs,
        Some(&mut named),
        Some(&json),
        &item.ident.to_string(),
        &krate,
        errors,
    );
    Some(Model {
        krate,
        group: group.unwrap_or_else(|| FALLBACK_GROUP.to_owned()),
        version: version.unwrap_or_else(|| FALLBACK_VERSION.to_owned()),
        kind: kind?,
        plural,
        singular,
        shortnames,
        categories,
        columns,
        selectable,
        deletion_guards,
        served_versions,
        config: options.config,
        status: options.status,
        workload: options.workload_cluster.unwrap_or(Workload::None),
        mcp_access: options.mcp_access.map(|(a, _)| a),
        workload_access: options.workload_access.map(|(a, _)| a),
        kcp: options.kcp,
        doc: doc(&item.attrs),
        add_camel_case: container.rename_all.is_none(),
        has_serde_crate: container.has_crate,
        has_schemars_crate: serde_attrs::has_schemars_crate(&item.attrs),
        derived: derived
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| name != "CustomResource")
            .collect(),
        attrs,
        named,
        rule_references,
        fields: spec_fields,
    })
}

/// A `served_version(...)`, checked.
pub(crate) struct ServedVersion {
    pub name: String,
    /// Its own spec type, converted to and from the hub's; `None` when it shares the hub's.
    pub spec: Option<TypePath>,
    /// The hub's spec only adds fields to `spec`'s: the API server converts by `apiVersion`
    /// (pruning the added fields), no code runs.
    pub additive: bool,
    pub storage: bool,
    /// `Some` when deprecated, with the warning if one was given.
    pub deprecated: Option<Option<String>>,
}

fn served_versions(
    declared: &[options::ServedVersion],
    hub: Option<&str>,
    kcp: bool,
    errors: &mut Accumulator,
) -> Vec<ServedVersion> {
    let mut checked: Vec<ServedVersion> = Vec::new();
    let mut storage: Option<String> = None;
    for version in declared {
        let Some(lit) = &version.name else { continue };
        let Some(name) = checked_value(lit, names::version, errors) else {
            continue;
        };
        if Some(name.as_str()) == hub {
            errors.push(error(
                lit.span(),
                format!(
                    "`{name}` is this provider's `version`, the one the reconciler sees; a \
                     `served_version` names another version the Service API also serves"
                ),
            ));
            continue;
        }
        if checked.iter().any(|v| v.name == name) {
            errors.push(error(
                lit.span(),
                format!("`{name}` is already declared by another `served_version`; keep one"),
            ));
            continue;
        }
        if version.storage {
            if let Some(first) = &storage {
                errors.push(error(
                    version.span,
                    format!(
                        "`{first}` is already the storage version; objects are stored at one \
                         version only: keep `storage` on one `served_version`"
                    ),
                ));
            }
            storage.get_or_insert_with(|| name.clone());
        }
        if let Some(span) = version.additive
            && version.spec.is_none()
        {
            errors.push(error(
                span,
                format!(
                    "`additive` says the hub's spec adds fields to `{name}`'s own spec type, but `{name}` \
                     has none: it shares the hub's spec already; add `spec = <its spec type>` or \
                     remove `additive`"
                ),
            ));
        }
        if kcp
            && version.additive.is_none()
            && let Some(spec) = &version.spec
        {
            errors.push(error(
                spec.span(),
                format!(
                    "`{name}` has its own spec type, so it converts in Rust through a conversion \
                     webhook, but kcp converts an APIResourceSchema's versions only by declarative \
                     rules and calls no webhook: serve `{name}` with this spec's schema (leave out \
                     `spec`), declare it `additive` if this spec only adds fields to it, or leave \
                     out `kcp`"
                ),
            ));
        }
        checked.push(ServedVersion {
            name,
            spec: version.spec.clone(),
            additive: version.additive.is_some(),
            storage: version.storage,
            deprecated: version
                .deprecated
                .as_ref()
                .map(|warning| warning.as_ref().map(LitStr::value)),
        });
    }
    checked
}

/// A `deletion_guard(...)`, checked, with its plural.
pub(crate) struct DeletionGuard {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub labels: Option<String>,
}

fn deletion_guard(guard: &options::Guard, errors: &mut Accumulator) -> Option<DeletionGuard> {
    let group = match &guard.group {
        Some(lit) => checked_value(lit, names::any_group, errors),
        None => Some(String::new()),
    };
    let version = checked_value(&guard.version, names::version, errors);
    let kind = checked_value(&guard.kind, names::any_kind, errors);
    let plural = match &guard.plural {
        Some(lit) => checked_value(lit, |s| names::resource_name("plural", s), errors),
        None => kind.as_deref().map(names::plural),
    };
    let namespace = match &guard.namespace {
        Some(lit) => Some(checked_value(lit, names::namespace, errors)?),
        None => None,
    };
    let labels = match &guard.labels {
        Some(lit) => Some(checked_value(
            lit,
            |s| {
                if s.trim().is_empty() {
                    Err("`labels` is a label selector such as \"app.kubernetes.io/part-of=velero\"; \
                         leave it out to count every object"
                        .to_owned())
                } else {
                    Ok(())
                }
            },
            errors,
        )?),
        None => None,
    };
    Some(DeletionGuard {
        group: group?,
        version: version?,
        kind: kind?,
        plural: plural?,
        namespace,
        labels,
    })
}

fn missing(name: &str, errors: &mut Accumulator) {
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

/// The value of `lit` when it passes `check`; the error on its span otherwise.
fn checked_value(
    lit: &LitStr,
    check: impl Fn(&str) -> Result<(), String>,
    errors: &mut Accumulator,
) -> Option<String> {
    let value = lit.value();
    match check(&value) {
        Ok(()) => Some(value),
        Err(message) => {
            errors.push(error(lit.span(), message));
            None
        }
    }
}

/// The kind, checked, and the name the resource type gets. When the kind is missing or invalid
/// the type is still generated, named after the struct (`VeleroSpec` → `Velero`), or after the
/// kind as written when that is an identifier; `None` when neither works, or when the name would
/// be the struct's own.
fn kind(options: &Options, item: &DeriveInput, errors: &mut Accumulator) -> Option<String> {
    let ident = item.ident.to_string();
    let from_struct = ident
        .strip_suffix("Spec")
        .filter(|k| names::kind(k).is_ok())
        .map(str::to_owned);
    let Some(lit) = &options.kind else {
        return from_struct;
    };
    let kind = lit.value();
    let valid = checked_value(lit, names::kind, errors);
    if ident == kind {
        errors.push(error(
            item.ident.span(),
            format!(
                "this struct is the spec; #[service_provider] generates the resource type `{kind}` from `kind`: rename the struct to `{kind}Spec`"
            ),
        ));
        return None;
    }
    if ident == format!("{kind}ProviderConfig") || ident == format!("{kind}ProviderConfigSpec") {
        errors.push(error(
            item.ident.span(),
            format!(
                "`{ident}` is generated for the ProviderConfig; rename the struct to `{kind}Spec`"
            ),
        ));
        return None;
    }
    valid
        .or(from_struct)
        .or_else(|| syn::parse_str::<Ident>(&kind).ok().map(|_| kind))
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
        return None;
    }
    fields
}

fn check_reserved(named: &FieldsNamed, fields: &[SpecField], errors: &mut Accumulator) {
    for (field, spec) in named.named.iter().zip(fields) {
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

/// The struct's doc comment, which becomes the CRD's description.
pub(crate) fn doc(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
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

/// `attrs` minus `#[kube(...)]` and a derived `CustomResource`: both are reported as errors, and
/// emitting them beside the expansion's own would add kube-derive's complaints about the
/// duplicates to ours.
fn emitted_attrs(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter(|a| !a.path().is_ident("kube"))
        .filter_map(|a| {
            if !a.path().is_ident("derive") {
                return Some(a.clone());
            }
            let Ok(paths) = a.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
            else {
                return Some(a.clone());
            };
            let is_crd = |p: &syn::Path| {
                p.segments
                    .last()
                    .is_some_and(|s| s.ident == "CustomResource")
            };
            if !paths.iter().any(is_crd) {
                return Some(a.clone());
            }
            let kept: Vec<&syn::Path> = paths.iter().filter(|p| !is_crd(p)).collect();
            (!kept.is_empty()).then(|| syn::parse_quote!(#[derive(#(#kept),*)]))
        })
        .collect()
}
