//! The provider's HTTP endpoints: `/metrics` on the metrics address, `/healthz` and `/readyz` on
//! the probe address, `/convert` (the conversion webhook) on the webhook address. A few lines of
//! hyper rather than a web framework: four fixed routes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use kube::core::conversion::ConversionReview;

use crate::ops::metrics::Metrics;

/// Whether the provider is ready to serve: set once start-up finished (access obtained, caches
/// synced). A standby replica is ready too — it can take over at once.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    ready: Arc<AtomicBool>,
}

impl Readiness {
    /// Not ready yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks the provider ready (or not).
    pub fn set(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether the provider is ready.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// The path the conversion webhook serves on, as controller-runtime's does.
pub const CONVERT_PATH: &str = "/convert";

/// What a route sees of a request: the GET routes read the path only.
struct Incoming<'a> {
    method: &'a http::Method,
    path: &'a str,
    body: Bytes,
}

type Handler = Arc<dyn Fn(Incoming<'_>) -> Response<Full<Bytes>> + Send + Sync>;

/// The largest request body read: a `ConversionReview` of a list page of objects (kube-apiserver
/// sends one review per page; its own request limit is 3 MiB per object).
const MAX_BODY: usize = 64 << 20;

fn text(
    status: StatusCode,
    body: impl Into<Bytes>,
    content_type: &'static str,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, value);
    }
    response
}

/// Serves `/metrics` on `addr` until `shutdown`, over HTTPS when `tls` is given; returns the
/// bound address (port 0 picks one).
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: Metrics,
    tls: Option<TlsAcceptor>,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    serve(
        addr,
        tls,
        Arc::new(move |request: Incoming<'_>| match request.path {
            "/metrics" => text(
                StatusCode::OK,
                metrics.encode(),
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
            _ => text(
                StatusCode::NOT_FOUND,
                "not found; try /metrics\n",
                "text/plain",
            ),
        }),
        shutdown,
    )
    .await
}

/// Serves `/healthz` (the process serves) and `/readyz` (start-up finished) on `addr` until
/// `shutdown`; returns the bound address.
pub async fn serve_health(
    addr: SocketAddr,
    readiness: Readiness,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    serve(
        addr,
        None,
        Arc::new(move |request: Incoming<'_>| match request.path {
            "/healthz" | "/livez" => text(StatusCode::OK, "ok\n", "text/plain"),
            "/readyz" if readiness.is_ready() => text(StatusCode::OK, "ok\n", "text/plain"),
            "/readyz" => text(
                StatusCode::SERVICE_UNAVAILABLE,
                "starting: waiting for cluster access and caches\n",
                "text/plain",
            ),
            _ => text(
                StatusCode::NOT_FOUND,
                "not found; try /healthz or /readyz\n",
                "text/plain",
            ),
        }),
        shutdown,
    )
    .await
}

/// Serves the conversion webhook, `POST /convert` answering a `ConversionReview` with `review`
/// (controller-runtime's contract), over HTTPS on `addr` until `shutdown`; returns the bound
/// address.
pub async fn serve_webhook(
    addr: SocketAddr,
    tls: TlsAcceptor,
    review: fn(ConversionReview) -> ConversionReview,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    serve(
        addr,
        Some(tls),
        Arc::new(
            move |request: Incoming<'_>| match (request.path, request.method) {
                (CONVERT_PATH, &http::Method::POST) => {
                    match serde_json::from_slice::<ConversionReview>(&request.body) {
                        Ok(asked) => match serde_json::to_vec(&review(asked)) {
                            Ok(answer) => text(StatusCode::OK, answer, "application/json"),
                            Err(err) => text(
                                StatusCode::INTERNAL_SERVER_ERROR,
                                format!("cannot write the ConversionReview: {err}\n"),
                                "text/plain",
                            ),
                        },
                        Err(err) => text(
                            StatusCode::BAD_REQUEST,
                            format!("the body is not a ConversionReview: {err}\n"),
                            "text/plain",
                        ),
                    }
                }
                (CONVERT_PATH, _) => text(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "POST a ConversionReview to /convert\n",
                    "text/plain",
                ),
                _ => text(
                    StatusCode::NOT_FOUND,
                    "not found; the conversion webhook is POST /convert\n",
                    "text/plain",
                ),
            },
        ),
        shutdown,
    )
    .await
}

async fn serve(
    addr: SocketAddr,
    tls: Option<TlsAcceptor>,
    handler: Handler,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(err) => {
                        tracing::debug!(error = %err, "accept failed");
                        continue;
                    }
                },
                _ = shutdown.cancelled() => return,
            };
            let handler = handler.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let handler = handler.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body =
                            match http_body_util::Limited::new(body, MAX_BODY).collect().await {
                                Ok(collected) => collected.to_bytes(),
                                Err(err) => {
                                    let status = if err.is::<http_body_util::LengthLimitError>() {
                                        StatusCode::PAYLOAD_TOO_LARGE
                                    } else {
                                        StatusCode::BAD_REQUEST
                                    };
                                    return Ok::<_, Infallible>(text(
                                        status,
                                        format!("cannot read the request body: {err}\n"),
                                        "text/plain",
                                    ));
                                }
                            };
                        Ok(handler(Incoming {
                            method: &parts.method,
                            path: parts.uri.path(),
                            body,
                        }))
                    }
                });
                let served = match tls {
                    Some(tls) => match tls.accept(stream).await {
                        Ok(stream) => {
                            http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await
                        }
                        Err(err) => {
                            tracing::debug!(error = %err, "TLS handshake failed");
                            return;
                        }
                    },
                    None => {
                        http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                    }
                };
                if let Err(err) = served {
                    tracing::debug!(error = %err, "probe connection failed");
                }
            });
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn probes_follow_readiness() {
        let readiness = Readiness::new();
        let shutdown = CancellationToken::new();
        let addr = serve_health(
            "127.0.0.1:0".parse().unwrap(),
            readiness.clone(),
            shutdown.clone(),
        )
        .await
        .unwrap();
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        readiness.set(true);
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        shutdown.cancel();
    }

    #[tokio::test]
    async fn metrics_are_served() {
        let metrics = Metrics::new();
        metrics.set_leader(crate::Mode::Standard, true);
        let shutdown = CancellationToken::new();
        let addr = serve_metrics(
            "127.0.0.1:0".parse().unwrap(),
            metrics,
            None,
            shutdown.clone(),
        )
        .await
        .unwrap();
        let body = get(addr, "/metrics").await;
        assert!(
            body.contains("service_provider_leader{mode=\"standard\"} 1"),
            "{body}"
        );
        shutdown.cancel();
    }

    #[tokio::test]
    async fn metrics_are_served_over_https_with_a_self_signed_certificate() {
        use crate::ops::tls::{ServingCert, acceptor, self_signed_pem};
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        // A certificate from files, as --metrics-cert-path gives it.
        let dir = std::env::temp_dir().join(format!("sp-metrics-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert_pem, key_pem) = self_signed_pem(&["localhost"]).unwrap();
        std::fs::write(dir.join("tls.crt"), &cert_pem).unwrap();
        std::fs::write(dir.join("tls.key"), key_pem).unwrap();
        let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
        let from_files = ServingCert::Files {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        };
        for (cert, trusted) in [(ServingCert::SelfSigned, None), (from_files, Some(cert))] {
            let shutdown = CancellationToken::new();
            let addr = serve_metrics(
                "127.0.0.1:0".parse().unwrap(),
                Metrics::new(),
                Some(acceptor(&cert).unwrap()),
                shutdown.clone(),
            )
            .await
            .unwrap();
            let body = get_tls(addr, trusted).await;
            assert!(body.starts_with("HTTP/1.1 200"), "{body}");
            assert!(body.contains("# EOF"), "{body}");
            // Plain HTTP on the HTTPS port gets no metrics.
            let plain =
                tokio::time::timeout(std::time::Duration::from_secs(5), get(addr, "/metrics"))
                    .await
                    .unwrap_or_default();
            assert!(!plain.contains("# EOF"), "{plain}");
            shutdown.cancel();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// GET /metrics over TLS, trusting `trusted` (or any certificate when `None`).
    async fn get_tls(
        addr: SocketAddr,
        trusted: Option<rustls::pki_types::CertificateDer<'static>>,
    ) -> String {
        use rustls::client::danger::{
            HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
        };
        use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
        #[derive(Debug)]
        struct AnyCert(Arc<rustls::crypto::CryptoProvider>);
        impl ServerCertVerifier for AnyCert {
            fn verify_server_cert(
                &self,
                _: &CertificateDer<'_>,
                _: &[CertificateDer<'_>],
                _: &ServerName<'_>,
                _: &[u8],
                _: UnixTime,
            ) -> Result<ServerCertVerified, rustls::Error> {
                Ok(ServerCertVerified::assertion())
            }
            fn verify_tls12_signature(
                &self,
                message: &[u8],
                cert: &CertificateDer<'_>,
                dss: &rustls::DigitallySignedStruct,
            ) -> Result<HandshakeSignatureValid, rustls::Error> {
                rustls::crypto::verify_tls12_signature(
                    message,
                    cert,
                    dss,
                    &self.0.signature_verification_algorithms,
                )
            }
            fn verify_tls13_signature(
                &self,
                message: &[u8],
                cert: &CertificateDer<'_>,
                dss: &rustls::DigitallySignedStruct,
            ) -> Result<HandshakeSignatureValid, rustls::Error> {
                rustls::crypto::verify_tls13_signature(
                    message,
                    cert,
                    dss,
                    &self.0.signature_verification_algorithms,
                )
            }
            fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
                self.0.signature_verification_algorithms.supported_schemes()
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let config = match trusted {
            Some(cert) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(cert).unwrap();
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
                .with_no_client_auth(),
        };
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut stream = connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .expect("TLS handshake");
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out).await;
        out
    }
}
