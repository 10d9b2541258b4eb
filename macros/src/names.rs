//! The rules Kubernetes applies to API groups, versions, kinds and resource names, as checks with
//! messages that say how to fix the value.

/// Kubernetes' limit on DNS subdomains.
const MAX_SUBDOMAIN: usize = 253;
/// Kubernetes' limit on DNS labels.
const MAX_LABEL: usize = 63;

fn is_label(s: &str, first_may_be_digit: bool) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            (if first_may_be_digit {
                alnum(first)
            } else {
                first.is_ascii_lowercase()
            }) && alnum(last)
                && bytes.iter().all(|&b| alnum(b) || b == b'-')
                && bytes.len() <= MAX_LABEL
        }
        _ => false,
    }
}

/// An API group: a DNS subdomain (RFC 1123) with at least one dot.
pub(crate) fn group(group: &str) -> Result<(), String> {
    if group.is_empty()
        || group.len() > MAX_SUBDOMAIN
        || !group.split('.').all(|l| is_label(l, true))
    {
        return Err(format!(
            "group {group:?} is not a DNS subdomain: use lowercase letters, digits, '-' and '.', each \
             dot-separated part starting and ending with a letter or digit, e.g. \"velero.services.open-control-plane.io\""
        ));
    }
    if !group.contains('.') {
        return Err(format!(
            "group {group:?} needs a dot: Kubernetes reserves undotted groups for its own APIs; \
             use a domain you own, e.g. \"{group}.services.open-control-plane.io\""
        ));
    }
    Ok(())
}

/// A Kubernetes API version: `v1`, `v1alpha1`, `v2beta3`.
pub(crate) fn version(version: &str) -> Result<(), String> {
    let valid = (|| {
        let rest = version.strip_prefix('v')?;
        let major_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, rest) = rest.split_at(major_len);
        if major.is_empty() || major.starts_with('0') {
            return None;
        }
        if rest.is_empty() {
            return Some(());
        }
        let minor = rest
            .strip_prefix("alpha")
            .or_else(|| rest.strip_prefix("beta"))?;
        (!minor.is_empty() && !minor.starts_with('0') && minor.bytes().all(|b| b.is_ascii_digit()))
            .then_some(())
    })();
    valid.ok_or_else(|| {
        format!("version {version:?} is not a Kubernetes API version: write it like \"v1\", \"v1alpha1\" or \"v2beta3\"")
    })
}

/// A kind: UpperCamelCase, usable as a Rust type name.
pub(crate) fn kind(kind: &str) -> Result<(), String> {
    let valid = kind.len() <= MAX_LABEL
        && kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    if !valid {
        let suggestion: String = kind
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|part| !part.is_empty())
            .map(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect();
        let hint = if suggestion.starts_with(|c: char| c.is_ascii_uppercase()) {
            format!("e.g. {suggestion:?}")
        } else {
            "e.g. \"Velero\"".to_owned()
        };
        return Err(format!(
            "kind {kind:?} is not UpperCamelCase: start with an uppercase letter and use only letters and digits, {hint}"
        ));
    }
    if kind == "ProviderConfig" {
        return Err("kind \"ProviderConfig\" is taken: every provider's group also has a ProviderConfig kind; \
                    name the Service API after the service, e.g. \"Velero\""
            .to_owned());
    }
    Ok(())
}

/// A lower-case resource name (plural, singular, short name, category): a DNS label starting with
/// a letter.
pub(crate) fn resource_name(what: &str, name: &str) -> Result<(), String> {
    if is_label(name, false) {
        Ok(())
    } else {
        Err(format!(
            "{what} {name:?} is not a valid resource name: use lowercase letters, digits and '-', \
             starting with a letter, at most 63 characters"
        ))
    }
}

/// The singular of a kind as kube-derive computes it.
pub(crate) fn singular(kind: &str) -> String {
    kind.to_ascii_lowercase()
}

/// The plural of a singular as kube-derive computes it, so both agree without the author saying so.
pub(crate) fn plural(word: &str) -> String {
    if word.ends_with('s')
        || word.ends_with('x')
        || word.ends_with('z')
        || word.ends_with("ch")
        || word.ends_with("sh")
    {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y')
        && stem
            .chars()
            .last()
            .is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'))
    {
        return format!("{stem}ies");
    }
    format!("{word}s")
}

/// The printer column types Kubernetes accepts.
pub(crate) const COLUMN_TYPES: &[&str] = &["integer", "number", "string", "boolean", "date"];
/// The printer column formats Kubernetes accepts.
pub(crate) const COLUMN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "binary",
    "date",
    "date-time",
    "password",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups() {
        assert!(group("velero.services.open-control-plane.io").is_ok());
        assert!(group("velero").unwrap_err().contains("needs a dot"));
        assert!(
            group("Velero.io")
                .unwrap_err()
                .contains("not a DNS subdomain")
        );
        assert!(group("velero..io").is_err());
        assert!(group("-velero.io").is_err());
        assert!(group("velero_x.io").is_err());
    }

    #[test]
    fn versions() {
        for ok in ["v1", "v1alpha1", "v2beta3", "v10", "v1beta12"] {
            assert!(version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1", "v0", "v1.0", "V1", "v1alpha", "v1gamma1", "v1alpha0", "v01", "",
        ] {
            assert!(version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        assert!(kind("Velero").is_ok());
        assert!(kind("ExternalSecrets2").is_ok());
        assert!(kind("velero").unwrap_err().contains("e.g. \"Velero\""));
        assert!(
            kind("external_secrets")
                .unwrap_err()
                .contains("\"ExternalSecrets\"")
        );
        assert!(kind("ProviderConfig").is_err());
    }

    #[test]
    fn plurals_match_kube_derive() {
        assert_eq!(plural("velero"), "veleros");
        assert_eq!(plural("flux"), "fluxes");
        assert_eq!(plural("policy"), "policies");
        assert_eq!(plural("gateway"), "gateways");
        assert_eq!(plural("mesh"), "meshes");
    }
}
