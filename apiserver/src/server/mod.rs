//! HTTP(S) endpoints: a listener on 127.0.0.1 serving HTTP/1.1 and HTTP/2 through a [`Frontend`],
//! with connection tracking so that tests can stop, start and restart it (dropping every open
//! connection and watch while the storage behind it lives on).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::handler::Body;

/// What answers the requests of an endpoint: a routing layer that resolves the URL and calls the
/// common handler (a plain cluster's router, kcp's workspace or virtual-workspace fronts).
pub(crate) trait Frontend: Send + Sync + 'static {
    /// Answers one request, whose body has been read in full.
    fn serve(
        &self,
        req: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>>;
}

struct Running {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// One listening endpoint.
pub(crate) struct Endpoint {
    addr: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    frontend: Arc<dyn Frontend>,
    running: Mutex<Option<Running>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("addr", &self.addr)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Binds `addr` (port 0: an ephemeral port, kept across stop/start) and starts serving.
    pub(crate) async fn bind(
        addr: SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
        frontend: Arc<dyn Frontend>,
    ) -> std::io::Result<Arc<Self>> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let ep = Arc::new(Endpoint {
            addr,
            tls,
            frontend,
            running: Mutex::new(None),
        });
        ep.run(listener);
        Ok(ep)
    }

    /// The bound address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL (`https://127.0.0.1:<port>`).
    pub(crate) fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls.is_some() { "https" } else { "http" },
            self.addr
        )
    }

    /// Whether it is serving.
    pub(crate) fn is_running(&self) -> bool {
        self.running.lock().is_some()
    }

    fn run(&self, listener: TcpListener) {
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let tls = self.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let fe = self.frontend.clone();
        let task = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = token.cancelled() => break,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let fe = fe.clone();
                let conn_token = token.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            let tls_stream = tokio::select! {
                                _ = conn_token.cancelled() => return,
                                s = acceptor.accept(stream) => s,
                            };
                            if let Ok(s) = tls_stream {
                                let peer = s.get_ref().1.peer_certificates().map(|c| {
                                    crate::tls::PeerCertificates(
                                        c.iter().map(|d| d.clone().into_owned()).collect(),
                                    )
                                });
                                serve_connection(s, fe, conn_token, peer).await;
                            }
                        }
                        None => serve_connection(stream, fe, conn_token, None).await,
                    }
                });
            }
        });
        *self.running.lock() = Some(Running { cancel, task });
    }

    /// Stops serving: closes the listener and drops every open connection (clients see the
    /// connection reset, watches end without a final event).
    pub(crate) async fn stop(&self) {
        let running = self.running.lock().take();
        if let Some(r) = running {
            r.cancel.cancel();
            let _ = r.task.await;
        }
    }

    /// Starts serving again on the same address.
    pub(crate) async fn start(&self) -> std::io::Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let listener = TcpListener::bind(self.addr).await?;
        self.run(listener);
        Ok(())
    }

    /// Drops every connection and serves again on the same address.
    pub(crate) async fn restart(&self) -> std::io::Result<()> {
        self.stop().await;
        self.start().await
    }
}

/// Serves one connection; `peer` is the client certificate chain it presented, handed to each of
/// its requests for authentication.
async fn serve_connection<S>(
    stream: S,
    fe: Arc<dyn Frontend>,
    cancel: CancellationToken,
    peer: Option<crate::tls::PeerCertificates>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |mut req: Request<Incoming>| {
        if let Some(p) = &peer {
            req.extensions_mut().insert(p.clone());
        }
        let fe = fe.clone();
        async move {
            // The body is read before any layer can answer: over HTTP/2 a response sent while the
            // client is still sending resets the stream, and curl-like clients then see a stream
            // error instead of the answer (a 404 for an unserved resource, a 401, a 403, kcp's
            // routing errors).
            let (parts, body) = req.into_parts();
            let resp = match crate::handler::read_body(body).await {
                Ok(body) => fe.serve(Request::from_parts(parts, body)).await,
                Err(e) => crate::handler::response::error_response(&e),
            };
            Ok::<_, Infallible>(resp)
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    tokio::select! {
        _ = conn => {}
        // Dropping the connection future closes the socket and every stream on it.
        _ = cancel.cancelled() => {}
    }
}
