//! The provider's HTTP endpoints: `/metrics` on the metrics address, `/healthz` and `/readyz` on
//! the probe address. A few lines of hyper rather than a web framework: three fixed routes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

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

type Handler = Arc<dyn Fn(&str) -> Response<Full<Bytes>> + Send + Sync>;

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

/// Serves `/metrics` on `addr` until `shutdown`; returns the bound address (port 0 picks one).
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    serve(
        addr,
        Arc::new(move |path: &str| match path {
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
        Arc::new(move |path: &str| match path {
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

async fn serve(
    addr: SocketAddr,
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
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let response = handler(req.uri().path());
                    async move { Ok::<_, Infallible>(response) }
                });
                if let Err(err) = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
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
        let addr = serve_metrics("127.0.0.1:0".parse().unwrap(), metrics, shutdown.clone())
            .await
            .unwrap();
        let body = get(addr, "/metrics").await;
        assert!(
            body.contains("service_provider_leader{mode=\"standard\"} 1"),
            "{body}"
        );
        shutdown.cancel();
    }
}
