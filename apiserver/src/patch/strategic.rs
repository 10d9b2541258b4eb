//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in types.
//!
//! A transcription of apimachinery's `strategicpatch` apply path (`StrategicMergeMapPatch` with
//! `MergeParallelList` and `IgnoreUnmatchedNulls`): maps merge, lists with `patchStrategy: merge` merge
//! by their `patchMergeKey` (or as sets of scalars), other lists are replaced, and the directives
//! `$patch: replace|delete|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//! `$setElementOrder/<field>` work as in kube-apiserver, including its ordering rules (items named
//! by the patch come in the patch's order, items only on the server keep theirs, new items come
//! first). Errors carry kube-apiserver's status codes and messages.

use serde_json::{Map, Value};

use super::error::PatchError;
use super::shape::{Node, NodeId, Smp, TypeShape};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

fn bad_json_doc() -> PatchError {
    PatchError::BadRequest("invalid JSON document".into())
}
fn bad_primitive_list() -> PatchError {
    PatchError::BadRequest("invalid patch format of primitive list".into())
}
fn bad_retain_keys() -> PatchError {
    PatchError::BadRequest("invalid patch format of retainKeys".into())
}
fn bad_set_element_order() -> PatchError {
    PatchError::BadRequest("invalid patch format of setElementOrder list".into())
}
fn no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::Failed(format!(
        "map: {} does not contain declared merge key: {key}",
        Value::Object(m.clone())
    ))
}

/// Applies a strategic merge patch to `doc`. On error `doc` is unchanged.
///
/// Refused with 415 for shapes without strategic merge support (custom resources).
pub fn strategic(doc: &mut Value, patch: &Value, shape: &TypeShape) -> Result<(), PatchError> {
    if !shape.supports_strategic_merge() {
        return Err(PatchError::UnsupportedMediaType);
    }
    let Value::Object(patch) = patch else {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            match patch {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "null",
            }
        )));
    };
    let original = match doc {
        Value::Object(m) => m.clone(),
        _ => return Err(bad_json_doc()),
    };
    let merged = merge_map(shape, shape.root(), original, patch.clone())?;
    *doc = Value::Object(merged);
    Ok(())
}

/// The type and strategy of field `key` of the map type `ctx`.
fn field_meta(shape: &TypeShape, ctx: NodeId, key: &str) -> (NodeId, Smp) {
    match shape.node(ctx) {
        Node::Map(m) => match m.field(key) {
            Some(f) => (f.node, f.smp.clone()),
            None => (m.elem.unwrap_or(TypeShape::untyped_id()), Smp::default()),
        },
        _ => (TypeShape::untyped_id(), Smp::default()),
    }
}

/// The item type of the list type `ctx`.
fn list_elem(shape: &TypeShape, ctx: NodeId) -> NodeId {
    match shape.node(ctx) {
        Node::List(l) => l.elem,
        _ => TypeShape::untyped_id(),
    }
}

fn merge_map(
    shape: &TypeShape,
    ctx: NodeId,
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::Failed(format!(
                "unknown patch type: {} in map: {}",
                directive,
                Value::Object(patch.clone())
            ))),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(shape, ctx, &mut original, &mut patch)?;

    for (key, patch_v) in patch {
        let (key, is_delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => match rest.strip_prefix('/') {
                Some(field) => (field.to_string(), true),
                None => return Err(bad_primitive_list()),
            },
            None => (key, false),
        };
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(orig_v) = original.remove(&key) else {
            if !is_delete_list {
                original.insert(key, without_nulls(patch_v));
            }
            continue;
        };
        let merged = match (orig_v, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let (child, smp) = field_meta(shape, ctx, &key);
                if smp.replace {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(shape, child, o, p)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                let (child, smp) = field_meta(shape, ctx, &key);
                Value::Array(merge_slice_handler(
                    shape,
                    child,
                    &smp,
                    o,
                    p,
                    is_delete_list,
                )?)
            }
            (orig_v, patch_v) => {
                if is_delete_list {
                    orig_v
                } else if orig_v.is_object() != patch_v.is_object()
                    || orig_v.is_array() != patch_v.is_array()
                {
                    without_nulls(patch_v)
                } else {
                    patch_v
                }
            }
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// `$retainKeys`: keys of the original not listed are cleared; every key the patch sets must be
/// listed.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_retain_keys());
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(bad_retain_keys());
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the field's list and orders it as the directive says.
fn merge_set_element_order(
    shape: &TypeShape,
    ctx: NodeId,
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let order = patch.remove(&key).unwrap_or(Value::Null);
        let Value::Array(order) = order else {
            return Err(bad_set_element_order());
        };
        let field = key
            .strip_prefix(SET_ELEMENT_ORDER)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(bad_set_element_order)?
            .to_string();
        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => return Err(bad_set_element_order()),
        };
        let patch_list = match patch.remove(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a),
            Some(_) => return Err(bad_set_element_order()),
        };
        let (child, smp) = field_meta(shape, ctx, &field);
        let merge_key = smp.merge_key.clone().unwrap_or_default();
        validate_set_order(patch_list.as_deref().unwrap_or(&[]), &order, &merge_key)?;
        let merged = match (&original_list, patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => p,
            (Some(o), Some(p)) => merge_slice_handler(shape, child, &smp, o.clone(), p, false)?,
            (None, None) => continue,
        };
        let (in_order, server_only) = partition(&merged, &order, &merge_key)?;
        let both = normalize_element_order(
            in_order,
            server_only,
            &order,
            original_list.as_deref().unwrap_or(&[]),
            &merge_key,
        )?;
        original.insert(field, Value::Array(both));
    }
    Ok(())
}

/// The items of the patch list must appear in the `$setElementOrder` list, in the same order.
fn validate_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = patch_list
        .iter()
        .filter(|v| {
            merge_key.is_empty() || v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete")
        })
        .collect();
    let (mut p, mut o) = (0, 0);
    while p < non_delete.len() && o < order.len() {
        if non_delete[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if key_of(non_delete[p], merge_key) == key_of(&order[o], merge_key) {
            p += 1;
        }
        o += 1;
    }
    if p < non_delete.len() {
        return Err(PatchError::Failed(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn merge_slice_handler(
    shape: &TypeShape,
    list_ctx: NodeId,
    smp: &Smp,
    original: Vec<Value>,
    patch: Vec<Value>,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if !smp.merge {
        return Ok(patch);
    }
    let merge_key = smp.merge_key.clone().unwrap_or_default();
    merge_slice(
        shape,
        list_elem(shape, list_ctx),
        original,
        patch,
        &merge_key,
        is_delete_list,
    )
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Kind {
    Map,
    List,
    Scalar,
    Null,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Object(_) => Kind::Map,
        Value::Array(_) => Kind::List,
        Value::Null => Kind::Null,
        _ => Kind::Scalar,
    }
}

/// The common element kind of the lists; lists of lists and mixed lists are errors.
fn element_kind(lists: &[&[Value]]) -> Result<Option<Kind>, PatchError> {
    let mut kind = None;
    let mut first_scalar: Option<std::mem::Discriminant<Value>> = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = kind_of(v);
        if k == Kind::List {
            return Err(PatchError::NotApplicable(
                "lists of lists are not supported".into(),
            ));
        }
        if k == Kind::Scalar {
            let d = std::mem::discriminant(v);
            if first_scalar.is_some_and(|f| f != d) {
                return Err(PatchError::Failed(
                    "list element types are not identical".into(),
                ));
            }
            first_scalar = Some(d);
        }
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(PatchError::Failed(
                    "list element types are not identical".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(kind)
}

fn merge_slice(
    shape: &TypeShape,
    elem: NodeId,
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_kind(&[&original, &patch])?;
    if kind != Some(Kind::Map) {
        if is_delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (in_patch, server_only) = partition(&merged, &patch, "")?;
        return normalize_element_order(in_patch, server_only, &patch, &original, "");
    }
    if merge_key.is_empty() {
        return Err(PatchError::Failed(
            "cannot merge lists without merge key for type map".into(),
        ));
    }
    let (original, patch) = merge_special_elements(original, patch, merge_key)?;
    let mut merged = original.clone();
    for item in &patch {
        let Value::Object(p) = item else { continue };
        let value = p.get(merge_key).ok_or_else(|| no_merge_key(p, merge_key))?;
        match merged.iter().position(|o| o.get(merge_key) == Some(value)) {
            Some(i) => {
                let o = match std::mem::take(&mut merged[i]) {
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                merged[i] = Value::Object(merge_map(shape, elem, o, p.clone())?);
            }
            None => merged.push(without_nulls(item.clone())),
        }
    }
    let (in_patch, server_only) = partition(&merged, &patch, merge_key)?;
    normalize_element_order(in_patch, server_only, &patch, &original, merge_key)
}

/// Handles `$patch: delete|replace|merge` items of a merging list of maps; returns the original and
/// the patch without them.
fn merge_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(m) = &item else {
            plain.push(item);
            continue;
        };
        match m.get(DIRECTIVE) {
            None => plain.push(item),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let value = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
                    if original.iter().any(|o| !o.is_object()) {
                        return Err(PatchError::Failed("value for key is not a map.".into()));
                    }
                    original.retain(|o| o.get(merge_key) != Some(value));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(PatchError::Failed(
                        "merging lists cannot yet be specified in the patch".into(),
                    ));
                }
                _ => {
                    return Err(PatchError::Failed(format!(
                        "unknown patch type: {d} in map: {}",
                        Value::Object(m.clone())
                    )));
                }
            },
        }
    }
    if replace {
        Ok((plain, Vec::new()))
    } else {
        Ok((original, plain))
    }
}

/// The merge key value of a map item, or the item itself for scalars.
fn key_of<'a>(v: &'a Value, merge_key: &str) -> Option<&'a Value> {
    if merge_key.is_empty() {
        Some(v)
    } else {
        v.get(merge_key)
    }
}

fn index_in(list: &[Value], v: &Value, merge_key: &str) -> Option<usize> {
    let k = key_of(v, merge_key)?;
    list.iter().position(|x| key_of(x, merge_key) == Some(k))
}

/// Splits `items` into those named by `by` and those that are not.
fn partition(
    items: &[Value],
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut named = Vec::new();
    let mut others = Vec::new();
    for v in items {
        if !merge_key.is_empty() {
            let m = v
                .as_object()
                .ok_or_else(|| PatchError::Failed("expected a map in a merging list".into()))?;
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        if index_in(by, v, merge_key).is_some() {
            named.push(v.clone())
        } else {
            others.push(v.clone())
        }
    }
    Ok((named, others))
}

/// Orders the patch's items by `patch_order`, the server-only items by `server_order`, then
/// interleaves them, keeping server-only items before patch items only where the live order says so.
fn normalize_element_order(
    mut in_patch: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
) -> Result<Vec<Value>, PatchError> {
    let sort_by = |items: &mut Vec<Value>, order: &[Value]| {
        items.sort_by_key(|v| index_in(order, v, merge_key).unwrap_or(usize::MAX));
    };
    sort_by(&mut in_patch, patch_order);
    sort_by(&mut server_only, server_order);
    let mut out = Vec::with_capacity(in_patch.len() + server_only.len());
    let (mut i, mut j) = (0, 0);
    while i < server_only.len() || j < in_patch.len() {
        if j >= in_patch.len() {
            out.push(server_only[i].clone());
            i += 1;
        } else if i >= server_only.len() {
            out.push(in_patch[j].clone());
            j += 1;
        } else {
            let li = index_in(server_order, &server_only[i], merge_key);
            let ri = index_in(server_order, &in_patch[j], merge_key);
            match (li, ri) {
                (Some(l), Some(r)) if l < r => {
                    out.push(server_only[i].clone());
                    i += 1;
                }
                _ => {
                    out.push(in_patch[j].clone());
                    j += 1;
                }
            }
        }
    }
    Ok(out)
}

/// Drops null members of maps (recursively), as a patch value that is new to the object is stored
/// without them.
fn without_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
            "spec": {
                "replicas": 1,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "template": {"spec": {
                    "containers": [
                        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}], "args": ["--a"]},
                        {"name": "side", "image": "side:1"}
                    ],
                    "tolerations": [{"key": "k1"}]
                }}
            }
        })
    }

    fn patched(patch: Value) -> Result<Value, PatchError> {
        let shape = TypeShape::of::<Deployment>();
        let mut doc = deployment();
        strategic(&mut doc, &patch, &shape)?;
        Ok(doc)
    }

    #[test]
    fn merges_maps_and_keyed_lists_and_replaces_plain_lists() {
        let doc = patched(json!({
            "metadata": {"labels": {"a": null, "c": "3"}},
            "spec": {"replicas": 3, "template": {"spec": {
                "containers": [{"name": "app", "image": "app:2", "env": [{"name": "B", "value": "20"}], "args": ["--b"]}],
                "tolerations": [{"key": "k2"}]
            }}}
        }))
        .unwrap();
        assert_eq!(doc["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(doc["spec"]["replicas"], 3);
        let containers = &doc["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "app:2");
        // Items already on the server keep their order.
        assert_eq!(
            containers[0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "20"}])
        );
        assert_eq!(
            containers[0]["args"],
            json!(["--b"]),
            "args has no merge strategy"
        );
        assert_eq!(containers[1]["name"], "side");
        assert_eq!(
            doc["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "k2"}])
        );
    }

    #[test]
    fn new_items_come_first_like_kube() {
        let doc = patched(json!({"spec": {"template": {"spec": {"containers": [{"name": "new", "image": "n"}]}}}})).unwrap();
        let names: Vec<&str> = doc["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["new", "app", "side"]);
        let doc = patched(json!({"metadata": {"finalizers": ["z"]}})).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["z", "x", "y"]));
    }

    #[test]
    fn patch_directives() {
        // $patch: delete on a keyed item, and replace of a whole list.
        let doc = patched(json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}}})).unwrap();
        assert_eq!(
            doc["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let doc = patched(json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "o"}, {"$patch": "replace"}]}}}}))
            .unwrap();
        assert_eq!(
            doc["spec"]["template"]["spec"]["containers"],
            json!([{"name": "only", "image": "o"}])
        );
        // $patch: replace on a map, $patch: delete on a map.
        let doc =
            patched(json!({"metadata": {"labels": {"z": "9", "$patch": "replace"}}})).unwrap();
        assert_eq!(doc["metadata"]["labels"], json!({"z": "9"}));
        let doc = patched(json!({"spec": {"strategy": {"$patch": "delete"}}})).unwrap();
        assert_eq!(doc["spec"]["strategy"], json!({}));
        // $deleteFromPrimitiveList.
        let doc =
            patched(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}})).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["y"]));
        // $retainKeys clears what is not listed.
        let doc =
            patched(json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}))
                .unwrap();
        assert_eq!(doc["spec"]["strategy"], json!({"type": "Recreate"}));
        // $setElementOrder reorders.
        let doc = patched(json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "app:3"}]
        }}}}))
        .unwrap();
        let c = &doc["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            (c[0]["name"].as_str(), c[1]["image"].as_str()),
            (Some("side"), Some("app:3"))
        );
    }

    #[test]
    fn errors_have_kube_codes() {
        let e =
            patched(json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}))
                .unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (400, "invalid patch format of retainKeys".to_string())
        );
        let e = patched(json!({"metadata": {"$deleteFromPrimitiveList": ["x"]}})).unwrap_err();
        assert_eq!(e.code(), 400);
        let e = patched(
            json!({"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}}),
        )
        .unwrap_err();
        assert_eq!(e.code(), 500);
        assert!(
            e.to_string()
                .contains("does not contain declared merge key: name"),
            "{e}"
        );
        let e = patched(json!({"metadata": {"finalizers": [["x"]]}})).unwrap_err();
        assert_eq!(e.code(), 422);
        let e = patched(json!([1])).unwrap_err();
        assert_eq!(e.code(), 400);
    }

    #[test]
    fn custom_resources_get_415() {
        let shape = TypeShape::from_crd_schema(&json!({"type": "object"}));
        let mut doc = json!({});
        assert_eq!(
            strategic(&mut doc, &json!({}), &shape).unwrap_err(),
            PatchError::UnsupportedMediaType
        );
    }
}
