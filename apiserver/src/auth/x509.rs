//! Client-certificate authentication and the order of kube-apiserver's authenticators: an x509
//! client certificate signed by the cluster CA (user from CN, groups from O), then a bearer
//! token, then anonymous (staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go
//! `CommonNameUserConversion`, and the union authenticator built in
//! pkg/kubeapiserver/authenticator/config.go).

use rustls::pki_types::CertificateDer;

use crate::auth::user::{EXTRA_CREDENTIAL_ID, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::tls::PeerCertificates;

/// Why a client certificate did not authenticate.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CertError {
    /// The CA does not vouch for the chain (unknown issuer, expired, not for client auth).
    #[error("verifying certificate {subject} failed: {source}")]
    Untrusted {
        /// The certificate's subject, for the log.
        subject: String,
        /// What the verifier found.
        source: rustls::Error,
    },
    /// The server has no TLS material to verify with.
    #[error("client certificates cannot be verified: {0}")]
    NoTls(#[from] crate::tls::TlsError),
    /// The certificate is not X.509 the parser understands.
    #[error("the client certificate cannot be parsed: {0}")]
    Malformed(String),
}

/// The identity a verified certificate names: CN is the user, every O a group; `None` without a
/// CN (kube then tries the next authenticator). The credential id is the certificate's SHA-256,
/// as kube-apiserver records it.
fn identity(cert: &CertificateDer<'_>) -> Result<Option<UserInfo>, CertError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| CertError::Malformed(e.to_string()))?;
    let subject = parsed.subject();
    let Some(cn) = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .next()
        .filter(|cn| !cn.is_empty())
    else {
        return Ok(None);
    };
    let groups: Vec<&str> = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .collect();
    let mut user = UserInfo::new(cn, groups);
    let digest = ring::digest::digest(&ring::digest::SHA256, cert.as_ref());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    user.extra.insert(
        EXTRA_CREDENTIAL_ID.into(),
        vec![format!("X509SHA256={hex}")],
    );
    Ok(Some(user))
}

/// Authenticates a client certificate chain against the process CA.
pub(crate) fn authenticate_certificate(
    chain: &PeerCertificates,
) -> Result<Option<UserInfo>, CertError> {
    let Some(end_entity) = chain.0.first() else {
        return Ok(None);
    };
    crate::tls::tls()?
        .verify_client(&chain.0)
        .map_err(|source| CertError::Untrusted {
            subject: x509_parser::parse_x509_certificate(end_entity.as_ref())
                .map(|(_, c)| c.subject().to_string())
                .unwrap_or_default(),
            source,
        })?;
    identity(end_entity)
}

/// Runs kube-apiserver's authenticators in order for one request: the client certificate, then
/// the bearer token of `authorization` (checked by `token`), then anonymous when neither was
/// presented. A credential that fails is a 401 unless a later one succeeds.
pub(crate) fn authenticate_request(
    cert: Option<&PeerCertificates>,
    authorization: Option<&str>,
    token: impl FnOnce(&str) -> ApiResult<UserInfo>,
) -> ApiResult<UserInfo> {
    let mut failed = false;
    if let Some(chain) = cert {
        match authenticate_certificate(chain) {
            Ok(Some(user)) => return Ok(user),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!("client certificate refused: {e}");
                failed = true;
            }
        }
    }
    match authorization {
        Some(h) => {
            let t =
                crate::auth::authenticator::bearer_token(h).ok_or_else(ApiError::unauthorized)?;
            token(t)
        }
        None if failed => Err(ApiError::unauthorized()),
        None => Ok(crate::auth::authenticator::anonymous()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn chain(pem: &str) -> PeerCertificates {
        let der = pem_to_der(pem);
        PeerCertificates(Arc::from(vec![CertificateDer::from(der)]))
    }

    fn pem_to_der(pem: &str) -> Vec<u8> {
        use base64::Engine;
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("PEM from rcgen")
    }

    #[test]
    fn certificates_of_the_ca_name_user_and_group() -> Result<(), Box<dyn std::error::Error>> {
        let tls = crate::tls::tls()?;
        let cert = tls.client_certificate("alice", Some("dev"))?;
        let user = authenticate_certificate(&chain(&cert.cert_pem))?.ok_or("no user")?;
        assert_eq!(user.username, "alice");
        assert_eq!(user.groups, ["dev", "system:authenticated"]);
        assert!(user.extra[EXTRA_CREDENTIAL_ID][0].starts_with("X509SHA256="));
        // Without a CN the certificate names nobody, and the token decides.
        let nameless = tls.client_certificate("", None)?;
        assert_eq!(authenticate_certificate(&chain(&nameless.cert_pem))?, None);
        Ok(())
    }

    #[test]
    fn certificates_of_another_ca_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let key = rcgen::KeyPair::generate()?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "mallory");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let foreign = params.self_signed(&key)?;
        let err = authenticate_certificate(&chain(&foreign.pem())).unwrap_err();
        assert!(matches!(err, CertError::Untrusted { .. }), "{err}");
        let refused =
            authenticate_request(
                Some(&chain(&foreign.pem())),
                None,
                |_| Ok(UserInfo::admin()),
            );
        assert_eq!(refused.map_err(|e| e.code), Err(401));
        // A valid token after a refused certificate still authenticates.
        let ok = authenticate_request(Some(&chain(&foreign.pem())), Some("Bearer t"), |_| {
            Ok(UserInfo::admin())
        })?;
        assert_eq!(ok, UserInfo::admin());
        assert_eq!(
            authenticate_request(None, None, |_| Ok(UserInfo::admin()))?.username,
            "system:anonymous"
        );
        Ok(())
    }
}
