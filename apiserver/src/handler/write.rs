//! create, update, patch, delete, deletecollection, and the subresources that write (`status`,
//! `scale`, `finalize`, `serviceaccounts/token`), plus the create-only review resources.

use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use super::Ctx;
use super::negotiate::{BodyFormat, Output, body_format};
use super::read::{Selectors, object_response, scale_of};
use super::response::{Body, success_status, value_response};
use crate::convert;
use crate::error::{ApiError, ApiResult, Cause};
use crate::managed::FieldManager;
use crate::registry::Strategy;
use crate::storage::{ClusterApi, DeleteOptions, Deleted, Propagation};
use crate::store::Precondition;

fn decode(cx: &Ctx<'_>, body: &Bytes) -> ApiResult<Value> {
    let ct = cx
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let fmt = body_format(ct, false, super::has_protobuf(&cx.info))?;
    if body.is_empty() {
        return Err(ApiError::bad_request(
            "the request body is empty: send the object as JSON or YAML",
        ));
    }
    match fmt {
        BodyFormat::Yaml => serde_norway::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}"))),
        BodyFormat::Protobuf => {
            crate::protobuf::decode(body).map_err(|e| ApiError::bad_request(e.to_string()))
        }
        _ => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
    }
}

/// The field manager of a write: `fieldManager`, else the User-Agent's program name (as kube-apiserver).
fn field_manager(cx: &Ctx<'_>) -> ApiResult<String> {
    let param = cx.query.get("fieldManager");
    if let Some(m) = param {
        crate::patch::validate_field_manager(m).map_err(|msg| {
            let (field, message) = msg.split_once(": ").unwrap_or(("fieldManager", &msg));
            ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: message.to_string(),
                    field: field.to_string(),
                }],
            )
        })?;
    }
    let ua = cx
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    Ok(crate::patch::update_manager_name(param, ua))
}

/// Refuses writes to an existing object the surface hides from the caller (404, as for reads).
fn guard_visible(cx: &Ctx<'_>) -> ApiResult<()> {
    if cx.target.surface.filter(cx.target, &cx.info).is_none() {
        return Ok(());
    }
    let api = ClusterApi::new(&cx.target.shard, cx.cluster()?.clone(), cx.user.clone());
    match api.get(&cx.info, cx.namespace(), &cx.ri.name) {
        Ok(obj) => super::read::check_visible(cx, &obj),
        Err(_) => Ok(()),
    }
}

fn api<'a>(cx: &'a Ctx<'_>) -> ApiResult<ClusterApi<'a>> {
    Ok(
        ClusterApi::new(&cx.target.shard, cx.cluster()?.clone(), cx.user.clone())
            .dry_run(cx.dry_run()?)
            .field_validation(crate::validation::field_validation(
                cx.query.get("fieldValidation"),
            )?),
    )
}

/// Adds kube-apiserver's `Warning: 299 - "<text>"` headers.
fn with_warnings(mut r: Response<Body>, warnings: Vec<String>) -> Response<Body> {
    for w in warnings {
        let text = w.replace('"', "\\\"");
        if let Ok(v) = http::HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            r.headers_mut().append(http::header::WARNING, v);
        }
    }
    r
}

/// POST.
pub(crate) fn create(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    match (cx.info.strategy, cx.ri.subresource.as_str()) {
        (Strategy::ServiceAccount, "token") => return token_request(cx, body),
        (Strategy::TokenReview, "") => return token_review(cx, body),
        (Strategy::AccessReview, "") => return access_review(cx, body),
        (Strategy::SelfSubjectReview, "") => return self_subject_review(cx),
        (Strategy::Pod, "eviction") => return evict(cx, body),
        (Strategy::Pod, "binding") | (Strategy::Binding, "") => return bind(cx, body),
        (_, "") => {}
        _ => {
            return Err(ApiError::method_not_supported(
                &cx.info.group,
                &cx.info.resource,
                "create",
            ));
        }
    }
    if !cx.ri.name.is_empty() {
        return Err(ApiError::method_not_supported(
            &cx.info.group,
            &cx.info.resource,
            "create",
        ));
    }
    let mut obj = decode(cx, &body)?;
    cx.target
        .surface
        .prepare_create(cx.target, &cx.info, &mut obj);
    let manager = field_manager(cx)?;
    let a = api(cx)?;
    let o = a.create_with(
        &cx.info,
        cx.namespace(),
        obj,
        FieldManager::Record(&manager),
    )?;
    Ok(with_warnings(
        object_response(cx, 201, &o)?,
        a.take_warnings(),
    ))
}

fn subresource(cx: &Ctx<'_>) -> ApiResult<Option<&'static str>> {
    match cx.ri.subresource.as_str() {
        "" => Ok(None),
        "status" if cx.info.status => Ok(Some("status")),
        "finalize" if cx.info.strategy == Strategy::Namespace => Ok(Some("finalize")),
        "scale" if cx.info.scale.is_some() => Ok(Some("scale")),
        "approval" if cx.info.strategy == Strategy::Csr => Ok(Some("approval")),
        "ephemeralcontainers" if cx.info.strategy == Strategy::Pod => {
            Ok(Some("ephemeralcontainers"))
        }
        _ => Err(ApiError::no_route()),
    }
}

/// Sets the desired replicas of an object from a Scale.
fn write_scale(cx: &Ctx<'_>, scale: &Value) -> ApiResult<Response<Body>> {
    let Some(spec) = &cx.info.scale else {
        return Err(ApiError::no_route());
    };
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    if replicas.as_i64().is_none_or(|r| r < 0) {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            &cx.ri.name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                field: "spec.replicas".into(),
            }],
        ));
    }
    let path: Vec<String> = spec
        .spec_replicas
        .trim_start_matches('.')
        .split('.')
        .map(str::to_string)
        .collect();
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(crate::meta::parse_rv)
        .transpose()?;
    let manager = field_manager(cx)?;
    let a = api(cx)?;
    // kube-apiserver records a scale write as an Update of the scale subresource.
    let manager = FieldManager::Record(&manager);
    let o = a.modify_as(
        &cx.info,
        cx.namespace(),
        &cx.ri.name,
        Some("scale"),
        manager,
        |v| {
            if rv.is_some_and(|rv| {
                Some(rv.to_string().as_str())
                    != v.pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
            }) {
                return Err(ApiError::conflict(
                    &cx.info.group,
                    &cx.info.resource,
                    &cx.ri.name,
                ));
            }
            let mut cur = &mut *v;
            for (i, seg) in path.iter().enumerate() {
                if i == path.len() - 1 {
                    cur[seg.as_str()] = replicas.clone();
                } else {
                    if !cur.get(seg.as_str()).is_some_and(Value::is_object) {
                        cur[seg.as_str()] = json!({});
                    }
                    cur = &mut cur[seg.as_str()];
                }
            }
            Ok(true)
        },
    )?;
    Ok(value_response(
        200,
        &scale_of(&cx.info, &convert::served_value(&cx.info, &o)?),
        cx.output,
    ))
}

/// PUT.
pub(crate) fn update(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    guard_visible(cx)?;
    let sub = subresource(cx)?;
    let obj = decode(cx, &body)?;
    if sub == Some("scale") {
        return write_scale(cx, &obj);
    }
    let manager = field_manager(cx)?;
    let a = api(cx)?;
    let o = a.update_with_manager(
        &cx.info,
        cx.namespace(),
        &cx.ri.name,
        obj,
        sub,
        FieldManager::Record(&manager),
    )?;
    Ok(with_warnings(
        object_response(cx, 200, &o)?,
        a.take_warnings(),
    ))
}

/// PATCH: merge, JSON, strategic merge (built-ins only) and apply patches.
pub(crate) fn patch(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    guard_visible(cx)?;
    let ct = cx
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let fmt = body_format(ct, true, false)?;
    if fmt == BodyFormat::StrategicMergePatch && cx.info.strategy == Strategy::Custom {
        return Err(ApiError::unsupported_media_type(
            "application/strategic-merge-patch+json",
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ],
        ));
    }
    let sub = subresource(cx)?;
    let manager = field_manager(cx)?;
    if fmt == BodyFormat::ApplyPatch && cx.query.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: is required for apply patch".into(),
                field: "fieldManager".into(),
            }],
        ));
    }
    if fmt != BodyFormat::ApplyPatch && cx.query.get("force").is_some() {
        // ValidatePatchOptions: `force` exists for apply patches only.
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: may not be specified for non-apply patch".into(),
                field: "force".into(),
            }],
        ));
    }
    let force = cx.query.flag("force");
    let a = api(cx)?;
    let ns = cx.namespace();
    let name = cx.ri.name.as_str();
    loop {
        let cur = match a.get(&cx.info, ns, name) {
            Ok(c) => Some(c),
            Err(e) if e.code == 404 && fmt == BodyFormat::ApplyPatch && sub.is_none() => None,
            Err(e) => return Err(e),
        };
        let Some(cur) = cur else {
            // Server-side apply creates what does not exist.
            let mut obj = crate::patching::apply(&cx.info, None, &body, &manager, force, None)?;
            crate::meta::set_meta(&mut obj, "name", Some(json!(name)));
            match a.create_with(&cx.info, ns, obj, FieldManager::Keep) {
                Ok(o) => {
                    return Ok(with_warnings(
                        object_response(cx, 201, &o)?,
                        a.take_warnings(),
                    ));
                }
                Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                Err(e) => return Err(e),
            }
        };
        let current = convert::served_value(&cx.info, &cur)?;
        if sub == Some("scale") {
            let scale = scale_of(&cx.info, &current);
            let patched = crate::patching::patch(fmt, &cx.info, &scale, &body)?;
            return write_scale(cx, &patched);
        }
        let (new, recorded) = if fmt == BodyFormat::ApplyPatch {
            let new =
                crate::patching::apply(&cx.info, Some(&current), &body, &manager, force, sub)?;
            (new, FieldManager::Keep)
        } else {
            (
                crate::patching::patch(fmt, &cx.info, &current, &body)?,
                FieldManager::Record(&manager),
            )
        };
        let cur_rv = cur.rv.to_string();
        let patch_set_rv = new
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(cur_rv.as_str());
        let mut new = new;
        if new.pointer("/metadata/resourceVersion").is_none() {
            crate::meta::set_meta(&mut new, "resourceVersion", Some(json!(cur_rv)));
        }
        // A custom resource's JSON and merge patches are checked strictly on the patched JSON,
        // which kube-apiserver quotes in its answer.
        let strict_patched = (cx.info.strategy == Strategy::Custom
            && matches!(fmt, BodyFormat::MergePatch | BodyFormat::JsonPatch)
            && cx.query.get("fieldValidation") == Some("Strict"))
        .then(|| new.clone());
        match a.update_with_manager(&cx.info, ns, name, new, sub, recorded) {
            Err(e) if e.code == 409 && e.reason == "Conflict" && !patch_set_rv => continue,
            Err(e) if e.code == 400 && strict_patched.is_some() => {
                return Err(match e.message.find("strict decoding error: ") {
                    Some(at) => strict_patch_error(
                        strict_patched.as_ref().unwrap_or(&Value::Null),
                        &e.message[at..],
                    ),
                    None => e,
                });
            }
            Err(e) => return Err(e),
            Ok(o) => {
                return Ok(with_warnings(
                    object_response(cx, 200, &o)?,
                    a.take_warnings(),
                ));
            }
        }
    }
}

/// kube-apiserver's answer to a JSON or merge patch of a custom resource whose result has fields
/// the schema does not know, under `fieldValidation=Strict`: the patch is invalid, shown as the
/// patched object in Go's JSON (map keys sorted, as serde_json writes them).
fn strict_patch_error(patched: &Value, strict: &str) -> ApiError {
    ApiError::invalid(
        "",
        "",
        "",
        vec![crate::error::Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: {strict}",
                crate::error::go_quote(&patched.to_string())
            ),
            field: "patch".into(),
        }],
    )
}

fn delete_options(cx: &Ctx<'_>, body: &Bytes) -> ApiResult<DeleteOptions> {
    let mut opts = DeleteOptions::default();
    let mut policy: Option<String> = cx.query.get("propagationPolicy").map(str::to_string);
    let mut orphan: Option<bool> = cx.query.get("orphanDependents").map(|v| v == "true");
    if !body.is_empty() {
        let v: Value = if body.starts_with(b"k8s\0") {
            // Typed client-go clients send DeleteOptions in their content type.
            crate::protobuf::decode(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
        } else {
            serde_json::from_slice(body)
                .or_else(|_| serde_norway::from_slice(body))
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
        };
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            policy = Some(p.to_string());
        }
        if let Some(o) = v.get("orphanDependents").and_then(Value::as_bool) {
            orphan = Some(o);
        }
        if let Some(uid) = v.pointer("/preconditions/uid").and_then(Value::as_str) {
            opts.precondition.uid = Some(uid.to_string());
        }
        if let Some(rv) = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
        {
            opts.precondition.rv = Some(crate::meta::parse_rv(rv)?);
        }
        if let Some(d) = v.get("dryRun").and_then(Value::as_array)
            && d.iter().any(|x| x != "All")
        {
            let values: Vec<&str> = d.iter().filter_map(Value::as_str).collect();
            return Err(super::invalid_dry_run("delete", &values));
        }
    }
    if policy.is_some() && orphan.is_some() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: \"null\": orphanDependents and deletionPropagation cannot be both set".into(),
                field: "propagationPolicy".into(),
            }],
        ));
    }
    opts.propagation = match (policy, orphan) {
        (Some(p), _) => Some(Propagation::parse(&p)?),
        (None, Some(true)) => Some(Propagation::Orphan),
        (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
    };
    Ok(opts)
}

fn dry_run_in_body(body: &Bytes) -> bool {
    let v = if body.starts_with(b"k8s\0") {
        crate::protobuf::decode(body).ok()
    } else {
        serde_json::from_slice::<Value>(body).ok()
    };
    v.and_then(|v| {
        v.get("dryRun")
            .and_then(Value::as_array)
            .map(|a| a.iter().any(|x| x == "All"))
    })
    .unwrap_or(false)
}

/// DELETE of one object.
pub(crate) fn delete(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    guard_visible(cx)?;
    if !cx.ri.subresource.is_empty() {
        return Err(ApiError::method_not_supported(
            &cx.info.group,
            &cx.info.resource,
            "delete",
        ));
    }
    let opts = delete_options(cx, &body)?;
    let a = api(cx)?.dry_run(cx.dry_run()? || dry_run_in_body(&body));
    match a.delete(&cx.info, cx.namespace(), &cx.ri.name, &opts)? {
        Deleted::Gone(o)
            if !crate::strategy::returns_deleted_object(&cx.info) && cx.output != Output::Table =>
        {
            let mut details = json!({"name": cx.ri.name, "kind": cx.info.resource, "uid": &*o.uid});
            if !cx.info.group.is_empty() {
                details["group"] = json!(cx.info.group);
            }
            Ok(value_response(200, &success_status(details), cx.output))
        }
        Deleted::Gone(o) | Deleted::Pending(o) => object_response(cx, 200, &o),
    }
}

/// DELETE of a collection.
pub(crate) fn delete_collection(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    let sel = Selectors::parse(cx)?;
    let opts = delete_options(cx, &body)?;
    let a = api(cx)?.dry_run(cx.dry_run()? || dry_run_in_body(&body));
    let ns = if cx.info.namespaced && !cx.ri.namespace.is_empty() {
        Some(cx.ri.namespace.as_str())
    } else {
        None
    };
    let mut items = Vec::new();
    for o in a.list(&cx.info, ns) {
        if !sel.matches(&cx.info, &o)? {
            continue;
        }
        match a.delete(
            &cx.info,
            &o.key.namespace,
            &o.key.name,
            &DeleteOptions {
                precondition: Precondition::default(),
                ..opts.clone()
            },
        ) {
            Ok(Deleted::Gone(d) | Deleted::Pending(d)) => {
                items.push(convert::served_item_value(&cx.info, &d)?)
            }
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let mut metadata = json!({"resourceVersion": cx.target.shard.store().current_rv().to_string()});
    if !cx.info.typed() {
        // An unstructured list keeps the empty continue token a typed one omits.
        metadata["continue"] = json!("");
    }
    let l = json!({
        "apiVersion": cx.info.api_version(),
        "kind": cx.info.list_kind,
        "metadata": metadata,
        "items": items,
    });
    Ok(value_response(200, &l, cx.output))
}

/// `POST serviceaccounts/<name>/token`: a TokenRequest.
fn token_request(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    let cluster = cx.cluster()?;
    let req = decode(cx, &body)?;
    let auth = &cx.target.shard.auth;
    let lookup = crate::authn::ShardLookup(&cx.target.shard);
    let resp = crate::auth::token_request::create_token(
        auth.authenticator().issuer(),
        auth.token_cluster(cluster),
        cx.namespace(),
        &cx.ri.name,
        &req,
        &lookup,
    )?;
    let mut r = value_response(201, &resp.body, cx.output);
    for w in resp.warnings {
        if let Ok(v) = http::HeaderValue::from_str(&format!("299 - \"{w}\"")) {
            r.headers_mut().append(http::header::WARNING, v);
        }
    }
    Ok(r)
}

/// kube-apiserver's answer to a subresource POST that has no object to return.
fn success(cx: &Ctx<'_>) -> Response<Body> {
    value_response(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
        cx.output,
    )
}

/// `POST pods/<name>/eviction`: the pod is deleted with the Eviction's delete options. No
/// disruption budget is consulted: no controller computes their status here.
fn evict(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    let req = decode(cx, &body)?;
    let named = req.pointer("/metadata/name").and_then(Value::as_str);
    if named.is_some_and(|n| n != cx.ri.name) {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let mut opts = crate::storage::DeleteOptions::default();
    if let Some(p) = req
        .pointer("/deleteOptions/propagationPolicy")
        .and_then(Value::as_str)
    {
        opts.propagation = Some(crate::storage::Propagation::parse(p)?);
    }
    opts.precondition.uid = req
        .pointer("/deleteOptions/preconditions/uid")
        .and_then(Value::as_str)
        .map(str::to_string);
    api(cx)?.delete(&cx.info, cx.namespace(), &cx.ri.name, &opts)?;
    Ok(success(cx))
}

/// `POST bindings` and `POST pods/<name>/binding`: assigns the pod to the target node, once.
fn bind(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    let req = decode(cx, &body)?;
    let pod = if cx.info.strategy == Strategy::Pod {
        cx.ri.name.clone()
    } else {
        req.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let node = req
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let required = |field: &str| {
        ApiError::invalid(
            "",
            "Binding",
            &pod,
            vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: field.into(),
            }],
        )
    };
    if pod.is_empty() {
        return Err(required("metadata.name"));
    }
    if node.is_empty() {
        return Err(required("target.name"));
    }
    let pods = crate::storage::core("pods");
    api(cx)?.modify(&pods, cx.namespace(), &pod, None, |p| {
        match p.pointer("/spec/nodeName").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => Err(ApiError::conflict_msg(
                "",
                "pods",
                &pod,
                &format!("pod {pod} is already assigned to node \"{n}\""),
            )),
            _ => {
                p["spec"]["nodeName"] = json!(node);
                Ok(true)
            }
        }
    })?;
    Ok(success(cx))
}

/// `POST tokenreviews`.
fn token_review(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    let req = decode(cx, &body)?;
    let lookup = crate::authn::ShardLookup(&cx.target.shard);
    let out = crate::auth::token_review::review_token(
        cx.target.shard.auth.authenticator(),
        &req,
        &lookup,
    )?;
    Ok(value_response(201, &out, cx.output))
}

/// `POST selfsubjectreviews` (`kubectl auth whoami`).
fn self_subject_review(cx: &Ctx<'_>) -> ApiResult<Response<Body>> {
    Ok(value_response(
        201,
        &crate::auth::token_review::self_subject_review(cx.user),
        cx.output,
    ))
}

/// `POST (self|local)subjectaccessreviews`, `selfsubjectrulesreviews`.
fn access_review(cx: &Ctx<'_>, body: Bytes) -> ApiResult<Response<Body>> {
    let req = decode(cx, &body)?;
    let rbac = cx.target.shard.auth.rbac(cx.cluster()?);
    use crate::auth::review;
    let out = match cx.info.resource.as_str() {
        "subjectaccessreviews" => review::subject_access_review(&rbac, &req)?,
        "localsubjectaccessreviews" => {
            review::local_subject_access_review(&rbac, &cx.ri.namespace, &req)?
        }
        "selfsubjectaccessreviews" => review::self_subject_access_review(&rbac, cx.user, &req)?,
        "selfsubjectrulesreviews" => review::self_subject_rules_review(&rbac, cx.user, &req)?,
        _ => return Err(ApiError::no_route()),
    };
    Ok(value_response(201, &out, cx.output))
}
