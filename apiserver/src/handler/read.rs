//! get and list.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use super::negotiate::Output;
use super::response::{Body, bytes_response, value_response};
use super::table::{self, Include};
use super::{ClusterScope, Ctx};
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector, field_of};
use crate::store::{ObjKey, StoredObject};

/// Answers one object in the negotiated representation.
pub(crate) fn object_response(
    cx: &Ctx<'_>,
    code: u16,
    obj: &StoredObject,
) -> ApiResult<Response<Body>> {
    Ok(match cx.output {
        Output::Table => {
            let v = convert::served_value(&cx.info, obj)?;
            let rv = obj.rv.to_string();
            value_response(
                code,
                &table::table(
                    &cx.info,
                    &[v],
                    Include::parse(cx.query.get("includeObject")),
                    &rv,
                    None,
                    true,
                ),
                Output::Json,
            )
        }
        Output::Metadata | Output::MetadataProtobuf => value_response(
            code,
            &table::partial_metadata(&convert::served_value(&cx.info, obj)?),
            cx.output,
        ),
        out => bytes_response(code, convert::served_bytes(&cx.info, obj)?, out),
    })
}

/// GET of one object or of a subresource.
pub(crate) fn get(cx: &Ctx<'_>) -> ApiResult<Response<Body>> {
    let cluster = cx.cluster()?;
    let api = cx.target.shard.api(cluster);
    let obj = api.get(&cx.info, cx.namespace(), &cx.ri.name)?;
    check_visible(cx, &obj)?;
    match cx.ri.subresource.as_str() {
        "" => object_response(cx, 200, &obj),
        "status" if cx.info.status => object_response(cx, 200, &obj),
        "scale" if cx.info.scale.is_some() => Ok(value_response(
            200,
            &scale_of(&cx.info, &convert::served_value(&cx.info, &obj)?),
            cx.output,
        )),
        // A custom resource's handler answers a subresource its CRD does not declare as if the
        // object were missing.
        _ if cx.info.strategy == crate::registry::Strategy::Custom => Err(ApiError::not_found(
            &cx.info.group,
            &cx.info.resource,
            &cx.ri.name,
        )),
        _ => Err(ApiError::no_route()),
    }
}

/// 404 for an object the surface hides from the caller (as if it did not exist).
pub(crate) fn check_visible(cx: &Ctx<'_>, obj: &StoredObject) -> ApiResult<()> {
    match cx.target.surface.filter(cx.target, &cx.info) {
        Some(f) if !f(obj) => Err(ApiError::not_found(
            &cx.info.group,
            &cx.info.resource,
            &cx.ri.name,
        )),
        _ => Ok(()),
    }
}

/// The `autoscaling/v1` Scale of an object.
pub(crate) fn scale_of(info: &ResourceInfo, v: &Value) -> Value {
    let Some(sc) = &info.scale else {
        return Value::Null;
    };
    let at = |p: &str| crate::jsonpath::find(v, p).into_iter().next().cloned();
    let mut meta = json!({});
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(x) = v.pointer(&format!("/metadata/{f}")) {
            meta[f] = x.clone();
        }
    }
    let mut status = json!({"replicas": at(&sc.status_replicas).unwrap_or(json!(0))});
    if let Some(sel) = sc.label_selector.as_deref().and_then(at) {
        status["selector"] = sel;
    } else if info.group == "apps"
        && let Some(ml) = v
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
    {
        let s: Vec<String> = ml
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        status["selector"] = json!(s.join(","));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": at(&sc.spec_replicas).unwrap_or(json!(0))},
        "status": status,
    })
}

/// Parsed selectors of a list or watch, plus what the surface lets the caller see.
pub(crate) struct Selectors {
    pub label: LabelSelector,
    pub field: FieldSelector,
    pub visible: Option<super::ObjectFilter>,
}

impl Selectors {
    pub(super) fn parse(cx: &Ctx<'_>) -> ApiResult<Self> {
        let label = LabelSelector::parse(cx.query.get("labelSelector").unwrap_or(""))?;
        let allowed: Vec<&str> = cx.info.field_selectors.iter().map(String::as_str).collect();
        let field = FieldSelector::parse(cx.query.get("fieldSelector").unwrap_or(""), &allowed)?;
        let visible = cx.target.surface.filter(cx.target, &cx.info);
        Ok(Selectors {
            label,
            field,
            visible,
        })
    }

    /// Does a stored object match both selectors (and may the caller see it)? Fails only when
    /// a field selector needs the object in the served version and converting it fails.
    pub(super) fn matches(&self, info: &ResourceInfo, o: &StoredObject) -> ApiResult<bool> {
        if self.visible.as_ref().is_some_and(|f| !f(o)) {
            return Ok(false);
        }
        if !self.label.matches(|k| o.label(k)) {
            return Ok(false);
        }
        if self.field.is_empty() {
            return Ok(true);
        }
        if self.field.only_metadata() {
            return Ok(self.field.matches(|f| match f {
                "metadata.name" => o.key.name.to_string(),
                "metadata.namespace" => o.key.namespace.to_string(),
                _ => String::new(),
            }));
        }
        let v = convert::served_value(info, o)?;
        Ok(self.field.matches(|f| field_of(&v, f)))
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    c: String,
    ns: String,
    n: String,
}

fn decode_continue(s: &str) -> ApiResult<ContinueToken> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| ApiError::bad_request("continue key is not valid: illegal base64 data"))?;
    serde_json::from_slice(&bytes).map_err(|_| ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))
}

fn encode_continue(t: &ContinueToken) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(t).unwrap_or_default())
}

/// Which state of the store a list reads (kube-apiserver's `ListReadConsistency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadAt {
    /// The current state.
    Now,
    /// The current state, which must be at least this version.
    NotOlderThan(u64),
    /// The state at exactly this version (410 once the history no longer reaches back to it).
    Exact(u64),
    /// The snapshot of a continue token's first page.
    Continue(u64),
}

fn forbidden(field: &str, message: &str) -> crate::error::Cause {
    crate::error::Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {message}"),
        field: field.into(),
    }
}

/// Validates a list's `resourceVersion`, `resourceVersionMatch`, `continue` and
/// `sendInitialEvents` as kube-apiserver's `ValidateListOptions` does (422 `ListOptions` with one
/// cause per violation), before anything decodes them.
fn validate_list_options(cx: &Ctx<'_>) -> ApiResult<()> {
    let rv = cx.query.get("resourceVersion").unwrap_or("");
    let rv_match = cx.query.get("resourceVersionMatch").unwrap_or("");
    let cont = cx.query.get("continue").unwrap_or("");
    let mut causes = Vec::new();
    if !rv_match.is_empty() {
        let field = "resourceVersionMatch";
        if rv.is_empty() {
            causes.push(forbidden(
                field,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !cont.is_empty() {
            causes.push(forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rv_match != "Exact" && rv_match != "NotOlderThan" {
            causes.push(crate::error::Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {}: supported values: \"Exact\", \"NotOlderThan\", \"\"",
                    crate::error::go_quote(rv_match)
                ),
                field: field.into(),
            });
        }
        if rv_match == "Exact" && rv == "0" {
            causes.push(forbidden(
                field,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if cx.query.get("sendInitialEvents").is_some() {
        causes.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", causes));
    }
    Ok(())
}

/// Which state a validated list reads.
fn read_at(cx: &Ctx<'_>, token: Option<&ContinueToken>, limit: usize) -> ApiResult<ReadAt> {
    let rv = cx.query.get("resourceVersion").unwrap_or("");
    let rv_match = cx.query.get("resourceVersionMatch").unwrap_or("");
    if let Some(t) = token {
        if !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        return Ok(ReadAt::Continue(t.rv));
    }
    if rv.is_empty() || rv == "0" {
        return Ok(ReadAt::Now);
    }
    let n = crate::meta::parse_rv(rv)?;
    Ok(match rv_match {
        "Exact" => ReadAt::Exact(n),
        // A paginated list at a version without a match reads exactly that version (etcd3's
        // legacy behaviour, kept by `ListReadConsistency`).
        "" if limit > 0 => ReadAt::Exact(n),
        _ => ReadAt::NotOlderThan(n),
    })
}

/// 504 for a version the store has not reached, as kube-apiserver's watch cache answers once
/// waiting for it timed out.
fn too_large(requested: u64, current: u64) -> ApiError {
    let mut e = ApiError::new(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    );
    e.details = Some(json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }));
    e.retry_after = Some(1);
    e
}

/// LIST with selectors and pagination. Every page of a paginated list is read from the snapshot
/// of its first page, so objects created, changed or deleted between pages do not show.
pub(crate) fn list(cx: &Ctx<'_>) -> ApiResult<Response<Body>> {
    validate_list_options(cx)?;
    let sel = Selectors::parse(cx)?;
    let limit: usize = match cx.query.get("limit") {
        None | Some("") => 0,
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?
            .max(0) as usize,
    };
    let token = cx
        .query
        .get("continue")
        .filter(|c| !c.is_empty())
        .map(decode_continue)
        .transpose()?;
    let at = read_at(cx, token.as_ref(), limit)?;
    let store = cx.target.shard.store();
    let current = store.current_rv();
    let snapshot = match at {
        ReadAt::Now => None,
        ReadAt::NotOlderThan(rv) | ReadAt::Exact(rv) if rv > current => {
            return Err(too_large(rv, current));
        }
        ReadAt::NotOlderThan(_) => None,
        ReadAt::Exact(rv) | ReadAt::Continue(rv) => Some(rv),
    };
    let cluster: Option<&str> = match &cx.target.cluster {
        ClusterScope::One(c) => Some(c),
        ClusterScope::Wildcard => None,
    };
    let ns = if cx.info.namespaced && !cx.ri.namespace.is_empty() {
        Some(cx.ri.namespace.as_str())
    } else {
        None
    };
    let after = token
        .as_ref()
        .map(|t| ObjKey::new(t.c.as_str().into(), &t.ns, &t.n));
    // kube-apiserver counts the items after a page only when nothing filters them.
    let count_rest = sel.label.is_empty() && sel.field.is_empty() && sel.visible.is_none();
    let mut items: Vec<Arc<StoredObject>> = Vec::new();
    let mut more = false;
    let mut remaining: u64 = 0;
    let mut failed = None;
    let info = cx.info.clone();
    // Whether the page goes on after `o`.
    let mut take = |o: &Arc<StoredObject>| {
        // Once the page is full, any object after it means more, matching or not: like
        // etcd's range, kube-apiserver does not look ahead for a match, so a selective list
        // may end with a continue token and an empty last page.
        if limit > 0 && items.len() == limit {
            more = true;
            if count_rest {
                remaining += 1;
            }
            return count_rest;
        }
        match sel.matches(&info, o) {
            Ok(true) => items.push(o.clone()),
            Ok(false) => {}
            Err(e) => {
                // kube-apiserver fails the list on an item it cannot decode.
                failed = Some(e);
                return false;
            }
        }
        true
    };
    // A field selector on a converted field may call a conversion webhook: that call must not
    // hold the store's lock, so the objects are selected after the scan.
    let select_after_scan =
        info.conversion.is_some() && !sel.field.is_empty() && !sel.field.only_metadata();
    let mut scanned: Vec<Arc<StoredObject>> = Vec::new();
    let list_rv = store
        .scan_at(&info.store, snapshot, cluster, ns, after.as_ref(), |o| {
            if select_after_scan {
                scanned.push(o.clone());
                true
            } else {
                take(o)
            }
        })
        .map_err(|e| match (e, at) {
            (crate::store::StoreError::Expired { .. }, ReadAt::Continue(_)) => ApiError::new(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            ),
            (crate::store::StoreError::Expired { .. }, _) => ApiError::new(
                410,
                "Expired",
                "The resourceVersion for the provided list is too old.",
            ),
            (e, _) => ApiError::internal(e),
        })?;
    for o in &scanned {
        if !take(o) {
            break;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let cont = if more {
        items.last().map(|o| {
            encode_continue(&ContinueToken {
                rv: list_rv,
                c: o.key.cluster.to_string(),
                ns: o.key.namespace.to_string(),
                n: o.key.name.to_string(),
            })
        })
    } else {
        None
    };
    let rv_s = list_rv.to_string();
    let remaining = (more && count_rest).then_some(remaining);
    match cx.output {
        Output::Table => {
            let vals: Vec<Value> = items
                .iter()
                .map(|o| convert::served_value(&info, o))
                .collect::<ApiResult<_>>()?;
            let t = table::table(
                &info,
                &vals,
                Include::parse(cx.query.get("includeObject")),
                &rv_s,
                cont.as_deref(),
                true,
            );
            let mut t = t;
            if let Some(n) = remaining {
                t["metadata"]["remainingItemCount"] = json!(n);
            }
            Ok(value_response(200, &t, Output::Json))
        }
        Output::Metadata | Output::MetadataProtobuf => {
            let mut meta = json!({"resourceVersion": rv_s});
            if let Some(c) = &cont {
                meta["continue"] = json!(c);
            }
            if let Some(n) = remaining {
                meta["remainingItemCount"] = json!(n);
            }
            let l = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
                "items": items
                    .iter()
                    .map(|o| Ok(table::partial_metadata(&convert::served_value(&info, o)?)))
                    .collect::<ApiResult<Vec<_>>>()?,
            });
            Ok(value_response(200, &l, cx.output))
        }
        Output::Protobuf => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| convert::served_value(&info, o))
                .collect::<ApiResult<_>>()?;
            let mut meta = json!({"resourceVersion": rv_s});
            if let Some(c) = &cont {
                meta["continue"] = json!(c);
            }
            if let Some(n) = remaining {
                meta["remainingItemCount"] = json!(n);
            }
            let l = json!({
                "apiVersion": info.api_version(),
                "kind": info.list_kind,
                "metadata": meta,
                "items": items,
            });
            Ok(value_response(200, &l, Output::Protobuf))
        }
        out => {
            // Assembled from the stored bytes: no object is parsed or re-serialized.
            let mut buf =
                Vec::with_capacity(items.iter().map(|o| o.bytes.len() + 1).sum::<usize>() + 160);
            buf.extend_from_slice(b"{\"kind\":");
            buf.extend_from_slice(&serde_json::to_vec(&info.list_kind).unwrap_or_default());
            buf.extend_from_slice(b",\"apiVersion\":");
            buf.extend_from_slice(&serde_json::to_vec(&info.api_version()).unwrap_or_default());
            buf.extend_from_slice(b",\"metadata\":{\"resourceVersion\":\"");
            buf.extend_from_slice(rv_s.as_bytes());
            buf.push(b'"');
            if let Some(c) = &cont {
                buf.extend_from_slice(b",\"continue\":\"");
                buf.extend_from_slice(c.as_bytes());
                buf.push(b'"');
            } else if !info.typed() {
                // An unstructured list keeps the empty continue token a typed one omits.
                buf.extend_from_slice(b",\"continue\":\"\"");
            }
            if let Some(n) = remaining {
                buf.extend_from_slice(format!(",\"remainingItemCount\":{n}").as_bytes());
            }
            buf.extend_from_slice(b"},\"items\":[");
            let served = convert::ServedItems::new(&info);
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                served.write(o, &mut buf)?;
            }
            buf.extend_from_slice(b"]}");
            Ok(bytes_response(200, Bytes::from(buf), out))
        }
    }
}
