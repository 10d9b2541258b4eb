//! Building HTTP responses: bodies, JSON/YAML rendering, `metav1.Status` errors.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use serde_json::Value;

use super::negotiate::Output;
use crate::error::ApiError;

/// The response body type of every endpoint (full bodies and watch streams).
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A complete body.
pub fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).boxed_unsync()
}

/// A response with serialized bytes in the negotiated representation (JSON bytes are converted to
/// YAML when YAML was asked for).
pub fn bytes_response(code: u16, json: Bytes, output: Output) -> Response<Body> {
    let body = if output == Output::Yaml {
        match serde_json::from_slice::<Value>(&json)
            .ok()
            .and_then(|v| serde_yaml::to_string(&v).ok())
        {
            Some(y) => Bytes::from(y),
            None => json,
        }
    } else {
        json
    };
    let mut r = Response::new(full(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(output.content_type()),
    );
    r
}

/// A response with a JSON value.
pub fn value_response(code: u16, v: &Value, output: Output) -> Response<Body> {
    bytes_response(
        code,
        Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
        output,
    )
}

/// A `metav1.Status` error response.
pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut r = value_response(e.code, &e.to_status(), Output::Json);
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A plain-text response (`/healthz`, `/metrics`).
pub fn text_response(
    code: u16,
    text: impl Into<Bytes>,
    content_type: &'static str,
) -> Response<Body> {
    let mut r = Response::new(full(text));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A `Status` of success (what kube-apiserver answers for deletions of most built-ins).
pub fn success_status(details: Value) -> Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
