//! Wires the `auth` module into a shard: one authenticator (admin token, ServiceAccount JWTs of the
//! shard's issuer), one RBAC authorizer per logical cluster kept current from RBAC writes, and the
//! object lookups tokens need.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use crate::auth::{
    Attributes, Authenticator, LiveObject, ObjectLookup, Rbac, RbacKind, TokenIssuer,
    TokenIssuerConfig, UserInfo,
};
use crate::error::ApiResult;
use crate::shard::{DEFAULT_LOGICAL_CLUSTER, Shard};
use crate::store::{ObjKey, StoreKey};

/// Authentication and authorization state of one shard.
pub(crate) struct Authn {
    authenticator: Authenticator,
    kcp: bool,
    /// kcp: the shard-wide bootstrap policy logical clusters fall back to.
    bootstrap: Option<Arc<Rbac>>,
    rbac: RwLock<HashMap<Arc<str>, Arc<Rbac>>>,
}

impl std::fmt::Debug for Authn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authn")
            .field("kcp", &self.kcp)
            .finish_non_exhaustive()
    }
}

impl Authn {
    /// The authenticator of a shard with its admin token and the given ServiceAccount token
    /// issuer (`None`: a fresh one), shared by the shards of one kcp installation.
    pub(crate) fn with_issuer(
        admin_token: &str,
        kcp: bool,
        issuer: Option<Arc<TokenIssuer>>,
    ) -> Result<Self, crate::auth::jwt::JwtError> {
        let issuer = match issuer {
            Some(i) => i,
            None => Arc::new(TokenIssuer::new(if kcp {
                TokenIssuerConfig::kcp()
            } else {
                TokenIssuerConfig::kube()
            })?),
        };
        let authenticator = Authenticator::new(issuer);
        authenticator.add_token(admin_token, UserInfo::admin());
        Ok(Authn {
            authenticator,
            kcp,
            bootstrap: kcp.then(|| crate::auth::bootstrap::policy(true)),
            rbac: RwLock::new(HashMap::new()),
        })
    }

    /// The authenticator (static tokens can be added to it).
    pub(crate) fn authenticator(&self) -> &Authenticator {
        &self.authenticator
    }

    /// The authorizer of a logical cluster.
    pub(crate) fn rbac(&self, cluster: &str) -> Arc<Rbac> {
        if let Some(r) = self.rbac.read().get(cluster) {
            return r.clone();
        }
        let r = Arc::new(if self.kcp {
            Rbac::for_logical_cluster(cluster, self.bootstrap.clone())
        } else {
            Rbac::new()
        });
        self.rbac.write().entry(cluster.into()).or_insert(r).clone()
    }

    /// Forgets the authorizer of a removed logical cluster.
    pub(crate) fn remove_cluster(&self, cluster: &str) {
        self.rbac.write().remove(cluster);
    }

    /// Authenticates a request by its client certificate and `Authorization` header: neither is
    /// `system:anonymous`; a certificate the CA did not sign, or a token nobody issued (or an
    /// expired or revoked one), is 401.
    pub(crate) fn authenticate(
        &self,
        shard: &Shard,
        authorization: Option<&str>,
        cert: Option<&crate::tls::PeerCertificates>,
    ) -> ApiResult<UserInfo> {
        crate::auth::x509::authenticate_request(cert, authorization, |token| {
            self.authenticator
                .authenticate(token, &ShardLookup(shard))
                .map(|a| a.user)
                .map_err(|e| e.status())
        })
    }

    /// Authorizes `attrs` for `user` in a logical cluster.
    pub(crate) fn authorize(
        &self,
        cluster: &str,
        user: &UserInfo,
        attrs: &Attributes,
    ) -> ApiResult<()> {
        if user.is_privileged() {
            return Ok(());
        }
        match self.rbac(cluster).authorize(user, attrs) {
            crate::auth::Decision::Allow { .. } => Ok(()),
            crate::auth::Decision::Deny(d) => Err(d.status(user, attrs)),
        }
    }

    /// Keeps a logical cluster's authorizer current after a committed write to an RBAC object.
    pub(crate) fn rbac_written(
        &self,
        cluster: &str,
        resource: &str,
        ns: &str,
        name: &str,
        rv: u64,
        obj: Option<&Value>,
    ) {
        let Some(kind) = RbacKind::from_resource(resource) else {
            return;
        };
        if let Err(e) = self.rbac(cluster).update(kind, ns, name, rv, obj) {
            tracing::warn!("RBAC object not indexed: {e}");
        }
    }

    /// The `ServiceAccountRef` cluster of a logical cluster: kcp tokens name their logical cluster.
    pub(crate) fn token_cluster<'a>(&self, cluster: &'a str) -> Option<&'a str> {
        self.kcp.then_some(cluster)
    }
}

/// Lets the auth module see ServiceAccounts and Secrets in the shard's store.
pub(crate) struct ShardLookup<'a>(pub &'a Shard);

impl ShardLookup<'_> {
    fn live(
        &self,
        resource: &str,
        cluster: Option<&str>,
        ns: &str,
        name: &str,
    ) -> Option<LiveObject> {
        let cluster = cluster.unwrap_or(DEFAULT_LOGICAL_CLUSTER);
        let o = self.0.store().get(
            &StoreKey::new("", resource),
            &ObjKey::new(cluster.into(), ns, name),
        )?;
        let deletion_timestamp = if o.deleting {
            o.value()
                .pointer("/metadata/deletionTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        } else {
            None
        };
        Some(LiveObject {
            uid: o.uid.to_string(),
            deletion_timestamp,
        })
    }
}

impl ObjectLookup for ShardLookup<'_> {
    fn service_account(
        &self,
        cluster: Option<&str>,
        namespace: &str,
        name: &str,
    ) -> Option<LiveObject> {
        self.live("serviceaccounts", cluster, namespace, name)
    }
    fn secret(&self, cluster: Option<&str>, namespace: &str, name: &str) -> Option<LiveObject> {
        self.live("secrets", cluster, namespace, name)
    }
}

/// The authorization attributes of a resource request.
pub(crate) fn resource_attributes(
    verb: &str,
    group: &str,
    version: &str,
    resource: &str,
    sub: &str,
    ns: &str,
    name: &str,
) -> Attributes {
    Attributes::resource(verb, group, resource, ns, name)
        .with_subresource(sub)
        .with_version(version)
}
