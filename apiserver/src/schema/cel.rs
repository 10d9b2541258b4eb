//! `x-kubernetes-validations`: CEL rules compiled once per schema and evaluated per object.
//!
//! Evaluation uses the `cel` crate (re-exported by `kube-cel`, which kube 5's `cel` feature also
//! uses) with the Kubernetes CEL libraries that `kube-cel` registers (strings, lists, sets,
//! regex, urls, ip/cidr, quantity, semver, format). Values are converted the way
//! apiextensions-apiserver converts them: property names escaped (`foo-bar` → `foo__dash__bar`),
//! `date-time`/`duration`/`byte` strings as timestamps, durations and bytes, `number` fields as
//! doubles, and at a resource root `metadata` reduced to `name` and `generateName`.
//!
//! Not supported, compared with kube-apiserver: static type checking at CRD creation (a rule
//! that names a missing field fails when evaluated, not when the CRD is created), cost
//! estimation and cost budgets, and a few cel-go macros the `cel` crate lacks (`cel.bind`,
//! two-variable comprehensions, `sortBy`); such rules fail when evaluated with an
//! `evaluating rule` error instead of being rejected with the CRD.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::context::VariableResolver;
use kube_cel::cel::objects::{Key, Map as CelMap, OptionalValue};
use kube_cel::cel::{Context, Program, Value as CelValue};
use serde_json::Value;

use super::errors::{BadValue, FieldError, Reason, child, go_quote, index};
use super::formats::{Format, parse_go_duration};
use super::structural::{Additional, NodeId, Structural, Ty};

/// One compiled `x-kubernetes-validations` entry.
pub(crate) struct CelRule {
    program: Program,
    message_program: Option<Program>,
    rule: String,
    message: String,
    reason: Option<Reason>,
    /// `fieldPath` rendered as a field path relative to the node (`foo.bar`).
    field_path: Option<String>,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl std::fmt::Debug for CelRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelRule")
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

/// The reasons a rule may name (`supportedValidationReason`), sorted as kube lists them.
const SUPPORTED_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// `apiextensions.ValidationRule` printed with `%#v`, which is how kube quotes a rule that does
/// not compile.
fn rule_go_value(r: &serde_json::Map<String, Value>) -> String {
    let s = |k: &str| go_quote(r.get(k).and_then(Value::as_str).unwrap_or(""));
    let reason = match r.get("reason").and_then(Value::as_str) {
        Some(v) => format!("(*apiextensions.FieldValueErrorReason)({})", go_quote(v)),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".to_string(),
    };
    let oos = match r.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".to_string(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{oos}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath")
    )
}

fn has_newline(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// Compiles the `x-kubernetes-validations` list at schema path `path`, reporting problems the
/// way kube-apiserver reports them when a CRD is created.
pub(crate) fn compile_rules(raw: &Value, path: &str, errors: &mut Vec<FieldError>) -> Vec<CelRule> {
    let Some(list) = raw.as_array() else {
        errors.push(FieldError::invalid(
            path,
            BadValue::Json(raw.clone()),
            "must be a list of validation rules",
        ));
        return Vec::new();
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let p = index(path, i);
        let Some(r) = item.as_object() else {
            errors.push(FieldError::invalid(
                &p,
                BadValue::Json(item.clone()),
                "must be a validation rule object",
            ));
            continue;
        };
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (rule, message, message_expression, field_path) = (
            text("rule"),
            text("message"),
            text("messageExpression"),
            text("fieldPath"),
        );
        let trimmed_rule = rule.trim();
        let trimmed_msg = message.trim();
        let before = errors.len();
        // Checks and wording from ValidateCustomResourceDefinitionOpenAPISchema.
        if trimmed_rule.is_empty() {
            errors.push(FieldError::required(
                &child(&p, "rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errors.push(FieldError::invalid(
                &child(&p, "message"),
                BadValue::str(&message),
                "message must be non-empty if specified",
            ));
        } else if has_newline(trimmed_msg) {
            errors.push(FieldError::invalid(
                &child(&p, "message"),
                BadValue::str(&message),
                "message must not contain line breaks",
            ));
        } else if has_newline(trimmed_rule) && trimmed_msg.is_empty() {
            errors.push(FieldError::required(
                &child(&p, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errors.push(FieldError::required(
                &child(&p, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        let reason = match r.get("reason").and_then(Value::as_str) {
            Some(rs) if SUPPORTED_REASONS.contains(&rs) => Reason::parse(rs),
            Some(rs) => {
                errors.push(FieldError::not_supported(
                    &child(&p, "reason"),
                    BadValue::str(rs),
                    &SUPPORTED_REASONS,
                ));
                None
            }
            None => None,
        };
        let normalized_path = if field_path.is_empty() {
            None
        } else if field_path.trim().is_empty() {
            errors.push(FieldError::invalid(
                &child(&p, "fieldPath"),
                BadValue::str(&field_path),
                "fieldPath must be non-empty if specified",
            ));
            None
        } else if has_newline(&field_path) {
            errors.push(FieldError::invalid(
                &child(&p, "fieldPath"),
                BadValue::str(&field_path),
                "fieldPath must not contain line breaks",
            ));
            None
        } else {
            match normalize_field_path(&field_path) {
                Some(fp) => Some(fp),
                None => {
                    errors.push(FieldError::invalid(
                        &child(&p, "fieldPath"),
                        BadValue::str(&field_path),
                        "fieldPath must be a valid path",
                    ));
                    None
                }
            }
        };
        if errors.len() > before {
            continue;
        }
        let program = match Program::compile(trimmed_rule) {
            Ok(p) => p,
            Err(e) => {
                errors.push(FieldError::invalid(
                    &child(&p, "rule"),
                    BadValue::Rendered(rule_go_value(r)),
                    format!("compilation failed: {}", e.to_string().trim()),
                ));
                continue;
            }
        };
        let message_program = if message_expression.trim().is_empty() {
            None
        } else {
            match Program::compile(message_expression.trim()) {
                Ok(p) => Some(p),
                Err(e) => {
                    errors.push(FieldError::invalid(
                        &child(&p, "messageExpression"),
                        BadValue::Rendered(rule_go_value(r)),
                        format!(
                            "messageExpression compilation failed: {}",
                            e.to_string().trim()
                        ),
                    ));
                    continue;
                }
            }
        };
        let uses_old_self = program.references().has_variable("oldSelf");
        let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool);
        if !uses_old_self && let Some(b) = optional_old_self {
            errors.push(FieldError::invalid(
                &child(&p, "optionalOldSelf"),
                BadValue::Json(Value::Bool(b)),
                "may not be set if oldSelf is not used in rule",
            ));
            continue;
        }
        out.push(CelRule {
            program,
            message_program,
            rule: trimmed_rule.to_string(),
            message: trimmed_msg.to_string(),
            reason,
            field_path: normalized_path,
            uses_old_self,
            optional_old_self: optional_old_self.unwrap_or(false),
        });
    }
    out
}

/// Turns a rule's `fieldPath` (`.spec.foo`, `.a['b.c']`, `.list[0]`) into the field path kube
/// appends to the rule's location: `spec.foo`, `a[b.c]`, `list[0]`.
fn normalize_field_path(fp: &str) -> Option<String> {
    let mut out = String::new();
    let b = fp.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'.' && b[j] != b'[' {
                    j += 1;
                }
                if j == start {
                    return None;
                }
                out = child(&out, &fp[start..j]);
                i = j;
            }
            b'[' => {
                let end = fp[i..].find(']')? + i;
                let inner = fp[i + 1..end].trim();
                let inner = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(inner);
                if inner.is_empty() {
                    return None;
                }
                out.push('[');
                out.push_str(inner);
                out.push(']');
                i = end + 1;
            }
            _ => return None,
        }
    }
    Some(out)
}

thread_local! {
    /// The root context with the Kubernetes CEL libraries; building it registers ~100
    /// functions, so each thread does it once.
    static BASE: Context<'static> = Context::default().with_all();
}

/// apiextensions' identifier escaping (`model.Escape`): `None` for names CEL cannot address.
pub(crate) fn escape(ident: &str) -> Option<String> {
    const RESERVED: [&str; 21] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let first = ident.bytes().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let mut chars = ident.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        buf = (buf << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    Some(out)
}

fn cel_string(s: &str) -> CelValue {
    CelValue::String(Arc::new(s.to_string()))
}

/// Converts a JSON value to CEL following the schema node `id`. `resource_root` marks the
/// object root and embedded resources, where kube exposes only `metadata.name` and
/// `metadata.generateName`.
pub(crate) fn to_cel(
    s: &Structural,
    id: Option<NodeId>,
    v: &Value,
    resource_root: bool,
) -> CelValue {
    let node = id.map(|id| s.node(id));
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            if node.is_some_and(|n| n.ty == Ty::Number) {
                CelValue::Float(n.as_f64().unwrap_or(f64::NAN))
            } else if let Some(i) = n.as_i64() {
                CelValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                CelValue::UInt(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if node.is_some_and(|n| n.ty == Ty::Integer) && f.fract() == 0.0 && f.abs() < 9.2e18
                {
                    CelValue::Int(f as i64)
                } else {
                    CelValue::Float(f)
                }
            }
        }
        Value::String(st) => match node.and_then(|n| n.format.as_ref()).map(|f| f.0) {
            Some(Format::DateTime) => match chrono::DateTime::parse_from_rfc3339(st) {
                Ok(t) => CelValue::Timestamp(t),
                Err(_) => cel_string(st),
            },
            Some(Format::Duration) => {
                match parse_go_duration(st).and_then(|ns| i64::try_from(ns).ok()) {
                    Some(ns) => CelValue::Duration(chrono::Duration::nanoseconds(ns)),
                    None => cel_string(st),
                }
            }
            Some(Format::Byte) => match decode_base64(st) {
                Some(b) => CelValue::Bytes(Arc::new(b)),
                None => cel_string(st),
            },
            _ => cel_string(st),
        },
        Value::Array(items) => {
            let item = node.and_then(|n| n.items);
            CelValue::List(Arc::new(
                items
                    .iter()
                    .map(|x| to_cel(s, item, x, item.is_some_and(|i| s.node(i).embedded)))
                    .collect(),
            ))
        }
        Value::Object(obj) => {
            let mut map = HashMap::with_capacity(obj.len());
            let is_map = node.is_some_and(|n| {
                n.properties.is_empty()
                    && matches!(n.additional, Additional::Schema(_) | Additional::Bool(true))
            });
            for (k, val) in obj {
                let child_id = node.and_then(|n| n.field(k));
                let child_val = if resource_root && k == "metadata" {
                    restricted_metadata(val)
                } else {
                    to_cel(
                        s,
                        child_id,
                        val,
                        child_id.is_some_and(|c| s.node(c).embedded),
                    )
                };
                let key = if is_map {
                    k.clone()
                } else {
                    match escape(k) {
                        Some(e) => e,
                        None => continue,
                    }
                };
                map.insert(Key::String(Arc::new(key)), child_val);
            }
            CelValue::Map(CelMap { map: Arc::new(map) })
        }
    }
}

/// `model.WithTypeAndObjectMeta`: rules see only `name` and `generateName` of metadata.
fn restricted_metadata(v: &Value) -> CelValue {
    let mut map = HashMap::new();
    if let Some(m) = v.as_object() {
        for k in ["name", "generateName"] {
            if let Some(Value::String(s)) = m.get(k) {
                map.insert(Key::String(Arc::new(k.to_string())), cel_string(s));
            }
        }
    }
    CelValue::Map(CelMap { map: Arc::new(map) })
}

/// `self` and `oldSelf`. A resolver hands out (cheap, `Arc`-backed) clones of the converted
/// values; adding them as context variables would deep-copy them on every rule.
struct Vars {
    self_val: CelValue,
    old_self: Option<CelValue>,
}

impl VariableResolver for Vars {
    fn resolve(&self, variable: &str) -> Option<CelValue> {
        match variable {
            "self" => Some(self.self_val.clone()),
            "oldSelf" => self.old_self.clone(),
            _ => None,
        }
    }
}

/// `ruleErrorString`: the message if there is one, else the rule.
fn rule_error_string(r: &CelRule) -> &str {
    if r.message.is_empty() {
        &r.rule
    } else {
        &r.message
    }
}

/// Evaluates the rules of node `id` against `value` (at field path `path`), with `old` the
/// correlated old value on update. `unchanged` ratchets: a failing rule that does not use
/// `oldSelf` is not an error when the value did not change (kube turns it into a warning).
#[allow(clippy::too_many_arguments)]
pub(crate) fn eval_node(
    s: &Structural,
    id: NodeId,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    resource_root: bool,
    unchanged: bool,
    errors: &mut Vec<FieldError>,
) {
    let node = s.node(id);
    if node.rules.is_empty() || value.is_null() {
        return;
    }
    let self_val = to_cel(s, Some(id), value, resource_root);
    let old_val = old
        .filter(|o| !o.is_null())
        .map(|o| to_cel(s, Some(id), o, resource_root));
    let type_name = node.type_name.to_string();
    BASE.with(|base| {
        for r in node.rules.iter() {
            if r.uses_old_self && old_val.is_none() && !r.optional_old_self {
                // Transition rules run only when there is an old value to compare with.
                continue;
            }
            let old_self = if r.optional_old_self {
                let opt = match &old_val {
                    Some(o) => OptionalValue::of(o.clone()),
                    None => OptionalValue::none(),
                };
                Some(CelValue::Opaque(Arc::new(opt)))
            } else {
                old_val.clone()
            };
            let vars = Vars { self_val: self_val.clone(), old_self };
            let mut ctx = base.new_inner_scope();
            ctx.set_variable_resolver(&vars);
            let err = match r.program.execute(&ctx) {
                Ok(CelValue::Bool(true)) => continue,
                Ok(CelValue::Bool(false)) => None,
                Ok(other) => Some(format!("rule did not evaluate to a bool (got {:?}) evaluating rule: {}", other.type_of(), rule_error_string(r))),
                Err(e) => {
                    let e = e.to_string();
                    if e.starts_with("no such overload") || e.starts_with("No such overload") {
                        Some(format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule_error_string(r)
                        ))
                    } else {
                        Some(format!("{e} evaluating rule: {}", rule_error_string(r)))
                    }
                }
            };
            if let Some(detail) = err {
                errors.push(FieldError::invalid(path, BadValue::str(type_name.clone()), detail));
                continue;
            }
            if unchanged && !r.uses_old_self {
                continue;
            }
            let detail = r
                .message_program
                .as_ref()
                .and_then(|p| match p.execute(&ctx) {
                    Ok(CelValue::String(m)) => {
                        let m = m.trim();
                        (!m.is_empty() && !m.contains('\n') && m.len() <= 5 * 1024).then(|| m.to_string())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| if r.message.is_empty() { format!("failed rule: {}", r.rule) } else { r.message.clone() });
            let at = match &r.field_path {
                Some(fp) => child(path, fp),
                None => path.to_string(),
            };
            let bad = if matches!(node.ty, Ty::Object | Ty::Array) { BadValue::Omitted } else { BadValue::Json(value.clone()) };
            errors.push(match r.reason {
                Some(Reason::Forbidden) => FieldError::forbidden(&at, detail),
                Some(Reason::Required) => FieldError::required(&at, detail),
                Some(Reason::Duplicate) => FieldError::duplicate(&at, bad),
                _ => FieldError::invalid(&at, bad, detail),
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaping_matches_apiextensions() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("a_b").as_deref(), Some("a_b"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn field_paths_normalize() {
        assert_eq!(
            normalize_field_path(".spec.foo").as_deref(),
            Some("spec.foo")
        );
        assert_eq!(normalize_field_path(".a['b.c']").as_deref(), Some("a[b.c]"));
        assert_eq!(normalize_field_path(".list[0]").as_deref(), Some("list[0]"));
        assert_eq!(normalize_field_path("spec"), None);
        assert_eq!(normalize_field_path(".a..b"), None);
    }

    #[test]
    fn rule_problems_are_reported_like_crd_validation() {
        let mut errs = Vec::new();
        let rules = compile_rules(
            &json!([
                {"rule": "  "},
                {"rule": "self > 1", "message": "   "},
                {"rule": "self > 1", "reason": "Bogus"},
                {"rule": "self >", "message": "m"},
                {"rule": "self > 1", "optionalOldSelf": true},
                {"rule": "self.a == oldSelf.a", "fieldPath": ".a"}
            ]),
            "x-kubernetes-validations",
            &mut errs,
        );
        assert_eq!(rules.len(), 1);
        assert!(rules[0].uses_old_self);
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs[0],
            "x-kubernetes-validations[0].rule: Required value: rule is not specified"
        );
        assert_eq!(
            msgs[1],
            "x-kubernetes-validations[1].message: Invalid value: \"   \": message must be non-empty if specified"
        );
        assert_eq!(
            msgs[2],
            "x-kubernetes-validations[2].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
        );
        assert!(
            msgs[3].starts_with("x-kubernetes-validations[3].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self >\", Message:\"m\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: "),
            "{}",
            msgs[3]
        );
        assert_eq!(
            msgs[4],
            "x-kubernetes-validations[4].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
        );
    }

    #[test]
    fn program_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CelRule>();
    }
}
