//! The compiled form of an OpenAPI v3 schema: an arena of nodes built once per CRD version (or
//! built-in kind) so that validating, defaulting and pruning an object never re-reads JSON
//! schema text or recompiles a regex or CEL rule.
//!
//! Nodes live in one `Vec` and refer to each other by index, which also represents the recursive
//! `$ref`s of built-in schemas (e.g. `JSONSchemaProps`) without reference counting.

use serde_json::{Map, Value};

use super::cel::{self, CelRule};
use super::errors::{BadValue, FieldError, child, index, key};
use super::formats::Format;
use super::pattern;

/// Index of a node in [`Structural::nodes`].
pub(crate) type NodeId = u32;

/// The `type` of a schema node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// No `type` (allowed with `x-kubernetes-preserve-unknown-fields` or `-int-or-string`).
    Unset,
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    /// A type name kube does not know; kept so messages can quote it.
    Other,
}

impl Ty {
    fn parse(s: &str) -> Ty {
        match s {
            "" => Ty::Unset,
            "object" => Ty::Object,
            "array" => Ty::Array,
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            _ => Ty::Other,
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    Map,
}

/// `additionalProperties`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Additional {
    /// Not given: unknown properties are allowed by validation and removed by pruning.
    Absent,
    /// `true` or `false`.
    Bool(bool),
    /// A schema for every property not in `properties`.
    Schema(NodeId),
}

/// Value validations: the keywords that constrain a value without describing its structure.
#[derive(Debug, Default)]
pub(crate) struct Checks {
    pub enum_values: Option<Vec<Value>>,
    pub pattern: Option<(String, regex::Regex)>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub all_of: Vec<NodeId>,
    pub any_of: Vec<NodeId>,
    pub one_of: Vec<NodeId>,
    pub not: Option<NodeId>,
}

/// One schema node.
#[derive(Debug)]
pub(crate) struct Node {
    pub ty: Ty,
    /// The `type` string as written (for messages about unknown types).
    pub type_name: Box<str>,
    pub nullable: bool,
    /// The format kube validates, and the `format` string as written (messages quote it).
    pub format: Option<(Format, Box<str>)>,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub list_type: ListType,
    pub list_map_keys: Box<[Box<str>]>,
    pub map_atomic: bool,
    /// Sorted by name, looked up by binary search.
    pub properties: Box<[(Box<str>, NodeId)]>,
    pub additional: Additional,
    pub items: Option<NodeId>,
    pub required: Box<[Box<str>]>,
    pub default: Option<Value>,
    pub checks: Option<Box<Checks>>,
    pub rules: Box<[CelRule]>,
    /// This node or a node below it has CEL rules.
    pub rules_below: bool,
    /// This node or a node below it is a list-type set or map.
    pub lists_below: bool,
    /// A node below this one is an embedded resource.
    pub embedded_below: bool,
    /// During compilation only: this node is a `$ref` to another node.
    pub alias_of: Option<NodeId>,
}

impl Node {
    fn empty() -> Node {
        Node {
            ty: Ty::Unset,
            type_name: "".into(),
            nullable: false,
            format: None,
            int_or_string: false,
            preserve_unknown: false,
            embedded: false,
            list_type: ListType::Atomic,
            list_map_keys: Box::new([]),
            map_atomic: false,
            properties: Box::new([]),
            additional: Additional::Absent,
            items: None,
            required: Box::new([]),
            default: None,
            checks: None,
            rules: Box::new([]),
            rules_below: false,
            lists_below: false,
            embedded_below: false,
            alias_of: None,
        }
    }

    /// The schema of property `name`.
    pub(crate) fn property(&self, name: &str) -> Option<NodeId> {
        self.properties
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
            .map(|i| self.properties[i].1)
    }

    /// The schema of the value at key `name` of an object: the property, else
    /// `additionalProperties` when it is a schema.
    pub(crate) fn field(&self, name: &str) -> Option<NodeId> {
        self.property(name).or(match self.additional {
            Additional::Schema(id) => Some(id),
            _ => None,
        })
    }

    /// Type names for messages: `integer,string` for int-or-string, as kube-openapi joins them.
    pub(crate) fn type_list(&self) -> &str {
        if self.int_or_string {
            "integer,string"
        } else {
            &self.type_name
        }
    }
}

/// A compiled structural schema: validates, defaults and prunes JSON objects.
///
/// Build it once per CRD version with [`Structural::compile_crd_schema`] (which also reports a
/// non-structural schema the way kube-apiserver rejects the CRD), or [`Structural::compile`] for
/// a schema already known to be valid; then call [`Structural::default`],
/// [`Structural::prune`] and [`Structural::validate`] per request. It is `Send + Sync`: share it
/// behind an `Arc`.
#[derive(Debug)]
pub struct Structural {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: NodeId,
    /// Built-in kinds: Go's typed decoding accepts `null` everywhere and drops it.
    pub(crate) builtin: bool,
}

/// A schema that cannot be compiled; the errors say where and why, in kube-apiserver's words.
#[derive(Debug, thiserror::Error)]
#[error("invalid schema: {}", super::errors::aggregate(.errors))]
pub struct SchemaError {
    /// Every problem found, with schema paths like `properties[spec].type`.
    pub errors: Vec<FieldError>,
}

pub(crate) struct Compiler<'a> {
    nodes: Vec<Node>,
    definitions: Option<&'a Map<String, Value>>,
    refs: std::collections::HashMap<String, NodeId>,
    errors: Vec<FieldError>,
    /// Whether `x-kubernetes-validations` are compiled (rules under value validations are not).
    depth: usize,
}

const MAX_DEPTH: usize = 200;

impl Structural {
    /// Compiles an `openAPIV3Schema` that is already known to be valid (a stored CRD).
    ///
    /// Unknown keywords are ignored; malformed ones (a `properties` that is not an object, an
    /// invalid `pattern` or CEL rule) are errors. Use [`Structural::compile_crd_schema`] for a
    /// schema a user submits.
    pub fn compile(schema: &Value) -> Result<Structural, SchemaError> {
        Self::compile_with(schema, None, false)
    }

    pub(crate) fn compile_with(
        schema: &Value,
        definitions: Option<&Map<String, Value>>,
        builtin: bool,
    ) -> Result<Structural, SchemaError> {
        let mut c = Compiler {
            nodes: Vec::new(),
            definitions,
            refs: Default::default(),
            errors: Vec::new(),
            depth: 0,
        };
        let root = c.node(schema, "", true);
        c.resolve_aliases();
        if !c.errors.is_empty() {
            return Err(SchemaError { errors: c.errors });
        }
        let mut s = Structural {
            nodes: c.nodes,
            root,
            builtin,
        };
        s.compute_flags();
        Ok(s)
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// Propagates "something below" flags up the graph; iterates to a fixed point because
    /// built-in schemas are recursive.
    fn compute_flags(&mut self) {
        for n in &mut self.nodes {
            n.rules_below = !n.rules.is_empty();
            n.lists_below = matches!(n.list_type, ListType::Set | ListType::Map);
        }
        loop {
            let mut changed = false;
            for i in 0..self.nodes.len() {
                let n = &self.nodes[i];
                let mut children: Vec<NodeId> = n.properties.iter().map(|(_, id)| *id).collect();
                children.extend(n.items);
                if let Additional::Schema(id) = n.additional {
                    children.push(id);
                }
                let (mut rules, mut lists, mut embedded) =
                    (n.rules_below, n.lists_below, n.embedded_below);
                for c in children {
                    let c = &self.nodes[c as usize];
                    rules |= c.rules_below;
                    lists |= c.lists_below;
                    embedded |= c.embedded || c.embedded_below;
                }
                let n = &mut self.nodes[i];
                if (rules, lists, embedded) != (n.rules_below, n.lists_below, n.embedded_below) {
                    n.rules_below = rules;
                    n.lists_below = lists;
                    n.embedded_below = embedded;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}

fn get_bool(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

/// An integer keyword (`maxLength: 5`, also `5.0`).
fn get_int(
    m: &Map<String, Value>,
    k: &str,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<i64> {
    let v = m.get(k)?;
    match v
        .as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
    {
        Some(n) => Some(n),
        None if v.is_null() => None,
        None => {
            errors.push(FieldError::invalid(
                &child(path, k),
                BadValue::Json(v.clone()),
                "must be an integer",
            ));
            None
        }
    }
}

fn get_num(
    m: &Map<String, Value>,
    k: &str,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<f64> {
    let v = m.get(k)?;
    match v.as_f64() {
        Some(n) => Some(n),
        None if v.is_null() => None,
        None => {
            errors.push(FieldError::invalid(
                &child(path, k),
                BadValue::Json(v.clone()),
                "must be a number",
            ));
            None
        }
    }
}

impl Compiler<'_> {
    fn push(&mut self, n: Node) -> NodeId {
        self.nodes.push(n);
        (self.nodes.len() - 1) as NodeId
    }

    /// Compiles `schema` (found at schema path `path`) into a new node and returns its id.
    /// `rules` is false inside value validations, where CEL rules are not evaluated.
    pub(crate) fn node(&mut self, schema: &Value, path: &str, rules: bool) -> NodeId {
        let id = self.push(Node::empty());
        self.fill(id, schema, path, rules);
        id
    }

    fn resolve_ref(&mut self, r: &str, path: &str) -> Option<NodeId> {
        let name = r
            .strip_prefix("#/components/schemas/")
            .or_else(|| r.strip_prefix("#/definitions/"))
            .or_else(|| r.strip_prefix("#/$defs/"))
            .unwrap_or(r);
        if let Some(id) = self.refs.get(name) {
            return Some(*id);
        }
        let Some(def) = self.definitions.and_then(|d| d.get(name)) else {
            self.errors.push(FieldError::invalid(
                &child(path, "$ref"),
                BadValue::str(r),
                "reference to an unknown schema",
            ));
            return None;
        };
        let id = self.push(Node::empty());
        self.refs.insert(name.to_string(), id);
        self.fill(id, def, name, true);
        Some(id)
    }

    fn fill(&mut self, id: NodeId, schema: &Value, path: &str, rules: bool) {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.errors.push(FieldError::forbidden(
                path,
                format!("schema is nested deeper than {MAX_DEPTH} levels"),
            ));
            self.depth -= 1;
            return;
        }
        let Some(m) = schema.as_object() else {
            if !matches!(schema, Value::Bool(true)) {
                self.errors.push(FieldError::invalid(
                    path,
                    BadValue::Json(schema.clone()),
                    "must be a schema object",
                ));
            }
            self.depth -= 1;
            return;
        };
        // A `$ref` with siblings: k8s-openapi wraps refs in `allOf` or adds a description only,
        // so the referenced schema is taken as the node and siblings that describe are ignored.
        if let Some(r) = m.get("$ref").and_then(Value::as_str)
            && let Some(target) = self.resolve_ref(r, path)
        {
            self.alias(id, target, m, path, rules);
            self.depth -= 1;
            return;
        }
        // k8s-openapi and kube publish `allOf: [{$ref}]` to attach a description to a reference.
        if let Some(all) = m.get("allOf").and_then(Value::as_array)
            && all.len() == 1
            && m.get("type").is_none()
            && m.get("properties").is_none()
            && let Some(r) = all[0].get("$ref").and_then(Value::as_str)
            && let Some(target) = self.resolve_ref(r, path)
        {
            self.alias(id, target, m, path, rules);
            self.depth -= 1;
            return;
        }
        let mut n = Node::empty();
        let type_name = m.get("type").and_then(Value::as_str).unwrap_or("");
        n.ty = Ty::parse(type_name);
        n.type_name = type_name.into();
        n.nullable = get_bool(m, "nullable");
        n.int_or_string = get_bool(m, "x-kubernetes-int-or-string");
        n.preserve_unknown = get_bool(m, "x-kubernetes-preserve-unknown-fields");
        n.embedded = get_bool(m, "x-kubernetes-embedded-resource");
        n.map_atomic = m.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        if let Some(f) = m.get("format").and_then(Value::as_str)
            && let Some(format) = Format::parse(f)
        {
            n.format = Some((format, f.into()));
        }
        n.list_type = match m.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map,
            _ => ListType::Atomic,
        };
        if let Some(keys) = m
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
        {
            n.list_map_keys = keys
                .iter()
                .filter_map(Value::as_str)
                .map(Into::into)
                .collect();
        }
        if let Some(req) = m.get("required").and_then(Value::as_array) {
            n.required = req
                .iter()
                .filter_map(Value::as_str)
                .map(Into::into)
                .collect();
        }
        n.default = m.get("default").cloned();
        n.checks = self.checks(m, path);
        if rules && let Some(raw) = m.get("x-kubernetes-validations") {
            n.rules = cel::compile_rules(
                raw,
                &child(path, "x-kubernetes-validations"),
                &mut self.errors,
            )
            .into();
        }
        self.nodes[id as usize] = n;

        // Children after the node is in place: ids are allocated as we go.
        if let Some(props) = m.get("properties") {
            match props.as_object() {
                Some(props) => {
                    let mut out: Vec<(Box<str>, NodeId)> = Vec::with_capacity(props.len());
                    for (k, v) in props {
                        let cid = self.node(v, &key(&child(path, "properties"), k), rules);
                        out.push((k.as_str().into(), cid));
                    }
                    out.sort_by(|a, b| a.0.cmp(&b.0));
                    self.nodes[id as usize].properties = out.into();
                }
                None => self.errors.push(FieldError::invalid(
                    &child(path, "properties"),
                    BadValue::Json(props.clone()),
                    "must be an object",
                )),
            }
        }
        if let Some(items) = m.get("items") {
            if items.is_array() {
                self.errors.push(FieldError::forbidden(
                    &child(path, "items"),
                    "items must be a schema object and not an array",
                ));
            } else {
                let cid = self.node(items, &child(path, "items"), rules);
                self.nodes[id as usize].items = Some(cid);
            }
        }
        match m.get("additionalProperties") {
            Some(Value::Bool(b)) => self.nodes[id as usize].additional = Additional::Bool(*b),
            Some(v @ Value::Object(_)) => {
                let cid = self.node(v, &child(path, "additionalProperties"), rules);
                self.nodes[id as usize].additional = Additional::Schema(cid);
            }
            _ => {}
        }
        self.depth -= 1;
    }

    /// Makes node `id` stand for node `target` (a resolved `$ref`); the content is copied in
    /// [`Compiler::resolve_aliases`] once every node is complete. `nullable`, `default` and rules
    /// written next to the reference stay with this node.
    fn alias(
        &mut self,
        id: NodeId,
        target: NodeId,
        m: &Map<String, Value>,
        path: &str,
        rules: bool,
    ) {
        let mut n = Node::empty();
        n.alias_of = Some(target);
        n.nullable = get_bool(m, "nullable");
        n.default = m.get("default").cloned();
        if rules && let Some(raw) = m.get("x-kubernetes-validations") {
            n.rules = cel::compile_rules(
                raw,
                &child(path, "x-kubernetes-validations"),
                &mut self.errors,
            )
            .into();
        }
        self.nodes[id as usize] = n;
    }

    /// Copies the content of every reference target into the referring node. Targets are
    /// complete now, and copying ids (not subtrees) keeps recursive schemas finite.
    fn resolve_aliases(&mut self) {
        for i in 0..self.nodes.len() {
            let Some(mut target) = self.nodes[i].alias_of else {
                continue;
            };
            let mut hops = 0;
            while let Some(next) = self.nodes[target as usize].alias_of {
                target = next;
                hops += 1;
                if hops > self.nodes.len() {
                    break;
                }
            }
            let t = &self.nodes[target as usize];
            let copy = Node {
                ty: t.ty,
                type_name: t.type_name.clone(),
                nullable: t.nullable || self.nodes[i].nullable,
                format: t.format.clone(),
                int_or_string: t.int_or_string,
                preserve_unknown: t.preserve_unknown,
                embedded: t.embedded,
                list_type: t.list_type,
                list_map_keys: t.list_map_keys.clone(),
                map_atomic: t.map_atomic,
                properties: t.properties.clone(),
                additional: t.additional,
                items: t.items,
                required: t.required.clone(),
                default: self.nodes[i].default.clone().or_else(|| t.default.clone()),
                checks: t.checks.as_ref().map(|c| Box::new(clone_checks(c))),
                rules: std::mem::take(&mut self.nodes[i].rules),
                rules_below: false,
                lists_below: false,
                embedded_below: false,
                alias_of: None,
            };
            self.nodes[i] = copy;
        }
    }

    fn checks(&mut self, m: &Map<String, Value>, path: &str) -> Option<Box<Checks>> {
        let mut c = Checks::default();
        let mut any = false;
        let errors = &mut self.errors;
        if let Some(e) = m.get("enum").and_then(Value::as_array) {
            c.enum_values = Some(e.clone());
            any = true;
        }
        if let Some(p) = m.get("pattern").and_then(Value::as_str) {
            match pattern::compile(p) {
                Ok(re) => c.pattern = Some((p.to_string(), re)),
                Err(e) => errors.push(FieldError::invalid(
                    &child(path, "pattern"),
                    BadValue::str(p),
                    format!("must be a valid regular expression, but isn't: {e}"),
                )),
            }
            any = true;
        }
        c.max_length = get_int(m, "maxLength", path, errors);
        c.min_length = get_int(m, "minLength", path, errors);
        c.maximum = get_num(m, "maximum", path, errors);
        c.minimum = get_num(m, "minimum", path, errors);
        c.exclusive_maximum = get_bool(m, "exclusiveMaximum");
        c.exclusive_minimum = get_bool(m, "exclusiveMinimum");
        c.multiple_of = get_num(m, "multipleOf", path, errors);
        c.max_items = get_int(m, "maxItems", path, errors);
        c.min_items = get_int(m, "minItems", path, errors);
        c.unique_items = get_bool(m, "uniqueItems");
        c.max_properties = get_int(m, "maxProperties", path, errors);
        c.min_properties = get_int(m, "minProperties", path, errors);
        any |= c.max_length.is_some()
            || c.min_length.is_some()
            || c.maximum.is_some()
            || c.minimum.is_some()
            || c.multiple_of.is_some()
            || c.max_items.is_some()
            || c.min_items.is_some()
            || c.unique_items
            || c.max_properties.is_some()
            || c.min_properties.is_some();
        for (kw, out) in [("allOf", 0), ("anyOf", 1), ("oneOf", 2)] {
            if let Some(list) = m.get(kw).and_then(Value::as_array) {
                let ids: Vec<NodeId> = list
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.node(s, &index(&child(path, kw), i), false))
                    .collect();
                match out {
                    0 => c.all_of = ids,
                    1 => c.any_of = ids,
                    _ => c.one_of = ids,
                }
                any = true;
            }
        }
        if let Some(not) = m.get("not") {
            c.not = Some(self.node(not, &child(path, "not"), false));
            any = true;
        }
        any.then(|| Box::new(c))
    }
}

fn clone_checks(c: &Checks) -> Checks {
    Checks {
        enum_values: c.enum_values.clone(),
        pattern: c.pattern.clone(),
        max_length: c.max_length,
        min_length: c.min_length,
        maximum: c.maximum,
        exclusive_maximum: c.exclusive_maximum,
        minimum: c.minimum,
        exclusive_minimum: c.exclusive_minimum,
        multiple_of: c.multiple_of,
        max_items: c.max_items,
        min_items: c.min_items,
        unique_items: c.unique_items,
        max_properties: c.max_properties,
        min_properties: c.min_properties,
        all_of: c.all_of.clone(),
        any_of: c.any_of.clone(),
        one_of: c.one_of.clone(),
        not: c.not,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_nested_schema() {
        let s = Structural::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                                  "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "when": {"type": "string", "format": "date-time"}
                    }
                }
            }
        }))
        .unwrap();
        let root = s.node(s.root);
        assert_eq!(root.ty, Ty::Object);
        let spec = s.node(root.property("spec").unwrap());
        assert_eq!(&*spec.required[0], "name");
        let name = s.node(spec.property("name").unwrap());
        assert!(name.checks.as_ref().unwrap().pattern.is_some());
        let items = s.node(spec.property("items").unwrap());
        assert_eq!(items.list_type, ListType::Map);
        assert!(spec.lists_below && root.lists_below);
        let labels = s.node(spec.property("labels").unwrap());
        assert!(matches!(labels.additional, Additional::Schema(_)));
        assert!(s.node(spec.property("when").unwrap()).format.is_some());
    }

    #[test]
    fn malformed_schema_is_reported_with_paths() {
        let e = Structural::compile(&json!({
            "type": "object",
            "properties": {"spec": {"type": "string", "pattern": "(", "maxLength": "x"}}
        }))
        .unwrap_err();
        let msgs: Vec<String> = e.errors.iter().map(ToString::to_string).collect();
        assert!(msgs.iter().any(|m| m.starts_with("properties[spec].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp:")), "{msgs:?}");
        assert!(
            msgs.contains(
                &"properties[spec].maxLength: Invalid value: \"x\": must be an integer".to_string()
            ),
            "{msgs:?}"
        );
    }

    #[test]
    fn resolves_recursive_refs() {
        let defs = json!({
            "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}, "name": {"type": "string"}}}
        });
        let s = Structural::compile_with(
            &json!({"$ref": "#/components/schemas/Tree"}),
            defs.as_object(),
            true,
        )
        .unwrap();
        assert_eq!(s.node(s.root).ty, Ty::Object);
    }
}
