//! Reading what the `#[serde]` and `#[derive]` attributes of the author's types say about their JSON
//! names, so names can be checked the way serde will write them.

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Field, Lit, Meta, Token};

/// serde's `rename_all` rules, applied to field names exactly as serde_derive applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenameRule {
    None,
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "lowercase" => RenameRule::Lower,
            "UPPERCASE" => RenameRule::Upper,
            "PascalCase" => RenameRule::Pascal,
            "camelCase" => RenameRule::Camel,
            "snake_case" => RenameRule::Snake,
            "SCREAMING_SNAKE_CASE" => RenameRule::ScreamingSnake,
            "kebab-case" => RenameRule::Kebab,
            "SCREAMING-KEBAB-CASE" => RenameRule::ScreamingKebab,
            _ => return None,
        })
    }

    /// The JSON name of a field called `field` in Rust.
    pub(crate) fn apply(self, field: &str) -> String {
        match self {
            RenameRule::None | RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// The `name = "value"` (or `name(serialize = "value")`) string of a serde meta item.
fn serialized_name(meta: &Meta) -> Option<(String, Span)> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some((s.value(), s.span())),
            _ => None,
        },
        Meta::List(list) => {
            let inner = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()?;
            inner
                .iter()
                .find(|m| m.path().is_ident("serialize"))
                .and_then(serialized_name)
        }
        Meta::Path(_) => None,
    }
}

/// Every meta item inside the `#[serde(...)]` attributes in `attrs`. Attributes serde itself
/// would reject are skipped: serde reports them better than we could.
fn serde_items(attrs: &[Attribute]) -> Vec<Meta> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("serde"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .collect()
}

/// What a container's `#[serde]` attributes say.
#[derive(Default)]
pub(crate) struct ContainerSerde {
    /// `rename_all`, when present.
    pub rename_all: Option<RenameRule>,
    /// Whether `#[serde(crate = "...")]` is already there.
    pub has_crate: bool,
}

pub(crate) fn container(attrs: &[Attribute]) -> ContainerSerde {
    let mut out = ContainerSerde::default();
    for meta in serde_items(attrs) {
        if meta.path().is_ident("rename_all") {
            // An unknown rule is serde's error to report; treat it as no renaming here.
            out.rename_all = Some(
                serialized_name(&meta)
                    .and_then(|(rule, _)| RenameRule::parse(&rule))
                    .unwrap_or(RenameRule::None),
            );
        } else if meta.path().is_ident("crate") {
            out.has_crate = true;
        }
    }
    out
}

/// Whether the container already has `#[schemars(crate = "...")]`.
pub(crate) fn has_schemars_crate(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("schemars"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .any(|m| m.path().is_ident("crate"))
}

/// How one field appears in JSON.
pub(crate) struct FieldJson {
    /// The JSON name.
    pub name: String,
    /// `#[serde(flatten)]`: the field's own fields appear instead of it.
    pub flatten: bool,
    /// `#[serde(skip)]` or `skip_serializing`: the field never appears.
    pub skipped: bool,
}

pub(crate) fn field(field: &Field, rule: RenameRule) -> FieldJson {
    let ident = field
        .ident
        .as_ref()
        .map(|i| unraw(&i.to_string()))
        .unwrap_or_default();
    let mut out = FieldJson {
        name: rule.apply(&ident),
        flatten: false,
        skipped: false,
    };
    for meta in serde_items(&field.attrs) {
        let path = meta.path();
        if path.is_ident("rename") {
            if let Some((name, _)) = serialized_name(&meta) {
                out.name = name;
            }
        } else if path.is_ident("flatten") {
            out.flatten = true;
        } else if path.is_ident("skip") || path.is_ident("skip_serializing") {
            out.skipped = true;
        }
    }
    out
}

/// `r#type` → `type`, as serde names raw identifiers.
pub(crate) fn unraw(ident: &str) -> String {
    ident.strip_prefix("r#").unwrap_or(ident).to_owned()
}

/// The last path segment of every item in the `#[derive(...)]` attributes, e.g. `Clone`,
/// `Serialize`.
pub(crate) fn derived(attrs: &[Attribute]) -> Vec<(String, Span)> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .filter_map(|p| {
            p.segments
                .last()
                .map(|s| (s.ident.to_string(), s.ident.span()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_rules_match_serde() {
        assert_eq!(
            RenameRule::Camel.apply("image_repository"),
            "imageRepository"
        );
        assert_eq!(
            RenameRule::Pascal.apply("image_repository"),
            "ImageRepository"
        );
        assert_eq!(
            RenameRule::Kebab.apply("image_repository"),
            "image-repository"
        );
        assert_eq!(
            RenameRule::ScreamingKebab.apply("image_repository"),
            "IMAGE-REPOSITORY"
        );
        assert_eq!(RenameRule::Camel.apply("version"), "version");
    }

    #[test]
    fn field_names_honour_rename_and_rename_all() {
        let item: syn::ItemStruct = syn::parse_quote! {
            #[serde(rename_all = "camelCase")]
            struct S {
                image_repository: String,
                #[serde(rename = "URL")]
                url: String,
                #[serde(rename(serialize = "out", deserialize = "in"))]
                both: String,
                #[serde(flatten)]
                extra: E,
                #[serde(skip)]
                hidden: u8,
                r#type: String,
            }
        };
        let rule = container(&item.attrs).rename_all.unwrap();
        let names: Vec<_> = item.fields.iter().map(|f| field(f, rule)).collect();
        let json: Vec<_> = names.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            json,
            ["imageRepository", "URL", "out", "extra", "hidden", "type"]
        );
        assert!(names[3].flatten);
        assert!(names[4].skipped);
    }
}
