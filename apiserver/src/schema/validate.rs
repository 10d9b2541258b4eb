//! Validating an object against a compiled schema, with kube-apiserver's messages.
//!
//! [`Structural::validate`] runs what the custom-resource strategy runs after decoding: the
//! OpenAPI value validation of kube-openapi (`validate.SchemaValidator`, ratcheting unchanged
//! values on update), the embedded-resource metadata checks, the `x-kubernetes-list-type`
//! uniqueness checks and, unless an earlier error makes the object unfit for them, the CEL
//! rules. Each check and message follows its Go counterpart, noted at each function.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::cel;
use super::errors::{BadValue, FieldError, Reason, child, go_float, index, key};
use super::objectmeta;
use super::structural::{Additional, ListType, Node, NodeId, Structural};

/// The JSON type of a value as kube-openapi names it (`schemaInfoForType`), and the format it
/// infers (`int64` for integers, `float64` for other numbers).
fn json_type(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_i64() || n.is_u64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

/// `swag.IsFloat64AJSONInteger`: integral and within ±2^53.
fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0
}

/// Accumulates errors for one `validate` call; `base` is the field path the result is reported
/// under (`kubeOpenAPIResultToFieldErrors(fldPath, …)`): empty (nil) for objects, the schema
/// path of a `default` when checking defaults.
struct OpenApi<'a> {
    s: &'a Structural,
    base: &'a str,
    errors: Vec<FieldError>,
}

impl OpenApi<'_> {
    /// `errPath = fldPath.Child(strings.TrimPrefix(err.Name, "."))`.
    fn field(&self, name: &str) -> String {
        let trimmed = name.strip_prefix('.').unwrap_or(name);
        match (self.base.is_empty(), trimmed.is_empty()) {
            (_, true) => self.base.to_string(),
            (true, false) => trimmed.to_string(),
            (false, false) => format!("{}.{}", self.base, trimmed),
        }
    }

    fn push(&mut self, e: FieldError) {
        self.errors.push(e);
    }

    /// `SchemaValidator.Validate` for node `id` at kube-openapi name `name`. `old` is the
    /// correlated old value on update: when it equals `v`, errors are ratcheted away
    /// (`ratchetingValueValidator`).
    ///
    /// `name` is a buffer the walk appends child names to and truncates again, so that no
    /// string is built per field unless an error is reported.
    fn validate(&mut self, id: NodeId, v: &Value, old: Option<&Value>, name: &mut String) {
        if old.is_some_and(|o| o == v) {
            return;
        }
        let s = self.s;
        let node = s.node(id);
        if v.is_null() {
            if s.builtin {
                return;
            }
            self.check_type(node, v, name);
            self.check_enum(node, v, name);
            return;
        }
        self.check_type(node, v, name);
        if let Some(c) = &node.checks {
            self.check_junctors(c, v, name);
        }
        match v {
            Value::String(st) => self.check_string(node, st, name),
            Value::Number(_) => self.check_number(node, v, name),
            Value::Array(items) => {
                self.check_array(node, items, old.and_then(Value::as_array), name)
            }
            _ => {}
        }
        self.check_enum(node, v, name);
        if let Value::Object(obj) = v {
            self.check_object(node, obj, old.and_then(Value::as_object), name);
        }
    }

    /// `typeValidator`, including its quirks around formats.
    fn check_type(&mut self, node: &Node, v: &Value, name: &str) {
        let types = node.type_list();
        let format = node.format.as_ref().map(|f| &*f.1).unwrap_or("");
        if types.is_empty() && format.is_empty() {
            return;
        }
        let contains = |t: &str| types.split(',').any(|x| x == t);
        let (sch_type, data_format) = json_type(v);
        if v.is_null() {
            if !types.is_empty() && !node.nullable {
                let f = self.field(name);
                self.push(FieldError::type_invalid(
                    &f,
                    BadValue::str("null"),
                    format!("{name} in body must be of type {types}: \"null\""),
                ));
            }
            return;
        }
        let is_float_int =
            sch_type == "number" && v.as_f64().is_some_and(is_json_integer) && contains("integer");
        let is_int_float = sch_type == "integer" && contains("number");
        let is_string_or_array = matches!(v, Value::String(_) | Value::Array(_));
        if !(is_string_or_array
            || format.is_empty()
            || contains(sch_type)
            || data_format == format
            || is_float_int
            || is_int_float)
        {
            let f = self.field(name);
            self.push(FieldError::type_invalid(
                &f,
                BadValue::str(data_format),
                format!("{name} in body must be of type {format}: \"{data_format}\""),
            ));
            return;
        }
        if is_string_or_array && !(contains("number") || contains("integer") || format.is_empty()) {
            return;
        }
        if !(types.is_empty() || contains(sch_type) || is_float_int || is_int_float) {
            let f = self.field(name);
            self.push(FieldError::type_invalid(
                &f,
                BadValue::str(sch_type),
                format!("{name} in body must be of type {types}: \"{sch_type}\""),
            ));
        }
    }

    /// Runs node `id` against `v` on its own and returns its errors (for anyOf/oneOf/allOf/not).
    fn sub(&self, id: NodeId, v: &Value, name: &str) -> Vec<FieldError> {
        let mut o = OpenApi {
            s: self.s,
            base: self.base,
            errors: Vec::new(),
        };
        o.validate(id, v, None, &mut name.to_string());
        o.errors
    }

    /// `schemaPropsValidator`. Composite errors are reported on the base path with an empty
    /// value, as `kubeOpenAPIResultToFieldErrors` does for errors that are not `*Validation`.
    fn check_junctors(&mut self, c: &super::structural::Checks, v: &Value, name: &str) {
        let base = self.base;
        let composite = |msg: String| FieldError::invalid(base, BadValue::str(""), msg);
        if !c.any_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut ok = false;
            for id in &c.any_of {
                let e = self.sub(*id, v, name);
                if e.is_empty() {
                    ok = true;
                    best = None;
                    break;
                }
                if best.as_ref().is_none_or(|b| e.len() < b.len()) {
                    best = Some(e);
                }
            }
            if !ok {
                self.push(composite(format!(
                    "\"{name}\" must validate at least one schema (anyOf)"
                )));
            }
            self.errors.extend(best.unwrap_or_default());
        }
        if !c.one_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut valid = 0;
            for id in &c.one_of {
                let e = self.sub(*id, v, name);
                if e.is_empty() {
                    valid += 1;
                    best = None;
                } else if valid == 0 && best.as_ref().is_none_or(|b| e.len() < b.len()) {
                    best = Some(e);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.push(composite(format!(
                    "\"{name}\" must validate one and only one schema (oneOf). {extra}"
                )));
                self.errors.extend(best.unwrap_or_default());
            }
        }
        if !c.all_of.is_empty() {
            let mut valid = 0;
            for id in &c.all_of {
                let e = self.sub(*id, v, name);
                if e.is_empty() {
                    valid += 1;
                }
                self.errors.extend(e);
            }
            if valid != c.all_of.len() {
                let extra = if valid == 0 { ". None validated" } else { "" };
                self.push(composite(format!(
                    "\"{name}\" must validate all the schemas (allOf){extra}"
                )));
            }
        }
        if let Some(not) = c.not
            && self.sub(not, v, name).is_empty()
        {
            self.push(composite(format!(
                "\"{name}\" must not validate the schema (not)"
            )));
        }
    }

    /// `stringValidator` (stops at the first failure) and `formatValidator`.
    fn check_string(&mut self, node: &Node, st: &str, name: &str) {
        if let Some(c) = &node.checks {
            let len = st.chars().count() as i64;
            if let Some(max) = c.max_length
                && len > max
            {
                let f = self.field(name);
                self.push(FieldError::too_long(&f, Some(max)));
            } else if let Some(min) = c.min_length
                && len < min
            {
                let f = self.field(name);
                self.push(FieldError::invalid(
                    &f,
                    BadValue::str(st),
                    format!("{name} in body should be at least {min} chars long"),
                ));
            } else if let Some((p, re)) = &c.pattern
                && !re.is_match(st)
            {
                let f = self.field(name);
                self.push(FieldError::invalid(
                    &f,
                    BadValue::str(st),
                    format!("{name} in body should match '{p}'"),
                ));
            }
        }
        if let Some((format, fname)) = &node.format
            && !format.is_valid(st)
        {
            let f = self.field(name);
            self.push(FieldError::type_invalid(
                &f,
                BadValue::str(st),
                format!(
                    "{name} in body must be of type {fname}: {}",
                    super::errors::go_quote(st)
                ),
            ));
        }
    }

    /// `numberValidator`: multipleOf, minimum, maximum — in that order, all reported. Integers
    /// are compared as integers with the bound truncated, as `MaximumNativeType` does.
    fn check_number(&mut self, node: &Node, v: &Value, name: &str) {
        let Some(c) = &node.checks else { return };
        let as_int = v.as_i64();
        let data = v.as_f64().unwrap_or(f64::NAN);
        let bad = BadValue::Json(v.clone());
        let show = |bound: f64| match as_int {
            Some(_) => (bound as i64).to_string(),
            None => go_float(bound),
        };
        if let Some(m) = c.multiple_of {
            let f = self.field(name);
            if m < 0.0 {
                let fac = if as_int.is_some() && m.fract() == 0.0 {
                    (m as i64).to_string()
                } else {
                    go_float(m)
                };
                self.push(FieldError::invalid(
                    &f,
                    BadValue::Json(
                        serde_json::Number::from_f64(m)
                            .map(Value::Number)
                            .unwrap_or(Value::Null),
                    ),
                    format!("factor MultipleOf declared for {name} must be positive: {fac}"),
                ));
            } else {
                let fails = match as_int {
                    Some(i) if m.fract() == 0.0 && m >= 1.0 => i % (m as i64) != 0,
                    _ => {
                        let mult = if m < 1.0 { 1.0 / m * data } else { data / m };
                        !is_json_integer(mult)
                    }
                };
                if fails {
                    self.push(FieldError::invalid(
                        &f,
                        bad.clone(),
                        format!("{name} in body should be a multiple of {}", show(m)),
                    ));
                }
            }
        }
        if let Some(min) = c.minimum {
            let fails = match as_int {
                Some(i) => {
                    let b = min as i64;
                    if c.exclusive_minimum { i <= b } else { i < b }
                }
                None => {
                    if c.exclusive_minimum {
                        data <= min
                    } else {
                        data < min
                    }
                }
            };
            if fails {
                let f = self.field(name);
                let op = if c.exclusive_minimum {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                self.push(FieldError::invalid(
                    &f,
                    bad.clone(),
                    format!("{name} in body should be {op} {}", show(min)),
                ));
            }
        }
        if let Some(max) = c.maximum {
            let fails = match as_int {
                Some(i) => {
                    let b = max as i64;
                    if c.exclusive_maximum { i >= b } else { i > b }
                }
                None => {
                    if c.exclusive_maximum {
                        data >= max
                    } else {
                        data > max
                    }
                }
            };
            if fails {
                let f = self.field(name);
                let op = if c.exclusive_maximum {
                    "less than"
                } else {
                    "less than or equal to"
                };
                self.push(FieldError::invalid(
                    &f,
                    bad,
                    format!("{name} in body should be {op} {}", show(max)),
                ));
            }
        }
    }

    /// `schemaSliceValidator`: items first, then minItems, maxItems, uniqueItems.
    fn check_array(
        &mut self,
        node: &Node,
        items: &[Value],
        old: Option<&Vec<Value>>,
        name: &mut String,
    ) {
        if let Some(item) = node.items {
            let base = name.len();
            for (i, x) in items.iter().enumerate() {
                use std::fmt::Write;
                let _ = write!(name, "[{i}]");
                let o = old.and_then(|o| correlate_item(self.s, node, x, o));
                self.validate(item, x, o, name);
                name.truncate(base);
            }
        }
        let name = &*name;
        let Some(c) = &node.checks else { return };
        let size = items.len() as i64;
        if let Some(min) = c.min_items
            && size < min
        {
            let f = self.field(name);
            self.push(FieldError::invalid(
                &f,
                BadValue::Json(size.into()),
                format!("{name} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = c.max_items
            && size > max
        {
            let f = self.field(name);
            self.push(FieldError::too_many(&f, Some(size), Some(max)));
        }
        if c.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(i, x)| items[..i].contains(x))
        {
            let f = self.field(name);
            self.push(FieldError::invalid(
                &f,
                BadValue::str(""),
                format!("{name} in body shouldn't contain duplicates"),
            ));
        }
    }

    /// `basicCommonValidator`: enum, with numbers compared by value across int and float.
    fn check_enum(&mut self, node: &Node, v: &Value, name: &str) {
        let Some(values) = node.checks.as_ref().and_then(|c| c.enum_values.as_ref()) else {
            return;
        };
        if values.is_empty() {
            return;
        }
        let matches = |e: &Value| match (e, v) {
            (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
            _ => e == v && !v.is_null(),
        };
        if values.iter().any(matches) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let f = self.field(name);
        self.push(FieldError::not_supported(
            &f,
            BadValue::Json(v.clone()),
            &supported,
        ));
    }

    /// `objectValidator`.
    fn check_object(
        &mut self,
        node: &Node,
        obj: &Map<String, Value>,
        old: Option<&Map<String, Value>>,
        name: &mut String,
    ) {
        let size = obj.len() as i64;
        if let Some(c) = &node.checks {
            if let Some(min) = c.min_properties
                && size < min
            {
                let f = self.field(name);
                self.push(FieldError::invalid(
                    &f,
                    BadValue::Json(size.into()),
                    format!("{name} in body should have at least {min} properties"),
                ));
                return;
            }
            if let Some(max) = c.max_properties
                && size > max
            {
                let f = self.field(name);
                self.push(FieldError::too_many(&f, Some(size), Some(max)));
                return;
            }
        }
        let correlatable = !node.map_atomic;
        match node.additional {
            Additional::Bool(false) => {
                for k in obj.keys() {
                    if node.property(k).is_none() {
                        let f = self.field(name);
                        self.push(FieldError::invalid(
                            &f,
                            BadValue::str(k.clone()),
                            format!("{name}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Additional::Schema(ap) => {
                for (k, x) in obj {
                    if node.property(k).is_none() {
                        let o = old.filter(|_| correlatable).and_then(|o| o.get(k));
                        let base = name.len();
                        name.push('.');
                        name.push_str(k);
                        self.validate(ap, x, o, name);
                        name.truncate(base);
                    }
                }
            }
            _ => {}
        }
        for (p, id) in node.properties.iter() {
            if let Some(x) = obj.get(&**p) {
                let o = old.filter(|_| correlatable).and_then(|o| o.get(&**p));
                let base = name.len();
                if base > 0 {
                    name.push('.');
                }
                name.push_str(p);
                self.validate(*id, x, o, name);
                name.truncate(base);
            }
        }
        for r in node.required.iter() {
            if !obj.contains_key(&**r) {
                let f = self.field(&format!("{name}.{r}"));
                self.push(FieldError::required(&f, ""));
            }
        }
    }
}

/// The old list item that corresponds to `new` (`CorrelatedObject.Index`): the item with the
/// same keys in a list-type map, an equal item in a set; atomic lists do not correlate.
fn correlate_item<'o>(
    s: &Structural,
    list: &Node,
    new: &Value,
    old: &'o [Value],
) -> Option<&'o Value> {
    match list.list_type {
        ListType::Atomic => None,
        ListType::Set => old.iter().find(|o| *o == new),
        ListType::Map => {
            let _ = s;
            let keys = &list.list_map_keys;
            let nm = new.as_object()?;
            old.iter().find(|o| {
                o.as_object()
                    .is_some_and(|om| keys.iter().all(|k| om.get(&**k) == nm.get(&**k)))
            })
        }
    }
}

impl Structural {
    /// Validates `obj` (already pruned and defaulted) against the schema, as the
    /// custom-resource strategy does after decoding: OpenAPI value validation, embedded
    /// resources' metadata, `x-kubernetes-list-type` uniqueness, then the CEL rules — which are
    /// skipped, with kube's "some validation rules were not checked" error, when a type,
    /// required, enum or size error makes the object unfit for them.
    ///
    /// Pass the stored object as `old` on update: unchanged values are not re-validated
    /// (ratcheting) and CEL transition rules (`oldSelf`) run. Type meta and the root
    /// `metadata` are checked by [`super::ResourceSchema`], not here.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = self.validate_openapi(obj, old, "");
        objectmeta::validate_embedded(self, self.root, obj, "", &mut errors);
        let old_lists_ok = old.is_none_or(|o| {
            let mut e = Vec::new();
            self.validate_lists(self.root, o, "", &mut e);
            e.is_empty()
        });
        if old_lists_ok {
            self.validate_lists(self.root, obj, "", &mut errors);
        }
        if self.node(self.root).rules_below {
            let blocking = errors.iter().any(|e| {
                matches!(
                    e.reason,
                    Reason::NotSupported
                        | Reason::Required
                        | Reason::TooLong
                        | Reason::TooMany
                        | Reason::TypeInvalid
                )
            });
            if blocking {
                errors.push(FieldError::invalid(
                    "",
                    BadValue::Rendered("null".into()),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                self.validate_cel(self.root, obj, old, "", true, &mut errors);
            }
        }
        errors
    }

    /// kube-openapi value validation only (`ValidateCustomResource(fldPath, obj, validator)`),
    /// with errors reported under `base`.
    pub(crate) fn validate_openapi(
        &self,
        obj: &Value,
        old: Option<&Value>,
        base: &str,
    ) -> Vec<FieldError> {
        self.validate_openapi_at(self.root, obj, old, base)
    }

    pub(crate) fn validate_openapi_at(
        &self,
        id: NodeId,
        obj: &Value,
        old: Option<&Value>,
        base: &str,
    ) -> Vec<FieldError> {
        let mut o = OpenApi {
            s: self,
            base,
            errors: Vec::new(),
        };
        o.validate(id, obj, old, &mut String::with_capacity(64));
        o.errors
    }

    /// `listtype.ValidateListSetsAndMaps`.
    fn validate_lists(&self, id: NodeId, v: &Value, path: &str, errors: &mut Vec<FieldError>) {
        let node = self.node(id);
        if !node.lists_below {
            return;
        }
        match v {
            Value::Object(obj) => {
                // Paths are built only for children that have list types below them.
                for (k, x) in obj {
                    if let Some(c) = node.property(k) {
                        if self.node(c).lists_below {
                            self.validate_lists(c, x, &child(path, k), errors);
                        }
                    } else if let Additional::Schema(c) = node.additional
                        && self.node(c).lists_below
                    {
                        self.validate_lists(c, x, &key(path, k), errors);
                    }
                }
            }
            Value::Array(items) => {
                match node.list_type {
                    ListType::Set => {
                        for i in non_unique(items.iter(), |a, b| a == b, Value::to_string) {
                            errors.push(FieldError::duplicate(
                                &index(path, i),
                                BadValue::Json(items[i].clone()),
                            ));
                        }
                    }
                    ListType::Map => validate_list_map(node, items, path, errors),
                    ListType::Atomic => {}
                }
                if let Some(item) = node.items
                    && self.node(item).lists_below
                {
                    for (i, x) in items.iter().enumerate() {
                        self.validate_lists(item, x, &index(path, i), errors);
                    }
                }
            }
            _ => {}
        }
    }

    /// Walks the object and evaluates CEL rules where the schema has them
    /// (`cel.Validator.Validate`), correlating old values for transition rules.
    fn validate_cel(
        &self,
        id: NodeId,
        v: &Value,
        old: Option<&Value>,
        path: &str,
        resource_root: bool,
        errors: &mut Vec<FieldError>,
    ) {
        let node = self.node(id);
        if !node.rules_below || v.is_null() {
            return;
        }
        let unchanged = old.is_some_and(|o| o == v);
        cel::eval_node(self, id, v, old, path, resource_root, unchanged, errors);
        match v {
            Value::Object(obj) => {
                let old_obj = old.and_then(Value::as_object).filter(|_| !node.map_atomic);
                for (k, x) in obj {
                    let o = old_obj.and_then(|o| o.get(k));
                    if !node.field(k).is_some_and(|c| self.node(c).rules_below) {
                        continue;
                    }
                    if let Some(c) = node.property(k) {
                        self.validate_cel(c, x, o, &child(path, k), self.node(c).embedded, errors);
                    } else if let Additional::Schema(c) = node.additional {
                        self.validate_cel(c, x, o, &key(path, k), self.node(c).embedded, errors);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = node.items
                    && self.node(item).rules_below
                {
                    let old_items = old.and_then(Value::as_array);
                    for (i, x) in items.iter().enumerate() {
                        // Only list-type map items correlate for CEL (`makeMapList`).
                        let o = match node.list_type {
                            ListType::Map => {
                                old_items.and_then(|o| correlate_item(self, node, x, o))
                            }
                            _ => None,
                        };
                        self.validate_cel(
                            item,
                            x,
                            o,
                            &index(path, i),
                            self.node(item).embedded,
                            errors,
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// `validateListSet`: the index of the second occurrence of every repeated value. Values are
/// compared as Go compares unstructured values: `1` and `1.0` differ, objects by content.
/// Short lists are compared pairwise without allocating; long ones through their JSON text.
fn non_unique<'a>(
    items: impl Iterator<Item = &'a Value>,
    eq: impl Fn(&Value, &Value) -> bool,
    text: impl Fn(&Value) -> String,
) -> Vec<usize> {
    let items: Vec<&Value> = items.collect();
    let mut out = Vec::new();
    if items.len() <= 32 {
        for i in 1..items.len() {
            let earlier = (0..i).filter(|j| eq(items[*j], items[i])).count();
            if earlier == 1 {
                out.push(i);
            }
        }
        return out;
    }
    let mut seen: HashMap<String, u32> = HashMap::new();
    for (i, x) in items.iter().enumerate() {
        let n = seen.entry(text(x)).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

/// `validateListMap`.
fn validate_list_map(node: &Node, items: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errors.push(FieldError::invalid(
                &index(path, i),
                BadValue::Json(x.clone()),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    let keys = &node.list_map_keys;
    let key_of = |x: &Value| -> Value {
        let mut k = Map::new();
        if let Some(obj) = x.as_object() {
            for f in keys.iter() {
                if let Some(v) = obj.get(&**f) {
                    k.insert(f.to_string(), v.clone());
                }
            }
        }
        Value::Object(k)
    };
    let same_keys = |a: &Value, b: &Value| keys.iter().all(|f| a.get(&**f) == b.get(&**f));
    for i in non_unique(items.iter(), same_keys, |x| key_of(x).to_string()) {
        errors.push(FieldError::duplicate(
            &index(path, i),
            BadValue::Json(key_of(&items[i])),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(spec: Value) -> Structural {
        Structural::compile(&json!({
            "type": "object",
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}, "spec": spec}
        }))
        .unwrap()
    }

    fn errs(s: &Structural, obj: Value) -> Vec<String> {
        s.validate(&obj, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn one(spec: Value, value: Value) -> Vec<String> {
        errs(
            &schema(json!({"type": "object", "properties": {"x": spec}})),
            json!({"spec": {"x": value}}),
        )
    }

    #[test]
    fn type_errors() {
        // kube-openapi errors.InvalidType, mapped to field.TypeInvalid.
        assert_eq!(
            errs(
                &schema(json!({"type": "object", "properties": {"replicas": {"type": "integer"}}})),
                json!({"spec": {"replicas": "string"}})
            ),
            [
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            one(json!({"type": "string"}), json!(5)),
            [
                "spec.x: Invalid value: \"integer\": spec.x in body must be of type string: \"integer\""
            ]
        );
        assert_eq!(
            one(json!({"type": "boolean"}), json!("true")),
            [
                "spec.x: Invalid value: \"string\": spec.x in body must be of type boolean: \"string\""
            ]
        );
        assert_eq!(
            one(json!({"type": "object"}), json!([])),
            ["spec.x: Invalid value: \"array\": spec.x in body must be of type object: \"array\""]
        );
        assert_eq!(
            one(
                json!({"type": "array", "items": {"type": "string"}}),
                json!({})
            ),
            ["spec.x: Invalid value: \"object\": spec.x in body must be of type array: \"object\""]
        );
        assert_eq!(
            one(json!({"type": "integer"}), json!(1.5)),
            [
                "spec.x: Invalid value: \"number\": spec.x in body must be of type integer: \"number\""
            ]
        );
        assert!(
            one(json!({"type": "integer"}), json!(2.0)).is_empty(),
            "integral floats are integers"
        );
        assert!(
            one(json!({"type": "number"}), json!(2)).is_empty(),
            "integers are numbers"
        );
        assert_eq!(
            one(json!({"type": "string"}), Value::Null),
            ["spec.x: Invalid value: \"null\": spec.x in body must be of type string: \"null\""]
        );
        assert!(one(json!({"type": "string", "nullable": true}), Value::Null).is_empty());
        assert_eq!(
            one(json!({"x-kubernetes-int-or-string": true}), json!(true)),
            [
                "spec.x: Invalid value: \"boolean\": spec.x in body must be of type integer,string: \"boolean\""
            ]
        );
        assert!(one(json!({"x-kubernetes-int-or-string": true}), json!("50%")).is_empty());
        assert!(one(json!({"x-kubernetes-int-or-string": true}), json!(3)).is_empty());
        assert_eq!(
            one(json!({"type": "string", "format": "date-time"}), json!(5)),
            [
                "spec.x: Invalid value: \"int64\": spec.x in body must be of type date-time: \"int64\""
            ]
        );
        let e = s_reason(json!({"type": "string"}), json!(5));
        assert_eq!(e, Reason::TypeInvalid);
    }

    fn s_reason(spec: Value, value: Value) -> Reason {
        schema(json!({"type": "object", "properties": {"x": spec}}))
            .validate(&json!({"spec": {"x": value}}), None)[0]
            .reason
    }

    #[test]
    fn string_checks() {
        assert_eq!(
            one(json!({"type": "string", "pattern": "^v"}), json!("abc")),
            ["spec.x: Invalid value: \"abc\": spec.x in body should match '^v'"]
        );
        assert_eq!(
            one(json!({"type": "string", "maxLength": 2}), json!("abc")),
            ["spec.x: Too long: may not be more than 2 bytes"]
        );
        assert_eq!(
            s_reason(json!({"type": "string", "maxLength": 2}), json!("abc")),
            Reason::TooLong
        );
        assert!(
            one(json!({"type": "string", "maxLength": 2}), json!("éé")).is_empty(),
            "length counts characters"
        );
        assert_eq!(
            one(json!({"type": "string", "minLength": 5}), json!("abc")),
            ["spec.x: Invalid value: \"abc\": spec.x in body should be at least 5 chars long"]
        );
        // stringValidator stops at the first failure.
        assert_eq!(
            one(
                json!({"type": "string", "minLength": 5, "pattern": "^z"}),
                json!("abc")
            )
            .len(),
            1
        );
        assert_eq!(
            one(
                json!({"type": "string", "format": "date-time"}),
                json!("yesterday")
            ),
            [
                "spec.x: Invalid value: \"yesterday\": spec.x in body must be of type date-time: \"yesterday\""
            ]
        );
        assert_eq!(
            one(json!({"type": "string", "format": "uuid"}), json!("x")),
            ["spec.x: Invalid value: \"x\": spec.x in body must be of type uuid: \"x\""]
        );
        assert!(
            one(json!({"type": "string", "format": "int32"}), json!("x")).is_empty(),
            "unsupported formats are ignored"
        );
    }

    #[test]
    fn number_checks() {
        assert_eq!(
            one(json!({"type": "integer", "maximum": 10}), json!(11)),
            ["spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10"]
        );
        assert_eq!(
            one(
                json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
                json!(10)
            ),
            ["spec.x: Invalid value: 10: spec.x in body should be less than 10"]
        );
        assert_eq!(
            one(json!({"type": "integer", "minimum": 1}), json!(0)),
            ["spec.x: Invalid value: 0: spec.x in body should be greater than or equal to 1"]
        );
        assert_eq!(
            one(
                json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
                json!(1)
            ),
            ["spec.x: Invalid value: 1: spec.x in body should be greater than 1"]
        );
        assert_eq!(
            one(
                json!({"type": "number", "maximum": 1000000}),
                json!(1000000.5)
            ),
            [
                "spec.x: Invalid value: 1.0000005e+06: spec.x in body should be less than or equal to 1e+06"
            ]
        );
        assert_eq!(
            one(json!({"type": "integer", "multipleOf": 3}), json!(7)),
            ["spec.x: Invalid value: 7: spec.x in body should be a multiple of 3"]
        );
        assert!(one(json!({"type": "number", "multipleOf": 0.5}), json!(1.5)).is_empty());
        assert_eq!(
            one(json!({"type": "number", "multipleOf": 0.5}), json!(1.2)),
            ["spec.x: Invalid value: 1.2: spec.x in body should be a multiple of 0.5"]
        );
        // multipleOf, minimum and maximum are all reported, in that order.
        assert_eq!(
            one(
                json!({"type": "integer", "multipleOf": 2, "maximum": 0}),
                json!(3)
            )
            .len(),
            2
        );
    }

    #[test]
    fn array_checks() {
        let s = json!({"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3});
        assert_eq!(
            one(s.clone(), json!(["a"])),
            ["spec.x: Invalid value: 1: spec.x in body should have at least 2 items"]
        );
        assert_eq!(
            one(s.clone(), json!(["a", "b", "c", "d"])),
            ["spec.x: Too many: 4: must have at most 3 items"]
        );
        assert_eq!(
            one(s, json!(["a", 1])),
            [
                "spec.x[1]: Invalid value: \"integer\": spec.x[1] in body must be of type string: \"integer\""
            ]
        );
        assert_eq!(
            one(
                json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
                json!(["a", "a"])
            ),
            ["spec.x: Invalid value: \"\": spec.x in body shouldn't contain duplicates"]
        );
        assert_eq!(
            one(
                json!({"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}),
                json!([{}])
            ),
            ["spec.x[0].name: Required value"]
        );
    }

    #[test]
    fn object_checks() {
        let s = schema(
            json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}),
        );
        assert_eq!(errs(&s, json!({"spec": {}})), ["spec.name: Required value"]);
        let root_required = Structural::compile(&json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}})).unwrap();
        assert_eq!(errs(&root_required, json!({})), ["spec: Required value"]);
        assert_eq!(
            one(
                json!({"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1}),
                json!({"a": "1", "b": "2"})
            ),
            ["spec.x: Too many: 2: must have at most 1 item"]
        );
        assert_eq!(
            one(
                json!({"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 2}),
                json!({"a": "1"})
            ),
            ["spec.x: Invalid value: 1: spec.x in body should have at least 2 properties"]
        );
        assert_eq!(
            one(
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                json!({"a": 1})
            ),
            [
                "spec.x.a: Invalid value: \"integer\": spec.x.a in body must be of type string: \"integer\""
            ]
        );
        assert_eq!(
            one(
                json!({"type": "object", "additionalProperties": false}),
                json!({"a": 1})
            ),
            ["spec.x: Invalid value: \"a\": spec.x.a in body is a forbidden property"]
        );
    }

    #[test]
    fn enum_checks() {
        assert_eq!(
            one(json!({"type": "string", "enum": ["a", "b"]}), json!("c")),
            ["spec.x: Unsupported value: \"c\": supported values: \"a\", \"b\""]
        );
        assert_eq!(
            one(json!({"type": "integer", "enum": [1, 2]}), json!(3)),
            ["spec.x: Unsupported value: 3: supported values: \"1\", \"2\""]
        );
        assert!(one(json!({"type": "number", "enum": [1, 2]}), json!(2.0)).is_empty());
        assert_eq!(
            s_reason(json!({"type": "string", "enum": ["a"]}), json!("c")),
            Reason::NotSupported
        );
    }

    #[test]
    fn junctors() {
        let any = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[0-9]+%$"});
        assert!(one(any.clone(), json!(5)).is_empty());
        assert_eq!(
            one(any, json!("5")),
            ["spec.x: Invalid value: \"5\": spec.x in body should match '^[0-9]+%$'"]
        );
        assert_eq!(
            one(
                json!({"type": "string", "not": {"enum": ["forbidden"]}}),
                json!("forbidden")
            ),
            ["<nil>: Invalid value: \"\": \"spec.x\" must not validate the schema (not)"]
        );
        let one_of = json!({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        assert!(one(one_of.clone(), json!({"a": "1"})).is_empty());
        assert_eq!(
            one(one_of.clone(), json!({"a": "1", "b": "2"})),
            [
                "<nil>: Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
            ]
        );
        assert_eq!(
            one(one_of, json!({})),
            [
                "<nil>: Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). Found none valid",
                "spec.x.a: Required value"
            ]
        );
        let all_of = json!({"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]});
        assert_eq!(
            one(all_of, json!(9)),
            [
                "spec.x: Invalid value: 9: spec.x in body should be less than or equal to 5",
                "<nil>: Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf)"
            ]
        );
        let any_of = json!({"type": "string", "anyOf": [{"enum": ["a"]}, {"pattern": "^b"}]});
        assert_eq!(
            one(any_of.clone(), json!("zz")).first().map(String::as_str),
            Some(
                "<nil>: Invalid value: \"\": \"spec.x\" must validate at least one schema (anyOf)"
            )
        );
        assert!(one(any_of, json!("bz")).is_empty());
    }

    #[test]
    fn list_types() {
        let set =
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
        assert_eq!(
            one(set, json!(["a", "b", "a", "a"])),
            ["spec.x[2]: Duplicate value: \"a\""]
        );
        let map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}});
        assert_eq!(
            one(
                map.clone(),
                json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}])
            ),
            ["spec.x[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"]
        );
        assert_eq!(
            one(map.clone(), json!([{"v": 1}, {"v": 2}])),
            ["spec.x[1]: Duplicate value: map[string]interface {}{}"]
        );
        assert!(one(map, json!([{"name": "a"}, {"name": "b"}])).is_empty());
        let multi = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}});
        assert_eq!(
            one(
                multi,
                json!([{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"a": "x", "b": 1}])
            ),
            ["spec.x[2]: Duplicate value: map[string]interface {}{\"a\":\"x\", \"b\":1}"]
        );
    }

    #[test]
    fn long_lists_find_duplicates_too() {
        let set =
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
        let many: Vec<Value> = (0..40).map(|i| json!(format!("v{}", i % 39))).collect();
        assert_eq!(
            one(set, json!(many)),
            ["spec.x[39]: Duplicate value: \"v0\""]
        );
        let map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}}}});
        let many: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("n{}", i % 38)}))
            .collect();
        assert_eq!(
            one(map, json!(many)),
            [
                "spec.x[38]: Duplicate value: map[string]interface {}{\"name\":\"n0\"}",
                "spec.x[39]: Duplicate value: map[string]interface {}{\"name\":\"n1\"}"
            ]
        );
    }

    #[test]
    fn ratcheting_keeps_unchanged_invalid_values() {
        let s = schema(
            json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 1}, "b": {"type": "string", "maxLength": 1}}}),
        );
        let old = json!({"spec": {"a": "too long", "b": "x"}});
        assert!(
            s.validate(&json!({"spec": {"a": "too long", "b": "y"}}), Some(&old))
                .is_empty()
        );
        assert_eq!(
            s.validate(&json!({"spec": {"a": "too long", "b": "yy"}}), Some(&old))
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["spec.b: Too long: may not be more than 1 byte"]
        );
    }

    #[test]
    fn cel_rules() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "!has(self.mode) || self.mode != 'off'", "messageExpression": "'mode ' + self.mode + ' is not allowed'", "reason": "FieldValueForbidden", "fieldPath": ".mode"}
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "mode": {"type": "string"},
                "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}, {"rule": "self == oldSelf", "message": "name is immutable"}]}
            }
        }));
        assert!(
            errs(
                &s,
                json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "name": "abc"}})
            )
            .is_empty()
        );
        assert_eq!(
            errs(
                &s,
                json!({"spec": {"minReplicas": 3, "maxReplicas": 2, "mode": "off", "name": "bcd"}})
            ),
            [
                "spec: Invalid value: minReplicas must not exceed maxReplicas",
                "spec.mode: Forbidden: mode off is not allowed",
                "spec.name: Invalid value: \"bcd\": failed rule: self.startsWith('a')"
            ]
        );
        // Transition rule: only on update.
        let old = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "name": "abc"}});
        assert_eq!(
            s.validate(
                &json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "name": "abd"}}),
                Some(&old)
            )
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
            ["spec.name: Invalid value: \"abd\": name is immutable"]
        );
        // A blocking schema error skips CEL.
        assert_eq!(
            errs(&s, json!({"spec": {"minReplicas": "x", "maxReplicas": 2}})),
            [
                "spec.minReplicas: Invalid value: \"string\": spec.minReplicas in body must be of type integer: \"string\"",
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ]
        );
    }

    #[test]
    fn cel_root_rule_and_optional_old_self() {
        let s = Structural::compile(&json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('x')", "message": "name must start with x"}],
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {"v": {"type": "integer",
                    "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true, "message": "may not decrease"}]}}}
            }
        }))
        .unwrap();
        assert_eq!(
            errs(&s, json!({"metadata": {"name": "abc"}, "spec": {"v": 1}})),
            ["<nil>: Invalid value: name must start with x"]
        );
        let old = json!({"metadata": {"name": "xy"}, "spec": {"v": 5}});
        assert_eq!(
            s.validate(
                &json!({"metadata": {"name": "xy"}, "spec": {"v": 4}}),
                Some(&old)
            )
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
            ["spec.v: Invalid value: 4: may not decrease"]
        );
        assert!(errs(&s, json!({"metadata": {"name": "xy"}, "spec": {"v": 4}})).is_empty());
    }

    #[test]
    fn cel_kubernetes_libraries_and_formats() {
        let s = schema(json!({
            "type": "object",
            "properties": {
                "mem": {"type": "string", "x-kubernetes-validations": [{"rule": "quantity(self).isLessThan(quantity('1Gi'))"}]},
                "url": {"type": "string", "x-kubernetes-validations": [{"rule": "isURL(self)"}]},
                "when": {"type": "string", "format": "date-time", "x-kubernetes-validations": [{"rule": "self > timestamp('2020-01-01T00:00:00Z')"}]},
                "every": {"type": "string", "format": "duration", "x-kubernetes-validations": [{"rule": "self <= duration('1h')"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [{"rule": "self.all(t, t.size() < 4)"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-validations": [{"rule": "'app' in self"}]},
                "dash-name": {"type": "string"},
                "obj": {"type": "object", "x-kubernetes-validations": [{"rule": "self.dash__dash__name == 'a'"}],
                        "properties": {"dash-name": {"type": "string"}}}
            }
        }));
        assert!(errs(&s, json!({"spec": {"mem": "512Mi", "url": "https://x.io", "when": "2024-01-01T00:00:00Z", "every": "30m",
            "tags": ["a", "bb"], "labels": {"app": "x"}, "obj": {"dash-name": "a"}}})).is_empty());
        let e = errs(
            &s,
            json!({"spec": {"mem": "2Gi", "when": "2019-01-01T00:00:00Z", "every": "2h", "tags": ["long!"], "labels": {"x": "y"}, "obj": {"dash-name": "b"}}}),
        );
        assert_eq!(e.len(), 6, "{e:?}");
    }
}
