//! Printer columns and selectable fields: where each one's JSON path points, and the checks on a
//! column's name, type, format, priority and path and on a selectable field's path.

use darling::error::Accumulator;
use syn::DeriveInput;

use super::options::{Column, did_you_mean};
use super::{SpecField, error, names};

/// Names of the printer columns the runtime adds
/// (`service_provider_runtime::manifests::COMMON_COLUMNS`).
const COMMON_COLUMNS: [&str; 3] = ["Phase", "Ready", "Age"];

/// Where a printer column's JSON path points.
pub(crate) enum ColumnTarget {
    /// `.metadata...`, or a path below a field we cannot see into.
    Unchecked,
    /// `.spec.<field>...`
    Spec(String),
    /// `.status.<field>...`
    Status(String),
}

pub(crate) fn column_target(path: &str) -> Result<ColumnTarget, String> {
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

/// Checks the printer columns and returns those without errors, in the order written.
pub(crate) fn check(
    columns: Vec<Column>,
    item: &DeriveInput,
    fields: &[SpecField],
    all_errors: &mut Accumulator,
) -> Vec<Column> {
    let mut names: Vec<String> = Vec::new();
    let mut valid = Vec::new();
    for column in columns {
        let mut errors = darling::Error::accumulator();
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
        let found = errors.into_inner();
        if found.is_empty() {
            valid.push(column);
        }
        all_errors.extend(found);
    }
    valid
}
/// Kubernetes' limit on selectable fields per CRD version.
const MAX_SELECTABLE: usize = 8;

/// Checks the `selectable` paths and returns those without errors: each a `.spec.<field>` of the
/// struct or a `.status.<field>` path, no two alike, at most eight (kube-apiserver's limit).
pub(crate) fn check_selectable(
    paths: &[syn::LitStr],
    item: &DeriveInput,
    fields: &[SpecField],
    errors: &mut Accumulator,
) -> Vec<String> {
    let mut valid: Vec<String> = Vec::new();
    for (i, lit) in paths.iter().enumerate() {
        let path = lit.value();
        if i == MAX_SELECTABLE {
            errors.push(error(
                lit.span(),
                format!(
                    "a CRD version has at most {MAX_SELECTABLE} selectable fields; remove the rest"
                ),
            ));
        }
        let ok = match column_target(&path) {
            Err(message) => {
                errors.push(error(
                    lit.span(),
                    message.replace("json_path", "selectable"),
                ));
                false
            }
            Ok(ColumnTarget::Unchecked) if path.starts_with(".metadata") => {
                errors.push(error(
                    lit.span(),
                    format!(
                        "selectable {path:?}: a field selector already takes metadata.name and metadata.namespace, \
                         and kube-apiserver allows no other metadata field here; select a `.spec.` or `.status.` field"
                    ),
                ));
                false
            }
            Ok(ColumnTarget::Unchecked) => {
                errors.push(error(
                    lit.span(),
                    format!("selectable {path:?} names no field: write e.g. \".spec.version\""),
                ));
                false
            }
            Ok(ColumnTarget::Spec(field)) => {
                let visible: Vec<&str> = fields
                    .iter()
                    .filter(|f| !f.json.skipped && !f.json.flatten)
                    .map(|f| f.json.name.as_str())
                    .collect();
                let open = fields.iter().any(|f| f.json.flatten);
                if open || visible.contains(&field.as_str()) {
                    true
                } else {
                    let hint = did_you_mean(&field, &visible)
                        .map(|f| format!("; did you mean `{f}`?"))
                        .unwrap_or_default();
                    errors.push(error(
                        lit.span(),
                        format!(
                            "selectable {path:?} names no field of the spec `{}`{hint}",
                            item.ident
                        ),
                    ));
                    false
                }
            }
            Ok(ColumnTarget::Status(_)) => true,
        };
        if ok && valid.contains(&path) {
            errors.push(error(
                lit.span(),
                format!("selectable {path:?} is listed twice; keep one"),
            ));
        } else if ok && i < MAX_SELECTABLE {
            valid.push(path);
        }
    }
    valid
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
