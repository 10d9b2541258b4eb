//! Field paths and field sets as structured-merge-diff models them, and their `fieldsV1` encoding.
//!
//! A [`FieldSet`] is a tree: each node holds the path elements that are *members* (owned leaves, list
//! items, map entries) and the child sets below path elements. This mirrors `fieldpath.Set` so the set
//! algebra of server-side apply (union, difference, recursive difference, intersection) behaves as in
//! kube-apiserver, and `managedFields[].fieldsV1` round-trips byte-for-byte in meaning.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

/// One step of a field path.
///
/// The variant order is structured-merge-diff's order (field names, then keys, then values, then
/// indices), which is also the order members are listed in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// A named field or map key: `f:name`.
    Field(String),
    /// An item of a map-keyed list, identified by its key fields sorted by name: `k:{"name":"x"}`.
    /// Values are canonical JSON text.
    Key(Vec<(String, String)>),
    /// An item of a set-typed list, identified by its value (canonical JSON text): `v:"x"`.
    Value(String),
    /// A list item by position (only for lists that are neither atomic, sets nor maps): `i:0`.
    Index(usize),
}

impl PathElement {
    /// The `fieldsV1` key of this element (`f:spec`, `k:{"type":"Ready"}`, `v:"a"`, `i:0`).
    pub(crate) fn to_fields_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(name.clone()).to_string());
                    out.push(':');
                    out.push_str(value);
                }
                out.push('}');
                out
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key back into a path element.
    pub(crate) fn from_fields_key(key: &str) -> Result<PathElement, String> {
        let (prefix, rest) = key
            .split_once(':')
            .ok_or_else(|| format!("invalid path element {key:?}: missing type prefix"))?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => {
                let parsed: Value = serde_json::from_str(rest)
                    .map_err(|e| format!("invalid key path element {key:?}: {e}"))?;
                let Value::Object(map) = parsed else {
                    return Err(format!(
                        "invalid key path element {key:?}: not a JSON object"
                    ));
                };
                // serde_json's map iterates sorted by name, which is the canonical key order.
                Ok(PathElement::Key(
                    map.into_iter().map(|(k, v)| (k, canonical(&v))).collect(),
                ))
            }
            "v" => {
                let parsed: Value = serde_json::from_str(rest)
                    .map_err(|e| format!("invalid value path element {key:?}: {e}"))?;
                Ok(PathElement::Value(canonical(&parsed)))
            }
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|e| format!("invalid index path element {key:?}: {e}")),
            other => Err(format!(
                "invalid path element {key:?}: unknown type prefix {other:?}"
            )),
        }
    }
}

/// Canonical JSON text of a value (object keys sorted, no whitespace), used to compare key values.
pub(crate) fn canonical(v: &Value) -> String {
    // serde_json without `preserve_order` keeps object keys sorted; with it, order follows input,
    // so sort explicitly to stay canonical either way.
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    match v {
        Value::Object(_) | Value::Array(_) => sorted(v).to_string(),
        other => other.to_string(),
    }
}

impl fmt::Display for PathElement {
    /// The path element as kube-apiserver prints it in conflict messages: `.name`, `[name="x"]`,
    /// `[="x"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={value}")?;
                }
                f.write_str("]")
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object root, e.g. `.spec.containers[name="app"].image`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct FieldPath(pub Vec<PathElement>);

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// A set of field paths, stored as a tree like structured-merge-diff's `fieldpath.Set`.
///
/// Invariants: `members` and `children` are sorted by path element and free of duplicates, and no
/// child set is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    members: Vec<PathElement>,
    children: Vec<(PathElement, FieldSet)>,
}

impl FieldSet {
    /// The empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether the set holds no path.
    pub(crate) fn is_empty(&self) -> bool {
        // Child sets are never empty (invariant), so only the two vectors matter.
        self.members.is_empty() && self.children.is_empty()
    }

    /// Whether `pe` is a member at this level.
    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// Whether the field `name` is a member at this level (without building a path element).
    pub(crate) fn has_field_member(&self, name: &str) -> bool {
        self.members
            .binary_search_by(|p| cmp_field(p, name))
            .is_ok()
    }

    /// The child set below the field `name`, if any (without building a path element).
    pub(crate) fn field_child(&self, name: &str) -> Option<&FieldSet> {
        self.children
            .binary_search_by(|(p, _)| cmp_field(p, name))
            .ok()
            .map(|i| &self.children[i].1)
    }

    /// The child set below `pe`, if any.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children
            .binary_search_by(|(p, _)| p.cmp(pe))
            .ok()
            .map(|i| &self.children[i].1)
    }

    #[cfg(test)]
    /// Whether the full path is a member of the set.
    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.has_member(last),
            [first, rest @ ..] => self.child(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Adds a member at this level.
    pub(crate) fn insert_member(&mut self, pe: PathElement) {
        if let Err(i) = self.members.binary_search(&pe) {
            self.members.insert(i, pe);
        }
    }

    /// Adds a path (its last element becomes a member).
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => self.insert_member(last.clone()),
            [first, rest @ ..] => self.child_mut(first.clone()).insert(rest),
        }
    }

    fn child_mut(&mut self, pe: PathElement) -> &mut FieldSet {
        let i = match self.children.binary_search_by(|(p, _)| p.cmp(&pe)) {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(i, (pe, FieldSet::new()));
                i
            }
        };
        &mut self.children[i].1
    }

    /// Builds a set from parts collected in any order (used by the typed walkers).
    pub(crate) fn from_parts(
        mut members: Vec<PathElement>,
        mut children: Vec<(PathElement, FieldSet)>,
    ) -> Self {
        // Parts usually arrive sorted and unique (map keys iterate in order); only fix what is not.
        if !members.is_sorted() {
            members.sort();
        }
        if members.windows(2).any(|w| w[0] == w[1]) {
            members.dedup();
        }
        children.retain(|(_, c)| !c.is_empty());
        if !children.is_sorted_by(|a, b| a.0 <= b.0) {
            children.sort_by(|a, b| a.0.cmp(&b.0));
        }
        if children.windows(2).any(|w| w[0].0 == w[1].0) {
            // Merge children that share a path element (duplicated list items).
            let mut merged: Vec<(PathElement, FieldSet)> = Vec::with_capacity(children.len());
            for (pe, set) in children {
                match merged.last_mut() {
                    Some((last, existing)) if *last == pe => *existing = existing.union(&set),
                    _ => merged.push((pe, set)),
                }
            }
            children = merged;
        }
        FieldSet { members, children }
    }

    /// Every path in `self` or `other`.
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        let members = merge_sorted(&self.members, &other.members);
        let mut children = Vec::with_capacity(self.children.len().max(other.children.len()));
        let (mut i, mut j) = (0, 0);
        while i < self.children.len() || j < other.children.len() {
            let ord = match (self.children.get(i), other.children.get(j)) {
                (Some(a), Some(b)) => a.0.cmp(&b.0),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            match ord {
                Ordering::Less => {
                    children.push(self.children[i].clone());
                    i += 1;
                }
                Ordering::Greater => {
                    children.push(other.children[j].clone());
                    j += 1;
                }
                Ordering::Equal => {
                    children.push((
                        self.children[i].0.clone(),
                        self.children[i].1.union(&other.children[j].1),
                    ));
                    i += 1;
                    j += 1;
                }
            }
        }
        FieldSet { members, children }
    }

    /// Paths in both sets.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| {
                let both = c.intersection(other.child(pe)?);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Paths of `self` that are not in `other`. A member of `other` does not remove the children of
    /// the same element (`parent - child = parent`, `child - parent = child`), as in
    /// structured-merge-diff's `Difference`.
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| match other.child(pe) {
                Some(oc) => {
                    let d = c.difference(oc);
                    (!d.is_empty()).then(|| (pe.clone(), d))
                }
                None => Some((pe.clone(), c.clone())),
            })
            .collect();
        FieldSet { members, children }
    }

    /// Removes the paths of `other` in place, with [`difference`](Self::difference)'s rules; returns
    /// whether anything was removed.
    pub(crate) fn subtract(&mut self, other: &FieldSet) -> bool {
        if other.is_empty() || self.is_empty() {
            return false;
        }
        let before = self.members.len();
        self.members.retain(|m| !other.has_member(m));
        let mut changed = self.members.len() != before;
        self.children.retain_mut(|(pe, c)| match other.child(pe) {
            Some(oc) => {
                changed |= c.subtract(oc);
                !c.is_empty()
            }
            None => true,
        });
        changed
    }

    #[cfg(test)]
    /// Like [`difference`](Self::difference), but a member of `other` also removes everything below
    /// the same element.
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| {
                if other.has_member(pe) {
                    return None;
                }
                match other.child(pe) {
                    Some(oc) => {
                        let d = c.recursive_difference(oc);
                        (!d.is_empty()).then(|| (pe.clone(), d))
                    }
                    None => Some((pe.clone(), c.clone())),
                }
            })
            .collect();
        FieldSet { members, children }
    }

    /// Keeps only the subtrees below the given top-level elements (used to restrict a change to
    /// `.status` for the status subresource).
    pub(crate) fn only_children(&self, keep: &[PathElement]) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| keep.contains(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| keep.contains(pe))
            .cloned()
            .collect();
        FieldSet { members, children }
    }

    /// Removes the given top-level elements and everything below them.
    pub(crate) fn without_children(&self, drop: &[PathElement]) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| !drop.contains(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !drop.contains(pe))
            .cloned()
            .collect();
        FieldSet { members, children }
    }

    /// Every member path, in order.
    pub(crate) fn paths(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<FieldPath>) {
        // Members and children interleave in element order, as structured-merge-diff iterates them.
        let (mut i, mut j) = (0, 0);
        while i < self.members.len() || j < self.children.len() {
            let take_member = match (self.members.get(i), self.children.get(j)) {
                (Some(m), Some((c, _))) => m <= c,
                (Some(_), None) => true,
                _ => false,
            };
            if take_member {
                prefix.push(self.members[i].clone());
                out.push(FieldPath(prefix.clone()));
                prefix.pop();
                i += 1;
            } else {
                prefix.push(self.children[j].0.clone());
                self.children[j].1.collect_paths(prefix, out);
                prefix.pop();
                j += 1;
            }
        }
    }

    /// Encodes the set as `fieldsV1` (`{"f:spec":{"f:replicas":{}}}`, with `".": {}` marking an
    /// element that is both a member and a parent).
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for m in &self.members {
            if self.child(m).is_none() {
                out.insert(m.to_fields_key(), Value::Object(Map::new()));
            }
        }
        for (pe, child) in &self.children {
            let mut inner = match child.to_fields_v1() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            if self.has_member(pe) {
                inner.insert(".".to_string(), Value::Object(Map::new()));
            }
            out.insert(pe.to_fields_key(), Value::Object(inner));
        }
        Value::Object(out)
    }

    /// Decodes `fieldsV1`.
    pub(crate) fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = v else {
            return Err("fieldsV1 must be a JSON object".to_string());
        };
        let mut members = Vec::new();
        let mut children = Vec::new();
        for (key, inner) in map {
            if key == "." {
                continue;
            }
            let pe = PathElement::from_fields_key(key)?;
            let Value::Object(inner_map) = inner else {
                return Err(format!("fieldsV1 entry {key:?} must be a JSON object"));
            };
            if inner_map.is_empty() || inner_map.contains_key(".") {
                members.push(pe.clone());
            }
            let child = FieldSet::from_fields_v1(inner)?;
            if !child.is_empty() {
                children.push((pe, child));
            }
        }
        Ok(FieldSet::from_parts(members, children))
    }
}

/// Orders a path element against `PathElement::Field(name)`.
fn cmp_field(p: &PathElement, name: &str) -> Ordering {
    match p {
        PathElement::Field(f) => f.as_str().cmp(name),
        // Field names sort before every other kind of element.
        _ => Ordering::Greater,
    }
}

fn merge_sorted(a: &[PathElement], b: &[PathElement]) -> Vec<PathElement> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    fn set(paths: &[&[PathElement]]) -> FieldSet {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    #[test]
    fn fields_v1_round_trips_with_dot_markers() {
        let v = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}},
                "f:finalizers": {"v:\"a\"": {}},
                "f:replicas": {}
            }
        });
        let s = FieldSet::from_fields_v1(&v).unwrap();
        assert!(s.has(&[f("spec"), f("replicas")]));
        assert!(s.has(&[f("metadata"), f("labels")]));
        assert!(!s.has(&[f("spec")]));
        let key = PathElement::Key(vec![("name".into(), "\"nginx\"".into())]);
        assert!(s.has(&[f("spec"), f("containers"), key.clone()]));
        assert!(s.has(&[f("spec"), f("containers"), key, f("image")]));
        assert_eq!(s.to_fields_v1(), v);
    }

    #[test]
    fn keys_serialize_sorted_and_display_like_kube() {
        let pe =
            PathElement::from_fields_key(r#"k:{"protocol":"TCP","containerPort":80}"#).unwrap();
        assert_eq!(
            pe.to_fields_key(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(pe.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
        let path = FieldPath(vec![f("spec"), f("replicas")]);
        assert_eq!(path.to_string(), ".spec.replicas");
        assert_eq!(PathElement::Value("\"x\"".into()).to_string(), r#"[="x"]"#);
    }

    #[test]
    fn malformed_fields_are_errors() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:y": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
        assert!(PathElement::from_fields_key("k:[1]").is_err());
    }

    #[test]
    fn difference_keeps_children_of_removed_members_but_recursive_difference_drops_them() {
        let a = set(&[&[f("a")], &[f("a"), f("b")]]);
        let b = set(&[&[f("a")]]);
        assert_eq!(a.difference(&b), set(&[&[f("a"), f("b")]]));
        assert!(a.recursive_difference(&b).is_empty());
    }

    #[test]
    fn union_and_intersection() {
        let a = set(&[&[f("a"), f("x")], &[f("b")]]);
        let b = set(&[&[f("a"), f("y")], &[f("b")]]);
        let u = a.union(&b);
        assert_eq!(u.paths().len(), 3);
        assert_eq!(a.intersection(&b), set(&[&[f("b")]]));
        assert!(a.intersection(&FieldSet::new()).is_empty());
    }

    #[test]
    fn paths_iterate_in_element_order() {
        let s = set(&[&[f("b")], &[f("a"), f("z")], &[f("a")]]);
        let rendered: Vec<String> = s.paths().iter().map(|p| p.to_string()).collect();
        assert_eq!(rendered, vec![".a", ".a.z", ".b"]);
    }
}
