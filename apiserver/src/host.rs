//! Many small clusters behind one listener: a [`ClusterHost`] serves logical clusters of one
//! shard at `https://127.0.0.1:<port>/clusters/<name>`.
//!
//! Logical clusters are what make 10,000 simulated tenants affordable: one listener, one store
//! and one connection pool for all of them, while each keeps its own objects, RBAC and
//! ServiceAccount tokens (the shard runs with kcp-style token scoping: a token works only in
//! the logical cluster that minted it). What they share is the shard's fault injection and
//! request counters; counters are labelled with the logical cluster's name.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};

use crate::Error;
use crate::auth::{TokenIssuer, TokenIssuerConfig};
use crate::error::ApiError;
use crate::faults::Faults;
use crate::handler::response::error_response;
use crate::handler::{Body, Target};
use crate::metrics::Counters;
use crate::server::{Endpoint, Frontend};
use crate::shard::{LogicalClusterOptions, Shard, ShardOptions};

/// Routes `/clusters/<name>/…` to the logical cluster `<name>` of the shard.
struct HostFrontend {
    shard: Arc<Shard>,
}

impl Frontend for HostFrontend {
    fn serve(
        &self,
        req: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>> {
        let shard = self.shard.clone();
        Box::pin(async move {
            let path = req.uri().path().to_string();
            let Some((cluster, rest)) = path
                .strip_prefix("/clusters/")
                .map(|p| p.split_once('/').map_or((p, "/"), |(c, r)| (c, r)))
            else {
                return error_response(&ApiError::no_route());
            };
            let Some(cluster) = shard.logical_cluster(cluster) else {
                return error_response(&ApiError::not_found("", "clusters", cluster));
            };
            let rest = if rest.starts_with('/') {
                rest.to_string()
            } else {
                format!("/{rest}")
            };
            let target = Target::new(shard.clone(), cluster.clone(), cluster);
            crate::handler::handle(target, req, &rest).await
        })
    }
}

/// One HTTPS listener on 127.0.0.1 serving any number of logical clusters, each a Kubernetes
/// cluster of its own to its clients (own objects, RBAC, ServiceAccount tokens) at
/// [`ClusterHost::cluster_url`].
pub struct ClusterHost {
    shard: Arc<Shard>,
    endpoint: Arc<Endpoint>,
    ca_pem: String,
}

impl std::fmt::Debug for ClusterHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterHost")
            .field("url", &self.url())
            .finish()
    }
}

impl ClusterHost {
    /// Starts the host named `name`; its TokenRequests may ask for tokens living
    /// `min_token_seconds` or longer (kube-apiserver's floor is 600 s). Deployments in its
    /// clusters are reported available, as a kubelet would.
    pub async fn start(name: &str, min_token_seconds: i64) -> Result<ClusterHost, Error> {
        let tls = crate::tls::tls()?;
        let mut issuer = TokenIssuerConfig::kcp();
        issuer.min_expiration_seconds = min_token_seconds;
        let issuer = TokenIssuer::new(issuer)
            .map_err(|e| Error::TokenIssuer(format!("cluster host {name}: {e}")))?;
        let opts = ShardOptions {
            token_issuer: Some(Arc::new(issuer)),
            root_ca_pem: Some(tls.ca_pem.clone()),
            // Tokens name their logical cluster and die outside it; bootstrap RBAC is shared by
            // reference instead of copied into every logical cluster.
            kcp: true,
            ..ShardOptions::default()
        };
        let shard = Shard::new(name, opts);
        shard.set_deployments_available(true);
        let endpoint = Endpoint::bind(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            Some(tls.server.clone()),
            Arc::new(HostFrontend {
                shard: shard.clone(),
            }),
        )
        .await?;
        Ok(ClusterHost {
            shard,
            endpoint,
            ca_pem: tls.ca_pem.clone(),
        })
    }

    /// Adds a logical cluster named `name` with Kubernetes' initial namespaces; returns its
    /// name as the host stores it.
    pub fn add(&self, name: &str) -> Result<Arc<str>, ApiError> {
        self.shard
            .add_logical_cluster(name, &LogicalClusterOptions::kubernetes())
    }

    /// Removes the logical cluster `name` and everything in it.
    pub fn remove(&self, name: &str) {
        self.shard.remove_logical_cluster(name);
    }

    /// The listener's base URL, e.g. `https://127.0.0.1:41235`.
    pub fn url(&self) -> String {
        self.endpoint.url()
    }

    /// The URL clients of the logical cluster `name` use.
    pub fn cluster_url(&self, name: &str) -> String {
        format!("{}/clusters/{name}", self.url())
    }

    /// The CA certificate (PEM) clients must trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The admin bearer token (`system:masters`), valid in every logical cluster of the host,
    /// like a kcp shard's admin token.
    pub fn admin_token(&self) -> &str {
        self.shard.admin_token()
    }

    /// Fault injection: a rule hits every logical cluster of the host.
    pub fn faults(&self) -> &Faults {
        self.shard.faults()
    }

    /// Request counters of every logical cluster, labelled with its name.
    pub fn counters(&self) -> &Counters {
        self.shard.counters()
    }
}
