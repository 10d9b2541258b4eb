//! `meta.k8s.io/v1` Table output for `kubectl get`: the CRD's printer columns for custom resources,
//! kube-apiserver-like columns for built-ins.

use serde_json::{Value, json};

use crate::registry::ResourceInfo;

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    /// Nothing.
    None,
    /// PartialObjectMetadata (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl Include {
    /// Parses the `includeObject` parameter.
    pub(crate) fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

struct Col {
    name: &'static str,
    type_: &'static str,
    format: &'static str,
    priority: i64,
    description: &'static str,
}

const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// `metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]`, which kube's printers and the custom
/// resource table convertor give the Age column.
const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
/// `v1.ConfigMap{}.SwaggerDoc()["data"]`, the description of ConfigMap's Data column.
const CONFIG_MAP_DATA_DESC: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";

const fn col(name: &'static str, type_: &'static str) -> Col {
    Col {
        name,
        type_,
        format: "",
        priority: 0,
        description: "",
    }
}
const NAME: Col = Col {
    name: "Name",
    type_: "string",
    format: "name",
    priority: 0,
    description: NAME_DESC,
};
const AGE: Col = Col {
    name: "Age",
    type_: "string",
    format: "",
    priority: 0,
    description: AGE_DESC,
};

/// Human-readable duration as kubectl prints ages (`HumanDuration`).
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{d}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of a timestamp string, or `<unknown>`.
pub(crate) fn age(ts: Option<&Value>) -> Value {
    let Some(t) = ts
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    else {
        return json!("<unknown>");
    };
    json!(human_duration(
        jiff::Timestamp::now().as_second() - t.as_second()
    ))
}

fn s(v: &Value, p: &str) -> String {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
fn count(v: &Value, p: &str) -> usize {
    match v.pointer(p) {
        Some(Value::Object(o)) => o.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}
fn int(v: &Value, p: &str) -> i64 {
    v.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

type Cells = fn(&Value) -> Vec<Value>;

fn builtin_columns(info: &ResourceInfo) -> Option<(Vec<Col>, Cells)> {
    let cols: (Vec<Col>, Cells) = match (info.group.as_str(), info.resource.as_str()) {
        ("", "namespaces") => (vec![NAME, col("Status", "string"), AGE], |v| {
            vec![
                json!(s(v, "/metadata/name")),
                json!(s(v, "/status/phase")),
                age(v.pointer("/metadata/creationTimestamp")),
            ]
        }),
        ("", "configmaps") => (
            vec![
                NAME,
                Col {
                    description: CONFIG_MAP_DATA_DESC,
                    ..col("Data", "string")
                },
                AGE,
            ],
            |v| {
                vec![
                    json!(s(v, "/metadata/name")),
                    json!(count(v, "/data") + count(v, "/binaryData")),
                    age(v.pointer("/metadata/creationTimestamp")),
                ]
            },
        ),
        ("", "secrets") => (
            vec![NAME, col("Type", "string"), col("Data", "string"), AGE],
            |v| {
                vec![
                    json!(s(v, "/metadata/name")),
                    json!(s(v, "/type")),
                    json!(count(v, "/data")),
                    age(v.pointer("/metadata/creationTimestamp")),
                ]
            },
        ),
        ("", "serviceaccounts") => (vec![NAME, col("Secrets", "string"), AGE], |v| {
            vec![
                json!(s(v, "/metadata/name")),
                json!(count(v, "/secrets")),
                age(v.pointer("/metadata/creationTimestamp")),
            ]
        }),
        ("", "services") => (
            vec![
                NAME,
                col("Type", "string"),
                col("Cluster-IP", "string"),
                col("External-IP", "string"),
                col("Port(s)", "string"),
                AGE,
            ],
            |v| {
                let ports = v
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .map(|ps| {
                        ps.iter()
                            .map(|p| {
                                format!(
                                    "{}/{}",
                                    p.get("port").map(|x| x.to_string()).unwrap_or_default(),
                                    s(p, "/protocol")
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "<none>".into());
                vec![
                    json!(s(v, "/metadata/name")),
                    json!(s(v, "/spec/type")),
                    json!(s(v, "/spec/clusterIP")),
                    json!("<none>"),
                    json!(ports),
                    age(v.pointer("/metadata/creationTimestamp")),
                ]
            },
        ),
        ("apps", "deployments") => (
            vec![
                NAME,
                col("Ready", "string"),
                col("Up-to-date", "integer"),
                col("Available", "integer"),
                AGE,
            ],
            |v| {
                vec![
                    json!(s(v, "/metadata/name")),
                    json!(format!(
                        "{}/{}",
                        int(v, "/status/readyReplicas"),
                        v.pointer("/spec/replicas")
                            .and_then(Value::as_i64)
                            .unwrap_or(1)
                    )),
                    json!(int(v, "/status/updatedReplicas")),
                    json!(int(v, "/status/availableReplicas")),
                    age(v.pointer("/metadata/creationTimestamp")),
                ]
            },
        ),
        ("", "events") => (
            vec![
                col("Last Seen", "string"),
                col("Type", "string"),
                col("Reason", "string"),
                col("Object", "string"),
                col("Message", "string"),
            ],
            |v| {
                let last = v
                    .pointer("/lastTimestamp")
                    .or(v.pointer("/eventTime"))
                    .or(v.pointer("/metadata/creationTimestamp"));
                vec![
                    age(last),
                    json!(s(v, "/type")),
                    json!(s(v, "/reason")),
                    json!(format!(
                        "{}/{}",
                        s(v, "/involvedObject/kind").to_lowercase(),
                        s(v, "/involvedObject/name")
                    )),
                    json!(s(v, "/message")),
                ]
            },
        ),
        ("coordination.k8s.io", "leases") => (vec![NAME, col("Holder", "string"), AGE], |v| {
            vec![
                json!(s(v, "/metadata/name")),
                json!(s(v, "/spec/holderIdentity")),
                age(v.pointer("/metadata/creationTimestamp")),
            ]
        }),
        ("apiextensions.k8s.io", "customresourcedefinitions")
        | ("rbac.authorization.k8s.io", "roles" | "clusterroles") => {
            (vec![NAME, col("Created At", "date")], |v| {
                vec![
                    json!(s(v, "/metadata/name")),
                    json!(s(v, "/metadata/creationTimestamp")),
                ]
            })
        }
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            (vec![NAME, col("Role", "string"), AGE], |v| {
                vec![
                    json!(s(v, "/metadata/name")),
                    json!(format!(
                        "{}/{}",
                        s(v, "/roleRef/kind"),
                        s(v, "/roleRef/name")
                    )),
                    age(v.pointer("/metadata/creationTimestamp")),
                ]
            })
        }
        _ => return None,
    };
    Some(cols)
}

fn col_json(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

/// The column definitions of a resource.
pub(crate) fn columns(info: &ResourceInfo) -> Vec<Value> {
    if let Some((cols, _)) = builtin_columns(info) {
        return cols
            .iter()
            .map(|c| col_json(c.name, c.type_, c.format, c.description, c.priority))
            .collect();
    }
    let mut out = vec![col_json(
        NAME.name,
        NAME.type_,
        NAME.format,
        NAME.description,
        0,
    )];
    if info.printer_columns.is_empty() {
        out.push(col_json(AGE.name, "date", "", AGE.description, 0));
    }
    for c in &info.printer_columns {
        out.push(col_json(
            &c.name,
            &c.type_,
            &c.format,
            &c.description,
            c.priority,
        ));
    }
    out
}

/// The cells of one object.
pub(crate) fn cells(info: &ResourceInfo, v: &Value) -> Vec<Value> {
    if let Some((_, f)) = builtin_columns(info) {
        return f(v);
    }
    let mut out = vec![v.pointer("/metadata/name").cloned().unwrap_or(Value::Null)];
    if info.printer_columns.is_empty() {
        out.push(age(v.pointer("/metadata/creationTimestamp")));
    }
    for c in &info.printer_columns {
        let found = crate::jsonpath::find(v, &c.json_path)
            .into_iter()
            .next()
            .cloned();
        out.push(match (c.type_.as_str(), found) {
            ("date", Some(t)) => age(Some(&t)),
            (_, Some(Value::Array(a))) if a.is_empty() => Value::Null,
            (_, Some(Value::Object(o))) if o.is_empty() => Value::Null,
            (_, Some(x)) => x,
            (_, None) => Value::Null,
        });
    }
    out
}

/// A row for one object.
pub(crate) fn row(info: &ResourceInfo, v: &Value, include: Include) -> Value {
    let mut r = json!({"cells": cells(info, v)});
    match include {
        Include::None => {}
        Include::Metadata => r["object"] = partial_metadata(v),
        Include::Object => r["object"] = v.clone(),
    }
    r
}

/// A whole Table.
pub(crate) fn table(
    info: &ResourceInfo,
    objs: &[Value],
    include: Include,
    rv: &str,
    cont: Option<&str>,
    headers: bool,
) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": if headers { columns(info) } else { Vec::new() },
        "rows": objs.iter().map(|o| row(info, o, include)).collect::<Vec<_>>(),
    })
}

/// `PartialObjectMetadata` of an object.
pub(crate) fn partial_metadata(v: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": v.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn ages_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(50 * 3600), "2d2h");
    }
}
