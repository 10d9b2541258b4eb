//! kcp's conditions (`conditionsv1alpha1`): `{type, status, severity, lastTransitionTime, reason,
//! message}` with no `observedGeneration`; `Ready` first, the rest sorted by type; the transition
//! time kept while the status does not change.

use serde_json::{Map, Value, json};

/// How severe a False condition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Severity {
    /// Something is wrong.
    Error,
    /// Waiting on something expected.
    Info,
}

/// A condition to set.
#[derive(Debug, Clone)]
pub(crate) struct Cond<'a> {
    /// The type.
    pub type_: &'a str,
    /// True or False.
    pub ok: bool,
    /// Reason and severity when False.
    pub reason: &'a str,
    /// The message when False.
    pub message: String,
    /// The severity when False.
    pub severity: Severity,
}

impl<'a> Cond<'a> {
    /// A True condition.
    pub(crate) fn ok(type_: &'a str) -> Self {
        Cond {
            type_,
            ok: true,
            reason: "",
            message: String::new(),
            severity: Severity::Error,
        }
    }
    /// A False condition.
    pub(crate) fn fail(
        type_: &'a str,
        reason: &'a str,
        severity: Severity,
        message: String,
    ) -> Self {
        Cond {
            type_,
            ok: false,
            reason,
            message,
            severity,
        }
    }
}

/// Sets a condition in `status.conditions`, keeping `lastTransitionTime` when the status is the
/// same.
pub(crate) fn set(status: &mut Value, c: &Cond<'_>) {
    if !status.is_object() {
        *status = json!({});
    }
    let list = status
        .as_object_mut()
        .map(|o| o.entry("conditions").or_insert_with(|| json!([])))
        .and_then(Value::as_array_mut);
    let Some(list) = list else { return };
    let want = if c.ok { "True" } else { "False" };
    let old = list
        .iter()
        .position(|x| x.get("type").and_then(Value::as_str) == Some(c.type_));
    let time = match old.map(|i| &list[i]) {
        Some(o) if o.get("status").and_then(Value::as_str) == Some(want) => o
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(crate::meta::now_rfc3339())),
        _ => json!(crate::meta::now_rfc3339()),
    };
    let mut m = Map::new();
    m.insert("type".into(), json!(c.type_));
    m.insert("status".into(), json!(want));
    if !c.ok {
        m.insert(
            "severity".into(),
            json!(match c.severity {
                Severity::Error => "Error",
                Severity::Info => "Info",
            }),
        );
    }
    m.insert("lastTransitionTime".into(), time);
    if !c.ok {
        m.insert("reason".into(), json!(c.reason));
        if !c.message.is_empty() {
            m.insert("message".into(), json!(c.message));
        }
    }
    match old {
        Some(i) => list[i] = Value::Object(m),
        None => list.push(Value::Object(m)),
    }
    list.sort_by(|a, b| {
        let ta = a.get("type").and_then(Value::as_str).unwrap_or("");
        let tb = b.get("type").and_then(Value::as_str).unwrap_or("");
        (ta != "Ready", ta).cmp(&(tb != "Ready", tb))
    });
}

/// The status of a condition, if present.
pub(crate) fn is_true(status: &Value, type_: &str) -> Option<bool> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .and_then(|c| c.get("status").and_then(Value::as_str))
        .map(|s| s == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_orders_like_kcp() {
        let mut s = json!({});
        set(&mut s, &Cond::ok("InitialBindingCompleted"));
        set(&mut s, &Cond::ok("Ready"));
        set(
            &mut s,
            &Cond::fail(
                "APIExportValid",
                "APIExportNotFound",
                Severity::Error,
                "gone".into(),
            ),
        );
        let types: Vec<&str> = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            ["Ready", "APIExportValid", "InitialBindingCompleted"]
        );
        assert_eq!(s["conditions"][1]["severity"], "Error");
        assert_eq!(s["conditions"][1]["reason"], "APIExportNotFound");
        assert!(s["conditions"][0].get("reason").is_none());
        assert_eq!(is_true(&s, "Ready"), Some(true));
        assert_eq!(is_true(&s, "APIExportValid"), Some(false));
    }
}
