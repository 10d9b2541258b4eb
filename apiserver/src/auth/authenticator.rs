//! Bearer-token authentication of one cluster (or kcp shard): static tokens registered at start
//! or by tests, and ServiceAccount tokens of the cluster's issuer.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::RwLock;
use ring::rand::{SecureRandom, SystemRandom};

use crate::auth::serviceaccount::{ObjectLookup, TokenIssuer};
use crate::auth::user::{SYSTEM_ANONYMOUS, SYSTEM_UNAUTHENTICATED, UserInfo};
use crate::error::ApiError;

/// Why a bearer token did not authenticate. Requests answer every variant with a bare 401
/// `Unauthorized`; the message is what a TokenReview reports in `status.error`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    /// No authenticator knows the token. kube-apiserver reports no error for it in a TokenReview.
    #[error("invalid bearer token")]
    Unknown,
    /// The token is a ServiceAccount token of this cluster's issuer, and it is bad.
    #[error("{0}")]
    Invalid(String),
}

impl AuthnError {
    /// The response to a request carrying this token.
    pub fn status(&self) -> ApiError {
        ApiError::unauthorized()
    }
}

/// A token that authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated {
    /// The identity.
    pub user: UserInfo,
    /// The audiences, among those requested, the credential is valid for.
    pub audiences: Vec<String>,
    /// kcp: the logical cluster a ServiceAccount token was minted in. Authorization limits the
    /// identity to it (see [`crate::auth::Rbac::authorize`]).
    pub home_cluster: Option<String>,
}

/// The anonymous identity kube-apiserver gives requests without credentials.
pub(crate) fn anonymous() -> UserInfo {
    UserInfo {
        username: SYSTEM_ANONYMOUS.into(),
        groups: vec![SYSTEM_UNAUTHENTICATED.into()],
        ..UserInfo::default()
    }
}

/// The bearer token of an `Authorization` header value, parsed like kube-apiserver does (scheme
/// case-insensitive; an empty token counts as none).
pub(crate) fn bearer_token(authorization: &str) -> Option<&str> {
    let mut parts = authorization.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Authenticates the bearer tokens of one cluster, or of all logical clusters of one kcp shard.
#[derive(Debug)]
pub struct Authenticator {
    issuer: Arc<TokenIssuer>,
    static_tokens: RwLock<HashMap<String, UserInfo>>,
}

impl Authenticator {
    /// An authenticator for `issuer`'s ServiceAccount tokens and no static token yet.
    pub fn new(issuer: Arc<TokenIssuer>) -> Self {
        Authenticator {
            issuer,
            static_tokens: RwLock::new(HashMap::new()),
        }
    }

    /// The ServiceAccount token issuer.
    pub(crate) fn issuer(&self) -> &Arc<TokenIssuer> {
        &self.issuer
    }

    /// Registers a static token (kube-apiserver's `--token-auth-file`), replacing any user it had.
    pub(crate) fn add_token(&self, token: impl Into<String>, user: UserInfo) {
        self.static_tokens.write().insert(token.into(), user);
    }

    /// Registers `user` under a new random token and returns the token.
    pub fn add_random_token(&self, user: UserInfo) -> Result<String, ApiError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new().fill(&mut bytes).map_err(|_| {
            ApiError::new(
                500,
                "InternalError",
                "the system random number generator failed",
            )
        })?;
        let token = URL_SAFE_NO_PAD.encode(bytes);
        self.add_token(token.clone(), user);
        Ok(token)
    }

    #[cfg(test)]
    /// Forgets a static token; true when it was registered.
    pub(crate) fn remove_token(&self, token: &str) -> bool {
        self.static_tokens.write().remove(token).is_some()
    }

    /// Authenticates the bearer token of an API request: it must be valid for the API audiences.
    pub fn authenticate(
        &self,
        token: &str,
        lookup: &dyn ObjectLookup,
    ) -> Result<Authenticated, AuthnError> {
        self.authenticate_for(token, None, lookup)
    }

    /// Authenticates a token for the given audiences (a TokenReview's `spec.audiences`), or the
    /// API audiences when `None`.
    pub(crate) fn authenticate_for(
        &self,
        token: &str,
        audiences: Option<&[String]>,
        lookup: &dyn ObjectLookup,
    ) -> Result<Authenticated, AuthnError> {
        if let Some(user) = self.static_tokens.read().get(token).cloned() {
            // Static tokens know no audiences: kube-apiserver accepts them for its own only.
            let api = &self.issuer.config().api_audiences;
            let requested = audiences.unwrap_or(api);
            let common: Vec<String> = requested
                .iter()
                .filter(|a| api.contains(a))
                .cloned()
                .collect();
            if common.is_empty() && !api.is_empty() {
                return Err(AuthnError::Unknown);
            }
            return Ok(Authenticated {
                user,
                audiences: common,
                home_cluster: None,
            });
        }
        match self.issuer.validate(token, audiences, lookup)? {
            Some(v) => Ok(Authenticated {
                user: v.user,
                audiences: v.audiences,
                home_cluster: v.home_cluster,
            }),
            None => Err(AuthnError::Unknown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::serviceaccount::tests::Objects;
    use crate::auth::serviceaccount::{ServiceAccountRef, TokenIssuerConfig};

    fn authenticator() -> Authenticator {
        Authenticator::new(Arc::new(
            TokenIssuer::new(TokenIssuerConfig::kube()).expect("key generation"),
        ))
    }

    #[test]
    fn static_tokens_authenticate_until_removed() -> Result<(), Box<dyn std::error::Error>> {
        let authn = authenticator();
        let token = authn.add_random_token(UserInfo::admin())?;
        let ok = authn.authenticate(&token, &Objects::default())?;
        assert_eq!(ok.user, UserInfo::admin());
        assert_eq!(ok.audiences, [crate::auth::serviceaccount::KUBE_ISSUER]);
        authn.add_token("alice-token", UserInfo::new("alice", ["dev"]));
        assert_eq!(
            authn
                .authenticate("alice-token", &Objects::default())?
                .user
                .groups,
            ["dev", "system:authenticated"]
        );
        assert!(authn.remove_token("alice-token"));
        assert_eq!(
            authn.authenticate("alice-token", &Objects::default()),
            Err(AuthnError::Unknown)
        );
        assert_eq!(
            authn.authenticate_for(&token, Some(&["vault".into()]), &Objects::default()),
            Err(AuthnError::Unknown)
        );
        Ok(())
    }

    #[test]
    fn token_of_cluster_a_is_refused_on_cluster_b() -> Result<(), Box<dyn std::error::Error>> {
        let a = authenticator();
        let b = authenticator();
        let mut objects = Objects::default();
        objects.put(None, "ServiceAccount", "default", "x", "uid-x");
        let sa = ServiceAccountRef {
            cluster: None,
            namespace: "default",
            name: "x",
            uid: "uid-x",
        };
        let token = a
            .issuer()
            .mint(&sa, &a.issuer().config().api_audiences, 3600, None)?
            .token;
        assert_eq!(
            a.authenticate(&token, &objects)?.user.username,
            "system:serviceaccount:default:x"
        );
        let refused = b.authenticate(&token, &objects);
        assert!(
            matches!(refused, Err(AuthnError::Invalid(_))),
            "{refused:?}"
        );
        assert_eq!(refused.map_err(|e| e.status().code), Err(401));
        Ok(())
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("  Bearer abc  "), Some("abc"));
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(anonymous().groups, ["system:unauthenticated"]);
    }
}
