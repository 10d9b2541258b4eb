//! The HTTPS client that posts ConversionReviews, with client-go's wording of what goes wrong.
//!
//! Conversion happens inside the synchronous storage and handler code, so a call blocks its
//! caller until the webhook answers (as a Go handler goroutine does). The request itself runs on
//! a small runtime of its own: were it on the caller's runtime, a webhook served by that same
//! runtime (a test's, or a `dev` provider's) could never answer a blocked caller.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use super::webhook::Endpoint;

/// kube's timeout for a webhook request, reading the reply included (apiserver
/// `pkg/util/webhook/authentication.go` `setGlobalDefaults`).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The client-go limit on how much of an unexpected reply goes into an error message.
const MAX_UNSTRUCTURED_RESPONSE_TEXT: usize = 2048;

/// A webhook's HTTP reply.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`, empty when absent.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

/// TLS trusting `ca_bundle` (PEM), or the system's roots when there is none, as client-go's
/// transport does; the error is client-go's for an unusable bundle.
pub(crate) fn tls_config(ca_bundle: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_bundle {
        Some(pem) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<_, _>>()
                .map_err(
                    |_| "unable to load root certificates: unable to parse bytes as PEM block",
                )?;
            if certs.is_empty() {
                return Err(
                    "unable to load root certificates: unable to parse bytes as PEM block".into(),
                );
            }
            for c in certs {
                roots.add(c).map_err(|e| {
                    format!("unable to load root certificates: failed to parse certificate: {e}")
                })?;
            }
        }
        None => {
            for c in rustls_native_certs::load_native_certs().certs {
                // Roots the platform ships that rustls cannot use are skipped, as Go skips them.
                let _ = roots.add(c);
            }
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The runtime the webhook requests run on (one worker: calls are few and short).
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("conversion-webhook")
                .enable_all()
                .build()
                .map_err(|e| format!("starting the conversion webhook client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Posts `body` to the webhook and waits for the reply. The error is what Go's HTTP client
/// reports, prefixed as `*url.Error` prints: `Post "<url>": <cause>`.
pub(crate) fn post(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
    body: Vec<u8>,
) -> Result<Reply, String> {
    let url = endpoint.request_url();
    let failed = |cause: String| format!("Post {}: {cause}", crate::error::go_quote(&url));
    let Endpoint::Url(_) = endpoint else {
        // The embedded server has no Service network: a Service's name never resolves, as it
        // would not from a kube-apiserver outside the cluster network.
        let host = url
            .trim_start_matches("https://")
            .split(':')
            .next()
            .unwrap_or_default();
        return Err(failed(format!("dial tcp: lookup {host}: no such host")));
    };
    let uri: http::Uri = url.parse().map_err(|e| failed(format!("{e}")))?;
    let host = uri.host().unwrap_or_default().to_string();
    let port = uri.port_u16().unwrap_or(443);
    let (tx, rx) = std::sync::mpsc::channel();
    let request = async move {
        let outcome = tokio::time::timeout(REQUEST_TIMEOUT, exchange(uri, host, port, tls, body))
            .await
            .unwrap_or_else(|_| Err("context deadline exceeded".into()));
        let _ = tx.send(outcome);
    };
    runtime().map_err(&failed)?.spawn(request);
    let wait = || {
        rx.recv()
            .map_err(|_| "the webhook request was dropped".to_string())
    };
    // On a multi-threaded runtime the worker hands its other tasks over while it waits.
    let outcome = match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    };
    outcome.and_then(|r| r).map_err(failed)
}

/// Connects, sends the review and reads the whole reply.
async fn exchange(
    uri: http::Uri,
    host: String,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
    body: Vec<u8>,
) -> Result<Reply, String> {
    let addr = format!("{host}:{port}");
    let tcp = tokio::net::TcpStream::connect(addr.as_str())
        .await
        .map_err(|e| dial_error(&host, &addr, &e))?;
    let server_name = ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(server_name, tcp)
        .await
        .map_err(|e| tls_error(&host, &e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let path = uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    let request = http::Request::post(path)
        .header(http::header::HOST, &addr)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes()
        .to_vec();
    Ok(Reply {
        status,
        content_type,
        body,
    })
}

/// Go's `net.OpError` text for a failed dial.
fn dial_error(host: &str, addr: &str, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => format!("dial tcp {addr}: connect: connection refused"),
        ErrorKind::TimedOut => format!("dial tcp {addr}: i/o timeout"),
        _ if host.parse::<std::net::IpAddr>().is_err() => {
            format!("dial tcp: lookup {host}: no such host")
        }
        _ => format!("dial tcp {addr}: connect: {e}"),
    }
}

/// Go's text for a failed TLS handshake, for the failures a misconfigured `caBundle` causes.
fn tls_error(host: &str, e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
        )) => {
            format!("tls: failed to verify certificate: x509: certificate is not valid for {host}")
        }
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
        )) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .into()
        }
        Some(other) => format!("remote error: tls: {other}"),
        None => e.to_string(),
    }
}

/// The error client-go makes of a reply outside 200–206: the `Status` it carries, or one for
/// the code (client-go `rest/request.go` `transformResponse`, apimachinery
/// `errors.NewGenericServerResponse`).
pub(crate) fn status_error(reply: &Reply) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(&reply.body)
        && v.get("kind").and_then(Value::as_str) == Some("Status")
        && v.get("apiVersion").and_then(Value::as_str) == Some("v1")
    {
        return v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
    }
    let server_message = if reply.content_type.starts_with("text/") {
        let body = &reply.body[..reply.body.len().min(MAX_UNSTRUCTURED_RESPONSE_TEXT)];
        String::from_utf8_lossy(body).trim().to_string()
    } else {
        "unknown".to_string()
    };
    match reply.status {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 | 415 => server_message,
        406 if server_message.is_empty() || server_message == "unknown" => {
            "the server was unable to respond with a content type that the client supports".into()
        }
        406 => server_message,
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        code if code >= 500 => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            crate::error::go_quote(&server_message)
        ),
        code => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}
