//! A CustomResourceDefinition's conversion webhook (`spec.conversion.strategy: Webhook`), called
//! as kube-apiserver calls it (apiextensions-apiserver `pkg/apiserver/conversion/
//! webhook_converter.go`): one `ConversionReview` per object to convert, the response checked
//! before its object is used, and every failure worded as kube words it.
//!
//! kube-apiserver converts a custom resource each time it decodes one from etcd into the request's
//! version and each time it encodes one for etcd in the storage version; a list decodes its items
//! one by one, so each item is its own review. [`super`] calls [`WebhookConverter::convert`] at
//! those same points.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use base64::Engine;
use serde_json::{Map, Value, json};

use super::webhook_client::{self, Reply};
use crate::error::go_quote;
use crate::schema::{FieldError, aggregate, validate_annotations, validate_labels};
use crate::validation::Validator;

/// The ConversionReview versions this server speaks, in kube's order of preference when a CRD
/// lists several: the first one the CRD lists wins (webhook_converter.go
/// `createConversionReviewObjects`).
pub(crate) const SUPPORTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// Where the webhook is (`spec.conversion.webhook.clientConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `url`: an `https://host[:port][/path]` URL.
    Url(String),
    /// `service`: a Service of the cluster, `https://<name>.<namespace>.svc:<port><path>`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The port (443 when not given).
        port: i64,
        /// The URL path (may be empty).
        path: String,
    },
}

impl Endpoint {
    /// The URL the review is posted to, as client-go builds it: the path cleaned (`/` when
    /// empty) and `?timeout=30s` added, since the client has a timeout (client-go
    /// `rest/request.go` `URL`).
    pub fn request_url(&self) -> String {
        let (base, path) = match self {
            Endpoint::Url(url) => split_url(url),
            Endpoint::Service {
                namespace,
                name,
                port,
                path,
            } => (
                format!("https://{name}.{namespace}.svc:{port}"),
                path.clone(),
            ),
        };
        let trimmed = path.trim_end_matches('/');
        let path = if trimmed.is_empty() {
            "/".to_string()
        } else if trimmed.starts_with('/') {
            trimmed.to_string()
        } else {
            format!("/{trimmed}")
        };
        format!(
            "{base}{path}?timeout={}s",
            webhook_client::REQUEST_TIMEOUT.as_secs()
        )
    }
}

/// `https://host:port` and the path of a URL.
fn split_url(url: &str) -> (String, String) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => (
            url[..after_scheme + i].to_string(),
            url[after_scheme + i..].to_string(),
        ),
        None => (url.to_string(), String::new()),
    }
}

/// The conversion webhook of one CRD.
#[derive(Debug)]
pub struct WebhookConverter {
    group: String,
    /// Every version of `spec.versions` (served or not): what objects may be converted from and to.
    versions: Vec<String>,
    endpoint: Endpoint,
    /// PEM certificates the webhook's serving certificate must chain to; the system roots when
    /// absent.
    ca_bundle: Option<Vec<u8>>,
    review_versions: Vec<String>,
    /// The schema of each version: a converted object is pruned and defaulted by the schema of
    /// the version it was converted to, as kube's storage codec does
    /// (customresource_handler.go `schemaCoercingConverter`, `unstructuredDefaulter`).
    schemas: HashMap<String, Arc<Validator>>,
    /// Built on the first call: parsing the CA bundle is not worth repeating per object.
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

impl WebhookConverter {
    /// The converter of a CRD whose `spec.conversion.strategy` is `Webhook`, with the schemas of
    /// its versions; `None` for the `None` strategy (only `apiVersion` changes).
    pub fn from_crd(
        crd: &Value,
        schemas: &HashMap<String, Arc<Validator>>,
    ) -> Option<Arc<WebhookConverter>> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let config = conversion.pointer("/webhook/clientConfig");
        let endpoint = match config.and_then(|c| c.get("service")) {
            Some(svc) => Endpoint::Service {
                namespace: str_at(svc, "namespace").to_string(),
                name: str_at(svc, "name").to_string(),
                port: svc.get("port").and_then(Value::as_i64).unwrap_or(443),
                path: str_at(svc, "path").to_string(),
            },
            None => Endpoint::Url(
                config
                    .and_then(|c| c.get("url"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
        };
        // A whitespace-only caBundle counts as none (webhook_converter.go
        // `webhookClientConfigForCRD`).
        let ca_bundle = config
            .and_then(|c| c.get("caBundle"))
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .filter(|b| !b.trim_ascii().is_empty());
        Some(Arc::new(WebhookConverter {
            group: crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            versions: crd
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(|v| v.get("name").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            endpoint,
            ca_bundle,
            review_versions: conversion
                .pointer("/webhook/conversionReviewVersions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            schemas: schemas.clone(),
            tls: OnceLock::new(),
        }))
    }

    /// Where the webhook is.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Converts one custom resource to `desired` (`group/version`) through the webhook. An object
    /// already at `desired` is returned as it is, without a call. The error is kube-apiserver's
    /// message; it answers it with a 500 whose reason is empty.
    pub fn convert(&self, object: Value, desired: &str) -> Result<Value, String> {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // converter.go `crConverter.ConvertToVersion`: both ends must be versions of the CRD.
        if !self.is_version(desired) {
            return Err(format!(
                "request to convert CR to an invalid group/version: {desired}"
            ));
        }
        if !self.is_version(&from) {
            return Err(format!(
                "request to convert CR from an invalid group/version: {from}"
            ));
        }
        if from == desired {
            return Ok(object);
        }
        let gvk = gvk_string(&from, str_at(&object, "kind"));
        let review_version = self
            .review_versions
            .iter()
            .find(|v| SUPPORTED_REVIEW_VERSIONS.contains(&v.as_str()))
            .ok_or("no supported conversion review versions")?
            .clone();
        let uid = uuid::Uuid::new_v4().to_string();
        let review = review_request(&review_version, &uid, desired, &object);
        let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
        let tls = self
            .tls
            .get_or_init(|| webhook_client::tls_config(self.ca_bundle.as_deref()))
            .clone()
            .map_err(failed)?;
        let body = serde_json::to_vec(&review).map_err(|e| failed(e.to_string()))?;
        let reply = webhook_client::post(&self.endpoint, tls, body).map_err(failed)?;
        let converted = converted_objects(&review_version, &uid, &reply).map_err(failed)?;
        let [converted] = <[Value; 1]>::try_from(converted).map_err(|all| {
            format!(
                "conversion webhook for {gvk} returned {} objects, expected 1",
                all.len()
            )
        })?;
        let mut converted = accept_converted(&object, converted, desired, &gvk)?;
        let version = desired.rsplit('/').next().unwrap_or_default();
        if let Some(schema) = self.schemas.get(version) {
            schema.schema().read(&mut converted);
        }
        Ok(converted)
    }

    fn is_version(&self, api_version: &str) -> bool {
        api_version
            .split_once('/')
            .is_some_and(|(g, v)| g == self.group && self.versions.iter().any(|x| x == v))
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `schema.GroupVersionKind.String()`: `example.com/v1, Kind=Widget` (`/v1, …` for the core
/// group).
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The review kube-apiserver posts: Go writes the empty response of the request object too.
fn review_request(review_version: &str, uid: &str, desired: &str, object: &Value) -> Value {
    json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [object]},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    })
}

/// The converted objects of a webhook's reply, or why the reply is refused
/// (webhook_converter.go `getConvertedObjectsFromResponse`, client-go's decoding of the reply
/// before it).
pub(crate) fn converted_objects(
    review_version: &str,
    uid: &str,
    reply: &Reply,
) -> Result<Vec<Value>, String> {
    if !(200..=206).contains(&reply.status) {
        return Err(webhook_client::status_error(reply));
    }
    let review: Value = serde_json::from_slice(&reply.body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(format!(
            "Object 'Kind' is missing in '{}'",
            String::from_utf8_lossy(&reply.body)
        ));
    }
    let api_version = str_at(&review, "apiVersion");
    let v1 = review_version == "v1";
    // v1beta1 processing did not check the kind or the uid, and kube keeps it so.
    if v1 && (api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview") {
        return Err(format!(
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
            gvk_string(api_version, kind)
        ));
    }
    let response = match review.get("response") {
        Some(r @ Value::Object(_)) => r,
        _ => return Err("no response provided".into()),
    };
    let got_uid = str_at(response, "uid");
    if v1 && got_uid != uid {
        return Err(format!(
            "expected response.uid={}, got {}",
            go_quote(uid),
            go_quote(got_uid)
        ));
    }
    let status = response
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = response
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message.to_string()
        });
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Checks the object a webhook returned for `original` and gives it `original`'s metadata, but
/// for the labels and annotations the webhook may change (webhook_converter.go `Convert`'s
/// single-object branch, `validateConvertedObject`, `restoreObjectMeta`).
pub(crate) fn accept_converted(
    original: &Value,
    converted: Value,
    desired: &str,
    gvk: &str,
) -> Result<Value, String> {
    let Value::Object(mut converted) = converted else {
        return Err(format!("Object 'Kind' is missing in '{converted}'"));
    };
    let kind = converted
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind.is_empty() {
        return Err(format!(
            "Object 'Kind' is missing in '{}'",
            Value::Object(converted)
        ));
    }
    let received = converted
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if received != desired {
        return Err(format!(
            "conversion webhook for {gvk} returned invalid object at index 0: invalid groupVersion (expected {desired}, received {received})"
        ));
    }
    let original_kind = str_at(original, "kind");
    if kind != original_kind {
        return Err(format!(
            "conversion webhook for {gvk} returned invalid object at index 0: invalid kind (expected {original_kind}, received {kind})"
        ));
    }
    let meta_str = |obj: Option<&Value>, field: &str| -> String {
        obj.and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let expected = meta_str(original.get("metadata"), field);
        let got = meta_str(converted.get("metadata"), field);
        if expected != got {
            return Err(format!(
                "conversion webhook for {gvk} returned invalid object: must have the same {what}: {expected} != {got}"
            ));
        }
    }
    restore_object_meta(original, &mut converted)
        .map_err(|e| format!("conversion webhook for {gvk} returned invalid metadata: {e}"))?;
    Ok(Value::Object(converted))
}

/// The name Go's `%T` gives a value of an unstructured object.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The original's metadata replaces the converted object's, keeping only the labels and
/// annotations the webhook returned (validated when it changed them).
fn restore_object_meta(original: &Value, converted: &mut Map<String, Value>) -> Result<(), String> {
    let response_meta = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut meta = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let response_field = match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        let empty = Map::new();
        let original_field = match meta.get(field) {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in original object",
                    go_type(other)
                ));
            }
        };
        let mut changed = original_field.len() != response_field.len();
        for (k, v) in response_field {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= original_field.get(k) != Some(v);
        }
        if changed {
            // `metadata.annotation`, not `annotations`: upstream's path (webhook_converter.go).
            let errs: Vec<FieldError> = if field == "labels" {
                validate_labels(response_field, "metadata.labels")
            } else {
                validate_annotations(response_field, "metadata.annotation")
            };
            if !errs.is_empty() {
                return Err(aggregate(&errs));
            }
        }
        meta.insert(field.into(), Value::Object(response_field.clone()));
    }
    converted.insert("metadata".into(), Value::Object(meta));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GVK: &str = "example.com/v1, Kind=Widget";

    fn reply(status: u16, body: Value) -> Reply {
        Reply {
            status,
            content_type: "application/json".into(),
            body: serde_json::to_vec(&body).unwrap(),
        }
    }

    fn widget(version: &str) -> Value {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "labels": {"a": "1"}},
            "spec": {"size": 1}})
    }

    fn success(uid: &str, objects: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, "convertedObjects": objects, "result": {"status": "Success"}}})
    }

    #[test]
    fn a_successful_review_gives_its_objects() {
        let objs = converted_objects("v1", "abc", &reply(200, success("abc", json!([{"a": 1}]))));
        assert_eq!(objs.unwrap(), vec![json!({"a": 1})]);
    }

    #[test]
    fn a_review_for_another_request_is_refused() {
        let err =
            converted_objects("v1", "abc", &reply(200, success("xyz", json!([])))).unwrap_err();
        assert_eq!(err, r#"expected response.uid="abc", got "xyz""#);
        // v1beta1 never checked the uid.
        assert!(
            converted_objects("v1beta1", "abc", &reply(200, success("xyz", json!([])))).is_ok()
        );
    }

    #[test]
    fn a_failed_review_gives_its_message() {
        let failed = |result: Value| {
            converted_objects(
                "v1",
                "abc",
                &reply(
                    200,
                    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                        "response": {"uid": "abc", "result": result}}),
                ),
            )
            .unwrap_err()
        };
        assert_eq!(
            failed(json!({"status": "Failure", "message": "no v3 here"})),
            "no v3 here"
        );
        assert_eq!(
            failed(json!({"status": "Failure"})),
            "response.result.status was 'Failure', not 'Success'"
        );
        assert_eq!(
            failed(json!({})),
            "response.result.status was '', not 'Success'"
        );
    }

    #[test]
    fn a_malformed_review_is_refused() {
        let err = |body: Value| converted_objects("v1", "abc", &reply(200, body)).unwrap_err();
        assert_eq!(
            err(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"})),
            "no response provided"
        );
        assert_eq!(
            err(
                json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
                "response": {"uid": "abc", "result": {"status": "Success"}}})
            ),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
        );
        assert_eq!(
            err(json!({"response": {}})),
            r#"Object 'Kind' is missing in '{"response":{}}'"#
        );
    }

    #[test]
    fn an_http_error_is_worded_as_client_go_words_it() {
        let text = Reply {
            status: 500,
            content_type: "text/plain".into(),
            body: b"boom\n".to_vec(),
        };
        assert_eq!(
            converted_objects("v1", "abc", &text).unwrap_err(),
            r#"an error on the server ("boom") has prevented the request from succeeding"#
        );
        let json_body = reply(404, json!({"x": 1}));
        assert_eq!(
            converted_objects("v1", "abc", &json_body).unwrap_err(),
            "the server could not find the requested resource"
        );
        let status = reply(
            403,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "go away", "code": 403}),
        );
        assert_eq!(
            converted_objects("v1", "abc", &status).unwrap_err(),
            "go away"
        );
    }

    #[test]
    fn a_converted_object_keeps_the_original_metadata_but_labels_and_annotations() {
        let mut converted = widget("v2");
        converted["metadata"] = json!({"name": "w", "namespace": "ns", "uid": "u-1",
            "resourceVersion": "99", "labels": {"b": "2"}, "annotations": {"c": "3"}, "generation": 5});
        let out = accept_converted(&widget("v1"), converted, "example.com/v2", GVK).unwrap();
        assert_eq!(
            out["metadata"],
            json!({"name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "labels": {"b": "2"}, "annotations": {"c": "3"}})
        );
        assert_eq!(out["apiVersion"], "example.com/v2");
        // Labels left out of the reply are dropped, as kube drops them.
        let mut converted = widget("v2");
        converted["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        let out = accept_converted(&widget("v1"), converted, "example.com/v2", GVK).unwrap();
        assert!(out.pointer("/metadata/labels").is_none());
    }

    #[test]
    fn a_converted_object_must_keep_its_identity() {
        let check = |edit: &dyn Fn(&mut Value)| {
            let mut converted = widget("v2");
            edit(&mut converted);
            accept_converted(&widget("v1"), converted, "example.com/v2", GVK).unwrap_err()
        };
        assert_eq!(
            check(&|o| o["metadata"]["name"] = json!("other")),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: w != other"
        );
        assert_eq!(
            check(&|o| o["metadata"]["namespace"] = json!("elsewhere")),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same namespace: ns != elsewhere"
        );
        assert_eq!(
            check(&|o| o["metadata"]["uid"] = json!("u-2")),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same UID: u-1 != u-2"
        );
        assert_eq!(
            check(&|o| o["apiVersion"] = json!("example.com/v1")),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
        );
        assert_eq!(
            check(&|o| o["kind"] = json!("Gadget")),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid kind (expected Widget, received Gadget)"
        );
        assert!(
            check(&|o| {
                o.as_object_mut().unwrap().remove("kind");
            })
            .starts_with(r#"Object 'Kind' is missing in '{"apiVersion":"example.com/v2","#)
        );
        assert_eq!(
            check(&|o| {
                o.as_object_mut().unwrap().remove("metadata");
            }),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: w != "
        );
    }

    #[test]
    fn converted_labels_and_annotations_are_validated() {
        let check = |meta: Value| {
            let mut converted = widget("v2");
            converted["metadata"] = meta;
            accept_converted(&widget("v1"), converted, "example.com/v2", GVK).unwrap_err()
        };
        let base = |extra: Value| {
            let mut m = json!({"name": "w", "namespace": "ns", "uid": "u-1"});
            for (k, v) in extra.as_object().unwrap() {
                m[k] = v.clone();
            }
            m
        };
        assert_eq!(
            check(base(json!({"labels": {"a": 1}}))),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: metadata.labels[a] must be a string, but is int64 in converted object"
        );
        assert_eq!(
            check(base(json!({"labels": ["a"]}))),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: invalid metadata.labels of type []interface {} in converted object"
        );
        assert!(
            check(base(json!({"labels": {"a": "not valid!"}}))).starts_with(
                "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: metadata.labels: Invalid value: \"not valid!\": a valid label must be"
            )
        );
        assert!(
            check(base(json!({"annotations": {"bad key!": "x"}}))).starts_with(
                "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: metadata.annotation: Invalid value: \"bad key!\": name part must consist of"
            )
        );
    }

    #[test]
    fn the_request_url_is_client_gos() {
        assert_eq!(
            Endpoint::Url("https://127.0.0.1:8443/convert/".into()).request_url(),
            "https://127.0.0.1:8443/convert?timeout=30s"
        );
        assert_eq!(
            Endpoint::Url("https://hooks.example.com".into()).request_url(),
            "https://hooks.example.com/?timeout=30s"
        );
        assert_eq!(
            Endpoint::Service {
                namespace: "ns".into(),
                name: "conv".into(),
                port: 443,
                path: "/crd".into()
            }
            .request_url(),
            "https://conv.ns.svc:443/crd?timeout=30s"
        );
    }

    #[test]
    fn the_review_names_the_desired_version_and_the_objects() {
        let r = review_request("v1", "abc", "example.com/v2", &widget("v1"));
        assert_eq!(r["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(r["request"]["uid"], "abc");
        assert_eq!(r["request"]["desiredAPIVersion"], "example.com/v2");
        assert_eq!(r["request"]["objects"], json!([widget("v1")]));
    }
}
