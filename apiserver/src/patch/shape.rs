//! The type description patching needs: which values are maps, lists and scalars, the list and map
//! semantics of server-side apply, and the strategic-merge-patch strategies of built-in fields.
//!
//! A [`TypeShape`] is built once per resource version from an OpenAPI schema (resolving `$ref`s,
//! recursion included) and then shared. It reads `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`, and fills in what k8s-openapi's
//! schemas lack from the built-in table ([`super::builtin`]). Like structured-merge-diff, lists without
//! a list type are atomic and maps are granular unless marked atomic. The top-level `metadata` of every
//! shape is always `ObjectMeta` (finalizers a set, ownerReferences keyed by uid, labels/annotations
//! granular maps), whatever the schema says about it, because kube-apiserver does the same for custom
//! resources.

use std::collections::HashMap;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::builtin;

/// Index of a node in a [`TypeShape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeId(u32);

const SCALAR: NodeId = NodeId(0);
const UNTYPED: NodeId = NodeId(1);

/// How server-side apply treats a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Replaced as a whole (the default).
    Atomic,
    /// A set of scalars, items identified by value.
    Set,
    /// Items are maps identified by these key fields.
    Map(Vec<String>),
}

/// The strategic-merge-patch behaviour of one field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Smp {
    /// `patchStrategy: merge` (lists merge instead of being replaced).
    pub merge: bool,
    /// `patchStrategy: replace` (maps are replaced instead of merged).
    pub replace: bool,
    /// `patchMergeKey`.
    pub merge_key: Option<String>,
}

/// A field of a map type.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub node: NodeId,
    pub smp: Smp,
    /// The schema default, used when a list-map item omits a key field.
    pub default: Option<Value>,
}

/// The order of [`MapNode::fields`]: by length first, so most lookups decide without comparing bytes.
fn field_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// A map (struct or string-keyed map) type.
#[derive(Debug, Clone, Default)]
pub(crate) struct MapNode {
    /// Declared fields, sorted by [`field_order`].
    pub fields: Vec<(String, Field)>,
    /// The type of undeclared keys (`additionalProperties`), if any.
    pub elem: Option<NodeId>,
    /// `x-kubernetes-map-type: atomic`.
    pub atomic: bool,
    /// Undeclared keys are accepted as untyped values (`x-kubernetes-preserve-unknown-fields`, or an
    /// object schema that declares nothing).
    pub open: bool,
}

impl MapNode {
    /// The declared field `name`.
    pub(crate) fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .binary_search_by(|(n, _)| field_order(n, name))
            .ok()
            .map(|i| &self.fields[i].1)
    }

    /// The type of the value under `key` and whether `key` is a declared field. `None` when the key is
    /// not allowed by the schema.
    pub(crate) fn child(&self, key: &str) -> Option<(NodeId, bool)> {
        if let Some(f) = self.field(key) {
            return Some((f.node, true));
        }
        if let Some(elem) = self.elem {
            return Some((elem, false));
        }
        self.open.then_some((UNTYPED, false))
    }
}

/// A list type.
#[derive(Debug, Clone)]
pub(crate) struct ListNode {
    pub elem: NodeId,
    pub kind: ListKind,
}

/// One node of the type graph.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// A scalar (string, number, boolean, int-or-string).
    Scalar,
    /// Anything: maps are granular with untyped values, lists atomic (structured-merge-diff's
    /// "deduced" type).
    Untyped,
    Map(MapNode),
    List(ListNode),
}

/// The shape of one resource version: the type graph patching and server-side apply walk.
#[derive(Debug, Clone)]
pub struct TypeShape {
    nodes: Vec<Node>,
    root: NodeId,
    strategic: bool,
}

impl TypeShape {
    /// A shape that knows nothing: maps are granular, lists atomic. Strategic merge patch is refused.
    pub fn untyped() -> TypeShape {
        let mut b = Builder::new();
        let root = b.with_object_meta(UNTYPED);
        TypeShape {
            nodes: b.nodes,
            root,
            strategic: false,
        }
    }

    /// The shape of a built-in type from its k8s-openapi schema, with the Kubernetes extensions of the
    /// built-in table. Strategic merge patch is supported.
    pub fn of<K: JsonSchema>() -> TypeShape {
        let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
        let root = generator.subschema_for::<K>();
        let definitions = generator.take_definitions(true);
        TypeShape::from_openapi(root.as_value(), &definitions)
    }

    /// The shape of a type described by an OpenAPI schema whose `$ref`s point into `definitions`
    /// (`#/definitions/<name>`, `#/components/schemas/<name>` or `#/$defs/<name>`). Definitions named
    /// like Kubernetes' (`io.k8s.api.core.v1.PodSpec`) get the built-in table's extensions; pass the
    /// root as `{"$ref": ...}` to have them applied to the root type's own fields. Strategic merge patch
    /// is supported (this is how built-in types are described).
    pub fn from_openapi(schema: &Value, definitions: &Map<String, Value>) -> TypeShape {
        let mut b = Builder::new();
        let root = b.build(schema, definitions, &Ext::default());
        let root = b.with_object_meta(root);
        TypeShape {
            nodes: b.nodes,
            root,
            strategic: true,
        }
    }

    /// The shape of a custom resource version from its CRD `schema.openAPIV3Schema`. Strategic merge
    /// patch is refused, as kube-apiserver refuses it for custom resources.
    pub fn from_crd_schema(open_api_v3_schema: &Value) -> TypeShape {
        let mut b = Builder::new();
        let root = b.build(open_api_v3_schema, &Map::new(), &Ext::default());
        let root = b.with_object_meta(root);
        TypeShape {
            nodes: b.nodes,
            root,
            strategic: false,
        }
    }

    /// Turns strategic merge patch support on or off (e.g. for a built-in served from a plain schema).
    pub fn with_strategic_merge(mut self, supported: bool) -> TypeShape {
        self.strategic = supported;
        self
    }

    /// Whether strategic merge patch is accepted for this type.
    pub fn supports_strategic_merge(&self) -> bool {
        self.strategic
    }

    pub(crate) fn root(&self) -> NodeId {
        self.root
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    pub(crate) fn untyped_id() -> NodeId {
        UNTYPED
    }
}

/// Extensions that apply to one schema node, merged from the schema and the built-in table.
#[derive(Debug, Clone, Default)]
struct Ext {
    list_type: Option<String>,
    list_keys: Vec<String>,
    map_atomic: Option<bool>,
    patch: Option<String>,
    merge_key: Option<String>,
    default: Option<Value>,
}

impl Ext {
    fn from_schema(s: &Value) -> Ext {
        let str_of = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
        Ext {
            list_type: str_of("x-kubernetes-list-type"),
            list_keys: s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            map_atomic: str_of("x-kubernetes-map-type").map(|t| t == "atomic"),
            patch: str_of("x-kubernetes-patch-strategy"),
            merge_key: str_of("x-kubernetes-patch-merge-key"),
            default: s.get("default").cloned(),
        }
    }

    fn from_table(spec: &str) -> Ext {
        let mut e = Ext::default();
        for part in spec.split(';') {
            let Some((k, v)) = part.split_once('=') else {
                continue;
            };
            match k {
                "list" => match v.split_once(':') {
                    Some(("map", keys)) => {
                        e.list_type = Some("map".into());
                        e.list_keys = keys.split(',').map(str::to_string).collect();
                    }
                    _ => e.list_type = Some(v.to_string()),
                },
                "map" => e.map_atomic = Some(v == "atomic"),
                "patch" => e.patch = Some(v.to_string()),
                "key" => e.merge_key = Some(v.to_string()),
                "default" => e.default = Some(Value::String(v.to_string())),
                _ => {}
            }
        }
        e
    }

    /// `self` with the fields `other` sets taken from `other`.
    fn overlay(mut self, other: Ext) -> Ext {
        if other.list_type.is_some() {
            self.list_type = other.list_type;
            self.list_keys = other.list_keys;
        }
        self.map_atomic = other.map_atomic.or(self.map_atomic);
        self.patch = other.patch.or(self.patch);
        self.merge_key = other.merge_key.or(self.merge_key);
        self.default = other.default.or(self.default);
        self
    }

    fn list_kind(&self) -> ListKind {
        match self.list_type.as_deref() {
            Some("set") => ListKind::Set,
            Some("map") if !self.list_keys.is_empty() => ListKind::Map(self.list_keys.clone()),
            Some(_) => ListKind::Atomic,
            // Without a list type, structured-merge-diff derives associativity from the patch strategy.
            None => match (&self.patch, &self.merge_key) {
                (Some(p), Some(k)) if p.split(',').any(|s| s == "merge") => {
                    ListKind::Map(vec![k.clone()])
                }
                (Some(p), None) if p.split(',').any(|s| s == "merge") => ListKind::Set,
                _ => ListKind::Atomic,
            },
        }
    }

    fn smp(&self) -> Smp {
        let strategies: Vec<&str> = self
            .patch
            .as_deref()
            .map(|p| p.split(',').collect())
            .unwrap_or_default();
        Smp {
            merge: strategies.contains(&"merge"),
            replace: strategies.contains(&"replace"),
            merge_key: self.merge_key.clone(),
        }
    }
}

struct Builder {
    nodes: Vec<Node>,
    memo: HashMap<String, NodeId>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            nodes: vec![Node::Scalar, Node::Untyped],
            memo: HashMap::new(),
        }
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId((self.nodes.len() - 1) as u32)
    }

    /// Builds the node for `schema`, with `outer` extensions from the referencing property.
    fn build(&mut self, schema: &Value, defs: &Map<String, Value>, outer: &Ext) -> NodeId {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let id = self.build_definition(reference, defs);
            return self.with_outer(id, outer);
        }
        // `allOf: [{$ref}]` is how OpenAPI v3 attaches a description or default to a reference.
        if let Some([single]) = schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            && schema.get("type").is_none()
            && schema.get("properties").is_none()
        {
            let ext = Ext::from_schema(schema).overlay(outer.clone());
            return self.build(single, defs, &ext);
        }
        let ext = Ext::from_schema(schema).overlay(outer.clone());
        self.build_inline(schema, defs, &ext, None)
    }

    fn build_definition(&mut self, reference: &str, defs: &Map<String, Value>) -> NodeId {
        let name = reference
            .rsplit('/')
            .next()
            .unwrap_or(reference)
            .replace("~1", "/")
            .replace("~0", "~");
        if let Some(id) = self.memo.get(&name) {
            return *id;
        }
        let Some(def) = defs.get(&name) else {
            return UNTYPED;
        };
        // Reserve the id first so recursive types (JSONSchemaProps) terminate.
        let id = self.push(Node::Untyped);
        self.memo.insert(name.clone(), id);
        let ext = Ext::from_schema(def).overlay(
            builtin::lookup(&name, ".")
                .map(Ext::from_table)
                .unwrap_or_default(),
        );
        let built = self.build_inline(def, defs, &ext, Some(&name));
        self.nodes[id.0 as usize] = self.nodes[built.0 as usize].clone();
        id
    }

    /// Applies a referencing property's extensions to a shared definition node by copying it.
    fn with_outer(&mut self, id: NodeId, outer: &Ext) -> NodeId {
        match (self.nodes[id.0 as usize].clone(), outer.map_atomic) {
            (Node::Map(mut m), Some(atomic)) if m.atomic != atomic => {
                m.atomic = atomic;
                self.push(Node::Map(m))
            }
            (Node::List(mut l), _) if outer.list_type.is_some() || outer.patch.is_some() => {
                l.kind = outer.list_kind();
                self.push(Node::List(l))
            }
            _ => id,
        }
    }

    fn build_inline(
        &mut self,
        s: &Value,
        defs: &Map<String, Value>,
        ext: &Ext,
        def_name: Option<&str>,
    ) -> NodeId {
        if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
            return SCALAR;
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or(""),
            _ => "",
        };
        let is_map = ty == "object"
            || (ty.is_empty()
                && (s.get("properties").is_some() || s.get("additionalProperties").is_some()));
        let is_list = ty == "array" || (ty.is_empty() && s.get("items").is_some());
        if is_map {
            self.build_map(s, defs, ext, def_name)
        } else if is_list {
            let elem = match s.get("items") {
                Some(items) => self.build(items, defs, &Ext::default()),
                None => UNTYPED,
            };
            self.push(Node::List(ListNode {
                elem,
                kind: ext.list_kind(),
            }))
        } else if matches!(ty, "string" | "integer" | "number" | "boolean") {
            SCALAR
        } else {
            UNTYPED
        }
    }

    fn build_map(
        &mut self,
        s: &Value,
        defs: &Map<String, Value>,
        ext: &Ext,
        def_name: Option<&str>,
    ) -> NodeId {
        let preserve = s
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
        let properties = s.get("properties").and_then(Value::as_object);
        let mut fields = Vec::new();
        for (name, prop) in properties.into_iter().flatten() {
            let table = def_name
                .and_then(|d| builtin::lookup(d, name))
                .map(Ext::from_table)
                .unwrap_or_default();
            let prop_ext = Ext::from_schema(prop).overlay(table);
            let node = self.build(prop, defs, &prop_ext);
            fields.push((
                name.clone(),
                Field {
                    node,
                    smp: prop_ext.smp(),
                    default: prop_ext.default.clone(),
                },
            ));
        }
        fields.sort_by(|a, b| field_order(&a.0, &b.0));
        let elem = match s.get("additionalProperties") {
            Some(Value::Bool(true)) => Some(UNTYPED),
            Some(ap @ Value::Object(_)) => Some(self.build(ap, defs, &Ext::default())),
            _ => None,
        };
        // An object schema that declares nothing is taken as open, so values the schema cannot
        // describe (runtime.RawExtension, untyped JSON) are kept rather than refused.
        let open = preserve || (fields.is_empty() && elem.is_none());
        self.push(Node::Map(MapNode {
            fields,
            elem,
            atomic: ext.map_atomic == Some(true),
            open,
        }))
    }

    /// Makes the root an object with `apiVersion`, `kind` and `ObjectMeta` `metadata`, as
    /// kube-apiserver's schema for custom resources has them whether the CRD declares them or not.
    fn with_object_meta(&mut self, root: NodeId) -> NodeId {
        let (schema, defs) = object_meta_schema();
        let meta = self.build(schema, defs, &Ext::default());
        let plain = |node| Field {
            node,
            smp: Smp::default(),
            default: None,
        };
        let mut m = match self.nodes[root.0 as usize].clone() {
            Node::Map(m) => m,
            // An untyped root still gets typed metadata: the rest stays open.
            _ => MapNode {
                fields: Vec::new(),
                elem: None,
                atomic: false,
                open: true,
            },
        };
        for (name, field, replace) in [
            ("metadata", plain(meta), true),
            ("apiVersion", plain(SCALAR), false),
            ("kind", plain(SCALAR), false),
        ] {
            match m.fields.binary_search_by(|(n, _)| field_order(n, name)) {
                Ok(i) if replace => m.fields[i].1 = field,
                Ok(_) => {}
                Err(i) => m.fields.insert(i, (name.to_string(), field)),
            }
        }
        self.push(Node::Map(m))
    }
}

/// `ObjectMeta`'s schema and definitions, generated once from k8s-openapi.
fn object_meta_schema() -> &'static (Value, Map<String, Value>) {
    static SCHEMA: OnceLock<(Value, Map<String, Value>)> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
        let root =
            generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>();
        (root.to_value(), generator.take_definitions(true))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    fn map(shape: &TypeShape, id: NodeId) -> &MapNode {
        match shape.node(id) {
            Node::Map(m) => m,
            other => panic!("expected a map, got {other:?}"),
        }
    }

    fn list(shape: &TypeShape, id: NodeId) -> &ListNode {
        match shape.node(id) {
            Node::List(l) => l,
            other => panic!("expected a list, got {other:?}"),
        }
    }

    fn at<'a>(shape: &'a TypeShape, path: &[&str]) -> (&'a Field, NodeId) {
        let mut id = shape.root();
        let mut last = None;
        for p in path {
            let node = match shape.node(id) {
                Node::List(l) => l.elem,
                _ => id,
            };
            let f = map(shape, node)
                .field(p)
                .unwrap_or_else(|| panic!("no field {p}"));
            id = f.node;
            last = Some(f);
        }
        (last.expect("non-empty path"), id)
    }

    #[test]
    fn deployment_shape_has_kubernetes_list_semantics() {
        let shape = TypeShape::of::<Deployment>();
        assert!(shape.supports_strategic_merge());
        let (f, id) = at(&shape, &["spec", "template", "spec", "containers"]);
        assert_eq!(list(&shape, id).kind, ListKind::Map(vec!["name".into()]));
        assert_eq!(
            f.smp,
            Smp {
                merge: true,
                replace: false,
                merge_key: Some("name".into())
            }
        );
        let (_, id) = at(&shape, &["spec", "template", "spec", "containers", "ports"]);
        assert_eq!(
            list(&shape, id).kind,
            ListKind::Map(vec!["containerPort".into(), "protocol".into()])
        );
        let (f, _) = at(
            &shape,
            &[
                "spec",
                "template",
                "spec",
                "containers",
                "ports",
                "protocol",
            ],
        );
        assert_eq!(f.default, Some(json!("TCP")));
        let (_, id) = at(&shape, &["spec", "template", "spec", "tolerations"]);
        assert_eq!(list(&shape, id).kind, ListKind::Atomic);
        let (_, id) = at(&shape, &["spec", "selector"]);
        assert!(map(&shape, id).atomic, "LabelSelector is an atomic struct");
        let (_, id) = at(&shape, &["status", "conditions"]);
        assert_eq!(list(&shape, id).kind, ListKind::Map(vec!["type".into()]));
        let (_, id) = at(&shape, &["metadata", "finalizers"]);
        assert_eq!(list(&shape, id).kind, ListKind::Set);
        let (_, id) = at(&shape, &["metadata", "ownerReferences"]);
        assert_eq!(list(&shape, id).kind, ListKind::Map(vec!["uid".into()]));
        let (_, id) = at(&shape, &["metadata", "labels"]);
        let labels = map(&shape, id);
        assert!(!labels.atomic && labels.elem.is_some());
    }

    #[test]
    fn root_level_table_entries_apply_to_built_in_kinds() {
        let shape = TypeShape::of::<k8s_openapi::api::core::v1::ServiceAccount>();
        let (f, id) = at(&shape, &["secrets"]);
        assert_eq!(list(&shape, id).kind, ListKind::Map(vec!["name".into()]));
        assert!(f.smp.merge);
    }

    #[test]
    fn recursive_definitions_terminate() {
        let shape = TypeShape::of::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>();
        assert!(!shape.nodes.is_empty());
        let (_, id) = at(&shape, &["status", "conditions"]);
        assert_eq!(list(&shape, id).kind, ListKind::Map(vec!["type".into()]));
    }

    #[test]
    fn crd_schema_extensions_are_read() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                                  "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "plain": {"type": "array", "items": {"type": "string"}},
                        "sel": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "port": {"x-kubernetes-int-or-string": true}
                    }
                },
                "metadata": {"type": "object"}
            }
        });
        let shape = TypeShape::from_crd_schema(&schema);
        assert!(!shape.supports_strategic_merge());
        assert_eq!(
            list(&shape, at(&shape, &["spec", "items"]).1).kind,
            ListKind::Map(vec!["id".into()])
        );
        assert_eq!(
            list(&shape, at(&shape, &["spec", "tags"]).1).kind,
            ListKind::Set
        );
        assert_eq!(
            list(&shape, at(&shape, &["spec", "plain"]).1).kind,
            ListKind::Atomic
        );
        assert!(map(&shape, at(&shape, &["spec", "sel"]).1).atomic);
        assert!(map(&shape, at(&shape, &["spec", "free"]).1).open);
        assert!(matches!(
            shape.node(at(&shape, &["spec", "port"]).1),
            Node::Scalar
        ));
        // metadata is ObjectMeta even though the CRD only says `type: object`.
        assert_eq!(
            list(&shape, at(&shape, &["metadata", "finalizers"]).1).kind,
            ListKind::Set
        );
    }
}
