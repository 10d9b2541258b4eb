//! Parsing the arguments of `#[service_provider(...)]` into spanned options, collecting every error
//! instead of stopping at the first.

use std::collections::HashMap;

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::util::path_to_string;
use proc_macro2::{Span, TokenStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitInt, LitStr, Meta, Token, TypePath};

/// Every option, for "did you mean" suggestions.
pub(crate) const OPTIONS: &[&str] = &[
    "group",
    "version",
    "kind",
    "plural",
    "singular",
    "shortnames",
    "categories",
    "printcolumn",
    "config",
    "status",
    "workload_cluster",
    "mcp_access",
    "workload_access",
    "kcp",
    "crate",
    "selectable",
    "deletion_guard",
    "served_version",
];

const SERVED_VERSION_OPTIONS: &[&str] = &["name", "spec", "additive", "storage", "deprecated"];

const GUARD_OPTIONS: &[&str] = &["group", "version", "kind", "plural", "namespace", "labels"];

const COLUMN_OPTIONS: &[&str] = &[
    "name",
    "type",
    "json_path",
    "description",
    "format",
    "priority",
];

/// `workload_cluster = none | optional | required`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    None,
    Optional,
    Required,
}

/// `mcp_access = …` / `workload_access = …`: what the runtime's AccessRequests ask for.
pub(crate) enum Access {
    /// `least_privilege` (the default): `TokenConfig::least_privilege()`.
    LeastPrivilege,
    /// `cluster_admin`: a binding of the cluster's `cluster-admin`.
    ClusterAdmin,
    /// The path of the author's `fn() -> TokenConfig`.
    Function(syn::Path),
}

/// One `printcolumn(...)`.
pub(crate) struct Column {
    pub name: LitStr,
    pub type_: LitStr,
    pub json_path: LitStr,
    pub description: Option<LitStr>,
    pub format: Option<LitStr>,
    pub priority: Option<LitInt>,
}

/// One `deletion_guard(...)`, as written.
pub(crate) struct Guard {
    /// `None` for the core group.
    pub group: Option<LitStr>,
    pub version: LitStr,
    pub kind: LitStr,
    pub plural: Option<LitStr>,
    pub namespace: Option<LitStr>,
    pub labels: Option<LitStr>,
}

/// One `served_version(...)`, as written.
pub(crate) struct ServedVersion {
    /// The `served_version` token, for errors about the whole declaration.
    pub span: Span,
    pub name: Option<LitStr>,
    /// Its own spec type; `None` when it shares the hub's.
    pub spec: Option<TypePath>,
    /// `additive`, with its span: the spec type's fields are fields of the hub's.
    pub additive: Option<Span>,
    pub storage: bool,
    /// `deprecated` (`Some(None)`) or `deprecated = "warning"`.
    pub deprecated: Option<Option<LitStr>>,
}

/// The options as written, each with the tokens it came from.
#[derive(Default)]
pub(crate) struct Options {
    pub group: Option<LitStr>,
    pub version: Option<LitStr>,
    pub kind: Option<LitStr>,
    pub plural: Option<LitStr>,
    pub singular: Option<LitStr>,
    pub shortnames: Vec<LitStr>,
    pub categories: Vec<LitStr>,
    pub printcolumns: Vec<Column>,
    pub config: Option<TypePath>,
    pub status: Option<TypePath>,
    pub workload_cluster: Option<Workload>,
    pub mcp_access: Option<(Access, Span)>,
    pub workload_access: Option<(Access, Span)>,
    pub kcp: bool,
    pub krate: Option<syn::Path>,
    pub selectable: Vec<LitStr>,
    pub deletion_guards: Vec<Guard>,
    pub served_versions: Vec<ServedVersion>,
}

/// The closest of `candidates` to `input`, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(input, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn error(span: Span, message: impl std::fmt::Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

fn lit_str(meta: &Meta, name: &str, example: &str, errors: &mut Accumulator) -> Option<LitStr> {
    if let Meta::NameValue(nv) = meta
        && let Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) = &nv.value
    {
        return Some(s.clone());
    }
    errors.push(error(
        meta.span(),
        format!("`{name}` takes a string: `{name} = \"{example}\"`"),
    ));
    None
}

fn lit_strs(meta: &Meta, name: &str, errors: &mut Accumulator) -> Vec<LitStr> {
    let parsed = match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(vec![s.clone()]),
            Expr::Array(array) => array
                .elems
                .iter()
                .map(|e| match e {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        },
        Meta::List(list) => list
            .parse_args_with(Punctuated::<LitStr, Token![,]>::parse_terminated)
            .ok()
            .map(|p| p.into_iter().collect()),
        Meta::Path(_) => None,
    };
    parsed.unwrap_or_else(|| {
        errors.push(error(
            meta.span(),
            format!("`{name}` takes a list of strings: `{name} = [\"a\", \"b\"]`"),
        ));
        Vec::new()
    })
}

/// A type path: `config = VeleroConfig`, `config = crate::api::Config<X>`.
fn type_path(meta: &NestedMeta, name: &str, errors: &mut Accumulator) -> Option<TypePath> {
    let example = match name {
        "config" => "VeleroConfig",
        "status" => "VeleroStatus",
        _ => "VeleroSpecV1alpha1",
    };
    let how = format!("`{name}` takes a type path, e.g. `{name} = {example}`");
    match meta {
        NestedMeta::Meta(Meta::NameValue(nv)) => match &nv.value {
            Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Some(TypePath {
                attrs: Vec::new(),
                qself: None,
                path: p.path.clone(),
            }),
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => {
                errors.push(error(
                    s.span(),
                    format!(
                        "{how}: write the type without quotes: `{name} = {}`",
                        s.value()
                    ),
                ));
                // Still the type the author means, for the expansion that goes with the error.
                s.parse::<TypePath>().ok()
            }
            other => {
                errors.push(error(other.span(), how));
                None
            }
        },
        // `Config<X>` is not an expression, so darling keeps it as tokens.
        NestedMeta::NameValueInvalidExpr(invalid) => {
            match syn::parse2::<TypePath>(invalid.value.clone()) {
                Ok(path) if path.qself.is_none() => Some(path),
                _ => {
                    errors.push(error(invalid.value.span(), how));
                    None
                }
            }
        }
        other => {
            errors.push(error(other.span(), how));
            None
        }
    }
}

fn workload(meta: &Meta, errors: &mut Accumulator) -> Option<Workload> {
    const VALUES: &[&str] = &["none", "optional", "required"];
    let (value, span) = match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                (p.path.get_ident()?.to_string(), p.span())
            }
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => (s.value(), s.span()),
            other => (String::new(), other.span()),
        },
        other => (String::new(), other.span()),
    };
    match value.as_str() {
        "none" => Some(Workload::None),
        "optional" => Some(Workload::Optional),
        "required" => Some(Workload::Required),
        _ => {
            let hint = did_you_mean(&value, VALUES)
                .map(|v| format!("; did you mean `{v}`?"))
                .unwrap_or_default();
            let shown = if value.is_empty() {
                String::new()
            } else {
                format!(" `{value}`")
            };
            errors.push(error(
                span,
                format!(
                    "invalid value{shown} for `workload_cluster`: write `workload_cluster = none`, `optional` or `required`{hint}"
                ),
            ));
            None
        }
    }
}

fn access(meta: &Meta, name: &str, errors: &mut Accumulator) -> Option<(Access, Span)> {
    let how = format!(
        "`{name}` takes `least_privilege`, `cluster_admin`, or the path of a function returning \
         the token request, e.g. `{name} = my_grant` with `fn my_grant() -> \
         service_provider::openmcp::TokenConfig`"
    );
    let Meta::NameValue(nv) = meta else {
        errors.push(error(meta.span(), how));
        return None;
    };
    match &nv.value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => {
            let access = match p.path.get_ident().map(ToString::to_string).as_deref() {
                Some("least_privilege") => Access::LeastPrivilege,
                Some("cluster_admin") => Access::ClusterAdmin,
                _ => Access::Function(p.path.clone()),
            };
            Some((access, p.span()))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            errors.push(error(s.span(), format!("{how}; write it without quotes")));
            None
        }
        other => {
            errors.push(error(other.span(), how));
            None
        }
    }
}

fn flag(meta: &Meta, name: &str, errors: &mut Accumulator) -> bool {
    match meta {
        Meta::Path(_) => true,
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => b.value,
            other => {
                errors.push(error(
                    other.span(),
                    format!("`{name}` is a flag: write `{name}` or `{name} = false`"),
                ));
                false
            }
        },
        Meta::List(list) => {
            errors.push(error(
                list.span(),
                format!("`{name}` is a flag: write `{name}` or `{name} = false`"),
            ));
            false
        }
    }
}

fn crate_path(meta: &Meta, errors: &mut Accumulator) -> Option<syn::Path> {
    let parsed = match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => s.parse::<syn::Path>().ok(),
            Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
            _ => None,
        },
        _ => None,
    };
    if parsed.is_none() {
        errors.push(error(
            meta.span(),
            "`crate` takes the path of the service-provider crate, e.g. `crate = \"::my_service_provider\"`",
        ));
    }
    parsed
}

/// The items of an option written as a list (`option(key = "value", ..)`); an option written
/// otherwise is an error that says `how` to write it.
fn nested_list(
    meta: &Meta,
    option: &str,
    how: &str,
    errors: &mut Accumulator,
) -> Option<Vec<NestedMeta>> {
    let Meta::List(list) = meta else {
        errors.push(error(
            meta.span(),
            format!("`{option}` takes a list: {how}"),
        ));
        return None;
    };
    match NestedMeta::parse_meta_list(list.tokens.clone()) {
        Ok(items) => Some(items),
        Err(err) => {
            errors.push(err.into());
            None
        }
    }
}

fn column(meta: &Meta, errors: &mut Accumulator) -> Option<Column> {
    let how =
        "write `printcolumn(name = \"Version\", type = \"string\", json_path = \".spec.version\")`";
    let items = nested_list(meta, "printcolumn", how, errors)?;
    let mut seen: HashMap<String, ()> = HashMap::new();
    let (mut name, mut type_, mut json_path, mut description, mut format, mut priority) =
        (None, None, None, None, None, None);
    for item in &items {
        let NestedMeta::Meta(meta) = item else {
            errors.push(error(
                item.span(),
                format!("unexpected value in `printcolumn`: {how}"),
            ));
            continue;
        };
        // kube-derive spells it `type_`; accept both.
        let key = match path_to_string(meta.path()).as_str() {
            "type_" => "type".to_owned(),
            other => other.to_owned(),
        };
        if seen.insert(key.clone(), ()).is_some() {
            errors.push(error(
                meta.path().span(),
                format!("duplicate `{key}` in `printcolumn`"),
            ));
            continue;
        }
        match key.as_str() {
            "name" => name = lit_str(meta, "name", "Version", errors),
            "type" => type_ = lit_str(meta, "type", "string", errors),
            "json_path" => json_path = lit_str(meta, "json_path", ".spec.version", errors),
            "description" => {
                description = lit_str(meta, "description", "The installed version", errors)
            }
            "format" => format = lit_str(meta, "format", "date-time", errors),
            "priority" => match meta {
                Meta::NameValue(nv) => match &nv.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Int(i), ..
                    }) => priority = Some(i.clone()),
                    other => errors.push(error(
                        other.span(),
                        "`priority` takes a number: `priority = 1`",
                    )),
                },
                other => errors.push(error(
                    other.span(),
                    "`priority` takes a number: `priority = 1`",
                )),
            },
            other => {
                let hint = did_you_mean(other, COLUMN_OPTIONS)
                    .map(|v| format!("; did you mean `{v}`?"))
                    .unwrap_or_default();
                errors.push(error(
                    meta.path().span(),
                    format!(
                        "unknown `printcolumn` option `{other}`{hint} (options: name, type, json_path, description, format, priority)"
                    ),
                ));
            }
        }
    }
    let mut missing = |present: bool, what: &str| {
        if !present && !seen.contains_key(what) {
            errors.push(error(
                meta.path().span(),
                format!("`printcolumn` is missing `{what}`: {how}"),
            ));
        }
    };
    missing(name.is_some(), "name");
    missing(type_.is_some(), "type");
    missing(json_path.is_some(), "json_path");
    Some(Column {
        name: name?,
        type_: type_?,
        json_path: json_path?,
        description,
        format,
        priority,
    })
}

fn deletion_guard(meta: &Meta, errors: &mut Accumulator) -> Option<Guard> {
    let how = "write `deletion_guard(group = \"velero.io\", version = \"v1\", kind = \"Backup\")`, \
               optionally with `plural`, `namespace` and `labels` (a label selector)";
    let items = nested_list(meta, "deletion_guard", how, errors)?;
    let mut values: HashMap<String, LitStr> = HashMap::new();
    for item in &items {
        let NestedMeta::Meta(meta) = item else {
            errors.push(error(
                item.span(),
                format!("unexpected value in `deletion_guard`: {how}"),
            ));
            continue;
        };
        let key = path_to_string(meta.path());
        if !GUARD_OPTIONS.contains(&key.as_str()) {
            let hint = did_you_mean(&key, GUARD_OPTIONS)
                .map(|v| format!("; did you mean `{v}`?"))
                .unwrap_or_default();
            errors.push(error(
                meta.path().span(),
                format!(
                    "unknown `deletion_guard` option `{key}`{hint} (options: {})",
                    GUARD_OPTIONS.join(", ")
                ),
            ));
            continue;
        }
        if values.contains_key(&key) {
            errors.push(error(
                meta.path().span(),
                format!("duplicate `{key}` in `deletion_guard`"),
            ));
            continue;
        }
        let example = match key.as_str() {
            "group" => "velero.io",
            "version" => "v1",
            "kind" => "Backup",
            "plural" => "backups",
            "namespace" => "velero",
            _ => "app.kubernetes.io/part-of=velero",
        };
        if let Some(value) = lit_str(meta, &key, example, errors) {
            values.insert(key, value);
        }
    }
    let mut required = |what: &str| {
        let value = values.remove(what);
        if value.is_none() {
            errors.push(error(
                meta.path().span(),
                format!("`deletion_guard` is missing `{what}`: {how}"),
            ));
        }
        value
    };
    let (version, kind) = (required("version"), required("kind"));
    Some(Guard {
        group: values.remove("group"),
        version: version?,
        kind: kind?,
        plural: values.remove("plural"),
        namespace: values.remove("namespace"),
        labels: values.remove("labels"),
    })
}

fn served_version(meta: &Meta, errors: &mut Accumulator) -> Option<ServedVersion> {
    let how = "write `served_version(name = \"v1alpha1\")` for a version with this spec's schema, \
               or `served_version(name = \"v1alpha1\", spec = VeleroSpecV1alpha1)` for one with its \
               own spec type (`additive` when the hub only adds fields to it), optionally with \
               `storage` and `deprecated = \"warning\"`";
    let items = nested_list(meta, "served_version", how, errors)?;
    let mut version = ServedVersion {
        span: meta.path().span(),
        name: None,
        spec: None,
        additive: None,
        storage: false,
        deprecated: None,
    };
    let mut seen: Vec<String> = Vec::new();
    for item in &items {
        let key_path = match item {
            NestedMeta::Meta(meta) => meta.path(),
            NestedMeta::NameValueInvalidExpr(invalid) => &invalid.path,
            NestedMeta::Lit(lit) => {
                errors.push(error(
                    lit.span(),
                    format!("unexpected value in `served_version`: {how}"),
                ));
                continue;
            }
        };
        let key = path_to_string(key_path);
        if !SERVED_VERSION_OPTIONS.contains(&key.as_str()) {
            let hint = did_you_mean(&key, SERVED_VERSION_OPTIONS)
                .map(|v| format!("; did you mean `{v}`?"))
                .unwrap_or_default();
            errors.push(error(
                key_path.span(),
                format!(
                    "unknown `served_version` option `{key}`{hint} (options: {})",
                    SERVED_VERSION_OPTIONS.join(", ")
                ),
            ));
            continue;
        }
        if seen.contains(&key) {
            errors.push(error(
                key_path.span(),
                format!("duplicate `{key}` in `served_version`"),
            ));
            continue;
        }
        seen.push(key.clone());
        match (key.as_str(), item) {
            ("spec", _) => version.spec = type_path(item, "spec", errors),
            ("name", NestedMeta::Meta(meta)) => {
                version.name = lit_str(meta, "name", "v1alpha1", errors)
            }
            ("storage", NestedMeta::Meta(meta)) => version.storage = flag(meta, "storage", errors),
            ("additive", NestedMeta::Meta(meta)) => {
                version.additive = flag(meta, "additive", errors).then(|| meta.span())
            }
            ("deprecated", NestedMeta::Meta(Meta::Path(_))) => version.deprecated = Some(None),
            ("deprecated", NestedMeta::Meta(Meta::NameValue(nv))) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(warning),
                    ..
                }) => version.deprecated = Some(Some(warning.clone())),
                other => errors.push(error(
                    other.span(),
                    "`deprecated` is a flag or takes the warning clients see: write `deprecated` \
                     or `deprecated = \"v1alpha1 is deprecated; use v1alpha2\"`",
                )),
            },
            (_, other) => errors.push(error(
                other.span(),
                format!("invalid value for `{key}`: {how}"),
            )),
        }
    }
    if version.name.is_none() && !seen.iter().any(|k| k == "name") {
        errors.push(error(
            version.span,
            format!("`served_version` is missing `name`: {how}"),
        ));
    }
    Some(version)
}

/// Parses the attribute arguments. Every problem is pushed to `errors`; the options that could be
/// read are returned regardless, so later checks can report their own problems too.
pub(crate) fn parse(args: TokenStream, errors: &mut Accumulator) -> Options {
    let mut options = Options::default();
    let items = match NestedMeta::parse_meta_list(args) {
        Ok(items) => items,
        Err(err) => {
            errors.push(err.into());
            return options;
        }
    };
    let mut seen: HashMap<String, Span> = HashMap::new();
    for item in &items {
        let (path, meta) = match item {
            NestedMeta::Meta(meta) => (meta.path(), Some(meta)),
            NestedMeta::NameValueInvalidExpr(invalid) => (&invalid.path, None),
            NestedMeta::Lit(lit) => {
                errors.push(error(
                    lit.span(),
                    "expected an option such as `group = \"...\"`, not a bare value; every option has a name",
                ));
                continue;
            }
        };
        let name = path_to_string(path);
        if name != "printcolumn"
            && name != "selectable"
            && name != "deletion_guard"
            && name != "served_version"
            && OPTIONS.contains(&name.as_str())
            && seen.insert(name.clone(), path.span()).is_some()
        {
            errors.push(error(
                path.span(),
                format!("duplicate option `{name}`: it is already set; keep one"),
            ));
            continue;
        }
        let Some(meta) = meta else {
            // Only a type is not an expression: that is `config`/`status` with generics, or a
            // mistake in any other option.
            match name.as_str() {
                "config" => options.config = type_path(item, "config", errors),
                "status" => options.status = type_path(item, "status", errors),
                _ if OPTIONS.contains(&name.as_str()) => {
                    errors.push(error(path.span(), format!("invalid value for `{name}`")));
                }
                _ => unknown(&name, path.span(), errors),
            }
            continue;
        };
        match name.as_str() {
            "group" => {
                options.group = lit_str(
                    meta,
                    "group",
                    "velero.services.open-control-plane.io",
                    errors,
                )
            }
            "version" => options.version = lit_str(meta, "version", "v1alpha1", errors),
            "kind" => options.kind = lit_str(meta, "kind", "Velero", errors),
            "plural" => options.plural = lit_str(meta, "plural", "veleroes", errors),
            "singular" => options.singular = lit_str(meta, "singular", "velero", errors),
            "shortnames" => options.shortnames = lit_strs(meta, "shortnames", errors),
            "categories" => options.categories = lit_strs(meta, "categories", errors),
            "selectable" => options
                .selectable
                .extend(lit_strs(meta, "selectable", errors)),
            "printcolumn" => options.printcolumns.extend(column(meta, errors)),
            "deletion_guard" => options.deletion_guards.extend(deletion_guard(meta, errors)),
            "served_version" => options.served_versions.extend(served_version(meta, errors)),
            "config" => options.config = type_path(item, "config", errors),
            "status" => options.status = type_path(item, "status", errors),
            "workload_cluster" => options.workload_cluster = workload(meta, errors),
            "mcp_access" => options.mcp_access = access(meta, "mcp_access", errors),
            "workload_access" => options.workload_access = access(meta, "workload_access", errors),
            "kcp" => options.kcp = flag(meta, "kcp", errors),
            "crate" => options.krate = crate_path(meta, errors),
            other => unknown(other, path.span(), errors),
        }
    }
    options
}

fn unknown(name: &str, span: Span, errors: &mut Accumulator) {
    let hint = match did_you_mean(name, OPTIONS) {
        Some(option) => format!("; did you mean `{option}`?"),
        None => format!(" (options: {})", OPTIONS.join(", ")),
    };
    errors.push(error(
        span,
        format!("unknown option `{name}` of #[service_provider]{hint}"),
    ));
}
