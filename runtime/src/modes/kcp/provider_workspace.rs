//! The provider's own kcp connection: its identity in the provider workspace, and every client
//! kcp mode derives from it — the provider workspace, the front URL (TokenRequests in consumer
//! workspaces), each virtual-workspace endpoint, and a credential-less base for the minted
//! tokens — all over connection pools shared per TLS setup.

use std::sync::Arc;

use base64::Engine;
use kube::api::{Api, PostParams};

use crate::access::clients::{ClientError, ClientFactory, scoped_client};

/// Why the provider's kcp connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// The kubeconfig is unusable (the message never quotes it).
    #[error("the kcp kubeconfig: {0}")]
    Kubeconfig(#[from] ClientError),
    /// The kubeconfig's server names no workspace and none was configured.
    #[error(
        "the kcp kubeconfig's server {0:?} names no workspace: point it at the provider workspace (<kcp>/clusters/<path>) or set the provider workspace (ProviderConfig kcp.providerWorkspace)"
    )]
    NoWorkspace(String),
    /// Asking kcp who the provider is failed.
    #[error(
        "cannot tell who the provider is in kcp (SelfSubjectReview in the provider workspace): {0}"
    )]
    WhoAmI(kube::Error),
}

/// How the provider's identity appears in a consumer workspace, for the RBAC that lets it mint
/// tokens there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// An identity scoped to its home logical cluster (a ServiceAccount of the provider
    /// workspace): elsewhere kcp only knows it by the group `system:cluster:<home>`.
    HomeCluster(String),
    /// Any other identity, by user name (it also needs `access` to enter a workspace).
    User(String),
}

impl Subject {
    /// The RBAC subject, as JSON.
    pub fn rbac_subject(&self) -> serde_json::Value {
        match self {
            Subject::HomeCluster(cluster) => serde_json::json!({
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Group",
                "name": format!("system:cluster:{cluster}"),
            }),
            Subject::User(name) => serde_json::json!({
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "User",
                "name": name,
            }),
        }
    }
}

/// The provider's kcp connection. Cheap to share (`Arc`).
pub struct ProviderWorkspace {
    factory: ClientFactory,
    config: kube::Config,
    /// `https://host:port`, without `/clusters/…`.
    front: String,
    /// `<front>/clusters/<path>`.
    workspace_url: String,
    /// The provider's identity in its workspace.
    client: kube::Client,
    /// The provider's identity at the front URL; scoped per consumer workspace for
    /// TokenRequests.
    front_client: kube::Client,
    /// No credential, at the front URL; scoped per workspace with a minted token.
    anonymous_front: kube::Client,
    /// `certificate-authority-data` for the kubeconfigs handed to authors.
    ca_data: Option<String>,
    subject: Subject,
}

impl std::fmt::Debug for ProviderWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderWorkspace")
            .field("workspace_url", &self.workspace_url)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl ProviderWorkspace {
    /// Connects with `kubeconfig`; `provider_workspace` is appended to a server that names no
    /// workspace. Asks kcp who the provider is.
    pub async fn connect(
        factory: &ClientFactory,
        kubeconfig: &[u8],
        provider_workspace: Option<&str>,
    ) -> Result<Arc<Self>, ConnectionError> {
        let mut config = ClientFactory::config(kubeconfig).await?;
        let server = config.cluster_url.to_string();
        let server = server.trim_end_matches('/');
        let (front, workspace_url) = match server.find("/clusters/") {
            Some(at) => (server[..at].to_owned(), server.to_owned()),
            None => match provider_workspace.filter(|p| !p.is_empty()) {
                Some(path) => (server.to_owned(), format!("{server}/clusters/{path}")),
                None => return Err(ConnectionError::NoWorkspace(server.to_owned())),
            },
        };
        config.cluster_url = parse_uri(&workspace_url)?;
        let client = factory.client_for(config.clone())?;
        let front_client = factory.client_for(with_url(&config, &front)?)?;
        let mut anonymous = with_url(&config, &front)?;
        anonymous.auth_info = Default::default();
        let anonymous_front = factory.client_for(anonymous)?;
        let ca_data = config.root_cert.as_ref().map(|certs| {
            let pem: String = certs.iter().map(|der| pem_certificate(der)).collect();
            base64::engine::general_purpose::STANDARD.encode(pem)
        });
        let subject = who_am_i(&client).await?;
        tracing::info!(workspace = %workspace_url, subject = ?subject, "connected to kcp");
        Ok(Arc::new(ProviderWorkspace {
            factory: factory.clone(),
            config,
            front,
            workspace_url,
            client,
            front_client,
            anonymous_front,
            ca_data,
            subject,
        }))
    }

    /// A client for the provider workspace, as the provider.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The provider workspace's URL.
    pub fn workspace_url(&self) -> &str {
        &self.workspace_url
    }

    /// The kcp front URL.
    pub fn front(&self) -> &str {
        &self.front
    }

    /// The provider's RBAC subject in consumer workspaces.
    pub fn subject(&self) -> &Subject {
        &self.subject
    }

    /// A client at the front URL without a credential, to scope per workspace with a token
    /// ([`ScopedService`](crate::access::clients::ScopedService)).
    pub fn anonymous_front(&self) -> &kube::Client {
        &self.anonymous_front
    }

    /// A client for a virtual-workspace endpoint URL (from the endpoint slice), as the provider.
    pub fn endpoint_client(&self, url: &str) -> Result<kube::Client, ConnectionError> {
        Ok(self
            .factory
            .client_for(with_url(&self.config, url.trim_end_matches('/'))?)?)
    }

    /// A client for consumer workspace `cluster` at the front URL, as the provider (for
    /// TokenRequests, which the virtual workspace does not serve).
    pub fn workspace_client(&self, cluster: &str) -> kube::Client {
        scoped_client(&self.front_client, &format!("/clusters/{cluster}"), None)
    }

    /// A client for consumer workspace `cluster` at the front URL that authenticates with
    /// `token`.
    pub fn token_client(&self, cluster: &str, token: &str) -> kube::Client {
        scoped_client(
            &self.anonymous_front,
            &format!("/clusters/{cluster}"),
            Some(token),
        )
    }

    /// A kubeconfig for consumer workspace `cluster` with `token`, for the author to hand to a
    /// worker: the front URL (which resolves logical cluster names) and the provider's CA.
    pub fn kubeconfig(&self, cluster: &str, user: &str, token: &str) -> Vec<u8> {
        let mut cluster_entry = serde_json::json!({
            "server": format!("{}/clusters/{cluster}", self.front),
        });
        if let Some(ca) = &self.ca_data {
            cluster_entry["certificate-authority-data"] = ca.clone().into();
        }
        if self.config.accept_invalid_certs {
            cluster_entry["insecure-skip-tls-verify"] = true.into();
        }
        if let Some(name) = &self.config.tls_server_name {
            cluster_entry["tls-server-name"] = name.clone().into();
        }
        let kubeconfig = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": cluster_entry}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
            "current-context": cluster,
        });
        // A JSON value of strings and objects always serializes.
        serde_norway::to_string(&kubeconfig)
            .unwrap_or_default()
            .into_bytes()
    }
}

fn parse_uri(url: &str) -> Result<http::Uri, ConnectionError> {
    url.parse::<http::Uri>()
        .map_err(|_| ConnectionError::NoWorkspace(url.to_owned()))
}

fn with_url(config: &kube::Config, url: &str) -> Result<kube::Config, ConnectionError> {
    let mut config = config.clone();
    config.cluster_url = parse_uri(url)?;
    Ok(config)
}

fn pem_certificate(der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

/// Who the provider is, from a SelfSubjectReview in its workspace.
async fn who_am_i(client: &kube::Client) -> Result<Subject, ConnectionError> {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .map_err(ConnectionError::WhoAmI)?;
    let user = review.status.and_then(|s| s.user_info).unwrap_or_default();
    let home = user
        .extra
        .as_ref()
        .and_then(|extra| extra.get("authentication.kcp.io/scopes"))
        .into_iter()
        .flatten()
        .flat_map(|scopes| scopes.split(','))
        .find_map(|scope| scope.trim().strip_prefix("cluster:"))
        .map(str::to_owned);
    Ok(match home {
        Some(cluster) => Subject::HomeCluster(cluster),
        None => Subject::User(user.username.unwrap_or_default()),
    })
}
