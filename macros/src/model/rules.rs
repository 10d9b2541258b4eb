//! CEL validation rules, `#[x_kube(validation = ...)]` on a struct or a field: read in
//! kube-derive's syntax, parsed with the CEL parser the embedded API server evaluates them with,
//! checked against the struct's JSON field names, and rendered as `x-kubernetes-validations`.

use darling::error::Accumulator;
use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprCall, ExprLit, ExprMethodCall, Lit, LitStr, Meta, Token};

use super::error;
use super::options::did_you_mean;
use super::serde_attrs::FieldJson;

/// The reasons kube-apiserver accepts in a rule (`supportedValidationReason`).
const REASONS: &[&str] = &[
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

/// The builder methods of kube's `Rule` (and `message_expression`, which kube spells
/// `.message(Message::Expression(..))`).
const METHODS: &[&str] = &[
    "message",
    "message_expression",
    "reason",
    "field_path",
    "optional_old_self",
];

/// CEL's reserved words, which kube escapes as `__{word}__` in field names.
const CEL_RESERVED: &[&str] = &[
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

/// One `x-kubernetes-validations` entry.
pub(crate) struct Rule {
    rule: LitStr,
    message: Option<LitStr>,
    message_expression: Option<LitStr>,
    reason: Option<String>,
    field_path: Option<LitStr>,
    optional_old_self: Option<bool>,
    /// The fields the rule selects on `self` or `oldSelf`, as CEL names them.
    selected: Vec<String>,
}

/// Removes every `#[x_kube(...)]` from `attrs` and returns the rules they declare. A rule with a
/// mistake is reported and left out.
pub(crate) fn take(attrs: &mut Vec<Attribute>, errors: &mut Accumulator) -> Vec<Rule> {
    let mut rules = Vec::new();
    attrs.retain(|attr| {
        if !attr.path().is_ident("x_kube") {
            return true;
        }
        let items = match attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            Ok(items) => items,
            Err(err) => {
                errors.push(err.into());
                return false;
            }
        };
        for item in items {
            match &item {
                Meta::NameValue(nv) if nv.path.is_ident("validation") => {
                    rules.extend(rule(&nv.value, errors));
                }
                other => {
                    let name = other
                        .path()
                        .get_ident()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let hint = did_you_mean(&name, &["validation"])
                        .map(|v| format!("; did you mean `{v}`?"))
                        .unwrap_or_default();
                    errors.push(error(
                        other.span(),
                        format!(
                            "`#[x_kube]` here takes `validation = \"<CEL rule>\"` or \
                             `validation = Rule::new(\"<CEL rule>\").message(\"...\")`{hint}"
                        ),
                    ));
                }
            }
        }
        false
    });
    rules
}

fn string(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        Expr::Group(group) => string(&group.expr),
        _ => None,
    }
}

/// The last segment of a path expression: `Reason::FieldValueForbidden` → `FieldValueForbidden`.
fn last_segment(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

const HOW: &str = "write `validation = \"<CEL rule>\"` or `validation = Rule::new(\"<CEL rule>\")` \
                   followed by `.message(\"...\")`, `.message(Message::Expression(\"...\"))`, \
                   `.reason(Reason::FieldValueForbidden)`, `.field_path(\".field\")` or \
                   `.optional_old_self(true)`";

/// Reads one `validation = ...` value: a string, a `("rule", "message")` pair, or
/// `Rule::new("rule")` with kube's builder methods.
fn rule(expr: &Expr, errors: &mut Accumulator) -> Option<Rule> {
    let mut calls: Vec<&ExprMethodCall> = Vec::new();
    let mut base = expr;
    while let Expr::MethodCall(call) = base {
        calls.push(call);
        base = &call.receiver;
    }
    calls.reverse();
    let mut out = match base {
        Expr::Tuple(tuple) if calls.is_empty() && tuple.elems.len() == 2 => {
            let (Some(rule), Some(message)) = (string(&tuple.elems[0]), string(&tuple.elems[1]))
            else {
                errors.push(error(tuple.span(), HOW));
                return None;
            };
            let mut out = Rule::new(rule.clone());
            out.message = Some(message.clone());
            out
        }
        Expr::Call(ExprCall { func, args, .. })
            if last_segment(func).as_deref() == Some("new")
                && matches!(&**func, Expr::Path(p) if p.path.segments.len() >= 2
                    && p.path.segments[p.path.segments.len() - 2].ident == "Rule") =>
        {
            match (args.len(), args.first().and_then(string)) {
                (1, Some(rule)) => Rule::new(rule.clone()),
                _ => {
                    errors.push(error(
                        args.span(),
                        "`Rule::new` takes the CEL rule as a string literal: `Rule::new(\"self == oldSelf\")`",
                    ));
                    return None;
                }
            }
        }
        other => match string(other) {
            Some(rule) if calls.is_empty() => Rule::new(rule.clone()),
            _ => {
                errors.push(error(other.span(), HOW));
                return None;
            }
        },
    };
    let mut ok = true;
    for call in calls {
        let name = call.method.to_string();
        let arg = match (call.args.len(), call.args.first()) {
            (1, Some(arg)) => arg,
            _ => {
                errors.push(error(
                    call.method.span(),
                    format!("`.{name}(...)` takes one argument; {HOW}"),
                ));
                ok = false;
                continue;
            }
        };
        let mut wrong = |what: &str| {
            errors.push(error(arg.span(), format!("`.{name}(...)` takes {what}")));
            false
        };
        ok &= match name.as_str() {
            "message" => match (arg, string(arg)) {
                (_, Some(s)) => {
                    out.message = Some(s.clone());
                    true
                }
                (Expr::Call(ExprCall { func, args, .. }), None) if args.len() == 1 => {
                    match (last_segment(func).as_deref(), args.first().and_then(string)) {
                        (Some("Message"), Some(s)) => {
                            out.message = Some(s.clone());
                            true
                        }
                        (Some("Expression"), Some(s)) => {
                            out.message_expression = Some(s.clone());
                            true
                        }
                        _ => wrong(
                            "a string, `Message::Message(\"...\")` or `Message::Expression(\"<CEL expression>\")`",
                        ),
                    }
                }
                _ => wrong(
                    "a string, `Message::Message(\"...\")` or `Message::Expression(\"<CEL expression>\")`",
                ),
            },
            "message_expression" => match string(arg) {
                Some(s) => {
                    out.message_expression = Some(s.clone());
                    true
                }
                None => wrong("a CEL expression as a string literal"),
            },
            "reason" => {
                let reason = string(arg).map(LitStr::value).or_else(|| last_segment(arg));
                match reason {
                    Some(reason) if REASONS.contains(&reason.as_str()) => {
                        out.reason = Some(reason);
                        true
                    }
                    Some(reason) => {
                        let hint = did_you_mean(&reason, REASONS)
                            .map(|r| format!("; did you mean `{r}`?"))
                            .unwrap_or_default();
                        errors.push(error(
                            arg.span(),
                            format!(
                                "`{reason}` is not a reason kube-apiserver accepts: use `Reason::` one of {}{hint}",
                                REASONS.join(", ")
                            ),
                        ));
                        false
                    }
                    None => wrong("a reason, e.g. `Reason::FieldValueForbidden`"),
                }
            }
            "field_path" => match string(arg) {
                Some(s) => {
                    out.field_path = Some(s.clone());
                    true
                }
                None => wrong("a JSON path relative to where the rule is, e.g. `\".version\"`"),
            },
            "optional_old_self" => match arg {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => {
                    out.optional_old_self = Some(b.value);
                    true
                }
                _ => wrong("`true` or `false`"),
            },
            other => {
                let hint = did_you_mean(other, METHODS)
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                errors.push(error(
                    call.method.span(),
                    format!(
                        "`Rule` has no method `{other}`{hint} (methods: {})",
                        METHODS.join(", ")
                    ),
                ));
                false
            }
        };
    }
    (out.check(errors) && ok).then_some(out)
}

impl Rule {
    fn new(rule: LitStr) -> Self {
        Rule {
            rule,
            message: None,
            message_expression: None,
            reason: None,
            field_path: None,
            optional_old_self: None,
            selected: Vec::new(),
        }
    }

    /// What kube-apiserver checks of a rule when the CRD is created, minus the type checks it
    /// needs the schema for: the rule and the message expression parse as CEL, the message has
    /// no line breaks (and a rule with line breaks has a message), the field path is a path.
    fn check(&mut self, errors: &mut Accumulator) -> bool {
        let mut ok = true;
        let text = self.rule.value();
        match cel::parser::Parser::default().parse(&text) {
            Ok(ast) => {
                let mut uses_old_self = false;
                let mut reserved = Vec::new();
                walk(&ast, &mut |expr| match expr {
                    cel::common::ast::Expr::Ident(name) if name == "oldSelf" => {
                        uses_old_self = true;
                    }
                    cel::common::ast::Expr::Select(select) => {
                        if let cel::common::ast::Expr::Ident(name) = &select.operand.expr
                            && (name == "self" || name == "oldSelf")
                        {
                            self.selected.push(select.field.clone());
                        }
                        if CEL_RESERVED.contains(&select.field.as_str())
                            && !reserved.contains(&select.field)
                        {
                            reserved.push(select.field.clone());
                        }
                    }
                    _ => {}
                });
                // kube-apiserver finds no such key at run time, on every object: say so now.
                for word in reserved {
                    errors.push(error(
                        self.rule.span(),
                        format!(
                            "`{word}` is a CEL reserved word, which kube-apiserver escapes in field names: \
                             write `.__{word}__` where this rule selects `.{word}`"
                        ),
                    ));
                    ok = false;
                }
                if self.optional_old_self == Some(true) && !uses_old_self {
                    errors.push(error(
                        self.rule.span(),
                        "`optional_old_self(true)` is only allowed on a rule that uses `oldSelf` (a transition rule); \
                         remove it or compare with `oldSelf`",
                    ));
                    ok = false;
                }
            }
            Err(err) => {
                errors.push(error(
                    self.rule.span(),
                    format!("this CEL rule does not parse:\n{err}"),
                ));
                ok = false;
            }
        }
        if let Some(expression) = &self.message_expression
            && let Err(err) = cel::parser::Parser::default().parse(&expression.value())
        {
            errors.push(error(
                expression.span(),
                format!("this CEL message expression does not parse:\n{err}"),
            ));
            ok = false;
        }
        if self.message.is_some() && self.message_expression.is_some() {
            errors.push(error(
                self.rule.span(),
                "a rule has a `message` or a `message_expression`, not both; kube-apiserver shows the expression's \
                 result when it evaluates to a string, so keep that one",
            ));
            ok = false;
        }
        if let Some(message) = &self.message
            && message.value().contains(['\n', '\r'])
        {
            errors.push(error(
                message.span(),
                "the message must be one line: kube-apiserver refuses a message with line breaks",
            ));
            ok = false;
        }
        if text.contains(['\n', '\r'])
            && self.message.is_none()
            && self.message_expression.is_none()
        {
            errors.push(error(
                self.rule.span(),
                "a rule with line breaks needs a message: add `.message(\"...\")`",
            ));
            ok = false;
        }
        if let Some(path) = &self.field_path
            && field_path_head(&path.value()).is_none()
        {
            errors.push(error(
                path.span(),
                "the field path is a JSON path relative to where the rule is, starting with `.`, e.g. \".version\" \
                 or \".items[0].name\"",
            ));
            ok = false;
        }
        ok
    }

    /// The rule as an `x-kubernetes-validations` entry, in `serde_json::json!` syntax.
    fn json(&self) -> TokenStream {
        let rule = &self.rule;
        let message = self.message.as_ref().map(|m| quote!(, "message": #m));
        let expression = self
            .message_expression
            .as_ref()
            .map(|m| quote!(, "messageExpression": #m));
        let reason = self.reason.as_ref().map(|r| quote!(, "reason": #r));
        let field_path = self.field_path.as_ref().map(|p| quote!(, "fieldPath": #p));
        let optional = self
            .optional_old_self
            .map(|o| quote!(, "optionalOldSelf": #o));
        quote!({ "rule": #rule #message #expression #reason #field_path #optional })
    }
}

/// Calls `visit` on every node of a CEL expression.
fn walk(expr: &cel::IdedExpr, visit: &mut impl FnMut(&cel::common::ast::Expr)) {
    use cel::common::ast::{EntryExpr, Expr};
    visit(&expr.expr);
    match &expr.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk(target, visit);
            }
            for arg in &call.args {
                walk(arg, visit);
            }
        }
        Expr::Comprehension(c) => {
            for e in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                walk(e, visit);
            }
        }
        Expr::List(list) => {
            for e in &list.elements {
                walk(e, visit);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    walk(&e.key, visit);
                    walk(&e.value, visit);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    walk(&f.value, visit);
                }
            }
        }
        Expr::Select(select) => walk(&select.operand, visit),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The first field of a rule's `fieldPath` (`.spec.x` → `spec`, `['a.b'].c` → `a.b`), or `None`
/// when it is not a path.
fn field_path_head(path: &str) -> Option<String> {
    if let Some(rest) = path.strip_prefix('.') {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let head = &rest[..end];
        return (!head.is_empty()).then(|| head.to_owned());
    }
    let rest = path.strip_prefix("['")?;
    let end = rest.find("']")?;
    Some(rest[..end].to_owned())
}

/// A JSON field name as CEL sees it, escaped the way kube-apiserver escapes property names.
pub(crate) fn cel_name(json: &str) -> String {
    if CEL_RESERVED.contains(&json) {
        return format!("__{json}__");
    }
    json.replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__")
}

/// Checks that the struct-level `rules` name only fields the struct has: every `self.<field>`,
/// `oldSelf.<field>` and the head of every `fieldPath`. `fields` are the JSON names; `open`
/// means a flattened field may add more, so nothing is refused. `owner` names the struct in
/// messages.
pub(crate) fn check_fields(
    rules: &[Rule],
    fields: &[&str],
    open: bool,
    owner: &str,
    errors: &mut Accumulator,
) {
    if open {
        return;
    }
    let cel_names: Vec<String> = fields.iter().map(|f| cel_name(f)).collect();
    let cel_refs: Vec<&str> = cel_names.iter().map(String::as_str).collect();
    let list = if fields.is_empty() {
        "it has none".to_owned()
    } else {
        format!("its fields are {}", cel_refs.join(", "))
    };
    for rule in rules {
        let mut reported = Vec::new();
        for field in &rule.selected {
            if cel_refs.contains(&field.as_str()) || reported.contains(field) {
                continue;
            }
            let hint = did_you_mean(field, &cel_refs)
                .map(|f| format!("; did you mean `{f}`?"))
                .unwrap_or_default();
            errors.push(error(
                rule.rule.span(),
                format!("this rule names `{field}`, which is no field of `{owner}` ({list}){hint}"),
            ));
            reported.push(field.clone());
        }
        if let Some(path) = &rule.field_path
            && let Some(head) = field_path_head(&path.value())
            && !fields.contains(&head.as_str())
        {
            let plain: Vec<&str> = fields.to_vec();
            let hint = did_you_mean(&head, &plain)
                .map(|f| format!("; did you mean `{f}`?"))
                .unwrap_or_default();
            errors.push(error(
                path.span(),
                format!(
                    "the field path names `{head}`, which is no field of `{owner}` ({list}){hint}"
                ),
            ));
        }
    }
}

/// `#[schemars(extend("x-kubernetes-validations" = [...]))]` for a struct's own `rules`, or
/// nothing.
fn container_attr(rules: &[Rule]) -> Option<Attribute> {
    if rules.is_empty() {
        return None;
    }
    let entries = rules.iter().map(Rule::json);
    Some(syn::parse_quote!(
        #[schemars(extend("x-kubernetes-validations" = [#(#entries),*]))]
    ))
}

/// The schema transform that appends a field's `rules` to its schema, or nothing. Not an
/// `extend`: that would replace the rules the field's type declares on itself.
fn field_attr(rules: &[Rule], krate: &syn::Path) -> Option<Attribute> {
    if rules.is_empty() {
        return None;
    }
    let entries = rules.iter().map(Rule::json);
    let p = quote!(#krate::__private);
    Some(syn::parse_quote!(
        #[schemars(transform = |schema: &mut #p::schemars::Schema| {
            #p::runtime::fields::add_validations(schema, #p::serde_json::json!([#(#entries),*]))
        })]
    ))
}

/// A `self.<field>` in a rule on a field whose type the macro sees only by name: checked by the
/// compiler, against the type's `JsonFields`, by a constant the expansion writes.
pub(crate) struct FieldReference {
    /// The field's type with `Option` and `Box` taken off: what `self` is in the rule.
    pub ty: syn::Type,
    /// The JSON name the rule selects.
    pub field: String,
    /// The rule, for the error's span.
    pub rule: LitStr,
}

/// Takes the rules off a struct's attributes and its named fields', checks them, and puts the
/// schema attributes that emit them in their place. Struct-level rules are checked against
/// `json`, the struct's fields as serde writes them; `None` when the macro cannot see them (an
/// enum, a newtype), and then they are parsed only. Returns what field-level rules select on
/// fields of the author's own types, for the compiler to check.
pub(crate) fn apply(
    attrs: &mut Vec<Attribute>,
    fields: Option<&mut syn::FieldsNamed>,
    json: Option<&[&FieldJson]>,
    owner: &str,
    krate: &syn::Path,
    errors: &mut Accumulator,
) -> Vec<FieldReference> {
    let container = take(attrs, errors);
    if let Some(json) = json
        && !container.is_empty()
    {
        let open = json.iter().any(|f| f.flatten);
        let names: Vec<&str> = json
            .iter()
            .filter(|f| !f.flatten && !f.skipped)
            .map(|f| f.name.as_str())
            .collect();
        check_fields(&container, &names, open, owner, errors);
    }
    attrs.extend(container_attr(&container));
    let mut references = Vec::new();
    for field in fields.into_iter().flat_map(|f| f.named.iter_mut()) {
        let rules = take(&mut field.attrs, errors);
        if let Some(ty) = own_type(&field.ty) {
            for rule in &rules {
                let mut seen: Vec<&str> = Vec::new();
                for selected in &rule.selected {
                    if !seen.contains(&selected.as_str()) {
                        seen.push(selected);
                        references.push(FieldReference {
                            ty: ty.clone(),
                            field: json_name(selected),
                            rule: rule.rule.clone(),
                        });
                    }
                }
            }
        }
        field.attrs.extend(field_attr(&rules, krate));
    }
    references
}

/// The type `self` is in a rule on a field of type `ty`, when it may be one of the author's
/// structs: `ty` without `Option<..>` and `Box<..>`, if that is a plain path that is not a
/// scalar, string, collection or Kubernetes type (a `self.<field>` on those is kube-apiserver's
/// to judge, with the schema).
fn own_type(ty: &syn::Type) -> Option<&syn::Type> {
    const NOT_OURS: &[&str] = &[
        "String",
        "str",
        "bool",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "f32",
        "f64",
        "char",
        "Vec",
        "VecDeque",
        "HashMap",
        "BTreeMap",
        "HashSet",
        "BTreeSet",
        "IndexMap",
        "Value",
        "Quantity",
        "IntOrString",
        "Time",
        "MicroTime",
        "Duration",
        "ObjectMeta",
        "LabelSelector",
        "Cow",
        "Arc",
        "Rc",
    ];
    let syn::Type::Path(path) = ty else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    let name = last.ident.to_string();
    if name == "Option" || name == "Box" {
        if let syn::PathArguments::AngleBracketed(args) = &last.arguments
            && let Some(syn::GenericArgument::Type(inner)) = args.args.first()
        {
            return own_type(inner);
        }
        return None;
    }
    (!NOT_OURS.contains(&name.as_str())).then_some(ty)
}

/// The JSON name of a field as CEL names it: [`cel_name`] undone.
fn json_name(cel: &str) -> String {
    if let Some(word) = cel.strip_prefix("__").and_then(|w| w.strip_suffix("__"))
        && CEL_RESERVED.contains(&word)
    {
        return word.to_owned();
    }
    cel.replace("__dash__", "-")
        .replace("__dot__", ".")
        .replace("__slash__", "/")
        .replace("__underscores__", "__")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(attr: Attribute) -> (Vec<Rule>, Vec<String>) {
        let mut attrs = vec![attr];
        let mut errors = darling::Error::accumulator();
        let rules = take(&mut attrs, &mut errors);
        assert!(attrs.is_empty());
        let messages = errors
            .into_inner()
            .iter()
            .map(ToString::to_string)
            .collect();
        (rules, messages)
    }

    #[test]
    fn kube_syntax_is_read() {
        let (rules, errors) = rules(syn::parse_quote!(#[x_kube(
            validation = "self.a > 0",
            validation = ("self == oldSelf", "immutable"),
            validation = Rule::new("self.b != ''")
                .message(Message::Expression("'b is ' + self.b"))
                .reason(Reason::FieldValueForbidden)
                .field_path(".b"),
            validation = kube::core::Rule::new("oldSelf.hasValue()").optional_old_self(true),
        )]));
        assert_eq!(errors, Vec::<String>::new());
        let json: Vec<String> = rules.iter().map(|r| r.json().to_string()).collect();
        assert_eq!(json[0], quote!({ "rule": "self.a > 0" }).to_string());
        assert_eq!(
            json[1],
            quote!({ "rule": "self == oldSelf", "message": "immutable" }).to_string()
        );
        assert_eq!(
            json[2],
            quote!({ "rule": "self.b != ''", "messageExpression": "'b is ' + self.b", "reason": "FieldValueForbidden", "fieldPath": ".b" }).to_string()
        );
        assert!(
            json[3].contains("\"optionalOldSelf\" : true"),
            "{}",
            json[3]
        );
        assert_eq!(rules[0].selected, ["a"]);
        assert_eq!(rules[2].selected, ["b"]);
    }

    #[test]
    fn mistakes_are_reported() {
        let (rules, errors) = rules(syn::parse_quote!(#[x_kube(
            validation = "self.a >",
            validation = Rule::new("self > 0").mesage("x"),
            validation = Rule::new("self > 0").reason(Reason::Invalid),
            validation = Rule::new("self > 0").optional_old_self(true),
            validation = Rule::new("self > 0").field_path("version"),
            merge_strategy = ListMerge::Atomic,
        )]));
        assert!(rules.is_empty());
        assert_eq!(errors.len(), 6, "{errors:#?}");
        assert!(
            errors[0].starts_with("this CEL rule does not parse"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].contains("did you mean `message`?"),
            "{}",
            errors[1]
        );
        assert!(errors[2].contains("not a reason"), "{}", errors[2]);
    }

    #[test]
    fn field_names_are_escaped_as_kube_escapes_them() {
        assert_eq!(cel_name("maxRetention"), "maxRetention");
        assert_eq!(cel_name("foo-bar"), "foo__dash__bar");
        assert_eq!(cel_name("a.b"), "a__dot__b");
        assert_eq!(cel_name("namespace"), "__namespace__");
        assert_eq!(field_path_head(".spec.x").as_deref(), Some("spec"));
        assert_eq!(field_path_head("['a.b'].c").as_deref(), Some("a.b"));
        assert_eq!(field_path_head("spec"), None);
        for json in ["maxRetention", "foo-bar", "a.b", "namespace", "a__b", "x/y"] {
            assert_eq!(json_name(&cel_name(json)), json);
        }
    }

    #[test]
    fn field_rules_on_own_types_are_left_to_the_compiler() {
        let mut fields: syn::FieldsNamed = syn::parse_quote!({
            #[x_kube(validation = "self.cron != '' || has(self.every)")]
            schedule: Option<Schedule>,
            #[x_kube(validation = "self.size() > 0")]
            name: String,
            #[x_kube(validation = "self.all(x, x.size() > 0)")]
            tags: Vec<String>,
        });
        let mut errors = darling::Error::accumulator();
        let krate = syn::parse_quote!(::service_provider);
        let refs = apply(
            &mut Vec::new(),
            Some(&mut fields),
            None,
            "S",
            &krate,
            &mut errors,
        );
        assert!(errors.into_inner().is_empty());
        let found: Vec<(String, String)> = refs
            .iter()
            .map(|r| {
                let ty = &r.ty;
                (quote!(#ty).to_string(), r.field.clone())
            })
            .collect();
        assert_eq!(
            found,
            [
                ("Schedule".to_owned(), "cron".to_owned()),
                ("Schedule".to_owned(), "every".to_owned())
            ]
        );
    }

    #[test]
    fn struct_rules_name_real_fields() {
        let (rules, _) = rules(syn::parse_quote!(#[x_kube(
            validation = "self.retention < self.maxRetention",
            validation = "self.retension > 0",
        )]));
        let mut errors = darling::Error::accumulator();
        check_fields(
            &rules,
            &["retention", "maxRetention"],
            false,
            "BackupSpec",
            &mut errors,
        );
        let errors: Vec<String> = errors
            .into_inner()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].contains("`retension`"), "{}", errors[0]);
        assert!(
            errors[0].contains("did you mean `retention`?"),
            "{}",
            errors[0]
        );
    }
}
