//! ES256 JSON Web Tokens in compact form: the signing key of a cluster and the checks of a
//! token's signature.
//!
//! Written on `ring` (already in the tree through rustls) rather than with `jsonwebtoken`:
//! `jsonwebtoken` 10 needs a second crypto stack (`aws-lc-rs`, a C build, or the RustCrypto
//! crates) and cannot generate keys, while every embedded cluster needs a fresh key at start.
//! ES256 rather than kube-apiserver's usual RS256 because ring cannot generate RSA keys and
//! pure-Rust RSA generation takes seconds in debug builds; kube-apiserver accepts ECDSA
//! ServiceAccount signing keys too, so clients see an ordinary Kubernetes token. A JWS is three
//! base64url segments and one signature check, small enough to own.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// DER prefix of a P-256 `SubjectPublicKeyInfo`; followed by the 65-byte uncompressed point it
/// is the `x509.MarshalPKIXPublicKey` encoding kube-apiserver hashes into the key id.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Why a token could not be signed or its signature could not be trusted.
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    /// The system's random number generator or the key material failed.
    #[error("cannot create the signing key: {0}")]
    Key(String),
    /// The claims could not be serialized.
    #[error("cannot serialize the token claims: {0}")]
    Claims(#[from] serde_json::Error),
    /// Not three base64url segments with a JSON header and payload.
    #[error("token is malformed: {0}")]
    Malformed(&'static str),
    /// The header names an algorithm other than ES256 (`none` included).
    #[error("unexpected signature algorithm {0:?}")]
    Algorithm(String),
    /// The signature does not verify with the key (go-jose's wording, as kube-apiserver reports it).
    #[error("go-jose/go-jose: error in cryptographic primitive")]
    Signature,
}

/// The header of a compact JWS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Header {
    /// Signature algorithm; always `ES256` for tokens this module signs.
    pub alg: String,
    /// Key id: base64url SHA-256 of the DER public key, as kube-apiserver computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
}

/// The private key a cluster (or kcp shard) signs ServiceAccount tokens with.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    verifying: VerifyingKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.verifying.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh P-256 key.
    pub fn generate() -> Result<Self, JwtError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| JwtError::Key(e.to_string()))?;
        Self::from_pkcs8(pkcs8.as_ref())
    }

    /// A key from its PKCS#8 DER encoding (for a server that keeps its key across restarts).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, JwtError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| JwtError::Key(e.to_string()))?;
        let verifying = VerifyingKey::from_point(pair.public_key().as_ref().to_vec());
        Ok(SigningKey {
            pair,
            rng,
            verifying,
        })
    }

    /// The matching public key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.verifying
    }

    /// Signs `claims` into a compact JWS with header `{"alg":"ES256","kid":…}`.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, JwtError> {
        let header = Header {
            alg: "ES256".into(),
            kid: Some(self.verifying.kid.clone()),
        };
        let mut token = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header)?);
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims)?));
        let signature = self
            .pair
            .sign(&self.rng, token.as_bytes())
            .map_err(|e| JwtError::Key(e.to_string()))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature.as_ref()));
        Ok(token)
    }
}

/// The public key that checks a cluster's tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    kid: String,
    point: Vec<u8>,
}

impl VerifyingKey {
    fn from_point(point: Vec<u8>) -> Self {
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(&point);
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        VerifyingKey { kid, point }
    }

    /// The key id tokens signed with the matching private key carry.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Checks the token's signature and returns its claims.
    pub fn verify(&self, token: &str) -> Result<Value, JwtError> {
        let (header, claims, signing_input, signature) = split(token)?;
        if header.alg != "ES256" {
            return Err(JwtError::Algorithm(header.alg));
        }
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.point)
            .verify(signing_input.as_bytes(), &signature)
            .map_err(|_| JwtError::Signature)?;
        Ok(claims)
    }

    /// The key as a JWK, for `/openid/v1/jwks`.
    pub fn jwk(&self) -> Value {
        // The uncompressed point is 0x04 || x (32 bytes) || y (32 bytes).
        let (x, y) = self
            .point
            .get(1..)
            .map(|xy| xy.split_at(xy.len() / 2))
            .unwrap_or((&[], &[]));
        serde_json::json!({
            "use": "sig",
            "kty": "EC",
            "kid": self.kid,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        })
    }
}

/// The header and claims of a token, without checking the signature: only for routing
/// decisions that a later verification confirms (kcp reads the cluster of an SA token this way).
pub(crate) fn decode_unverified(token: &str) -> Result<(Header, Value), JwtError> {
    let (header, claims, _, _) = split(token)?;
    Ok((header, claims))
}

fn split(token: &str) -> Result<(Header, Value, &str, Vec<u8>), JwtError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed("expected three dot-separated segments"));
    };
    let decode = |s: &str| {
        URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|_| JwtError::Malformed("a segment is not base64url"))
    };
    let header_json: Header = serde_json::from_slice(&decode(header)?)
        .map_err(|_| JwtError::Malformed("the header is not a JOSE header"))?;
    let claims: Value = serde_json::from_slice(&decode(payload)?)
        .map_err(|_| JwtError::Malformed("the payload is not JSON"))?;
    if !claims.is_object() {
        return Err(JwtError::Malformed("the payload is not a JSON object"));
    }
    let signing_input = &token[..header.len() + 1 + payload.len()];
    Ok((header_json, claims, signing_input, decode(signature)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn signed_tokens_verify_with_their_key_only() -> Result<(), JwtError> {
        let a = SigningKey::generate()?;
        let b = SigningKey::generate()?;
        let token = a.sign(&json!({"sub": "x"}))?;
        assert_eq!(a.verifying_key().verify(&token)?["sub"], "x");
        assert!(matches!(
            b.verifying_key().verify(&token),
            Err(JwtError::Signature)
        ));
        let (header, claims) = decode_unverified(&token)?;
        assert_eq!(header.alg, "ES256");
        assert_eq!(header.kid.as_deref(), Some(a.verifying_key().kid()));
        assert_eq!(claims["sub"], "x");
        Ok(())
    }

    #[test]
    fn tampered_payload_is_refused() -> Result<(), JwtError> {
        let key = SigningKey::generate()?;
        let token = key.sign(&json!({"sub": "x"}))?;
        let parts: Vec<&str> = token.split('.').collect();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(br#"{"sub":"admin"}"#),
            parts[2]
        );
        assert!(matches!(
            key.verifying_key().verify(&forged),
            Err(JwtError::Signature)
        ));
        Ok(())
    }

    #[test]
    fn alg_none_and_garbage_are_refused() -> Result<(), JwtError> {
        let key = SigningKey::generate()?;
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(br#"{"sub":"x"}"#)
        );
        assert!(
            matches!(key.verifying_key().verify(&none), Err(JwtError::Algorithm(a)) if a == "none")
        );
        assert!(matches!(
            key.verifying_key().verify("abc"),
            Err(JwtError::Malformed(_))
        ));
        assert!(matches!(
            key.verifying_key().verify("a.b.c.d"),
            Err(JwtError::Malformed(_))
        ));
        assert!(matches!(
            key.verifying_key().verify("!!.!!.!!"),
            Err(JwtError::Malformed(_))
        ));
        Ok(())
    }

    #[test]
    fn key_survives_pkcs8_round_trip_and_exports_a_jwk() -> Result<(), JwtError> {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| JwtError::Key(e.to_string()))?;
        let one = SigningKey::from_pkcs8(der.as_ref())?;
        let two = SigningKey::from_pkcs8(der.as_ref())?;
        assert_eq!(one.verifying_key(), two.verifying_key());
        let token = one.sign(&json!({"a": 1}))?;
        assert!(two.verifying_key().verify(&token).is_ok());
        let jwk = one.verifying_key().jwk();
        assert_eq!(jwk["kid"], one.verifying_key().kid());
        assert_eq!(jwk["x"].as_str().map(str::len), Some(43));
        assert_eq!(jwk["y"].as_str().map(str::len), Some(43));
        Ok(())
    }
}
