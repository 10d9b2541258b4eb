//! Clients built from kubeconfigs, cheaply: one HTTPS connection pool per (CA, client
//! certificate), shared by every tenant cluster behind it.
//!
//! A `kube::Client` built the usual way owns its TLS configuration and its connection pool. With
//! thousands of tenants whose clusters sit behind one API endpoint (the logical clusters of a
//! shard, an MCP service behind one ingress) that is thousands of pools and TLS handshakes. Here
//! the pool is keyed by what TLS needs — the CA bundle, the client certificate, the server name —
//! and each tenant gets a thin client on top: its own base URL and bearer token, the shared pool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hyper_rustls::HttpsConnector;
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

type Pool = HyperClient<TimeoutConnector<HttpsConnector<HttpConnector>>, kube::client::Body>;

/// Why a kubeconfig could not be turned into a client.
///
/// The messages never quote the kubeconfig: it holds a credential.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The bytes are not UTF-8.
    #[error("the kubeconfig is not UTF-8 text")]
    NotUtf8,
    /// The YAML does not parse as a kubeconfig. The parser's message is left out because it may
    /// quote the credential.
    #[error("the kubeconfig is not valid kubeconfig YAML")]
    Parse,
    /// The kubeconfig parses but cannot be used (no current context, bad CA, ...).
    #[error("the kubeconfig cannot be used: {0}")]
    Config(KubeconfigError),
    /// The TLS setup or client stack could not be built.
    #[error("cannot build a client from the kubeconfig: {0}")]
    Client(#[from] kube::Error),
}

/// Builds clients from kubeconfigs over shared connection pools. Cheap to clone.
#[derive(Clone, Default)]
pub struct ClientFactory {
    pools: Arc<Mutex<HashMap<[u8; 32], Pool>>>,
}

impl std::fmt::Debug for ClientFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFactory")
            .field("pools", &self.pool_count())
            .finish()
    }
}

impl ClientFactory {
    /// A factory with no pools yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many distinct connection pools exist.
    pub fn pool_count(&self) -> usize {
        self.pools.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// The `kube::Config` described by a kubeconfig (its current context).
    pub async fn config(kubeconfig: &[u8]) -> Result<kube::Config, ClientError> {
        let text = std::str::from_utf8(kubeconfig).map_err(|_| ClientError::NotUtf8)?;
        let parsed = Kubeconfig::from_yaml(text).map_err(|err| match err {
            KubeconfigError::Parse(_) => ClientError::Parse,
            other => ClientError::Config(other),
        })?;
        kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
            .await
            .map_err(|err| match err {
                KubeconfigError::Parse(_) => ClientError::Parse,
                other => ClientError::Config(other),
            })
    }

    /// A client for the cluster a kubeconfig describes.
    pub async fn client(&self, kubeconfig: &[u8]) -> Result<kube::Client, ClientError> {
        let config = Self::config(kubeconfig).await?;
        self.client_for(config)
    }

    /// A client for `config`, over the shared pool for its TLS settings.
    pub fn client_for(&self, config: kube::Config) -> Result<kube::Client, ClientError> {
        // Proxies and exec plugins with client certificates are rare; they get a client of their
        // own rather than complicating the pool key.
        if config.proxy_url.is_some() {
            return Ok(kube::Client::try_from(config)?);
        }
        let pool = self.pool(&config)?;
        let service = ServiceBuilder::new()
            .layer(config.base_uri_layer())
            .option_layer(
                config
                    .default_retry
                    .then(|| RetryLayer::new(crate::access::retry::RetryPolicy::default())),
            )
            .option_layer(config.auth_layer()?)
            .layer(config.extra_headers_layer()?)
            .map_err(BoxError::from)
            .service(pool);
        Ok(kube::Client::new(service, config.default_namespace))
    }

    fn pool(&self, config: &kube::Config) -> Result<Pool, ClientError> {
        let key = pool_key(config);
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pool) = pools.get(&key) {
            return Ok(pool.clone());
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let https = config.rustls_https_connector_with_connector(http)?;
        let mut connector = TimeoutConnector::new(https);
        connector.set_connect_timeout(config.connect_timeout);
        connector.set_read_timeout(config.read_timeout);
        connector.set_write_timeout(config.write_timeout);
        connector.set_reset_reader_on_write(config.reset_reader_on_write);
        let pool = HyperClient::builder(TokioExecutor::new()).build(connector);
        pools.insert(key, pool.clone());
        Ok(pool)
    }
}

/// A client that sends every request through `base` with `prefix` put before its path (e.g.
/// `/clusters/<logical cluster>`), and with `bearer` as its credential instead of `base`'s when
/// given: a per-tenant client without a connection pool, TLS session or token refresh of its own.
///
/// `base` must not authenticate itself when `bearer` is given (a client certificate would win
/// over the token). Must be called within a tokio runtime (the client spawns its request buffer).
pub fn scoped_client(base: &kube::Client, prefix: &str, bearer: Option<&str>) -> kube::Client {
    kube::Client::new(ScopedService::new(base, prefix, bearer), "default")
}

/// The tower service behind [`scoped_client`].
#[derive(Clone)]
pub struct ScopedService {
    inner: kube::Client,
    prefix: Arc<str>,
    bearer: Option<http::HeaderValue>,
}

impl std::fmt::Debug for ScopedService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The bearer token is a credential: never in a log line.
        f.debug_struct("ScopedService")
            .field("prefix", &self.prefix)
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ScopedService {
    /// A service sending through `base` below `prefix`, authenticating with `bearer` if given.
    pub fn new(base: &kube::Client, prefix: &str, bearer: Option<&str>) -> Self {
        let bearer = bearer.and_then(|token| {
            let mut value = http::HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
            value.set_sensitive(true);
            Some(value)
        });
        ScopedService {
            inner: base.clone(),
            prefix: prefix.trim_end_matches('/').into(),
            bearer,
        }
    }
}

impl tower::Service<http::Request<kube::client::Body>> for ScopedService {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // `kube::Client::send` waits for the shared client's readiness itself.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<kube::client::Body>) -> Self::Future {
        let inner = self.inner.clone();
        let path = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
        let uri = format!("{}{path}", self.prefix);
        if let Some(bearer) = &self.bearer {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, bearer.clone());
        }
        Box::pin(async move {
            *request.uri_mut() = uri
                .parse()
                .map_err(|e| kube::Error::Service(format!("request path {uri:?}: {e}").into()))?;
            inner.send(request).await
        })
    }
}

/// Everything that goes into the TLS configuration, hashed: clients that agree on it can share
/// connections (the server is part of each connection's key inside the pool).
fn pool_key(config: &kube::Config) -> [u8; 32] {
    let mut hasher = ring::digest::Context::new(&ring::digest::SHA256);
    let mut field = |tag: &[u8], bytes: &[u8]| {
        hasher.update(tag);
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for cert in config.root_cert.iter().flatten() {
        field(b"ca", cert);
    }
    if let Some(path) = &config.root_cert_file {
        field(b"ca-file", path.as_os_str().as_encoded_bytes());
    }
    field(b"insecure", &[u8::from(config.accept_invalid_certs)]);
    if let Some(name) = &config.tls_server_name {
        field(b"sni", name.as_bytes());
    }
    let auth = &config.auth_info;
    // A client certificate binds its key, so the certificate identifies the TLS identity.
    if let Some(cert) = &auth.client_certificate_data {
        field(b"cert", cert.as_bytes());
    }
    if let Some(cert) = &auth.client_certificate {
        field(b"cert-file", cert.as_bytes());
    }
    let digest = hasher.finish();
    let mut key = [0u8; 32];
    key.copy_from_slice(digest.as_ref());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443/clusters/tenant-a
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: s3cr3t-token-value
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
"#;

    #[tokio::test]
    async fn tenants_behind_one_endpoint_share_a_pool() {
        let factory = ClientFactory::new();
        let other = KUBECONFIG
            .replace("tenant-a", "tenant-b")
            .replace("s3cr3t-token-value", "other");
        factory.client(KUBECONFIG.as_bytes()).await.unwrap();
        factory.client(other.as_bytes()).await.unwrap();
        assert_eq!(factory.pool_count(), 1);
        let secure = KUBECONFIG.replace("insecure-skip-tls-verify: true", "");
        factory.client(secure.as_bytes()).await.unwrap();
        assert_eq!(factory.pool_count(), 2);
    }

    #[tokio::test]
    async fn errors_do_not_quote_the_kubeconfig() {
        let broken = KUBECONFIG.replace("contexts:", "contexts: [");
        let Err(err) = ClientFactory::new().client(broken.as_bytes()).await else {
            panic!("a broken kubeconfig was accepted");
        };
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
        let Err(err) = ClientFactory::new()
            .client(b"token: s3cr3t-token-value")
            .await
        else {
            panic!("a non-kubeconfig was accepted");
        };
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
    }
}
