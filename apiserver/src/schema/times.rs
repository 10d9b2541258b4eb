//! Where built-in kinds hold `metav1.Time` and `metav1.MicroTime` values (found in their OpenAPI
//! definitions), and those values rewritten the way kube-apiserver writes them: `Time` in UTC
//! with whole seconds (`2006-01-02T15:04:05Z`), `MicroTime` in UTC with six fractional digits
//! (`2006-01-02T15:04:05.000000Z`) — Go decodes any RFC 3339 time into them and marshals this.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::builtin::{BUILTINS, builtin_by_kind, builtin_definitions};

const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
/// Metadata timestamps are the object-metadata coercion's (and mostly the server's own).
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    Seconds,
    Micros,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    /// Every item of an array, or every value of a map.
    Each,
}

type TimePath = (Vec<Step>, Precision);

/// The time fields of every built-in kind, by definition name.
static PATHS: LazyLock<HashMap<&'static str, Vec<TimePath>>> = LazyLock::new(|| {
    let defs = builtin_definitions();
    BUILTINS
        .iter()
        .map(|b| {
            let mut out = Vec::new();
            if let Some(def) = defs.get(b.definition) {
                walk(
                    defs,
                    def,
                    &mut Vec::new(),
                    &mut vec![b.definition],
                    &mut out,
                );
            }
            (b.definition, out)
        })
        .collect()
});

/// The definition a schema refers to, directly or as the first member of an `allOf`.
fn referenced(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
}

fn walk<'a>(
    defs: &'a Map<String, Value>,
    schema: &'a Value,
    path: &mut Vec<Step>,
    stack: &mut Vec<&'a str>,
    out: &mut Vec<TimePath>,
) {
    if let Some(name) = referenced(schema) {
        match name {
            TIME => out.push((path.clone(), Precision::Seconds)),
            MICRO_TIME => out.push((path.clone(), Precision::Micros)),
            OBJECT_META => {}
            _ if stack.contains(&name) => {}
            _ => {
                if let Some((name, def)) = defs.get_key_value(name) {
                    stack.push(name);
                    walk(defs, def, path, stack, out);
                    stack.pop();
                }
            }
        }
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            path.push(Step::Field(k.clone()));
            walk(defs, s, path, stack, out);
            path.pop();
        }
    }
    for nested in [schema.get("items"), schema.get("additionalProperties")]
        .into_iter()
        .flatten()
        .filter(|s| s.is_object())
    {
        path.push(Step::Each);
        walk(defs, nested, path, stack, out);
        path.pop();
    }
}

/// Rewrites the `Time` and `MicroTime` values of a built-in object of `group/version, kind` as
/// kube-apiserver writes them; values that do not parse are left for validation to report.
pub(crate) fn normalise_times(group: &str, version: &str, kind: &str, obj: &mut Value) {
    let Some(paths) = builtin_by_kind(group, version, kind).and_then(|b| PATHS.get(b.definition))
    else {
        return;
    };
    for (path, precision) in paths {
        rewrite(obj, path, *precision);
    }
}

fn rewrite(v: &mut Value, path: &[Step], precision: Precision) {
    match path.split_first() {
        None => {
            if let Value::String(s) = v
                && let Some(n) = normalised(s, precision)
            {
                *s = n;
            }
        }
        Some((Step::Field(f), rest)) => {
            if let Some(child) = v.get_mut(f.as_str()) {
                rewrite(child, rest, precision);
            }
        }
        Some((Step::Each, rest)) => match v {
            Value::Array(a) => a.iter_mut().for_each(|c| rewrite(c, rest, precision)),
            Value::Object(m) => m.values_mut().for_each(|c| rewrite(c, rest, precision)),
            _ => {}
        },
    }
}

fn normalised(s: &str, precision: Precision) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .ok()?
        .with_timezone(&chrono::Utc);
    let layout = match precision {
        Precision::Seconds => "%Y-%m-%dT%H:%M:%SZ",
        // Go formats RFC3339Micro by truncating, as chrono's `%.6f` does.
        Precision::Micros => "%Y-%m-%dT%H:%M:%S%.6fZ",
    };
    Some(t.format(layout).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_fields_of_built_ins_are_found() {
        let lease = &PATHS["io.k8s.api.coordination.v1.Lease"];
        assert!(lease.contains(&(
            vec![Step::Field("spec".into()), Step::Field("renewTime".into())],
            Precision::Micros
        )));
        let pod = &PATHS["io.k8s.api.core.v1.Pod"];
        assert!(pod.contains(&(
            vec![
                Step::Field("status".into()),
                Step::Field("conditions".into()),
                Step::Each,
                Step::Field("lastTransitionTime".into()),
            ],
            Precision::Seconds
        )));
    }

    #[test]
    fn times_are_written_in_utc_at_their_precision() {
        assert_eq!(
            normalised("2024-01-01T12:00:00.987+02:00", Precision::Seconds).as_deref(),
            Some("2024-01-01T10:00:00Z")
        );
        assert_eq!(
            normalised("2024-01-01T12:00:00.1234567+02:00", Precision::Micros).as_deref(),
            Some("2024-01-01T10:00:00.123456Z")
        );
        assert_eq!(normalised("yesterday", Precision::Seconds), None);
    }
}
