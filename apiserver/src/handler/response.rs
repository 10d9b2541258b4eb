//! Building HTTP responses: bodies, JSON/YAML rendering, `metav1.Status` errors.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use serde_json::Value;

use super::negotiate::Output;
use crate::error::ApiError;

/// The response body type of every endpoint (full bodies and watch streams).
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A complete body.
pub(crate) fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).boxed_unsync()
}

/// A response with serialized bytes in the negotiated representation (JSON bytes are converted to
/// YAML or protobuf when that was asked for).
pub(crate) fn bytes_response(code: u16, json: Bytes, output: Output) -> Response<Body> {
    if output.is_protobuf() {
        return match serde_json::from_slice::<Value>(&json) {
            Ok(v) => value_response(code, &v, output),
            Err(e) => error_response(&ApiError::internal(e)),
        };
    }
    let body = if output == Output::Yaml {
        match serde_json::from_slice::<Value>(&json)
            .ok()
            .and_then(|v| serde_norway::to_string(&v).ok())
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
pub(crate) fn value_response(code: u16, v: &Value, output: Output) -> Response<Body> {
    if output.is_protobuf() {
        return match crate::protobuf::encode(v) {
            Ok(b) => {
                let mut r = Response::new(full(b));
                *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(crate::protobuf::MEDIA_TYPE),
                );
                r
            }
            Err(e) => error_response(&ApiError::internal(e)),
        };
    }
    bytes_response(
        code,
        Bytes::from(crate::meta::to_json_go_order(v).unwrap_or_default()),
        output,
    )
}

/// A `metav1.Status` error response.
pub(crate) fn error_response(e: &ApiError) -> Response<Body> {
    error_response_as(e, Output::Json)
}

/// A `metav1.Status` error response in the negotiated encoding (protobuf when the client asked for
/// it, as kube-apiserver's `ErrorNegotiated`; every other representation gets JSON).
pub(crate) fn error_response_as(e: &ApiError, output: Output) -> Response<Body> {
    let output = if output.is_protobuf() {
        Output::Protobuf
    } else {
        Output::Json
    };
    let mut r = value_response(e.code, &e.to_status(), output);
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A plain-text response (`/healthz`, `/metrics`).
pub(crate) fn text_response(
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
pub(crate) fn success_status(details: Value) -> Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
