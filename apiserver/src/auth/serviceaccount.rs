//! ServiceAccount tokens: the claims kube-apiserver (and kcp) put in them, minting them for the
//! TokenRequest API, and validating them the way kube-apiserver's ServiceAccount authenticator does.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::auth::authenticator::AuthnError;
use crate::auth::clock::{Clock, SystemClock};
use crate::auth::jwt::{self, JwtError, SigningKey, VerifyingKey};
use crate::auth::user::{
    self, EXTRA_CREDENTIAL_ID, EXTRA_KCP_CLUSTER_NAME, EXTRA_KCP_SCOPES, UserInfo,
};
use crate::error::go_quote_list;

/// kube-apiserver's ServiceAccount issuer in a kind cluster; also its default API audience.
pub(crate) const KUBE_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// kcp's default ServiceAccount issuer and API audience.
pub(crate) const KCP_ISSUER: &str = "https://kcp.default.svc";
/// The smallest `expirationSeconds` kube-apiserver accepts in a TokenRequest (10 minutes).
pub(crate) const KUBE_MIN_EXPIRATION_SECONDS: i64 = 600;
/// The largest `expirationSeconds` kube-apiserver's validation accepts (2^32 seconds).
pub(crate) const KUBE_MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// `expirationSeconds` when a TokenRequest leaves it out (one hour).
pub(crate) const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// What an object lookup reports about a live object a token depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveObject {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.deletionTimestamp`, when the object is being deleted.
    pub deletion_timestamp: Option<Timestamp>,
}

/// Read access to the objects tokens are bound to, provided by the server core from its store.
///
/// `cluster` is the kcp logical cluster name, `None` on a plain Kubernetes cluster.
pub trait ObjectLookup {
    /// The ServiceAccount `namespace/name`, if it exists.
    fn service_account(
        &self,
        cluster: Option<&str>,
        namespace: &str,
        name: &str,
    ) -> Option<LiveObject>;
    /// The Secret `namespace/name`, if it exists.
    fn secret(&self, cluster: Option<&str>, namespace: &str, name: &str) -> Option<LiveObject>;
}

/// How an issuer mints and checks tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenIssuerConfig {
    /// The `iss` claim; tokens with another issuer are not this issuer's to judge.
    pub issuer: String,
    /// The audiences the API server itself accepts (`--api-audiences`): a token must carry one of
    /// them to authenticate an API request, and TokenRequests without audiences get them.
    pub api_audiences: Vec<String>,
    /// The smallest `expirationSeconds` a TokenRequest may ask for. kube-apiserver: 600. Tests of
    /// token refresh lower it to get short-lived tokens.
    pub min_expiration_seconds: i64,
    /// kube-apiserver's `--service-account-max-token-expiration`: longer requests are shortened
    /// to it, with a warning. `None`: no limit beyond validation's 2^32 seconds.
    pub max_expiration_seconds: Option<i64>,
    /// Tolerated clock skew on `exp`, `nbf` and `iat`; go-jose's default, which kube-apiserver
    /// uses, is one minute.
    pub leeway: SignedDuration,
}

impl TokenIssuerConfig {
    /// kube-apiserver as kind configures it.
    pub fn kube() -> Self {
        TokenIssuerConfig {
            issuer: KUBE_ISSUER.to_string(),
            api_audiences: vec![KUBE_ISSUER.to_string()],
            min_expiration_seconds: KUBE_MIN_EXPIRATION_SECONDS,
            max_expiration_seconds: None,
            leeway: SignedDuration::from_secs(60),
        }
    }

    /// A kcp shard with its defaults.
    pub fn kcp() -> Self {
        TokenIssuerConfig {
            issuer: KCP_ISSUER.to_string(),
            api_audiences: vec![KCP_ISSUER.to_string()],
            ..TokenIssuerConfig::kube()
        }
    }
}

/// A reference by name and uid, as in the `kubernetes.io` claims.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ObjectRefClaim {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The private `kubernetes.io` claim of a ServiceAccount token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KubernetesClaims {
    /// kcp only: the logical cluster the ServiceAccount lives in.
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_name: Option<String>,
    /// The ServiceAccount's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The ServiceAccount.
    #[serde(default)]
    pub serviceaccount: ObjectRefClaim,
    /// The Pod the token is bound to (never minted here: the embedded server runs no pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRefClaim>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRefClaim>,
    /// The Node the token is bound to (never minted here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRefClaim>,
    /// Legacy projected-token warning time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

/// All claims of a ServiceAccount token, as kube-apiserver's `serviceaccount.Claims` builds them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// Issuer.
    pub iss: String,
    /// `system:serviceaccount:<ns>:<name>`.
    pub sub: String,
    /// Audiences.
    #[serde(default, deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// Token id; kube-apiserver ≥ 1.29 sets it and reports it as the credential id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The private claims.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

/// JWT allows `aud` to be one string or a list.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// The ServiceAccount a token is minted for.
#[derive(Clone, Copy, Debug)]
pub struct ServiceAccountRef<'a> {
    /// kcp logical cluster; `None` on a plain cluster.
    pub cluster: Option<&'a str>,
    /// Namespace.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// `metadata.uid`; a token stops working when the ServiceAccount is recreated with another.
    pub uid: &'a str,
}

/// A freshly minted token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MintedToken {
    /// The compact JWS.
    pub token: String,
    /// When it expires.
    pub expiration: Timestamp,
}

/// A token that passed every check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedToken {
    /// The identity it authenticates.
    pub user: UserInfo,
    /// The requested audiences the token carries.
    pub audiences: Vec<String>,
    /// kcp: the logical cluster the ServiceAccount lives in.
    pub home_cluster: Option<String>,
}

/// How many verified tokens an issuer remembers; past it the memory starts over.
const VERIFIED_CACHE_ENTRIES: usize = 4096;

/// Mints and validates the ServiceAccount tokens of one cluster, or of every logical cluster of
/// one kcp shard (they share the shard's key, as in kcp).
///
/// A token's signature is checked once and its claims remembered (an ECDSA verification costs
/// tens of microseconds, too much for every request). Expiry, audience and the liveness of the
/// ServiceAccount are checked on every use, so a deleted ServiceAccount revokes at once, where
/// kube-apiserver's authentication cache keeps answers for up to ten seconds.
#[derive(Debug)]
pub struct TokenIssuer {
    config: TokenIssuerConfig,
    key: SigningKey,
    clock: Arc<dyn Clock>,
    verified: Mutex<HashMap<String, Arc<Claims>>>,
}

impl TokenIssuer {
    /// An issuer with a fresh key and the system clock.
    pub fn new(config: TokenIssuerConfig) -> Result<Self, JwtError> {
        Ok(TokenIssuer::with_key(config, SigningKey::generate()?))
    }

    /// An issuer signing with the given key.
    pub fn with_key(config: TokenIssuerConfig, key: SigningKey) -> Self {
        TokenIssuer {
            config,
            key,
            clock: Arc::new(SystemClock),
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `clock` for minting and expiry checks (a manual clock in tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &TokenIssuerConfig {
        &self.config
    }

    /// The public key, for `/openid/v1/jwks`.
    pub fn verifying_key(&self) -> &VerifyingKey {
        self.key.verifying_key()
    }

    /// The current time on this issuer's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// `/.well-known/openid-configuration` as kube-apiserver serves it.
    pub fn openid_configuration(&self, jwks_uri: &str) -> serde_json::Value {
        serde_json::json!({
            "issuer": self.config.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }

    /// `/openid/v1/jwks`.
    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [self.key.verifying_key().jwk()] })
    }

    /// Mints a token for `sa`, valid for `expiration_seconds` from now, optionally bound to a
    /// Secret `(name, uid)` in the ServiceAccount's namespace. Limits are the caller's to check
    /// (see [`crate::auth::token_request`]).
    pub fn mint(
        &self,
        sa: &ServiceAccountRef<'_>,
        audiences: &[String],
        expiration_seconds: i64,
        bound_secret: Option<(&str, &str)>,
    ) -> Result<MintedToken, JwtError> {
        let now = self.clock.now();
        let expiration = now
            .checked_add(SignedDuration::from_secs(expiration_seconds))
            .unwrap_or(Timestamp::MAX);
        let claims = Claims {
            iss: self.config.issuer.clone(),
            sub: user::service_account_username(sa.namespace, sa.name),
            aud: audiences.to_vec(),
            exp: expiration.as_second(),
            iat: now.as_second(),
            nbf: now.as_second(),
            jti: Some(uuid::Uuid::new_v4().to_string()),
            kubernetes: KubernetesClaims {
                cluster_name: sa.cluster.map(str::to_string),
                namespace: sa.namespace.to_string(),
                serviceaccount: ObjectRefClaim {
                    name: sa.name.to_string(),
                    uid: sa.uid.to_string(),
                },
                secret: bound_secret.map(|(name, uid)| ObjectRefClaim {
                    name: name.into(),
                    uid: uid.into(),
                }),
                ..KubernetesClaims::default()
            },
        };
        let token = self.key.sign(&claims)?;
        // Report the expiry at the precision the token carries it.
        let expiration = Timestamp::from_second(claims.exp).unwrap_or(expiration);
        Ok(MintedToken { token, expiration })
    }

    /// Judges a bearer token like kube-apiserver's ServiceAccount authenticator.
    ///
    /// `Ok(None)`: not a JWT of this issuer, so another authenticator may know it. `Err`: it is
    /// this issuer's token and it is bad (wrong signature, audience, expired, revoked).
    /// `requested_audiences` defaults to the API audiences; the token must carry one of them.
    pub fn validate(
        &self,
        token: &str,
        requested_audiences: Option<&[String]>,
        lookup: &dyn ObjectLookup,
    ) -> Result<Option<ValidatedToken>, AuthnError> {
        let cached = self.verified.lock().get(token).cloned();
        let claims = match cached {
            Some(claims) => claims,
            None => {
                let Ok((_, unverified)) = jwt::decode_unverified(token) else {
                    return Ok(None);
                };
                if unverified.get("iss").and_then(|v| v.as_str())
                    != Some(self.config.issuer.as_str())
                {
                    return Ok(None);
                }
                let claims = self
                    .key
                    .verifying_key()
                    .verify(token)
                    .map_err(|e| AuthnError::Invalid(e.to_string()))?;
                let claims: Arc<Claims> = Arc::new(serde_json::from_value(claims).map_err(|_| {
                    AuthnError::Invalid(
                        "service account token claims could not be validated due to unexpected private claim".into(),
                    )
                })?);
                let mut verified = self.verified.lock();
                if verified.len() >= VERIFIED_CACHE_ENTRIES {
                    verified.clear();
                }
                verified.insert(token.to_string(), claims.clone());
                claims
            }
        };

        let token_audiences = if claims.aud.is_empty() {
            self.config.api_audiences.clone()
        } else {
            claims.aud.clone()
        };
        let requested = requested_audiences.unwrap_or(&self.config.api_audiences);
        let audiences: Vec<String> = requested
            .iter()
            .filter(|a| token_audiences.contains(a))
            .cloned()
            .collect();
        if audiences.is_empty() && !self.config.api_audiences.is_empty() {
            return Err(AuthnError::Invalid(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quote_list(&token_audiences),
                go_quote_list(requested)
            )));
        }

        let now = self.clock.now();
        let leeway = self.config.leeway;
        let at = |seconds: i64| Timestamp::from_second(seconds).unwrap_or(Timestamp::MAX);
        if now > at(claims.exp).checked_add(leeway).unwrap_or(Timestamp::MAX) {
            return Err(AuthnError::Invalid(
                "service account token has expired".into(),
            ));
        }
        let now_plus_leeway = now.checked_add(leeway).unwrap_or(Timestamp::MAX);
        if now_plus_leeway < at(claims.nbf) {
            return Err(AuthnError::Invalid(
                "service account token is not valid yet".into(),
            ));
        }
        if now_plus_leeway < at(claims.iat) {
            return Err(AuthnError::Invalid(
                "service account token claims could not be validated due to unexpected validation error".into(),
            ));
        }

        let k = &claims.kubernetes;
        let cluster = k.cluster_name.as_deref();
        let namespace = k.namespace.as_str();
        let sa_name = k.serviceaccount.name.as_str();
        if claims.sub != user::service_account_username(namespace, sa_name) {
            return Err(AuthnError::Invalid(
                "service account token claims could not be validated".into(),
            ));
        }
        // Objects deleted longer ago than the leeway no longer vouch for the token.
        let invalid_if_deleted_before = now.checked_sub(leeway).unwrap_or(Timestamp::MIN);
        let deleted = |o: &LiveObject| {
            o.deletion_timestamp
                .is_some_and(|t| t < invalid_if_deleted_before)
        };

        let Some(sa) = lookup.service_account(cluster, namespace, sa_name) else {
            return Err(AuthnError::Invalid(format!(
                "serviceaccount \"{sa_name}\" not found"
            )));
        };
        if deleted(&sa) {
            return Err(AuthnError::Invalid(format!(
                "service account {namespace}/{sa_name} has been deleted"
            )));
        }
        if sa.uid != k.serviceaccount.uid {
            return Err(AuthnError::Invalid(format!(
                "service account UID ({}) does not match claim ({})",
                sa.uid, k.serviceaccount.uid
            )));
        }
        if let Some(secret_ref) = &k.secret {
            let invalidated =
                || AuthnError::Invalid("service account token has been invalidated".into());
            let secret = lookup
                .secret(cluster, namespace, &secret_ref.name)
                .ok_or_else(invalidated)?;
            if deleted(&secret) {
                return Err(invalidated());
            }
            if secret.uid != secret_ref.uid {
                return Err(AuthnError::Invalid(format!(
                    "secret UID ({}) does not match service account secret ref claim ({})",
                    secret.uid, secret_ref.uid
                )));
            }
        }
        if k.pod.is_some() || k.node.is_some() {
            // The embedded server has no Pods or Nodes, so nothing can vouch for such a binding.
            return Err(AuthnError::Invalid(
                "service account token has been invalidated".into(),
            ));
        }

        let mut user = UserInfo::service_account(namespace, sa_name, &k.serviceaccount.uid);
        if let Some(jti) = &claims.jti {
            user.extra
                .insert(EXTRA_CREDENTIAL_ID.into(), vec![format!("JTI={jti}")]);
        }
        if let Some(cluster) = cluster {
            user.extra
                .insert(EXTRA_KCP_SCOPES.into(), vec![format!("cluster:{cluster}")]);
            user.extra
                .insert(EXTRA_KCP_CLUSTER_NAME.into(), vec![cluster.to_string()]);
        }
        Ok(Some(ValidatedToken {
            user,
            audiences,
            home_cluster: cluster.map(str::to_string),
        }))
    }
}

/// kcp: the logical cluster a ServiceAccount token claims to come from, read without checking the
/// signature (`kubernetes.io.clusterName`, or the legacy `kubernetes.io/serviceaccount/clusterName`).
///
/// kcp routes a request without `/clusters/<name>` to this cluster; authentication then checks
/// the token for real.
pub(crate) fn unverified_cluster_name(token: &str) -> Option<String> {
    let (_, claims) = jwt::decode_unverified(token).ok()?;
    claims
        .get("kubernetes.io")
        .and_then(|k| k.get("clusterName"))
        .or_else(|| claims.get("kubernetes.io/serviceaccount/clusterName"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::auth::clock::ManualClock;

    /// An in-memory object store for tests: `(cluster, kind, namespace, name) → object`.
    #[derive(Default)]
    pub(crate) struct Objects(
        pub HashMap<(Option<String>, &'static str, String, String), LiveObject>,
    );

    impl Objects {
        pub(crate) fn put(
            &mut self,
            cluster: Option<&str>,
            kind: &'static str,
            ns: &str,
            name: &str,
            uid: &str,
        ) {
            self.0.insert(
                (cluster.map(str::to_string), kind, ns.into(), name.into()),
                LiveObject {
                    uid: uid.into(),
                    deletion_timestamp: None,
                },
            );
        }
        fn get(
            &self,
            cluster: Option<&str>,
            kind: &'static str,
            ns: &str,
            name: &str,
        ) -> Option<LiveObject> {
            self.0
                .get(&(
                    cluster.map(str::to_string),
                    kind,
                    ns.to_string(),
                    name.to_string(),
                ))
                .cloned()
        }
    }

    impl ObjectLookup for Objects {
        fn service_account(
            &self,
            cluster: Option<&str>,
            namespace: &str,
            name: &str,
        ) -> Option<LiveObject> {
            self.get(cluster, "ServiceAccount", namespace, name)
        }
        fn secret(&self, cluster: Option<&str>, namespace: &str, name: &str) -> Option<LiveObject> {
            self.get(cluster, "Secret", namespace, name)
        }
    }

    fn sa<'a>(cluster: Option<&'a str>) -> ServiceAccountRef<'a> {
        ServiceAccountRef {
            cluster,
            namespace: "default",
            name: "builder",
            uid: "sa-uid",
        }
    }

    fn issuer(clock: Arc<ManualClock>) -> TokenIssuer {
        TokenIssuer::new(TokenIssuerConfig::kube())
            .map(|i| i.with_clock(clock))
            .expect("key generation")
    }

    fn store() -> Objects {
        let mut objects = Objects::default();
        objects.put(None, "ServiceAccount", "default", "builder", "sa-uid");
        objects
    }

    fn invalid(r: Result<Option<ValidatedToken>, AuthnError>) -> String {
        match r {
            Err(AuthnError::Invalid(m)) => m,
            other => panic!("expected an invalid token, got {other:?}"),
        }
    }

    #[test]
    fn minted_token_carries_kube_claims_and_authenticates() -> Result<(), Box<dyn std::error::Error>>
    {
        let clock = Arc::new(ManualClock::new());
        let issuer = issuer(clock.clone());
        let minted = issuer.mint(&sa(None), &[KUBE_ISSUER.to_string()], 3600, None)?;
        let (_, claims) = jwt::decode_unverified(&minted.token)?;
        assert_eq!(claims["iss"], KUBE_ISSUER);
        assert_eq!(claims["sub"], "system:serviceaccount:default:builder");
        assert_eq!(claims["aud"], serde_json::json!([KUBE_ISSUER]));
        assert_eq!(claims["exp"].as_i64(), Some(minted.expiration.as_second()));
        assert_eq!(
            claims["exp"]
                .as_i64()
                .zip(claims["iat"].as_i64())
                .map(|(e, i)| e - i),
            Some(3600)
        );
        assert_eq!(claims["nbf"], claims["iat"]);
        assert_eq!(claims["kubernetes.io"]["namespace"], "default");
        assert_eq!(
            claims["kubernetes.io"]["serviceaccount"],
            serde_json::json!({"name": "builder", "uid": "sa-uid"})
        );
        assert!(claims["kubernetes.io"].get("clusterName").is_none());

        let validated = issuer
            .validate(&minted.token, None, &store())?
            .ok_or("not recognised")?;
        assert_eq!(
            validated.user.username,
            "system:serviceaccount:default:builder"
        );
        assert_eq!(validated.user.uid, "sa-uid");
        assert_eq!(
            validated.user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ]
        );
        let jti = claims["jti"].as_str().ok_or("no jti")?;
        assert_eq!(
            validated.user.extra[EXTRA_CREDENTIAL_ID],
            [format!("JTI={jti}")]
        );
        assert_eq!(validated.audiences, [KUBE_ISSUER]);
        assert_eq!(validated.home_cluster, None);
        Ok(())
    }

    #[test]
    fn token_of_another_issuer_is_not_judged_and_of_another_key_is_refused()
    -> Result<(), Box<dyn std::error::Error>> {
        let clock = Arc::new(ManualClock::new());
        let a = issuer(clock.clone());
        let b = issuer(clock.clone());
        let token = a
            .mint(&sa(None), &[KUBE_ISSUER.to_string()], 3600, None)?
            .token;
        assert_eq!(
            invalid(b.validate(&token, None, &store())),
            "go-jose/go-jose: error in cryptographic primitive"
        );
        let other_issuer = TokenIssuer::new(TokenIssuerConfig::kcp())?;
        assert_eq!(other_issuer.validate(&token, None, &store())?, None);
        assert_eq!(a.validate("not-a-jwt", None, &store())?, None);
        Ok(())
    }

    #[test]
    fn expiry_honours_leeway() -> Result<(), Box<dyn std::error::Error>> {
        let clock = Arc::new(ManualClock::new());
        let issuer = issuer(clock.clone());
        let token = issuer
            .mint(&sa(None), &[KUBE_ISSUER.to_string()], 600, None)?
            .token;
        clock.advance(SignedDuration::from_secs(630));
        assert!(
            issuer.validate(&token, None, &store())?.is_some(),
            "within the one-minute leeway"
        );
        clock.advance(SignedDuration::from_secs(60));
        assert_eq!(
            invalid(issuer.validate(&token, None, &store())),
            "service account token has expired"
        );
        Ok(())
    }

    #[test]
    fn audience_must_match() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = issuer(Arc::new(ManualClock::new()));
        let token = issuer
            .mint(&sa(None), &["vault".to_string()], 3600, None)?
            .token;
        assert_eq!(
            invalid(issuer.validate(&token, None, &store())),
            "token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]"
        );
        let ok = issuer
            .validate(&token, Some(&["vault".into(), "x".into()]), &store())?
            .ok_or("not recognised")?;
        assert_eq!(ok.audiences, ["vault"]);
        Ok(())
    }

    #[test]
    fn deleted_or_recreated_service_account_revokes() -> Result<(), Box<dyn std::error::Error>> {
        let clock = Arc::new(ManualClock::new());
        let issuer = issuer(clock.clone());
        let token = issuer
            .mint(&sa(None), &[KUBE_ISSUER.to_string()], 3600, None)?
            .token;
        let mut objects = Objects::default();
        assert_eq!(
            invalid(issuer.validate(&token, None, &objects)),
            "serviceaccount \"builder\" not found"
        );
        objects.put(None, "ServiceAccount", "default", "builder", "other-uid");
        assert_eq!(
            invalid(issuer.validate(&token, None, &objects)),
            "service account UID (other-uid) does not match claim (sa-uid)"
        );
        objects.put(None, "ServiceAccount", "default", "builder", "sa-uid");
        let deleting = LiveObject {
            uid: "sa-uid".into(),
            deletion_timestamp: Some(clock.now()),
        };
        objects.0.insert(
            (None, "ServiceAccount", "default".into(), "builder".into()),
            deleting,
        );
        assert!(
            issuer.validate(&token, None, &objects)?.is_some(),
            "deletion younger than the leeway"
        );
        clock.advance(SignedDuration::from_secs(61));
        assert_eq!(
            invalid(issuer.validate(&token, None, &objects)),
            "service account default/builder has been deleted"
        );
        Ok(())
    }

    #[test]
    fn secret_bound_token_dies_with_its_secret() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = issuer(Arc::new(ManualClock::new()));
        let token = issuer
            .mint(
                &sa(None),
                &[KUBE_ISSUER.to_string()],
                3600,
                Some(("tok", "s-uid")),
            )?
            .token;
        let mut objects = store();
        assert_eq!(
            invalid(issuer.validate(&token, None, &objects)),
            "service account token has been invalidated"
        );
        objects.put(None, "Secret", "default", "tok", "s-uid");
        assert!(issuer.validate(&token, None, &objects)?.is_some());
        objects.put(None, "Secret", "default", "tok", "new-uid");
        assert_eq!(
            invalid(issuer.validate(&token, None, &objects)),
            "secret UID (new-uid) does not match service account secret ref claim (s-uid)"
        );
        Ok(())
    }

    #[test]
    fn kcp_token_names_its_home_cluster() -> Result<(), Box<dyn std::error::Error>> {
        let issuer = TokenIssuer::new(TokenIssuerConfig::kcp())?;
        let token = issuer
            .mint(
                &sa(Some("27uqz02z4wed6sjb")),
                &[KCP_ISSUER.to_string()],
                3600,
                None,
            )?
            .token;
        assert_eq!(
            unverified_cluster_name(&token).as_deref(),
            Some("27uqz02z4wed6sjb")
        );
        let (_, claims) = jwt::decode_unverified(&token)?;
        assert_eq!(claims["kubernetes.io"]["clusterName"], "27uqz02z4wed6sjb");

        let mut objects = Objects::default();
        objects.put(
            Some("27uqz02z4wed6sjb"),
            "ServiceAccount",
            "default",
            "builder",
            "sa-uid",
        );
        let validated = issuer
            .validate(&token, None, &objects)?
            .ok_or("not recognised")?;
        assert_eq!(validated.home_cluster.as_deref(), Some("27uqz02z4wed6sjb"));
        assert_eq!(
            validated.user.extra[EXTRA_KCP_SCOPES],
            ["cluster:27uqz02z4wed6sjb"]
        );
        assert_eq!(
            validated.user.extra[EXTRA_KCP_CLUSTER_NAME],
            ["27uqz02z4wed6sjb"]
        );
        // The same name in another logical cluster does not vouch for it.
        let mut elsewhere = Objects::default();
        elsewhere.put(
            Some("other"),
            "ServiceAccount",
            "default",
            "builder",
            "sa-uid",
        );
        assert_eq!(
            invalid(issuer.validate(&token, None, &elsewhere)),
            "serviceaccount \"builder\" not found"
        );
        Ok(())
    }
}
