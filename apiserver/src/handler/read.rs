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
pub(crate) fn object_response(cx: &Ctx<'_>, code: u16, obj: &StoredObject) -> Response<Body> {
    match cx.output {
        Output::Table => {
            let v = convert::served_value(&cx.info, obj);
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
            &table::partial_metadata(&convert::served_value(&cx.info, obj)),
            cx.output,
        ),
        out => bytes_response(code, convert::served_bytes(&cx.info, obj), out),
    }
}

/// GET of one object or of a subresource.
pub(crate) fn get(cx: &Ctx<'_>) -> ApiResult<Response<Body>> {
    let cluster = cx.cluster()?;
    let api = cx.target.shard.api(cluster);
    let obj = api.get(&cx.info, cx.namespace(), &cx.ri.name)?;
    check_visible(cx, &obj)?;
    match cx.ri.subresource.as_str() {
        "" => Ok(object_response(cx, 200, &obj)),
        "status" if cx.info.status => Ok(object_response(cx, 200, &obj)),
        "scale" if cx.info.scale.is_some() => Ok(value_response(
            200,
            &scale_of(&cx.info, &convert::served_value(&cx.info, &obj)),
            cx.output,
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
    pub fn parse(cx: &Ctx<'_>) -> ApiResult<Self> {
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

    /// Does a stored object match both selectors (and may the caller see it)?
    pub fn matches(&self, info: &ResourceInfo, o: &StoredObject) -> bool {
        if self.visible.as_ref().is_some_and(|f| !f(o)) {
            return false;
        }
        if !self.label.matches(|k| o.label(k)) {
            return false;
        }
        if self.field.is_empty() {
            return true;
        }
        if self.field.only_metadata() {
            return self.field.matches(|f| match f {
                "metadata.name" => o.key.name.to_string(),
                "metadata.namespace" => o.key.namespace.to_string(),
                _ => String::new(),
            });
        }
        let v = convert::served_value(info, o);
        self.field.matches(|f| field_of(&v, f))
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

/// LIST with selectors and pagination.
pub(crate) fn list(cx: &Ctx<'_>) -> ApiResult<Response<Body>> {
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
    let mut items: Vec<Arc<StoredObject>> = Vec::new();
    let mut more = false;
    let info = cx.info.clone();
    let rv = cx
        .target
        .shard
        .store()
        .scan(&info.store, cluster, ns, after.as_ref(), |o| {
            if !sel.matches(&info, o) {
                return true;
            }
            if limit > 0 && items.len() == limit {
                more = true;
                return false;
            }
            items.push(o.clone());
            true
        });
    let list_rv = token.as_ref().map_or(rv, |t| t.rv);
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
    match cx.output {
        Output::Table => {
            let vals: Vec<Value> = items
                .iter()
                .map(|o| convert::served_value(&info, o))
                .collect();
            let t = table::table(
                &info,
                &vals,
                Include::parse(cx.query.get("includeObject")),
                &rv_s,
                cont.as_deref(),
                true,
            );
            Ok(value_response(200, &t, Output::Json))
        }
        Output::Metadata | Output::MetadataProtobuf => {
            let mut meta = json!({"resourceVersion": rv_s});
            if let Some(c) = &cont {
                meta["continue"] = json!(c);
            }
            let l = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
                "items": items.iter().map(|o| table::partial_metadata(&convert::served_value(&info, o))).collect::<Vec<_>>(),
            });
            Ok(value_response(200, &l, cx.output))
        }
        Output::Protobuf => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| convert::served_value(&info, o))
                .collect();
            let mut meta = json!({"resourceVersion": rv_s});
            if let Some(c) = &cont {
                meta["continue"] = json!(c);
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
            buf.extend_from_slice(b"{\"apiVersion\":");
            buf.extend_from_slice(&serde_json::to_vec(&info.api_version()).unwrap_or_default());
            buf.extend_from_slice(b",\"kind\":");
            buf.extend_from_slice(&serde_json::to_vec(&info.list_kind).unwrap_or_default());
            buf.extend_from_slice(b",\"metadata\":{\"resourceVersion\":\"");
            buf.extend_from_slice(rv_s.as_bytes());
            buf.push(b'"');
            if let Some(c) = &cont {
                buf.extend_from_slice(b",\"continue\":\"");
                buf.extend_from_slice(c.as_bytes());
                buf.push(b'"');
            }
            buf.extend_from_slice(b"},\"items\":[");
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.extend_from_slice(&convert::served_bytes(&info, o));
            }
            buf.extend_from_slice(b"]}");
            Ok(bytes_response(200, Bytes::from(buf), out))
        }
    }
}
