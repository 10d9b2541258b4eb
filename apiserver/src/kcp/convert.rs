//! Conversion between `apis.kcp.io` v1alpha1 and v1alpha2 APIExports and APIBindings (v1alpha2 is
//! stored), as kcp's conversion functions do it: what v1alpha1 cannot express round-trips through
//! `apis.v1alpha2.kcp.io/*` annotations.

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;

/// Annotation: v1alpha2 resources that v1alpha1 cannot express (non-CRD storage).
pub(crate) const RESOURCE_SCHEMAS: &str = "apis.v1alpha2.kcp.io/resource-schemas";
/// Annotation: v1alpha2 claims with verbs other than `*`.
pub(crate) const PERMISSION_CLAIMS: &str = "apis.v1alpha2.kcp.io/permission-claims";
/// Annotation: the original v1alpha1 claims (their `all`/`resourceSelector`).
pub(crate) const V1ALPHA1_PERMISSION_CLAIMS: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-permission-claims";
/// Annotation: v1alpha2 binding claims with verbs or selectors v1alpha1 cannot express.
pub(crate) const ACCEPTABLE_PERMISSION_CLAIMS: &str =
    "apis.v1alpha2.kcp.io/acceptable-permission-claims";
/// Annotation: v1alpha2 `status.exportPermissionClaims` v1alpha1 cannot express.
pub(crate) const STATUS_PERMISSION_CLAIMS: &str =
    "apis.v1alpha2.kcp.io/status-export-permission-claims";
/// Annotation: v1alpha2 `status.appliedPermissionClaims` v1alpha1 cannot express.
pub(crate) const STATUS_APPLIED_CLAIMS: &str =
    "apis.v1alpha2.kcp.io/status-applied-permission-claims";
/// Annotation: the original v1alpha1 `status.exportPermissionClaims`.
pub(crate) const STATUS_PERMISSION_CLAIMS_V1ALPHA1: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-export-permission-claims";
/// Annotation: the original v1alpha1 `status.appliedPermissionClaims`.
pub(crate) const STATUS_APPLIED_CLAIMS_V1ALPHA1: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-applied-permission-claims";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Export,
    Binding,
}

fn kind(info: &ResourceInfo) -> Option<Kind> {
    if info.group != "apis.kcp.io" || info.version != "v1alpha1" {
        return None;
    }
    match info.resource.as_str() {
        "apiexports" => Some(Kind::Export),
        "apibindings" => Some(Kind::Binding),
        _ => None,
    }
}

/// A request body in `info`'s version → the stored (v1alpha2) form; other resources unchanged.
pub(crate) fn to_storage(info: &ResourceInfo, obj: Value) -> Value {
    match kind(info) {
        Some(Kind::Export) => export_to_v1alpha2(obj),
        Some(Kind::Binding) => binding_to_v1alpha2(obj),
        None => obj,
    }
}

/// A stored (v1alpha2) object → `info`'s version; other resources unchanged.
pub(crate) fn from_storage(info: &ResourceInfo, obj: Value) -> Value {
    match kind(info) {
        Some(Kind::Export) => export_to_v1alpha1(obj),
        Some(Kind::Binding) => binding_to_v1alpha1(obj),
        None => obj,
    }
}

fn annotations(obj: &mut Value) -> &mut Map<String, Value> {
    let m = crate::meta::metadata_mut(obj);
    let a = m.entry("annotations").or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    match a {
        Value::Object(o) => o,
        _ => unreachable!("just made an object"),
    }
}

/// Takes an annotation holding JSON out of the object.
fn take_json(obj: &mut Value, key: &str) -> Option<Value> {
    let raw = annotations(obj).remove(key)?;
    raw.as_str().and_then(|s| serde_json::from_str(s).ok())
}

fn put_json(obj: &mut Value, key: &str, v: &Value) {
    annotations(obj).insert(key.into(), Value::String(v.to_string()));
}

fn drop_empty_annotations(obj: &mut Value) {
    let m = crate::meta::metadata_mut(obj);
    if m.get("annotations")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        m.remove("annotations");
    }
}

/// Group, resource and identity hash: what identifies a claim across versions.
fn gri(c: &Value) -> (String, String, String) {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (s("group"), s("resource"), s("identityHash"))
}

fn wildcard_verbs(c: &Value) -> bool {
    c.get("verbs")
        .and_then(Value::as_array)
        .is_some_and(|v| v.len() == 1 && v[0] == "*")
}

fn base_claim(c: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for k in ["group", "resource", "identityHash"] {
        if let Some(v) = c
            .get(k)
            .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        {
            out.insert(k.into(), v.clone());
        }
    }
    if !out.contains_key("group") {
        out.insert("group".into(), json!(""));
    }
    out
}

fn claims_at(obj: &Value, ptr: &str) -> Vec<Value> {
    obj.pointer(ptr)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn set_at(obj: &mut Value, parent: &str, key: &str, v: Option<Value>) {
    let Some(p) = obj.pointer_mut(parent).and_then(Value::as_object_mut) else {
        if let Some(v) = v {
            let path: Vec<&str> = parent.trim_start_matches('/').split('/').collect();
            let mut cur = &mut *obj;
            for seg in path {
                if !cur.get(seg).is_some_and(Value::is_object) {
                    cur[seg] = json!({});
                }
                cur = &mut cur[seg];
            }
            cur[key] = v;
        }
        return;
    };
    match v {
        Some(v) => {
            p.insert(key.into(), v);
        }
        None => {
            p.remove(key);
        }
    }
}

// ---- APIExport -------------------------------------------------------------------------------

fn export_to_v1alpha2(mut obj: Value) -> Value {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha2");
    let v1_claims = claims_at(&obj, "/spec/permissionClaims");
    let latest = claims_at(&obj, "/spec/latestResourceSchemas");
    let mut resources: Vec<Value> = latest
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|schema| {
            let parts: Vec<&str> = schema.split('.').collect();
            if parts.len() < 3 {
                return None;
            }
            let group = parts[2..].join(".");
            let group = if group == "core" {
                String::new()
            } else {
                group
            };
            Some(
                json!({"group": group, "name": parts[1], "schema": schema, "storage": {"crd": {}}}),
            )
        })
        .collect();
    if let Some(Value::Array(extra)) = take_json(&mut obj, RESOURCE_SCHEMAS) {
        for mut r in extra {
            let index = r
                .as_object_mut()
                .and_then(|o| o.remove("index"))
                .and_then(|i| i.as_u64());
            match index {
                Some(i) if (i as usize) <= resources.len() => resources.insert(i as usize, r),
                _ => resources.push(r),
            }
        }
    }
    let mut claims: Vec<Value> = v1_claims
        .iter()
        .map(|c| Value::Object(base_claim(c)))
        .collect();
    restore_v1alpha2_fields(
        &mut claims,
        take_json(&mut obj, PERMISSION_CLAIMS),
        &["verbs", "defaultSelector"],
    );
    for c in claims.iter_mut() {
        if c.get("verbs")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            c["verbs"] = json!(["*"]);
        }
    }
    if !v1_claims.is_empty() {
        put_json(
            &mut obj,
            V1ALPHA1_PERMISSION_CLAIMS,
            &Value::Array(v1_claims),
        );
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("latestResourceSchemas");
        if !resources.is_empty() {
            spec.insert("resources".into(), Value::Array(resources));
        }
        if claims.is_empty() {
            spec.remove("permissionClaims");
        } else {
            spec.insert("permissionClaims".into(), Value::Array(claims));
        }
    }
    drop_empty_annotations(&mut obj);
    obj
}

fn export_to_v1alpha1(mut obj: Value) -> Value {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha1");
    let resources = claims_at(&obj, "/spec/resources");
    let mut latest = Vec::new();
    let mut overhanging = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        if r.pointer("/storage/crd").is_some() || r.get("storage").is_none() {
            if let Some(s) = r.get("schema") {
                latest.push(s.clone());
            }
        } else {
            let mut r = r.clone();
            r["index"] = json!(i);
            overhanging.push(r);
        }
    }
    if !overhanging.is_empty() {
        put_json(&mut obj, RESOURCE_SCHEMAS, &Value::Array(overhanging));
    }
    let v2_claims = claims_at(&obj, "/spec/permissionClaims");
    let odd: Vec<Value> = v2_claims
        .iter()
        .filter(|c| !wildcard_verbs(c))
        .cloned()
        .collect();
    if !odd.is_empty() {
        put_json(&mut obj, PERMISSION_CLAIMS, &Value::Array(odd));
    }
    let mut claims: Vec<Value> = v2_claims
        .iter()
        .map(|c| Value::Object(base_claim(c)))
        .collect();
    restore_v1alpha1_selection(&mut claims, take_json(&mut obj, V1ALPHA1_PERMISSION_CLAIMS));
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("resources");
        if !latest.is_empty() {
            spec.insert("latestResourceSchemas".into(), Value::Array(latest));
        }
        if claims.is_empty() {
            spec.remove("permissionClaims");
        } else {
            spec.insert("permissionClaims".into(), Value::Array(claims));
        }
    }
    drop_empty_annotations(&mut obj);
    obj
}

// ---- APIBinding ------------------------------------------------------------------------------

fn match_all(c: &Value) -> bool {
    c.pointer("/selector/matchAll").and_then(Value::as_bool) == Some(true)
}

/// A v1alpha1 claim (`all`/`resourceSelector`) as v1alpha2 (`verbs`, `selector`); `state` kept.
fn v1_claim_to_v2(c: &Value, with_state: bool) -> Value {
    let mut out = base_claim(c);
    out.insert("verbs".into(), json!(["*"]));
    out.insert("selector".into(), json!({"matchAll": true}));
    if with_state && let Some(s) = c.get("state") {
        out.insert("state".into(), s.clone());
    }
    Value::Object(out)
}

/// A v1alpha2 claim as v1alpha1: `all` from `selector.matchAll`; `state` kept.
/// Puts back, on the converted claims, the v1alpha2 fields (`keys`) that v1alpha1 cannot say and
/// an earlier conversion saved in an annotation: a saved field overrides the converted one.
fn restore_v1alpha2_fields(claims: &mut [Value], saved: Option<Value>, keys: &[&str]) {
    let Some(Value::Array(saved)) = saved else {
        return;
    };
    for pc in saved {
        for c in claims.iter_mut().filter(|c| gri(c) == gri(&pc)) {
            for k in keys {
                if let Some(v) = pc.get(*k) {
                    c[*k] = v.clone();
                }
            }
        }
    }
}

/// Puts back the v1alpha1 selection of claims (`all` or `resourceSelector`) that an earlier
/// conversion saved in an annotation: the saved selection replaces the converted one.
fn restore_v1alpha1_selection(claims: &mut [Value], saved: Option<Value>) {
    let Some(Value::Array(saved)) = saved else {
        return;
    };
    for pc in saved {
        for c in claims.iter_mut().filter(|c| gri(c) == gri(&pc)) {
            let Some(o) = c.as_object_mut() else { continue };
            o.remove("all");
            for k in ["all", "resourceSelector"] {
                if let Some(v) = pc.get(k) {
                    o.insert(k.into(), v.clone());
                }
            }
        }
    }
}

fn v2_claim_to_v1(c: &Value, with_state: bool, with_all: bool) -> Value {
    let mut out = base_claim(c);
    if with_all && match_all(c) {
        out.insert("all".into(), json!(true));
    }
    if with_state && let Some(s) = c.get("state") {
        out.insert("state".into(), s.clone());
    }
    Value::Object(out)
}

fn binding_to_v1alpha2(mut obj: Value) -> Value {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha2");
    // spec.permissionClaims
    let v1 = claims_at(&obj, "/spec/permissionClaims");
    let overhanging: Vec<Value> = v1
        .iter()
        .filter(|c| c.get("all").and_then(Value::as_bool) != Some(true))
        .cloned()
        .collect();
    if !overhanging.is_empty() {
        put_json(
            &mut obj,
            V1ALPHA1_PERMISSION_CLAIMS,
            &Value::Array(overhanging),
        );
    }
    let mut claims: Vec<Value> = v1.iter().map(|c| v1_claim_to_v2(c, true)).collect();
    restore_v1alpha2_fields(
        &mut claims,
        take_json(&mut obj, ACCEPTABLE_PERMISSION_CLAIMS),
        &["verbs", "selector"],
    );
    set_at(
        &mut obj,
        "/spec",
        "permissionClaims",
        (!claims.is_empty()).then_some(Value::Array(claims)),
    );
    // status.exportPermissionClaims
    let v1 = claims_at(&obj, "/status/exportPermissionClaims");
    if !v1.is_empty() {
        put_json(
            &mut obj,
            STATUS_PERMISSION_CLAIMS_V1ALPHA1,
            &Value::Array(v1.clone()),
        );
        let mut claims: Vec<Value> = v1
            .iter()
            .map(|c| {
                let mut o = base_claim(c);
                o.insert("verbs".into(), json!(["*"]));
                Value::Object(o)
            })
            .collect();
        restore_v1alpha2_fields(
            &mut claims,
            take_json(&mut obj, STATUS_PERMISSION_CLAIMS),
            &["verbs"],
        );
        set_at(
            &mut obj,
            "/status",
            "exportPermissionClaims",
            Some(Value::Array(claims)),
        );
    }
    // status.appliedPermissionClaims
    let v1 = claims_at(&obj, "/status/appliedPermissionClaims");
    if !v1.is_empty() {
        let overhanging: Vec<Value> = v1
            .iter()
            .filter(|c| c.get("resourceSelector").is_some())
            .cloned()
            .collect();
        if !overhanging.is_empty() {
            put_json(
                &mut obj,
                STATUS_APPLIED_CLAIMS_V1ALPHA1,
                &Value::Array(overhanging),
            );
        }
        let mut claims: Vec<Value> = v1.iter().map(|c| v1_claim_to_v2(c, false)).collect();
        restore_v1alpha2_fields(
            &mut claims,
            take_json(&mut obj, STATUS_APPLIED_CLAIMS),
            &["verbs", "selector"],
        );
        set_at(
            &mut obj,
            "/status",
            "appliedPermissionClaims",
            Some(Value::Array(claims)),
        );
    }
    drop_empty_annotations(&mut obj);
    obj
}

fn binding_to_v1alpha1(mut obj: Value) -> Value {
    obj["apiVersion"] = json!("apis.kcp.io/v1alpha1");
    // spec.permissionClaims
    let v2 = claims_at(&obj, "/spec/permissionClaims");
    let overhanging: Vec<Value> = v2
        .iter()
        .filter(|c| !(wildcard_verbs(c) && match_all(c)))
        .cloned()
        .collect();
    if !overhanging.is_empty() {
        put_json(
            &mut obj,
            ACCEPTABLE_PERMISSION_CLAIMS,
            &Value::Array(overhanging),
        );
    }
    let mut claims: Vec<Value> = v2.iter().map(|c| v2_claim_to_v1(c, true, true)).collect();
    restore_v1alpha1_selection(&mut claims, take_json(&mut obj, V1ALPHA1_PERMISSION_CLAIMS));
    set_at(
        &mut obj,
        "/spec",
        "permissionClaims",
        (!claims.is_empty()).then_some(Value::Array(claims)),
    );
    // status.exportPermissionClaims
    let v2 = claims_at(&obj, "/status/exportPermissionClaims");
    if !v2.is_empty() {
        let odd: Vec<Value> = v2.iter().filter(|c| !wildcard_verbs(c)).cloned().collect();
        if !odd.is_empty() {
            put_json(&mut obj, STATUS_PERMISSION_CLAIMS, &Value::Array(odd));
        }
        let mut claims: Vec<Value> = v2.iter().map(|c| v2_claim_to_v1(c, false, false)).collect();
        restore_v1alpha1_selection(
            &mut claims,
            take_json(&mut obj, STATUS_PERMISSION_CLAIMS_V1ALPHA1),
        );
        set_at(
            &mut obj,
            "/status",
            "exportPermissionClaims",
            Some(Value::Array(claims)),
        );
    }
    // status.appliedPermissionClaims
    let v2 = claims_at(&obj, "/status/appliedPermissionClaims");
    if !v2.is_empty() {
        let odd: Vec<Value> = v2
            .iter()
            .filter(|c| !(wildcard_verbs(c) && match_all(c)))
            .cloned()
            .collect();
        if !odd.is_empty() {
            put_json(&mut obj, STATUS_APPLIED_CLAIMS, &Value::Array(odd));
        }
        let mut claims: Vec<Value> = v2.iter().map(|c| v2_claim_to_v1(c, false, true)).collect();
        restore_v1alpha1_selection(
            &mut claims,
            take_json(&mut obj, STATUS_APPLIED_CLAIMS_V1ALPHA1),
        );
        set_at(
            &mut obj,
            "/status",
            "appliedPermissionClaims",
            Some(Value::Array(claims)),
        );
    }
    drop_empty_annotations(&mut obj);
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_v1alpha1_round_trips_through_v1alpha2() {
        let v1 = json!({
            "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
            "metadata": {"name": "cowboys"},
            "spec": {
                "latestResourceSchemas": ["v1.cowboys.wildwest.dev", "v2.configmaps.core"],
                "permissionClaims": [{"group": "", "resource": "secrets", "all": true}]
            }
        });
        let v2 = export_to_v1alpha2(v1.clone());
        assert_eq!(v2["apiVersion"], "apis.kcp.io/v1alpha2");
        assert_eq!(
            v2["spec"]["resources"],
            json!([
                {"group": "wildwest.dev", "name": "cowboys", "schema": "v1.cowboys.wildwest.dev", "storage": {"crd": {}}},
                {"group": "", "name": "configmaps", "schema": "v2.configmaps.core", "storage": {"crd": {}}}
            ])
        );
        assert_eq!(
            v2["spec"]["permissionClaims"],
            json!([{"group": "", "resource": "secrets", "verbs": ["*"]}])
        );
        assert!(
            v2["metadata"]["annotations"][V1ALPHA1_PERMISSION_CLAIMS]
                .as_str()
                .is_some()
        );
        let back = export_to_v1alpha1(v2);
        assert_eq!(back, v1);
    }

    #[test]
    fn export_v1alpha2_verbs_survive_v1alpha1() {
        let v2 = json!({
            "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
            "metadata": {"name": "x"},
            "spec": {
                "resources": [{"group": "a.io", "name": "things", "schema": "v1.things.a.io", "storage": {"crd": {}}}],
                "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": ["get", "list"]}]
            }
        });
        let v1 = export_to_v1alpha1(v2.clone());
        assert_eq!(
            v1["spec"]["latestResourceSchemas"],
            json!(["v1.things.a.io"])
        );
        assert_eq!(
            v1["spec"]["permissionClaims"],
            json!([{"group": "", "resource": "configmaps"}])
        );
        let back = export_to_v1alpha2(v1);
        assert_eq!(back["spec"], v2["spec"]);
        // As in kcp, the v1alpha1 form of the claims is remembered for the next round trip.
        assert!(
            back["metadata"]["annotations"][V1ALPHA1_PERMISSION_CLAIMS]
                .as_str()
                .is_some()
        );
    }

    #[test]
    fn binding_claims_round_trip() {
        let v2 = json!({
            "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
            "metadata": {"name": "b"},
            "spec": {
                "reference": {"export": {"path": "root:p", "name": "e"}},
                "permissionClaims": [
                    {"group": "", "resource": "secrets", "verbs": ["*"], "selector": {"matchAll": true}, "state": "Accepted"},
                    {"group": "", "resource": "configmaps", "verbs": ["get"], "selector": {"matchLabels": {"a": "b"}}, "state": "Accepted"}
                ]
            }
        });
        let v1 = binding_to_v1alpha1(v2.clone());
        assert_eq!(
            v1["spec"]["permissionClaims"],
            json!([
                {"group": "", "resource": "secrets", "all": true, "state": "Accepted"},
                {"group": "", "resource": "configmaps", "state": "Accepted"}
            ])
        );
        let back = binding_to_v1alpha2(v1);
        // The claim v1alpha1 could not express comes back whole; the v1alpha1 form is remembered.
        assert_eq!(
            back["spec"]["permissionClaims"],
            v2["spec"]["permissionClaims"]
        );
    }
}
