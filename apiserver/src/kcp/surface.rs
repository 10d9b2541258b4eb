//! The workspace surface of a kcp shard: authentication with ServiceAccount tokens of any shard,
//! per-workspace RBAC (in the `auth` module), and the wildcard `/clusters/*` (list and watch for
//! `system:masters`, bound resources addressed as `<resource>:<identityHash>`).

use std::sync::{Arc, Weak};

use super::server::KcpInner;
use crate::auth::{Attributes, LiveObject, ObjectLookup, UserInfo};
use crate::authn::ShardLookup;
use crate::error::{ApiError, ApiResult};
use crate::handler::{ClusterScope, Surface, Target};
use crate::registry::{GroupInfo, ResourceInfo};

/// Lets token validation find ServiceAccounts and Secrets on the shard of their logical cluster.
pub(crate) struct KcpLookup<'a>(pub &'a KcpInner);

impl KcpLookup<'_> {
    fn shard(&self, cluster: Option<&str>) -> Option<Arc<crate::shard::Shard>> {
        let c = cluster?;
        self.0.shard_of(c).map(|s| s.shard.clone())
    }
}

impl ObjectLookup for KcpLookup<'_> {
    fn service_account(
        &self,
        cluster: Option<&str>,
        namespace: &str,
        name: &str,
    ) -> Option<LiveObject> {
        let shard = self.shard(cluster)?;
        ShardLookup(&shard).service_account(cluster, namespace, name)
    }
    fn secret(&self, cluster: Option<&str>, namespace: &str, name: &str) -> Option<LiveObject> {
        let shard = self.shard(cluster)?;
        ShardLookup(&shard).secret(cluster, namespace, name)
    }
}

/// Authenticates a request to any kcp surface: static tokens registered on the shard, and
/// ServiceAccount tokens of the installation's issuer wherever they were minted.
pub(crate) fn authenticate(
    inner: &KcpInner,
    t: &Target,
    authorization: Option<&str>,
    cert: Option<&crate::tls::PeerCertificates>,
) -> ApiResult<UserInfo> {
    crate::auth::x509::authenticate_request(cert, authorization, |token| {
        t.shard
            .auth
            .authenticator()
            .authenticate(token, &KcpLookup(inner))
            .map(|a| a.user)
            .map_err(|e| e.status())
    })
}

/// Workspaces and the wildcard of one shard.
pub(crate) struct WorkspaceSurface {
    inner: Weak<KcpInner>,
}

impl WorkspaceSurface {
    pub(crate) fn new(inner: &Arc<KcpInner>) -> Self {
        WorkspaceSurface {
            inner: Arc::downgrade(inner),
        }
    }
}

impl Surface for WorkspaceSurface {
    fn lookup(
        &self,
        t: &Target,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        match &t.cluster {
            ClusterScope::One(c) => t.shard.registry().lookup(c, group, version, resource),
            ClusterScope::Wildcard => {
                // Bound resources are stored per export identity: the wildcard names them
                // `<resource>:<identityHash>`.
                if let Some((plain, identity)) = resource.split_once(':') {
                    let inner = self.inner.upgrade()?;
                    return super::controller::identity_infos(&inner, identity)
                        .into_iter()
                        .find(|i| i.group == group && i.version == version && i.resource == plain);
                }
                t.shard.registry().builtins().get(group, version, resource)
            }
        }
    }

    fn groups(&self, t: &Target) -> Vec<GroupInfo> {
        match &t.cluster {
            ClusterScope::One(c) => t.shard.registry().groups(c),
            ClusterScope::Wildcard => t.shard.registry().builtins().group_infos(),
        }
    }

    fn authenticate(
        &self,
        t: &Target,
        authorization: Option<&str>,
        cert: Option<&crate::tls::PeerCertificates>,
    ) -> ApiResult<UserInfo> {
        let inner = self
            .inner
            .upgrade()
            .ok_or_else(|| ApiError::service_unavailable("kcp is shutting down"))?;
        authenticate(&inner, t, authorization, cert)
    }

    fn authorize(&self, t: &Target, user: &UserInfo, attrs: &Attributes) -> ApiResult<()> {
        match &t.cluster {
            ClusterScope::One(c) => {
                t.shard.auth.authorize(c, user, attrs)?;
                let Attributes::Resource(r) = attrs else {
                    return Ok(());
                };
                let Some(inner) = self.inner.upgrade() else {
                    return Ok(());
                };
                let Some(ss) = inner.shard_of(c) else {
                    return Ok(());
                };
                let entry = ss.bindings.read().get(&**c).and_then(|list| {
                    list.iter()
                        .find(|b| {
                            b.resources
                                .iter()
                                .any(|(g, res)| *g == r.group && *res == r.resource)
                        })
                        .cloned()
                });
                match entry {
                    Some(b) => super::controller::binding::check_policy(&inner, &b, user, attrs),
                    None => Ok(()),
                }
            }
            // A shard's wildcard is for system:masters only (kcp serves it to the shard admin).
            ClusterScope::Wildcard if user.is_privileged() => Ok(()),
            ClusterScope::Wildcard => Err(attrs.forbidden(&user.username, "")),
        }
    }
}
