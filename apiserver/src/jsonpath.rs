//! The JSONPath subset printer columns use (`.status.replicas`, `.spec.items[0].name`,
//! `.status.conditions[?(@.type=="Ready")].status`, `['a.b']`, `[*]`). Kubernetes' own dialect, small
//! enough that a general JSONPath crate (RFC 9535 syntax) would need a translation layer anyway.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter {
        path: Vec<String>,
        value: String,
        negated: bool,
    },
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let p = path.trim();
    let p = p
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(p);
    let p = p.strip_prefix('$').unwrap_or(p);
    let b = p.as_bytes();
    let mut i = 0;
    let mut steps = Vec::new();
    while i < b.len() {
        match b[i] {
            b'.' => {
                i += 1;
                let start = i;
                while i < b.len() && b[i] != b'.' && b[i] != b'[' {
                    i += 1;
                }
                if i > start {
                    steps.push(Step::Field(p[start..i].to_string()));
                }
            }
            b'[' => {
                let end = p[i..].find(']')? + i;
                let inner = p[i + 1..end].trim();
                if inner == "*" {
                    steps.push(Step::All);
                } else if let Ok(n) = inner.parse::<usize>() {
                    steps.push(Step::Index(n));
                } else if let Some(q) = inner.strip_prefix('\'').and_then(|x| x.strip_suffix('\''))
                {
                    steps.push(Step::Field(q.to_string()));
                } else if let Some(f) = inner.strip_prefix("?(").and_then(|x| x.strip_suffix(')')) {
                    let (lhs, rhs, negated) = if let Some((l, r)) = f.split_once("!=") {
                        (l, r, true)
                    } else {
                        let (l, r) = f.split_once("==")?;
                        (l, r, false)
                    };
                    let lhs = lhs.trim().strip_prefix("@.")?;
                    let rhs = rhs.trim().trim_matches('"').trim_matches('\'').to_string();
                    steps.push(Step::Filter {
                        path: lhs.split('.').map(str::to_string).collect(),
                        value: rhs,
                        negated,
                    });
                } else {
                    return None;
                }
                i = end + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every value the path selects, in document order (empty for paths it does not understand).
pub(crate) fn find<'a>(root: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(path) else {
        return Vec::new();
    };
    let mut cur: Vec<&Value> = vec![root];
    for s in &steps {
        let mut next = Vec::new();
        for v in cur {
            match s {
                Step::Field(f) => next.extend(v.get(f.as_str())),
                Step::Index(n) => next.extend(v.get(*n)),
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(o) => next.extend(o.values()),
                    _ => {}
                },
                Step::Filter {
                    path,
                    value,
                    negated,
                } => {
                    if let Value::Array(a) = v {
                        for item in a {
                            let mut x = Some(item);
                            for seg in path {
                                x = x.and_then(|x| x.get(seg.as_str()));
                            }
                            let eq = x.is_some_and(|x| as_text(x) == *value);
                            if eq != *negated {
                                next.push(item);
                            }
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printer_column_paths() {
        let v = json!({"spec": {"replicas": 3, "items": [{"name": "a"}]},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]},
            "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        assert_eq!(find(&v, ".spec.replicas"), vec![&json!(3)]);
        assert_eq!(find(&v, ".spec.items[0].name"), vec![&json!("a")]);
        assert_eq!(
            find(&v, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(
            find(&v, ".metadata.labels['app.kubernetes.io/name']"),
            vec![&json!("x")]
        );
        assert_eq!(find(&v, ".status.conditions[*].type").len(), 2);
        assert!(find(&v, ".nothing.here").is_empty());
    }
}
