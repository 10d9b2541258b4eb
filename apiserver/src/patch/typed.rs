//! Walks of JSON values guided by a [`TypeShape`]: the field set a value sets, the comparison of two
//! values, the server-side-apply merge of an applied configuration into a live object, and pruning.
//!
//! These are the `typed` operations of structured-merge-diff (`ToFieldSet`, `Compare`, `Merge`,
//! `RemoveItems`), written over `serde_json::Value` so no conversion to another value model is
//! needed. Each function documents the rule it reproduces.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::fieldpath::{FieldPath, FieldSet, PathElement, canonical};
use super::shape::{ListKind, ListNode, MapNode, Node, NodeId, TypeShape};

/// The path element of a list item of an associative (set or map-keyed) list.
pub(crate) fn item_path_element(
    shape: &TypeShape,
    list: &ListNode,
    item: &Value,
) -> Result<PathElement, String> {
    match &list.kind {
        ListKind::Map(keys) => {
            let m = match item {
                Value::Object(m) => m,
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into());
                }
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let elem = match shape.node(list.elem) {
                Node::Map(mn) => Some(mn),
                _ => None,
            };
            let mut fields = Vec::with_capacity(keys.len());
            for k in keys {
                match m.get(k) {
                    Some(v) => fields.push((k.clone(), canonical(v))),
                    None => match elem
                        .and_then(|mn| mn.field(k))
                        .and_then(|f| f.default.as_ref())
                    {
                        Some(d) => fields.push((k.clone(), canonical(d))),
                        None => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                            ));
                        }
                    },
                }
            }
            fields.sort();
            Ok(PathElement::Key(fields))
        }
        ListKind::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            v => Ok(PathElement::Value(canonical(v))),
        },
        ListKind::Atomic => Err("invalid indexing of non-associative list".into()),
    }
}

/// The path elements of all items of an associative list, or the first error.
fn item_path_elements(
    shape: &TypeShape,
    list: &ListNode,
    items: &[Value],
) -> Result<Vec<PathElement>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item_path_element(shape, list, item).map_err(|e| format!("element {i}: {e}"))
        })
        .collect()
}

fn is_empty_object(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Finds items by path element; linear for the short lists objects usually hold.
struct ItemIndex<'a> {
    pes: &'a [PathElement],
    map: Option<HashMap<&'a PathElement, usize>>,
}

impl<'a> ItemIndex<'a> {
    fn new(pes: &'a [PathElement]) -> Self {
        let map = (pes.len() > 16).then(|| {
            let mut m = HashMap::with_capacity(pes.len());
            for (i, pe) in pes.iter().enumerate() {
                m.entry(pe).or_insert(i);
            }
            m
        });
        ItemIndex { pes, map }
    }

    fn get(&self, pe: &PathElement) -> Option<usize> {
        match &self.map {
            Some(m) => m.get(pe).copied(),
            None => self.pes.iter().position(|p| p == pe),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Field sets
// ---------------------------------------------------------------------------------------------

enum Walked {
    /// The value is a leaf: its own path is the member.
    Leaf,
    /// The value has children; its path is a member only if the parent says so.
    Inner(FieldSet),
}

/// Computes the set of fields a value sets (structured-merge-diff's `ToFieldSet`).
///
/// Scalars, atomic lists and atomic maps are leaves; list items and undeclared map keys are members
/// and so are declared fields whose value is null or an empty map. With `strict`, values the shape
/// does not allow are errors (`.spec.foo: field not declared in schema`); otherwise they are taken as
/// untyped leaves, so stored objects never fail bookkeeping.
pub(crate) fn to_field_set<'a>(
    shape: &'a TypeShape,
    value: &'a Value,
    strict: bool,
) -> Result<FieldSet, Vec<String>> {
    let mut w = SetWalker {
        shape,
        strict,
        errors: Vec::new(),
        path: Vec::new(),
    };
    let set = match w.walk(shape.root(), value) {
        Walked::Leaf => FieldSet::new(),
        Walked::Inner(s) => s,
    };
    if w.errors.is_empty() {
        Ok(set)
    } else {
        Err(w.errors)
    }
}

struct SetWalker<'a> {
    shape: &'a TypeShape,
    strict: bool,
    errors: Vec<String>,
    /// Where the walk is, for error messages: field names borrowed, list items as path elements.
    path: Vec<Step<'a>>,
}

enum Step<'a> {
    Field(&'a str),
    Item(PathElement),
}

impl<'a> SetWalker<'a> {
    fn error(&mut self, msg: String) {
        let path = FieldPath(
            self.path
                .iter()
                .map(|s| match s {
                    Step::Field(f) => PathElement::Field(f.to_string()),
                    Step::Item(pe) => pe.clone(),
                })
                .collect(),
        )
        .to_string();
        self.errors.push(if path.is_empty() {
            msg
        } else {
            format!("{path}: {msg}")
        });
    }

    fn walk(&mut self, node: NodeId, v: &'a Value) -> Walked {
        match self.shape.node(node) {
            Node::Scalar => {
                if self.strict && matches!(v, Value::Object(_) | Value::Array(_)) {
                    self.error(format!("expected scalar, got {}", type_name(v)));
                }
                Walked::Leaf
            }
            Node::Untyped => match v {
                Value::Object(o) => self.walk_map(None, o),
                _ => Walked::Leaf,
            },
            Node::Map(m) => {
                if m.atomic {
                    return Walked::Leaf;
                }
                match v {
                    Value::Object(o) => self.walk_map(Some(m), o),
                    Value::Null => Walked::Inner(FieldSet::new()),
                    other => {
                        if self.strict {
                            self.error(format!("expected map, got {}", type_name(other)));
                        }
                        Walked::Leaf
                    }
                }
            }
            Node::List(l) => {
                if l.kind == ListKind::Atomic {
                    return Walked::Leaf;
                }
                match v {
                    Value::Array(items) => self.walk_list(l, items),
                    Value::Null => Walked::Inner(FieldSet::new()),
                    other => {
                        if self.strict {
                            self.error(format!("expected list, got {}", type_name(other)));
                        }
                        Walked::Leaf
                    }
                }
            }
        }
    }

    fn walk_map(&mut self, m: Option<&MapNode>, o: &'a Map<String, Value>) -> Walked {
        let mut members = Vec::new();
        let mut children = Vec::new();
        for (k, cv) in o {
            let (child, named) = match m {
                None => (TypeShape::untyped_id(), false),
                Some(m) => match m.child(k) {
                    Some(c) => c,
                    None => {
                        if self.strict {
                            self.path.push(Step::Field(k));
                            self.error("field not declared in schema".into());
                            self.path.pop();
                            continue;
                        }
                        (TypeShape::untyped_id(), false)
                    }
                },
            };
            let pe = PathElement::Field(k.clone());
            self.path.push(Step::Field(k));
            let walked = self.walk(child, cv);
            self.path.pop();
            match walked {
                Walked::Leaf => members.push(pe),
                Walked::Inner(s) => {
                    if !named || cv.is_null() || is_empty_object(cv) {
                        members.push(pe.clone());
                    }
                    children.push((pe, s));
                }
            }
        }
        Walked::Inner(FieldSet::from_parts(members, children))
    }

    fn walk_list(&mut self, l: &ListNode, items: &'a [Value]) -> Walked {
        let mut members = Vec::with_capacity(items.len());
        let mut children = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let pe = match item_path_element(self.shape, l, item) {
                Ok(pe) => pe,
                Err(e) => {
                    if self.strict {
                        self.error(format!("element {i}: {e}"));
                        continue;
                    }
                    // A stored list that cannot be keyed is owned as a whole.
                    return Walked::Leaf;
                }
            };
            if self.strict && members.contains(&pe) {
                self.error(format!("duplicate entries for key {pe}"));
                continue;
            }
            self.path.push(Step::Item(pe.clone()));
            let walked = self.walk(l.elem, item);
            self.path.pop();
            members.push(pe.clone());
            if let Walked::Inner(s) = walked {
                children.push((pe, s));
            }
        }
        Walked::Inner(FieldSet::from_parts(members, children))
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

/// The fields added, modified and removed between two values (structured-merge-diff's `Compare`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Whether nothing changed.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Drops changes below the given top-level fields.
    pub(crate) fn without(&self, drop: &[PathElement]) -> Comparison {
        Comparison {
            added: self.added.without_children(drop),
            modified: self.modified.without_children(drop),
            removed: self.removed.without_children(drop),
        }
    }

    /// Keeps only the changes below the given top-level fields.
    pub(crate) fn only(&self, keep: &[PathElement]) -> Comparison {
        Comparison {
            added: self.added.only_children(keep),
            modified: self.modified.only_children(keep),
            removed: self.removed.only_children(keep),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    None,
    Added,
    Modified,
    Removed,
}

#[derive(Default)]
struct CmpParts {
    members: [Vec<PathElement>; 3],
    children: [Vec<(PathElement, FieldSet)>; 3],
}

impl CmpParts {
    /// Records a child's result; `pe` is only built when there is something to record.
    fn add(&mut self, pe: impl FnOnce() -> PathElement, mark: Mark, sub: Comparison) {
        if mark == Mark::None
            && sub.added.is_empty()
            && sub.modified.is_empty()
            && sub.removed.is_empty()
        {
            return;
        }
        let pe = pe();
        match mark {
            Mark::Added => self.members[0].push(pe.clone()),
            Mark::Modified => self.members[1].push(pe.clone()),
            Mark::Removed => self.members[2].push(pe.clone()),
            Mark::None => {}
        }
        for (i, s) in [sub.added, sub.modified, sub.removed]
            .into_iter()
            .enumerate()
        {
            if !s.is_empty() {
                self.children[i].push((pe.clone(), s));
            }
        }
    }

    fn finish(self) -> Comparison {
        let [ma, mm, mr] = self.members;
        let [ca, cm, cr] = self.children;
        Comparison {
            added: FieldSet::from_parts(ma, ca),
            modified: FieldSet::from_parts(mm, cm),
            removed: FieldSet::from_parts(mr, cr),
        }
    }
}

/// Compares `lhs` (before) with `rhs` (after).
///
/// Leaves (scalars, atomic values, and containers empty or null on both sides) are added, removed or
/// modified as a whole; containers are compared item by item, and a container that appears or
/// disappears is itself added or removed, as structured-merge-diff does. `metadata.managedFields`
/// is left out: it is bookkeeping, not content.
pub(crate) fn compare(shape: &TypeShape, lhs: &Value, rhs: &Value) -> Comparison {
    compare_node(shape, shape.root(), Some(lhs), Some(rhs), Level::Root).1
}

/// Where a comparison is, to leave out `metadata.managedFields` without copying objects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    RootMetadata,
    Below,
}

fn as_map_like(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        _ => None,
    }
}

fn as_list_like(v: Option<&Value>) -> Option<&[Value]> {
    match v {
        None | Some(Value::Null) => Some(&[]),
        Some(Value::Array(a)) => Some(a),
        _ => None,
    }
}

fn leaf_mark(l: Option<&Value>, r: Option<&Value>) -> Mark {
    match (l, r) {
        (None, _) => Mark::Added,
        (_, None) => Mark::Removed,
        (Some(a), Some(b)) if a != b => Mark::Modified,
        _ => Mark::None,
    }
}

fn container_mark(l: Option<&Value>, r: Option<&Value>) -> Mark {
    match (l, r) {
        (None, _) => Mark::Added,
        (_, None) => Mark::Removed,
        _ => Mark::None,
    }
}

fn compare_node(
    shape: &TypeShape,
    node: NodeId,
    l: Option<&Value>,
    r: Option<&Value>,
    level: Level,
) -> (Mark, Comparison) {
    if let (Some(a), Some(b)) = (l, r)
        && a == b
    {
        return (Mark::None, Comparison::default());
    }
    match shape.node(node) {
        Node::Scalar => (leaf_mark(l, r), Comparison::default()),
        Node::Untyped => match (as_map_like(l), as_map_like(r)) {
            (Some(lm), Some(rm)) if lm.is_some() || rm.is_some() => {
                compare_maps(shape, None, l, r, lm, rm, level)
            }
            _ => (leaf_mark(l, r), Comparison::default()),
        },
        Node::Map(m) => {
            let (Some(lm), Some(rm)) = (as_map_like(l), as_map_like(r)) else {
                return (leaf_mark(l, r), Comparison::default());
            };
            let empty = |x: Option<&Map<String, Value>>| x.is_none_or(|m| m.is_empty());
            if m.atomic || (empty(lm) && empty(rm)) {
                return (leaf_mark(l, r), Comparison::default());
            }
            compare_maps(shape, Some(m), l, r, lm, rm, level)
        }
        Node::List(list) => {
            let (Some(li), Some(ri)) = (as_list_like(l), as_list_like(r)) else {
                return (leaf_mark(l, r), Comparison::default());
            };
            if list.kind == ListKind::Atomic || (li.is_empty() && ri.is_empty()) {
                return (leaf_mark(l, r), Comparison::default());
            }
            let (Ok(lp), Ok(rp)) = (
                item_path_elements(shape, list, li),
                item_path_elements(shape, list, ri),
            ) else {
                return (leaf_mark(l, r), Comparison::default());
            };
            let mut parts = CmpParts::default();
            let r_index = ItemIndex::new(&rp);
            let l_index = ItemIndex::new(&lp);
            for (i, pe) in lp.iter().enumerate() {
                if l_index.get(pe) != Some(i) {
                    continue; // duplicate: the first occurrence stands for the item
                }
                let rv = r_index.get(pe).map(|j| &ri[j]);
                let (mark, sub) = compare_node(shape, list.elem, Some(&li[i]), rv, Level::Below);
                parts.add(|| pe.clone(), mark, sub);
            }
            for (j, pe) in rp.iter().enumerate() {
                if l_index.get(pe).is_none() && r_index.get(pe) == Some(j) {
                    let (mark, sub) =
                        compare_node(shape, list.elem, None, Some(&ri[j]), Level::Below);
                    parts.add(|| pe.clone(), mark, sub);
                }
            }
            (container_mark(l, r), parts.finish())
        }
    }
}

fn compare_maps(
    shape: &TypeShape,
    m: Option<&MapNode>,
    l: Option<&Value>,
    r: Option<&Value>,
    lm: Option<&Map<String, Value>>,
    rm: Option<&Map<String, Value>>,
    level: Level,
) -> (Mark, Comparison) {
    let mut parts = CmpParts::default();
    let child_of = |k: &str| {
        m.and_then(|m| m.child(k))
            .map_or(TypeShape::untyped_id(), |(n, _)| n)
    };
    let child_level = |k: &str| match level {
        Level::Root if k == "metadata" => Level::RootMetadata,
        _ => Level::Below,
    };
    let skipped = |k: &str| level == Level::RootMetadata && k == "managedFields";
    for (k, lv) in lm.into_iter().flatten() {
        if skipped(k) {
            continue;
        }
        let rv = rm.and_then(|rm| rm.get(k));
        let (mark, sub) = compare_node(shape, child_of(k), Some(lv), rv, child_level(k));
        parts.add(|| PathElement::Field(k.clone()), mark, sub);
    }
    for (k, rv) in rm.into_iter().flatten() {
        if skipped(k) || lm.is_some_and(|lm| lm.contains_key(k)) {
            continue;
        }
        let (mark, sub) = compare_node(shape, child_of(k), None, Some(rv), child_level(k));
        parts.add(|| PathElement::Field(k.clone()), mark, sub);
    }
    (container_mark(l, r), parts.finish())
}

// ---------------------------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------------------------

/// Merges an applied configuration `rhs` into `lhs` (structured-merge-diff's `Merge` with the
/// applied value winning): scalars and atomic values are replaced, granular maps merge key by key,
/// sets and map-keyed lists merge item by item keeping the live order of items the configuration does
/// not mention and the configuration's order for the rest.
///
/// `metadata.managedFields` of `lhs` is not carried over: it is rewritten after every apply.
pub(crate) fn merge(shape: &TypeShape, lhs: &Value, rhs: &Value) -> Value {
    let (Node::Map(root), Value::Object(lm), Value::Object(rm)) =
        (shape.node(shape.root()), lhs, rhs)
    else {
        return merge_node(shape, shape.root(), Some(lhs), rhs);
    };
    let mut out = Map::new();
    for (k, lv) in lm {
        let child = root.child(k).map_or(TypeShape::untyped_id(), |(n, _)| n);
        let merged = match (k.as_str(), lv, shape.node(child)) {
            ("metadata", Value::Object(lmeta), Node::Map(meta)) => {
                let empty = Map::new();
                let rmeta = rm.get(k).and_then(Value::as_object).unwrap_or(&empty);
                merge_maps(shape, Some(meta), lmeta, rmeta, Some("managedFields"))
            }
            _ => match rm.get(k) {
                Some(rv) => merge_node(shape, child, Some(lv), rv),
                None => lv.clone(),
            },
        };
        out.insert(k.clone(), merged);
    }
    for (k, rv) in rm {
        if !lm.contains_key(k) {
            out.insert(k.clone(), rv.clone());
        }
    }
    Value::Object(out)
}

/// Whether two objects are equal apart from `metadata.managedFields`.
pub(crate) fn same_content(a: &Value, b: &Value) -> bool {
    let (Value::Object(am), Value::Object(bm)) = (a, b) else {
        return a == b;
    };
    let relevant = |m: &Map<String, Value>, skip: &str| m.len() - usize::from(m.contains_key(skip));
    if am.len() != bm.len()
        || am
            .iter()
            .any(|(k, v)| k != "metadata" && bm.get(k) != Some(v))
    {
        return false;
    }
    match (am.get("metadata"), bm.get("metadata")) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            relevant(x, "managedFields") == relevant(y, "managedFields")
                && x.iter()
                    .all(|(k, v)| k == "managedFields" || y.get(k) == Some(v))
        }
        (x, y) => x == y,
    }
}

fn merge_node(shape: &TypeShape, node: NodeId, l: Option<&Value>, r: &Value) -> Value {
    let Some(l) = l else { return r.clone() };
    match shape.node(node) {
        Node::Scalar => r.clone(),
        Node::Untyped => match (l, r) {
            (Value::Object(lm), Value::Object(rm)) => merge_maps(shape, None, lm, rm, None),
            _ => r.clone(),
        },
        Node::Map(m) => {
            if m.atomic {
                return r.clone();
            }
            let (Some(lm), Some(rm)) = (as_map_like(Some(l)), as_map_like(Some(r))) else {
                return r.clone();
            };
            match (lm, rm) {
                (Some(lm), Some(rm)) if !lm.is_empty() || !rm.is_empty() => {
                    merge_maps(shape, Some(m), lm, rm, None)
                }
                // A null configuration does not clear a non-empty live map.
                (Some(lm), None) if !lm.is_empty() => l.clone(),
                _ => r.clone(),
            }
        }
        Node::List(list) => {
            if list.kind == ListKind::Atomic {
                return r.clone();
            }
            let (Some(li), Some(ri)) = (as_list_like(Some(l)), as_list_like(Some(r))) else {
                return r.clone();
            };
            if li.is_empty() && ri.is_empty() {
                return r.clone();
            }
            if ri.is_empty() && r.is_null() {
                return l.clone();
            }
            let (Ok(lp), Ok(rp)) = (
                item_path_elements(shape, list, li),
                item_path_elements(shape, list, ri),
            ) else {
                return r.clone();
            };
            Value::Array(merge_list_items(shape, list.elem, li, &lp, ri, &rp))
        }
    }
}

fn merge_maps(
    shape: &TypeShape,
    m: Option<&MapNode>,
    lm: &Map<String, Value>,
    rm: &Map<String, Value>,
    skip: Option<&str>,
) -> Value {
    // Each subtree is copied once: live-only entries as they are, the others through the merge.
    let mut out = Map::new();
    for (k, lv) in lm {
        if skip == Some(k.as_str()) {
            continue;
        }
        let merged = match rm.get(k) {
            Some(rv) => {
                let child = m
                    .and_then(|m| m.child(k))
                    .map_or(TypeShape::untyped_id(), |(n, _)| n);
                merge_node(shape, child, Some(lv), rv)
            }
            None => lv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    for (k, rv) in rm {
        if !lm.contains_key(k) {
            out.insert(k.clone(), rv.clone());
        }
    }
    Value::Object(out)
}

/// The item order structured-merge-diff produces: live-only items keep their place, items of the
/// configuration come in its order, shared items where the configuration puts them.
fn merge_list_items(
    shape: &TypeShape,
    elem: NodeId,
    li: &[Value],
    lp: &[PathElement],
    ri: &[Value],
    rp: &[PathElement],
) -> Vec<Value> {
    // First occurrences only, as structured-merge-diff indexes lists.
    let dedup = |pes: &[PathElement]| -> Vec<usize> {
        let index = ItemIndex::new(pes);
        (0..pes.len())
            .filter(|&i| index.get(&pes[i]) == Some(i))
            .collect()
    };
    let lhs: Vec<usize> = dedup(lp);
    let rhs: Vec<usize> = dedup(rp);
    let l_index = ItemIndex::new(lp);
    let r_index = ItemIndex::new(rp);
    let shared: Vec<usize> = rhs
        .iter()
        .copied()
        .filter(|&j| l_index.get(&rp[j]).is_some())
        .collect();
    let mut shared_iter = shared.into_iter();
    let mut next_shared = shared_iter.next();
    let mut merged_rhs = vec![false; rp.len()];
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut a, mut b) = (0, 0);
    while a < lhs.len() || b < rhs.len() {
        if a < lhs.len() && b < rhs.len() {
            let (li_idx, ri_idx) = (lhs[a], rhs[b]);
            if lp[li_idx] == rp[ri_idx] {
                merged_rhs[ri_idx] = true;
                out.push(merge_node(shape, elem, Some(&li[li_idx]), &ri[ri_idx]));
                a += 1;
                b += 1;
                next_shared = shared_iter.next();
                continue;
            }
            if r_index.get(&lp[li_idx]).is_some()
                && next_shared.is_some_and(|s| rp[s] != lp[li_idx])
            {
                // A shared item, but not the one due next: it is emitted when the configuration reaches it.
                a += 1;
                continue;
            }
        }
        if a < lhs.len() {
            let li_idx = lhs[a];
            match r_index.get(&lp[li_idx]) {
                None => {
                    out.push(li[li_idx].clone());
                    a += 1;
                    continue;
                }
                Some(j) if merged_rhs[j] => {
                    a += 1;
                    continue;
                }
                Some(_) => {}
            }
        }
        if b < rhs.len() {
            let ri_idx = rhs[b];
            merged_rhs[ri_idx] = true;
            let lv = l_index.get(&rp[ri_idx]).map(|i| &li[i]);
            out.push(merge_node(shape, elem, lv, &ri[ri_idx]));
            b += 1;
            if next_shared == Some(ri_idx) {
                next_shared = shared_iter.next();
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Pruning
// ---------------------------------------------------------------------------------------------

/// Removes from `value` what the applier set last time and no longer sets, unless someone still owns
/// it.
///
/// This reproduces the outcome of structured-merge-diff's `prune`, `addBackOwnedItems` and
/// `addBackDanglingItems` in one walk: an item is removed (with everything below it) when it is in the
/// previously applied set and it is not owned by anyone — `owned` being the union of every manager's
/// set including the new applied one — or it sits below such an unowned item that was itself part of
/// the previous configuration. Declared fields count as owned when anything below them is, as
/// `EnsureNamedFieldsAreMembers` makes them.
pub(crate) fn prune(shape: &TypeShape, value: &mut Value, last: &FieldSet, owned: &[&FieldSet]) {
    prune_node(shape, shape.root(), value, last, owned, false, false);
}

/// Whether any of the sets owns the element (a declared field counts when anything below it does).
fn owned_by_any(
    owned: &[&FieldSet],
    member: impl Fn(&FieldSet) -> bool,
    child: impl Fn(&FieldSet) -> bool,
) -> bool {
    owned.iter().any(|s| member(s) || child(s))
}

fn prune_node(
    shape: &TypeShape,
    node: NodeId,
    value: &mut Value,
    last: &FieldSet,
    owned: &[&FieldSet],
    under_last: bool,
    ancestor_removed: bool,
) {
    match (shape.node(node), value) {
        (Node::Untyped, Value::Object(o)) => {
            prune_map(shape, None, o, last, owned, under_last, ancestor_removed)
        }
        (Node::Map(m), Value::Object(o)) if !m.atomic => {
            prune_map(shape, Some(m), o, last, owned, under_last, ancestor_removed)
        }
        (Node::List(l), Value::Array(items)) if l.kind != ListKind::Atomic => {
            let Ok(pes) = item_path_elements(shape, l, items) else {
                return;
            };
            let mut keep = Vec::with_capacity(items.len());
            for (mut item, pe) in std::mem::take(items).into_iter().zip(pes) {
                let in_last = last.has_member(&pe);
                let last_child = last.child(&pe);
                if !in_last && last_child.is_none() {
                    keep.push(item);
                    continue;
                }
                let in_owned = owned_by_any(owned, |s| s.has_member(&pe), |_| false);
                let removed = ancestor_removed || ((under_last || in_last) && !in_owned);
                if in_last && removed {
                    continue;
                }
                if let Some(lc) = last_child {
                    let oc: Vec<&FieldSet> = owned.iter().filter_map(|o| o.child(&pe)).collect();
                    prune_node(
                        shape,
                        l.elem,
                        &mut item,
                        lc,
                        &oc,
                        under_last || in_last,
                        removed,
                    );
                }
                keep.push(item);
            }
            *items = keep;
        }
        _ => {}
    }
}

fn prune_map(
    shape: &TypeShape,
    m: Option<&MapNode>,
    o: &mut Map<String, Value>,
    last: &FieldSet,
    owned: &[&FieldSet],
    under_last: bool,
    ancestor_removed: bool,
) {
    let mut remove = Vec::new();
    for (k, cv) in o.iter_mut() {
        let last_member = last.has_field_member(k);
        let last_child = last.field_child(k);
        // Nothing below a key the last configuration did not mention can be pruned.
        if !last_member && last_child.is_none() {
            continue;
        }
        let (child, named) = m
            .and_then(|m| m.child(k))
            .unwrap_or((TypeShape::untyped_id(), false));
        let in_last = last_member || (named && last_child.is_some());
        let in_owned = owned_by_any(
            owned,
            |s| s.has_field_member(k),
            |s| named && s.field_child(k).is_some(),
        );
        let removed = ancestor_removed || ((under_last || in_last) && !in_owned);
        if in_last && removed {
            remove.push(k.clone());
            continue;
        }
        if let Some(lc) = last_child {
            let oc: Vec<&FieldSet> = owned.iter().filter_map(|o| o.field_child(k)).collect();
            prune_node(shape, child, cv, lc, &oc, under_last || in_last, removed);
        }
    }
    for k in remove {
        o.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd_shape() -> TypeShape {
        TypeShape::from_crd_schema(&json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "image": {"type": "string"},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "config": {"type": "object", "additionalProperties": {"type": "string"}},
                    "empty": {"type": "object", "properties": {"x": {"type": "string"}}}
                }},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }
        }))
    }

    fn fs(v: Value) -> FieldSet {
        FieldSet::from_fields_v1(&v).unwrap()
    }

    #[test]
    fn field_set_follows_structured_merge_diff_membership() {
        let shape = crd_shape();
        let obj = json!({
            "apiVersion": "x/v1", "kind": "K",
            "metadata": {"name": "a", "labels": {"app": "x"}, "finalizers": ["f1"]},
            "spec": {"replicas": 1, "ports": [{"name": "http", "port": 80}], "tags": ["a"], "args": ["x"],
                     "config": {"k": "v"}, "empty": {}}
        });
        let set = to_field_set(&shape, &obj, true).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:name": {}, "f:labels": {"f:app": {}}, "f:finalizers": {"v:\"f1\"": {}}},
                "f:spec": {
                    "f:replicas": {}, "f:args": {}, "f:empty": {},
                    "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
                    "f:tags": {"v:\"a\"": {}},
                    "f:config": {"f:k": {}}
                }
            })
        );
    }

    #[test]
    fn strict_field_set_reports_kube_style_errors() {
        let shape = crd_shape();
        let errs = to_field_set(
            &shape,
            &json!({"spec": {"nope": 1, "ports": [{"port": 1}], "tags": ["a", "a"]}}),
            true,
        )
        .unwrap_err();
        assert!(
            errs.contains(&".spec.nope: field not declared in schema".to_string()),
            "{errs:?}"
        );
        assert!(errs.iter().any(|e| e.starts_with(".spec.ports: element 0: associative list with keys has an element that omits key field \"name\"")), "{errs:?}");
        assert!(
            errs.contains(&".spec.tags: duplicate entries for key [=\"a\"]".to_string()),
            "{errs:?}"
        );
        // Lenient mode never fails.
        assert!(to_field_set(&shape, &json!({"spec": {"nope": 1}}), false).is_ok());
    }

    #[test]
    fn compare_marks_added_modified_removed_and_new_containers() {
        let shape = crd_shape();
        let a = json!({"spec": {"replicas": 1, "image": "a", "ports": [{"name": "x", "port": 1}]}});
        let b = json!({"spec": {"replicas": 2, "ports": [{"name": "x", "port": 1}, {"name": "y", "port": 2}]},
                       "metadata": {"labels": {"a": "b"}}});
        let c = compare(&shape, &a, &b);
        assert_eq!(c.modified, fs(json!({"f:spec": {"f:replicas": {}}})));
        assert_eq!(c.removed, fs(json!({"f:spec": {"f:image": {}}})));
        assert_eq!(
            c.added,
            fs(json!({
                "f:metadata": {".": {}, "f:labels": {".": {}, "f:a": {}}},
                "f:spec": {"f:ports": {"k:{\"name\":\"y\"}": {".": {}, "f:name": {}, "f:port": {}}}}
            }))
        );
        assert!(compare(&shape, &a, &a).is_empty());
    }

    #[test]
    fn merge_applies_list_and_map_semantics() {
        let shape = crd_shape();
        let live = json!({"spec": {"replicas": 1, "image": "a", "args": ["1", "2"], "tags": ["a", "b"],
                                   "ports": [{"name": "x", "port": 1}, {"name": "z", "port": 3}],
                                   "config": {"k": "v"}}});
        let applied = json!({"spec": {"replicas": 2, "args": ["3"], "tags": ["c"],
                                      "ports": [{"name": "y", "port": 2}, {"name": "x", "port": 9}],
                                      "config": {"k2": "v2"}}});
        let merged = merge(&shape, &live, &applied);
        assert_eq!(
            merged,
            json!({"spec": {"replicas": 2, "image": "a", "args": ["3"], "tags": ["a", "b", "c"],
                            "ports": [{"name": "y", "port": 2}, {"name": "x", "port": 9}, {"name": "z", "port": 3}],
                            "config": {"k": "v", "k2": "v2"}}})
        );
    }

    #[test]
    fn merge_keeps_live_only_items_in_place() {
        let shape = crd_shape();
        let live = json!({"spec": {"tags": ["a", "b", "c"]}});
        let merged = merge(&shape, &live, &json!({"spec": {"tags": ["c", "a"]}}));
        assert_eq!(merged, json!({"spec": {"tags": ["b", "c", "a"]}}));
        let merged = merge(&shape, &live, &json!({"spec": {"tags": ["d"]}}));
        assert_eq!(merged, json!({"spec": {"tags": ["a", "b", "c", "d"]}}));
    }

    #[test]
    fn prune_removes_only_what_nobody_owns_any_more() {
        let shape = crd_shape();
        let mut obj = json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}},
                             "spec": {"replicas": 1, "image": "x", "tags": ["t1", "t2"]}});
        let last = fs(json!({"f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}},
                             "f:spec": {"f:replicas": {}, "f:image": {}, "f:tags": {"v:\"t1\"": {}, "v:\"t2\"": {}}}}));
        // The applier now only sets labels.a, spec.replicas and tag t1; someone else owns spec.image.
        let owned = fs(json!({"f:metadata": {"f:labels": {"f:a": {}}},
                              "f:spec": {"f:replicas": {}, "f:image": {}, "f:tags": {"v:\"t1\"": {}}}}));
        prune(&shape, &mut obj, &last, &[&owned]);
        assert_eq!(
            obj,
            json!({"metadata": {"labels": {"a": "1", "c": "3"}},
                               "spec": {"replicas": 1, "image": "x", "tags": ["t1"]}})
        );
    }

    #[test]
    fn prune_drops_a_whole_field_nobody_owns() {
        let shape = crd_shape();
        let mut obj = json!({"metadata": {"name": "n", "labels": {"a": "1", "c": "3"}}, "spec": {"replicas": 1}});
        let last = fs(
            json!({"f:metadata": {"f:name": {}, "f:labels": {"f:a": {}}}, "f:spec": {"f:replicas": {}}}),
        );
        let owned = fs(json!({"f:metadata": {"f:name": {}}, "f:spec": {"f:replicas": {}}}));
        prune(&shape, &mut obj, &last, &[&owned]);
        // labels was part of the last configuration and nobody owns anything in it now.
        assert_eq!(
            obj,
            json!({"metadata": {"name": "n"}, "spec": {"replicas": 1}})
        );
    }
}
