//! What the code `#[service_provider]` and `#[api_type]` generate relies on about the author's
//! fields: compile-time tables of their JSON names (so a printer column, a field name clash or a
//! validation rule naming a missing field is rejected while compiling), and the schema hook that
//! adds a field's validation rules beside those of its type.

/// The JSON field names a type serializes, known at compile time.
///
/// `#[service_provider::api_type]` implements it; implement it by hand only for a type that
/// derives serde itself. `#[service_provider]` requires it of its `config` and `status` types: it
/// checks that their fields do not clash with the fields the framework adds beside them, and that
/// every printer column on `.status.<field>` names a real field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not list its JSON fields, so `#[service_provider]` cannot check it",
    label = "declare this type with `#[service_provider::api_type]`",
    note = "`#[api_type]` derives Serialize, Deserialize and JsonSchema through `service_provider` and lists the fields; or implement `JsonFields` by hand"
)]
pub trait JsonFields {
    /// The names of the fields as they appear in JSON (after serde renames).
    const FIELDS: &'static [&'static str];
    /// True when the type has `#[serde(flatten)]` fields, whose names are not in [`Self::FIELDS`];
    /// checks then accept any name rather than reject a correct one.
    const OPEN: bool;
}

// The types of a provider that declares no `config` or `status` add no fields.
impl JsonFields for crate::status::NoStatus {
    const FIELDS: &'static [&'static str] = &[];
    const OPEN: bool = false;
}

impl JsonFields for crate::provider_config::NoConfig {
    const FIELDS: &'static [&'static str] = &[];
    const OPEN: bool = false;
}

/// Each field a type's fields sit beside, with the message for a type that has it too.
pub type Taken = &'static [(&'static str, &'static str)];

macro_rules! taken {
    ($what:literal, $beside:literal: $($field:literal),*) => {
        &[$(($field, concat!(
            "this ", $what, " type has a field `", $field, "`, which ", $beside,
            " already has; rename the field (e.g. with #[serde(rename = \"...\")])"
        ))),*]
    };
}

/// The fields `ServiceStatus` always has beside the author's.
pub const COMMON_STATUS_FIELDS: Taken =
    taken!("status", "every Service API status": "observedGeneration", "phase", "conditions");

/// The fields `ProviderConfigCommon` always has beside the author's `config` fields.
pub const COMMON_CONFIG_FIELDS: Taken = taken!(
    "config", "every ProviderConfig spec":
    "versions", "pollInterval", "imagePullSecrets", "caBundleRef", "kcp", "workloadCluster"
);

/// Whether `T` has the JSON field `name`, or may have it (an open type).
pub const fn has_field<T: JsonFields + ?Sized>(name: &str) -> bool {
    T::OPEN || contains(T::FIELDS, name)
}

/// Whether every JSON field of `T` is one of `fields` (an open `T` may have any, so no).
pub const fn fields_within<T: JsonFields + ?Sized>(fields: &[&str]) -> bool {
    if T::OPEN {
        return false;
    }
    let mut i = 0;
    while i < T::FIELDS.len() {
        if !contains(fields, T::FIELDS[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether a Service API status with the author's extra status `T` has the JSON field `name`.
pub const fn status_has_field<T: JsonFields + ?Sized>(name: &str) -> bool {
    has_field::<T>(name) || taken_contains(COMMON_STATUS_FIELDS, name)
}

const fn taken_contains(taken: Taken, name: &str) -> bool {
    let mut i = 0;
    while i < taken.len() {
        if str_eq(taken[i].0, name) {
            return true;
        }
        i += 1;
    }
    false
}

/// The message for the first of `T`'s fields that is also in `taken`, if any.
pub const fn clash<T: JsonFields + ?Sized>(taken: Taken) -> Option<&'static str> {
    let mut i = 0;
    while i < taken.len() {
        if contains(T::FIELDS, taken[i].0) {
            return Some(taken[i].1);
        }
        i += 1;
    }
    None
}

/// Fails compilation (in a `const`) when `T` has a field that `taken` already has.
pub const fn assert_no_clash<T: JsonFields + ?Sized>(taken: Taken) {
    if let Some(message) = clash::<T>(taken) {
        panic!("{}", message);
    }
}

const fn contains(haystack: &[&str], needle: &str) -> bool {
    let mut i = 0;
    while i < haystack.len() {
        if str_eq(haystack[i], needle) {
            return true;
        }
        i += 1;
    }
    false
}

// `str::eq` is not const; compare the bytes.
const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Appends CEL validation rules to a field's schema, after the rules already there: those its type
/// declares on itself (`#[x_kube]` on the struct), which a plain schema extension would replace.
/// Called from the schema transforms `#[service_provider]` and `#[api_type]` generate.
#[doc(hidden)]
pub fn add_validations(schema: &mut schemars::Schema, rules: serde_json::Value) {
    let serde_json::Value::Array(rules) = rules else {
        return;
    };
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    match object
        .entry("x-kubernetes-validations")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()))
    {
        serde_json::Value::Array(existing) => existing.extend(rules),
        other => *other = serde_json::Value::Array(rules),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Backups;
    impl JsonFields for Backups {
        const FIELDS: &'static [&'static str] = &["lastBackup", "phase"];
        const OPEN: bool = false;
    }

    struct Open;
    impl JsonFields for Open {
        const FIELDS: &'static [&'static str] = &[];
        const OPEN: bool = true;
    }

    #[test]
    fn finds_fields_and_clashes() {
        // Usable in constants, which is how `#[service_provider]` calls them.
        const _: () = assert!(has_field::<Backups>("lastBackup"));
        const _: () = assert!(!has_field::<Backups>("last"));
        assert!(has_field::<Open>("anything"));
        assert!(status_has_field::<Backups>("lastBackup"));
        assert!(status_has_field::<crate::NoStatus>("observedGeneration"));
        assert!(!status_has_field::<crate::NoStatus>("lastBackup"));
        let message = clash::<Backups>(COMMON_STATUS_FIELDS).unwrap();
        assert!(message.contains("field `phase`"), "{message}");
        assert_eq!(clash::<Backups>(COMMON_CONFIG_FIELDS), None);
    }

    #[test]
    fn the_common_config_fields_are_the_ones_every_provider_config_has() {
        let schema = schemars::schema_for!(crate::provider_config::ProviderConfigCommon);
        let mut properties: Vec<&str> = schema.as_value()["properties"]
            .as_object()
            .expect("an object schema")
            .keys()
            .map(String::as_str)
            .collect();
        let mut taken: Vec<&str> = COMMON_CONFIG_FIELDS.iter().map(|(f, _)| *f).collect();
        properties.sort_unstable();
        taken.sort_unstable();
        assert_eq!(properties, taken);
    }
}
