//! Validating a CustomResourceDefinition when it is created or updated: the schema rules that
//! make a schema *structural* (`ValidateStructural`), the CRD-specific schema rules
//! (`ValidateCustomResourceDefinitionOpenAPISchema`), defaults (`ValidateDefaults`), CEL rules,
//! and the spec checks around them (group, names, scope, versions) — all with the paths and
//! messages of `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation`.

use serde_json::{Map, Value};

use super::cel;
use super::errors::{BadValue, FieldError, child, go_string_slice, index, key};
use super::objectmeta::{NameRule, dns1035_label, dns1123_subdomain, validate_object_meta};
use super::pattern;
use super::structural::{NodeId, Structural};

/// Where a schema node sits, for `ValidateStructural`'s "type must not be empty" wording.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

fn obj(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn props(m: &Map<String, Value>) -> Option<&Map<String, Value>> {
    m.get("properties").and_then(Value::as_object)
}

fn list<'a>(m: &'a Map<String, Value>, k: &str) -> &'a [Value] {
    m.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn type_invalid_or_required(errs: &mut Vec<FieldError>, path: &str, ty: &str, msg: &str) {
    if ty.is_empty() {
        errs.push(FieldError::required(&child(path, "type"), msg));
    } else {
        errs.push(FieldError::invalid(
            &child(path, "type"),
            BadValue::str(ty),
            msg,
        ));
    }
}

// ---- ValidateStructural ---------------------------------------------------------------------

fn is_int_or_string_any_of(any_of: &[Value]) -> bool {
    any_of.len() == 2
        && any_of[0] == serde_json::json!({"type": "integer"})
        && any_of[1] == serde_json::json!({"type": "string"})
}

/// `validateStructuralInvariants`.
fn invariants(s: &Map<String, Value>, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let ty = str_of(s, "type");
    if ty == "array" && !s.contains_key("items") {
        errs.push(FieldError::required(
            &child(path, "items"),
            "must be specified",
        ));
    }
    if let Some(items) = s.get("items").and_then(obj) {
        invariants(items, Level::Item, &child(path, "items"), errs);
    }
    if let Some(p) = props(s) {
        for (k, v) in p {
            if let Some(v) = obj(v) {
                invariants(v, Level::Field, &key(&child(path, "properties"), k), errs);
            }
        }
    }
    let has_ap = s.get("additionalProperties").is_some_and(|v| !v.is_null());
    if has_ap {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(ap) = s.get("additionalProperties").and_then(obj) {
            invariants(ap, Level::Field, &child(path, "additionalProperties"), errs);
        }
    }
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            &child(path, "x-kubernetes-preserve-unknown-fields"),
            BadValue::Json(Value::Bool(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            &child(path, "x-kubernetes-embedded-resource"),
            BadValue::Json(Value::Bool(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(list(s, "anyOf"));
    let skip_first_all_of_any_of = list(s, "allOf")
        .first()
        .and_then(obj)
        .is_some_and(|a| is_int_or_string_any_of(list(a, "anyOf")));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, lvl, path, errs);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        type_invalid_or_required(
            errs,
            path,
            ty,
            "must be object if x-kubernetes-embedded-resource is true",
        );
    } else if ty.is_empty() && !int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&child(path, "type"), msg));
    }
    if embedded && has_ap {
        errs.push(FieldError::forbidden(
            &child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            &child(path, "type"),
            BadValue::str(ty),
            "must be object at the root",
        ));
    }
    if let Some(p) = props(s) {
        let pp = child(path, "properties");
        if check_metadata {
            for k in ["kind", "apiVersion"] {
                if let Some(f) = p.get(k).and_then(obj) {
                    let t = str_of(f, "type");
                    if t != "string" {
                        errs.push(FieldError::invalid(
                            &child(&key(&pp, k), "type"),
                            BadValue::str(t),
                            "must be string",
                        ));
                    }
                }
            }
        }
        if let Some(meta) = p.get("metadata").and_then(obj) {
            metadata_invariants(meta, check_metadata, lvl, &key(&pp, "metadata"), errs);
        }
    }
    if embedded && !preserve && props(s).is_none_or(Map::is_empty) {
        errs.push(FieldError::required(
            &child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `validateStructuralMetadataInvariants`: the root `metadata` may only restrict `name` and
/// `generateName`.
fn metadata_invariants(
    m: &Map<String, Value>,
    check_metadata: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let ty = str_of(m, "type");
    if check_metadata && ty != "object" {
        errs.push(FieldError::invalid(
            &child(path, "type"),
            BadValue::str(ty),
            "must be object",
        ));
    }
    if lvl == Level::Root {
        let mut rest = m.clone();
        rest.remove("type");
        rest.remove("default");
        if let Some(p) = props(m) {
            let only_names = !p.is_empty() && p.keys().all(|k| k == "name" || k == "generateName");
            if only_names {
                rest.remove("properties");
            }
        }
        if !rest.is_empty() {
            errs.push(FieldError::forbidden(path, "must not specify anything other than name and generateName, but metadata is implicitly specified"));
        }
    }
}

/// `validateValueValidation`: what is nested under allOf/anyOf/oneOf/not.
fn value_validation(
    s: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, a) in list(s, "anyOf").iter().enumerate() {
            if let Some(a) = obj(a) {
                nested(a, false, lvl, &index(&child(path, "anyOf"), i), errs);
            }
        }
    }
    for (i, a) in list(s, "allOf").iter().enumerate() {
        if let Some(a) = obj(a) {
            nested(
                a,
                skip_first_all_of_any_of && i == 0,
                lvl,
                &index(&child(path, "allOf"), i),
                errs,
            );
        }
    }
    for (i, a) in list(s, "oneOf").iter().enumerate() {
        if let Some(a) = obj(a) {
            nested(a, false, lvl, &index(&child(path, "oneOf"), i), errs);
        }
    }
    if let Some(not) = s.get("not").and_then(obj) {
        nested(not, false, lvl, &child(path, "not"), errs);
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str)
        && let Err(e) = pattern::compile(p)
    {
        errs.push(FieldError::invalid(
            &child(path, "pattern"),
            BadValue::str(p),
            format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`.
fn nested(
    v: &Map<String, Value>,
    skip_any_of: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    value_validation(v, skip_any_of, false, lvl, path, errs);
    if let Some(items) = v.get("items").and_then(obj) {
        nested(items, false, lvl, &child(path, "items"), errs);
    }
    if let Some(p) = props(v) {
        for (k, f) in p {
            if let Some(f) = obj(f) {
                nested(
                    f,
                    false,
                    Level::Field,
                    &key(&child(path, "properties"), k),
                    errs,
                );
            }
        }
    }
    let forbid = |errs: &mut Vec<FieldError>, k: &str, msg: &str| {
        errs.push(FieldError::forbidden(&child(path, k), msg))
    };
    if !str_of(v, "type").is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.get("additionalProperties").is_some_and(|a| !a.is_null()) {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.contains_key("default") {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !str_of(v, "title").is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !str_of(v, "description").is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if flag(v, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(v, k) {
            forbid(errs, k, "must be false to be structural");
        }
    }
    if !list(v, "x-kubernetes-list-map-keys").is_empty() {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if v.contains_key(k) {
            forbid(errs, k, "must be undefined to be structural");
        }
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if props(v).is_some_and(|p| p.contains_key("metadata")) {
        errs.push(FieldError::forbidden(
            &key(&child(path, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness` (only the root's value validations, as in kube).
fn completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = v.get("not").and_then(obj) {
        nested_completeness(not, s, s_path, &child(v_path, "not"), errs);
    }
    for kw in ["allOf", "anyOf", "oneOf"] {
        for (i, a) in list(v, kw).iter().enumerate() {
            if let Some(a) = obj(a) {
                nested_completeness(a, s, s_path, &index(&child(v_path, kw), i), errs);
            }
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    completeness(v, Some(s), s_path, v_path, errs);
    if let Some(items) = v.get("items").and_then(obj) {
        nested_completeness(
            items,
            s.get("items").and_then(obj),
            &child(s_path, "items"),
            &child(v_path, "items"),
            errs,
        );
    }
    if let Some(p) = props(v) {
        for (k, vf) in p {
            let Some(vf) = obj(vf) else { continue };
            let sp = key(&child(s_path, "properties"), k);
            let vp = key(&child(v_path, "properties"), k);
            match props(s).and_then(|sp| sp.get(k)).and_then(obj) {
                None => errs.push(FieldError::required(
                    &sp,
                    format!("because it is defined in {vp}"),
                )),
                Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, errs),
            }
        }
    }
}

// ---- ValidateCustomResourceDefinitionOpenAPISchema -----------------------------------------

#[derive(Clone)]
struct Ctx {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
    /// The path above which `oldSelf` cannot be correlated, if any.
    forbid_old_self: Option<String>,
}

impl Ctx {
    fn forbid_defaults(&self, reason: &str) -> Ctx {
        Ctx {
            allow_defaults: false,
            disallow_reason: reason.to_string(),
            ..self.clone()
        }
    }

    fn forbid_old_self(&self, path: &str) -> Ctx {
        if self.forbid_old_self.is_some() {
            return self.clone();
        }
        Ctx {
            forbid_old_self: Some(path.to_string()),
            ..self.clone()
        }
    }
}

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// `specStandardValidatorV3.validate`.
fn standard(s: &Map<String, Value>, path: &str, ctx: &Ctx, errs: &mut Vec<FieldError>) {
    let ty = str_of(s, "type");
    if !ty.is_empty() && !OPENAPI_V3_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            &child(path, "type"),
            BadValue::str(ty),
            &OPENAPI_V3_TYPES,
        ));
    }
    if s.contains_key("default") && !ctx.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ctx.disallow_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ctx.disallow_reason);
        }
        errs.push(FieldError::forbidden(&child(path, "default"), detail));
    }
    let forbid = |errs: &mut Vec<FieldError>, k: &str, msg: &str| {
        errs.push(FieldError::forbidden(&child(path, k), msg))
    };
    if !str_of(s, "id").is_empty() {
        forbid(errs, "id", "id is not supported");
    }
    if s.get("additionalItems").is_some_and(|v| !v.is_null()) {
        forbid(errs, "additionalItems", "additionalItems is not supported");
    }
    if s.get("patternProperties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        forbid(
            errs,
            "patternProperties",
            "patternProperties is not supported",
        );
    }
    if s.get("definitions")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        forbid(errs, "definitions", "definitions is not supported");
    }
    if s.get("dependencies").is_some_and(|v| !v.is_null()) {
        forbid(errs, "dependencies", "dependencies is not supported");
    }
    if s.get("$ref").is_some_and(|v| !v.is_null()) {
        forbid(errs, "$ref", "$ref is not supported");
    }
    if ty == "null" {
        forbid(
            errs,
            "type",
            "type cannot be set to null, use nullable as an alternative",
        );
    }
    if s.get("items")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        forbid(
            errs,
            "items",
            "items must be a schema object and not an array",
        );
    }
    if ctx.inside_meta && flag(s, "x-kubernetes-embedded-resource") {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must not be used inside of resource meta",
        );
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema`. `cel` is false where kube has no CEL
/// context (inside allOf/anyOf/oneOf/not), or when the schema is not structural.
fn openapi_schema(
    s: &Map<String, Value>,
    path: &str,
    ctx: &Ctx,
    is_root: bool,
    cel: bool,
    errs: &mut Vec<FieldError>,
) {
    let before = errs.len();
    standard(s, path, ctx, errs);
    if flag(s, "uniqueItems") {
        errs.push(FieldError::forbidden(
            &child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let has_props = props(s).is_some_and(|p| !p.is_empty());
    if let Some(ap) = s.get("additionalProperties").filter(|v| !v.is_null()) {
        if has_props && (ap == &Value::Bool(false) || ap.is_object()) {
            errs.push(FieldError::forbidden(
                &child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ctx.inside_meta {
            ctx.forbid_defaults("inside additionalProperties applying to object metadata")
        } else {
            ctx.clone()
        };
        if let Some(ap) = obj(ap) {
            openapi_schema(
                ap,
                &child(path, "additionalProperties"),
                &sub,
                false,
                cel,
                errs,
            );
        }
    }
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if let Some(p) = props(s) {
        for (k, v) in p {
            let Some(v) = obj(v) else { continue };
            let mut sub = ctx.clone();
            if s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                sub = sub.forbid_old_self(path);
            }
            if (is_root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
                sub.inside_meta = true;
                if is_root {
                    sub = sub.forbid_defaults(&format!("in top-level {k}"));
                }
            }
            openapi_schema(
                v,
                &key(&child(path, "properties"), k),
                &sub,
                false,
                cel,
                errs,
            );
        }
    }
    if let Some(not) = s.get("not").and_then(obj) {
        openapi_schema(not, &child(path, "not"), ctx, false, false, errs);
    }
    for kw in ["allOf", "oneOf", "anyOf"] {
        for (i, a) in list(s, kw).iter().enumerate() {
            if let Some(a) = obj(a) {
                openapi_schema(a, &index(&child(path, kw), i), ctx, false, false, errs);
            }
        }
    }
    if let Some(defs) = s.get("definitions").and_then(Value::as_object) {
        for (k, d) in defs {
            if let Some(d) = obj(d) {
                openapi_schema(
                    d,
                    &key(&child(path, "definitions"), k),
                    ctx,
                    false,
                    false,
                    errs,
                );
            }
        }
    }
    let list_type = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    if let Some(items) = s.get("items").and_then(obj) {
        let sub = if list_type != Some("map") {
            ctx.forbid_old_self(path)
        } else {
            ctx.clone()
        };
        openapi_schema(items, &child(path, "items"), &sub, false, cel, errs);
    }
    let ty = str_of(s, "type");
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            &child(path, "x-kubernetes-preserve-unknown-fields"),
            BadValue::Json(Value::Bool(false)),
            "must be true or undefined",
        ));
    }
    if let Some(mt) = s.get("x-kubernetes-map-type").and_then(Value::as_str) {
        if ty != "object" {
            type_invalid_or_required(
                errs,
                path,
                ty,
                "must be object if x-kubernetes-map-type is specified",
            );
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                &child(path, "x-kubernetes-map-type"),
                BadValue::str(mt),
                &["atomic", "granular"],
            ));
        }
    }
    let items = s.get("items").and_then(obj);
    if let Some(lt) = list_type {
        if ty != "array" {
            type_invalid_or_required(
                errs,
                path,
                ty,
                "must be array if x-kubernetes-list-type is specified",
            );
        } else if lt == "set"
            && let Some(is) = items
        {
            match str_of(is, "type") {
                "array" => {
                    if let Some(ilt) = is.get("x-kubernetes-list-type").and_then(Value::as_str)
                        && ilt != "atomic"
                    {
                        errs.push(FieldError::invalid(
                            &child(&child(path, "items"), "x-kubernetes-list-type"),
                            BadValue::str(ilt),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                // kube passes the items' list type as the value, which is unset for objects.
                "object"
                    if is.get("x-kubernetes-map-type").and_then(Value::as_str)
                        != Some("atomic") =>
                {
                    errs.push(FieldError::invalid(
                        &child(&child(path, "items"), "x-kubernetes-map-type"),
                        BadValue::Json(Value::Null),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                _ => {}
            }
        }
        if !matches!(lt, "atomic" | "set" | "map") {
            errs.push(FieldError::not_supported(
                &child(path, "x-kubernetes-list-type"),
                BadValue::str(lt),
                &["atomic", "set", "map"],
            ));
        }
    }
    let map_keys: Vec<String> = list(s, "x-kubernetes-list-map-keys")
        .iter()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    if !map_keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                &child(path, "x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                &child(path, "x-kubernetes-list-type"),
                BadValue::str(lt),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if map_keys.is_empty() {
            errs.push(FieldError::required(
                &child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match s.get("items") {
            None | Some(Value::Null) => errs.push(FieldError::required(
                &child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Value::Array(a)) => errs.push(FieldError::invalid(
                &child(path, "items"),
                BadValue::Json(Value::Array(a.clone())),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            _ => {}
        }
        if let Some(is) = items {
            let ity = str_of(is, "type");
            if ity != "object" {
                errs.push(FieldError::invalid(
                    &child(&child(path, "items"), "type"),
                    BadValue::str(ity),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let mut seen = std::collections::HashSet::new();
                for k in &map_keys {
                    match props(is).and_then(|p| p.get(k)).and_then(obj) {
                        Some(kp) => {
                            if matches!(str_of(kp, "type"), "array" | "object") {
                                errs.push(FieldError::invalid(
                                    &child(&key(&child(&child(path, "items"), "properties"), k), "type"),
                                    BadValue::str(ity),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldError::invalid(
                            &child(path, "x-kubernetes-list-map-keys"),
                            BadValue::Rendered(go_string_slice(&map_keys)),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(k.clone()) {
                        errs.push(FieldError::invalid(
                            &child(path, "x-kubernetes-list-map-keys"),
                            BadValue::Rendered(go_string_slice(&map_keys)),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    // validateMapListKeysMapSet
    if let (Some(is), Some(lt @ ("set" | "map"))) = (items, list_type) {
        if flag(is, "nullable") {
            errs.push(FieldError::forbidden(
                &child(&child(path, "items"), "nullable"),
                format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required: Vec<&str> = list(is, "required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for k in &map_keys {
                let Some(kp) = props(is).and_then(|p| p.get(k)).and_then(obj) else {
                    continue;
                };
                let kpath = key(&child(&child(path, "items"), "properties"), k);
                if !required.contains(&k.as_str()) && !kp.contains_key("default") {
                    errs.push(FieldError::required(
                        &child(&kpath, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if flag(kp, "nullable") {
                    errs.push(FieldError::forbidden(
                        &child(&kpath, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
    if let Some(raw) = s
        .get("x-kubernetes-validations")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    {
        let vpath = child(path, "x-kubernetes-validations");
        // Schema errors at this level or below suppress CEL compilation, as in kube.
        if cel && errs.len() == before {
            let mut cel_errs = Vec::new();
            let _ = cel::compile_rules(raw, &vpath, &mut cel_errs);
            errs.extend(cel_errs);
            if let Some(uncorrelatable) = &ctx.forbid_old_self {
                for (i, r) in raw.as_array().into_iter().flatten().enumerate() {
                    let rule = r.get("rule").and_then(Value::as_str).unwrap_or("");
                    if kube_cel::cel::Program::compile(rule)
                        .is_ok_and(|p| p.references().has_variable("oldSelf"))
                    {
                        errs.push(FieldError::invalid(
                            &child(&index(&vpath, i), "rule"),
                            BadValue::str(rule),
                            format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {uncorrelatable}"),
                        ));
                    }
                }
            }
        } else if !cel {
            // Only the rule texts are checked where kube has no CEL context.
            let mut cel_errs = Vec::new();
            let _ = cel::compile_rules(raw, &vpath, &mut cel_errs);
            errs.extend(cel_errs.into_iter().filter(|e| {
                !e.detail.starts_with("compilation failed")
                    && !e.detail.starts_with("messageExpression compilation failed")
            }));
        }
    }
}

// ---- ValidateDefaults -------------------------------------------------------------------------

/// `ValidateDefaults`: every `default` must validate against its own schema (and its rules) and
/// must not contain fields pruning would remove. `inside_meta` marks values under the root's
/// `metadata`, `apiVersion`, `kind`, where defaults are forbidden anyway.
fn validate_defaults(
    st: &Structural,
    id: NodeId,
    raw: &Map<String, Value>,
    path: &str,
    inside_meta: bool,
    errs: &mut Vec<FieldError>,
) {
    let node = st.node(id);
    if let Some(d) = &node.default
        && !inside_meta
    {
        let dpath = child(path, "default");
        let mut pruned = d.clone();
        let _ = st.prune_value(id, &mut pruned);
        if &pruned != d {
            errs.push(FieldError::invalid(
                &dpath,
                BadValue::Json(d.clone()),
                "must not have unknown fields",
            ));
        } else {
            let e = st.validate_openapi_at(id, d, None, &dpath);
            if e.is_empty() {
                let mut cel_errs = Vec::new();
                super::cel::eval_node(st, id, d, None, &dpath, node.embedded, false, &mut cel_errs);
                errs.extend(cel_errs);
            }
            errs.extend(e);
        }
    }
    if let (Some(items), Some(raw_items)) = (node.items, raw.get("items").and_then(obj)) {
        validate_defaults(
            st,
            items,
            raw_items,
            &child(path, "items"),
            inside_meta,
            errs,
        );
    }
    if let Some(p) = props(raw) {
        for (k, v) in p {
            let (Some(c), Some(v)) = (node.property(k), obj(v)) else {
                continue;
            };
            let meta = inside_meta
                || (path.ends_with("openAPIV3Schema")
                    && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
            validate_defaults(st, c, v, &key(&child(path, "properties"), k), meta, errs);
        }
    }
}

impl Structural {
    /// Checks a CRD version's `openAPIV3Schema` the way kube-apiserver does when the CRD is
    /// created or updated, and compiles it. `base` is the path of the version's `schema`
    /// (`spec.versions[0].schema`); errors are reported below it
    /// (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: …`).
    pub fn compile_crd_schema(schema: &Value, base: &str) -> Result<Structural, Vec<FieldError>> {
        let path = child(base, "openAPIV3Schema");
        let Some(root) = schema.as_object() else {
            return Err(vec![FieldError::invalid(
                &path,
                BadValue::Json(schema.clone()),
                "must be a schema object",
            )]);
        };
        let mut errs = Vec::new();
        if flag(root, "nullable") {
            errs.push(FieldError::forbidden(
                &child(base, "openAPIV3Schema.nullable"),
                "nullable cannot be true at the root",
            ));
        }
        let mut structural = Vec::new();
        invariants(root, Level::Root, &path, &mut structural);
        completeness(root, Some(root), &path, &path, &mut structural);
        structural.sort_by_key(ToString::to_string);
        let structural_ok = structural.is_empty();
        errs.extend(structural);
        let ctx = Ctx {
            allow_defaults: true,
            disallow_reason: String::new(),
            inside_meta: false,
            forbid_old_self: None,
        };
        openapi_schema(root, &path, &ctx, true, structural_ok, &mut errs);
        if !errs.is_empty() {
            return Err(errs);
        }
        let compiled = match Structural::compile(schema) {
            Ok(s) => s,
            Err(e) => {
                return Err(e
                    .errors
                    .into_iter()
                    .map(|mut f| {
                        f.field = if f.field == "<nil>" {
                            path.clone()
                        } else {
                            format!("{path}.{}", f.field)
                        };
                        f
                    })
                    .collect());
            }
        };
        validate_defaults(&compiled, compiled.root, root, &path, false, &mut errs);
        if errs.is_empty() {
            Ok(compiled)
        } else {
            Err(errs)
        }
    }
}

// ---- the CRD object -------------------------------------------------------------------------------

fn dns1035(errs: &mut Vec<FieldError>, path: &str, v: &str) {
    let e = dns1035_label(v);
    if !e.is_empty() {
        errs.push(FieldError::invalid(path, BadValue::str(v), e.join(",")));
    }
}

fn dns1035_mixed_case(errs: &mut Vec<FieldError>, path: &str, v: &str) {
    let e = dns1035_label(&v.to_lowercase());
    if !v.is_empty() && !e.is_empty() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(v),
            format!(
                "may have mixed case, but should otherwise match: {}",
                e.join(",")
            ),
        ));
    }
}

/// Go's `%#v` of the version list is long and unstable; a compact stand-in shows the names.
fn versions_value(versions: &[Value]) -> BadValue {
    let names: Vec<String> = versions
        .iter()
        .map(|v| {
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, …}}",
                super::errors::go_quote(v.get("name").and_then(Value::as_str).unwrap_or("")),
                v.get("served").and_then(Value::as_bool).unwrap_or(false),
                v.get("storage").and_then(Value::as_bool).unwrap_or(false)
            )
        })
        .collect();
    BadValue::Rendered(format!(
        "[]apiextensions.CustomResourceDefinitionVersion{{{}}}",
        names.join(", ")
    ))
}

/// Validates an `apiextensions.k8s.io/v1` CustomResourceDefinition as kube-apiserver does on
/// create: metadata name (`<plural>.<group>`), group, scope, names, versions (unique DNS-1035
/// names, exactly one storage version, a schema for each) and every version's schema
/// ([`Structural::compile_crd_schema`]). Returns the errors for a 422 `Invalid`; empty when the
/// CRD is acceptable.
pub(crate) fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Map::new();
    let spec = crd.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let names = spec
        .get("names")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let group = str_of(spec, "group");
    let plural = str_of(names, "plural");
    let required_name = format!("{plural}.{group}");
    if let Some(meta) = crd.get("metadata").and_then(Value::as_object) {
        errs.extend(validate_object_meta(
            meta,
            false,
            NameRule::DnsSubdomain,
            "metadata",
        ));
        let name = str_of(meta, "name");
        if !name.is_empty() && name != required_name {
            errs.push(FieldError::invalid(
                "metadata.name",
                BadValue::str(name),
                "must be spec.names.plural+\".\"+spec.group",
            ));
        }
    } else {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let e = dns1123_subdomain(group);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                "spec.group",
                BadValue::str(group),
                e.join(","),
            ));
        } else if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                "spec.group",
                BadValue::str(group),
                "should be a domain with at least one dot",
            ));
        }
    }
    match str_of(spec, "scope") {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            BadValue::str(other),
            &["Cluster", "Namespaced"],
        )),
    }
    if spec.get("preserveUnknownFields") == Some(&Value::Bool(true)) {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            BadValue::Json(Value::Bool(true)),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    let versions = list(spec, "versions");
    let mut storage = 0;
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let vpath = index("spec.versions", i);
        let v = v.as_object().unwrap_or(&empty);
        let name = str_of(v, "name");
        if flag(v, "storage") {
            storage += 1;
        }
        if !seen.insert(name.to_string()) {
            unique = false;
        }
        dns1035(&mut errs, &child(&vpath, "name"), name);
        match v.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            None | Some(Value::Null) => {
                errs.push(FieldError::required(
                    &child(&child(&vpath, "schema"), "openAPIV3Schema"),
                    "schemas are required",
                ));
            }
            Some(schema) => {
                if let Err(e) = Structural::compile_crd_schema(schema, &child(&vpath, "schema")) {
                    errs.extend(e);
                }
            }
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value(versions),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value(versions),
            "must have exactly one version marked as storage version",
        ));
    }
    for k in ["plural", "singular", "kind", "listKind"] {
        if str_of(names, k).is_empty() {
            errs.push(FieldError::required(&format!("spec.names.{k}"), ""));
        }
    }
    if !plural.is_empty() {
        dns1035(&mut errs, "spec.names.plural", plural);
    }
    let singular = str_of(names, "singular");
    if !singular.is_empty() {
        dns1035(&mut errs, "spec.names.singular", singular);
    }
    let kind = str_of(names, "kind");
    let list_kind = str_of(names, "listKind");
    dns1035_mixed_case(&mut errs, "spec.names.kind", kind);
    dns1035_mixed_case(&mut errs, "spec.names.listKind", list_kind);
    for (i, s) in list(names, "shortNames")
        .iter()
        .filter_map(Value::as_str)
        .enumerate()
    {
        dns1035(&mut errs, &index("spec.names.shortNames", i), s);
    }
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid(
            "spec.names.listKind",
            BadValue::str(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in list(names, "categories")
        .iter()
        .filter_map(Value::as_str)
        .enumerate()
    {
        dns1035(&mut errs, &index("spec.names.categories", i), c);
    }
    validate_conversion(spec, &mut errs);
    errs
}

/// `spec.conversion` (apiextensions `validation.go` `validateCustomResourceConversion`). Kube
/// validates the internal type, whose `webhookClientConfig` and `conversionReviewVersions` sit
/// directly under `conversion` where v1 has `webhook.clientConfig` and
/// `webhook.conversionReviewVersions`: the errors name the internal paths, as kube's do.
fn validate_conversion(spec: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    let Some(conversion) = spec.get("conversion").and_then(Value::as_object) else {
        return;
    };
    let strategy = str_of(conversion, "strategy");
    match strategy {
        "" => errs.push(FieldError::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(
            "spec.conversion.strategy",
            BadValue::str(other),
            &["None", "Webhook"],
        )),
    }
    let webhook = conversion.get("webhook").and_then(Value::as_object);
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .and_then(Value::as_object);
    let review_versions = webhook.map_or(&[][..], |w| list(w, "conversionReviewVersions"));
    const CLIENT_CONFIG: &str = "spec.conversion.webhookClientConfig";
    const REVIEW_VERSIONS: &str = "spec.conversion.conversionReviewVersions";
    if strategy != "Webhook" {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                CLIENT_CONFIG,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                REVIEW_VERSIONS,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return;
    }
    match client_config {
        None => errs.push(FieldError::required(
            CLIENT_CONFIG,
            "required when strategy is set to Webhook",
        )),
        Some(cc) => {
            let url = cc.get("url").and_then(Value::as_str);
            let service = cc.get("service").and_then(Value::as_object);
            match (url, service) {
                (Some(url), None) => validate_webhook_url(&child(CLIENT_CONFIG, "url"), url, errs),
                (None, Some(svc)) => {
                    validate_webhook_service(&child(CLIENT_CONFIG, "service"), svc, errs)
                }
                _ => errs.push(FieldError::required(
                    CLIENT_CONFIG,
                    "exactly one of url or service is required",
                )),
            }
            if let Some(bundle) = cc.get("caBundle").and_then(Value::as_str)
                && !bundle.is_empty()
                && let Err(e) = check_ca_bundle(bundle)
            {
                errs.push(FieldError::invalid(
                    &child(CLIENT_CONFIG, "caBundle"),
                    // Go marshals the []byte to JSON: its base64, quoted.
                    BadValue::Rendered(Value::String(bundle.to_string()).to_string()),
                    e,
                ));
            }
        }
    }
    validate_review_versions(review_versions, REVIEW_VERSIONS, errs);
}

/// apiserver `util/webhook/validation.go` `ValidateWebhookURL` (https only).
fn validate_webhook_url(path: &str, url: &str, errs: &mut Vec<FieldError>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, after) = match rest.find(['/', '?', '#']) {
        Some(i) if !url.contains("://") => ("", &rest[i..]),
        Some(i) => (&rest[..i], &rest[i..]),
        None if !url.contains("://") => ("", rest),
        None => (rest, ""),
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (before_fragment, fragment) = after.split_once('#').unwrap_or((after, ""));
    let query = before_fragment.split_once('?').map_or("", |(_, q)| q);
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(scheme),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(host),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// apiserver `util/webhook/validation.go` `ValidateWebhookService` (the port defaults to 443).
fn validate_webhook_service(path: &str, svc: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    if str_of(svc, "name").is_empty() {
        errs.push(FieldError::required(&child(path, "name"), ""));
    }
    if str_of(svc, "namespace").is_empty() {
        errs.push(FieldError::required(&child(path, "namespace"), ""));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &child(path, "port"),
            BadValue::Json(port.into()),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = svc.get("path").and_then(Value::as_str) else {
        return;
    };
    let path_field = child(path, "path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &path_field,
            BadValue::str(url_path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(
            &path_field,
            BadValue::str(url_path),
            "must start with a '/'",
        ));
    }
    let check = url_path.get(1..).unwrap_or_default();
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &path_field,
                BadValue::str(url_path),
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &path_field,
                BadValue::str(url_path),
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

/// client-go's check of a CA bundle (`transport.TLSConfigFor`): PEM with at least one
/// certificate.
fn check_ca_bundle(bundle_base64: &str) -> Result<(), String> {
    use base64::Engine;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    const PREFIX: &str = "unable to load root certificates";
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(bundle_base64) else {
        return Err(format!("{PREFIX}: unable to parse bytes as PEM block"));
    };
    let certs: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|_| format!("{PREFIX}: unable to parse bytes as PEM block"))?;
    if certs.is_empty() {
        return Err(format!("{PREFIX}: unable to parse bytes as PEM block"));
    }
    for c in &certs {
        if x509_parser::parse_x509_certificate(c).is_err() {
            return Err(format!(
                "{PREFIX}: failed to parse certificate: x509: malformed certificate"
            ));
        }
    }
    Ok(())
}

/// apiextensions `validation.go` `validateConversionReviewVersions`, for a new CRD (a
/// recognised version required).
fn validate_review_versions(versions: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    if versions.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or_default();
        if !seen.insert(v) {
            errs.push(FieldError::invalid(
                &index(path, i),
                BadValue::str(v),
                "duplicate version",
            ));
            continue;
        }
        for e in dns1035_label(v) {
            errs.push(FieldError::invalid(&index(path, i), BadValue::str(v), e));
        }
        accepted |= crate::convert::webhook::SUPPORTED_REVIEW_VERSIONS.contains(&v);
    }
    if !accepted {
        errs.push(FieldError::invalid(
            path,
            // Go marshals the []string to JSON.
            BadValue::Rendered(Value::from(versions.to_vec()).to_string()),
            "must include at least one of v1, v1beta1",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value) -> Vec<String> {
        match Structural::compile_crd_schema(&schema, "spec.versions[0].schema") {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(ToString::to_string).collect(),
        }
    }

    const P: &str = "spec.versions[0].schema.openAPIV3Schema";

    #[test]
    fn structural_schema_passes() {
        assert!(check(json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "free": {"x-kubernetes-preserve-unknown-fields": true},
                    "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                    "replicas": {"type": "integer", "default": 1, "minimum": 0},
                    "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'"}]}
                }}
            }
        }))
        .is_empty());
    }

    #[test]
    fn missing_types_are_not_structural() {
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}, "list": {"type": "array"}}})
            ),
            [
                format!("{P}.properties[list].items: Required value: must be specified"),
                format!(
                    "{P}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
            ]
        );
        assert_eq!(
            check(json!({"properties": {}})),
            [format!(
                "{P}.type: Required value: must not be empty at the root"
            )]
        );
        assert_eq!(
            check(json!({"type": "string"})),
            [format!(
                "{P}.type: Invalid value: \"string\": must be object at the root"
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"l": {"type": "array", "items": {"nullable": true}}}})
            ),
            [format!(
                "{P}.properties[l].items.type: Required value: must not be empty for specified array items"
            )]
        );
    }

    #[test]
    fn value_validations_must_not_carry_structure() {
        let e = check(
            json!({"type": "object", "properties": {"spec": {"type": "object", "anyOf": [{"type": "object", "description": "d", "properties": {"metadata": {}}}]}}}),
        );
        assert_eq!(
            e,
            [
                format!(
                    "{P}.properties[spec].anyOf[0].description: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{P}.properties[spec].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"
                ),
                format!(
                    "{P}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"
                ),
            ]
        );
        assert_eq!(
            check(json!({"type": "object", "anyOf": [{"properties": {"x": {}}}]})),
            [format!(
                "{P}.properties[x]: Required value: because it is defined in {P}.anyOf[0].properties[x]"
            )]
        );
    }

    #[test]
    fn metadata_may_only_restrict_names() {
        assert!(check(json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}})).is_empty());
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}})
            ),
            [format!(
                "{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}})
            ),
            [format!(
                "{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
            )]
        );
    }

    #[test]
    fn crd_specific_rules() {
        assert_eq!(
            check(json!({"type": "object", "nullable": true})),
            [
                "spec.versions[0].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root"
            ]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}})
            ),
            [format!(
                "{P}.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}})
            ),
            [format!(
                "{P}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"x": {"type": "string", "x-kubernetes-preserve-unknown-fields": false}}})
            ),
            [format!(
                "{P}.properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            )]
        );
        assert_eq!(
            check(json!({"type": "object", "properties": {"x": {"type": "null"}}})),
            [
                format!(
                    "{P}.properties[x].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
                ),
                format!(
                    "{P}.properties[x].type: Forbidden: type cannot be set to null, use nullable as an alternative"
                ),
            ]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"x": {"type": "string", "$ref": "#/definitions/y"}}})
            ),
            [format!(
                "{P}.properties[x].$ref: Forbidden: $ref is not supported"
            )]
        );
        assert_eq!(
            check(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            [format!(
                "{P}.additionalProperties: Forbidden: must not be used at the root"
            )]
        );
    }

    #[test]
    fn list_map_rules() {
        let e = check(json!({"type": "object", "properties": {
            "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "b": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "missing"],
                  "items": {"type": "object", "properties": {"k": {"type": "object"}}}},
            "c": {"type": "string", "x-kubernetes-list-type": "set"},
            "d": {"type": "array", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "string"}},
            "e": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                  "items": {"type": "object", "properties": {"k": {"type": "string", "nullable": true}}}}
        }}));
        assert_eq!(
            e,
            [
                format!(
                    "{P}.properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                ),
                format!(
                    "{P}.properties[b].items.properties[k].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"
                ),
                format!(
                    "{P}.properties[b].x-kubernetes-list-map-keys: Invalid value: []string{{\"k\", \"missing\"}}: entries must all be names of item properties"
                ),
                format!(
                    "{P}.properties[b].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    "{P}.properties[c].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
                ),
                format!(
                    "{P}.properties[d].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
                ),
                format!(
                    "{P}.properties[e].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    "{P}.properties[e].items.properties[k].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
                ),
            ]
        );
    }

    #[test]
    fn defaults_must_validate_and_be_pruned() {
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"r": {"type": "integer", "default": "one"}}})
            ),
            [format!(
                "{P}.properties[r].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": 1}}}})
            ),
            [format!(
                "{P}.properties[o].default: Invalid value: map[string]interface {{}}{{\"b\":1}}: must not have unknown fields"
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"o": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}, "default": {}}}})
            ),
            [format!("{P}.properties[o].default.a: Required value")]
        );
    }

    #[test]
    fn cel_rules_are_compiled_and_checked() {
        let e = check(
            json!({"type": "object", "properties": {"x": {"type": "string", "x-kubernetes-validations": [{"rule": "self ==", "message": "m"}]}}}),
        );
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with(&format!("{P}.properties[x].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self ==\"")), "{e:?}");
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}})
            ),
            [format!(
                "{P}.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {P}.properties[l]"
            )]
        );
        assert_eq!(
            check(
                json!({"type": "object", "allOf": [{"x-kubernetes-validations": [{"rule": "true"}]}]})
            ),
            [format!(
                "{P}.allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural"
            )]
        );
    }

    fn crd(spec_patch: Value) -> Value {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.io"},
            "spec": {
                "group": "example.io", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]
            }
        });
        if let (Some(spec), Some(patch)) = (crd["spec"].as_object_mut(), spec_patch.as_object()) {
            for (k, v) in patch {
                spec.insert(k.clone(), v.clone());
            }
        }
        crd
    }

    #[test]
    fn crd_object_rules() {
        assert!(validate_crd(&crd(json!({}))).is_empty());
        let e: Vec<String> = validate_crd(&crd(json!({"group": "example", "scope": "Global"})))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(e.contains(&"metadata.name: Invalid value: \"widgets.example.io\": must be spec.names.plural+\".\"+spec.group".to_string()), "{e:?}");
        assert!(
            e.contains(
                &"spec.group: Invalid value: \"example\": should be a domain with at least one dot"
                    .to_string()
            ),
            "{e:?}"
        );
        assert!(e.contains(&"spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".to_string()), "{e:?}");
        let e: Vec<String> = validate_crd(&crd(json!({"versions": [
            {"name": "V1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "served": true, "storage": false}
        ]})))
        .iter()
        .map(ToString::to_string)
        .collect();
        assert!(
            e[0].starts_with(
                "spec.versions[0].name: Invalid value: \"V1\": a lowercase RFC 1035 label"
            ),
            "{e:?}"
        );
        assert_eq!(
            e[1],
            "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required"
        );
        assert!(
            e[2].ends_with("must have exactly one version marked as storage version"),
            "{e:?}"
        );
    }
}
