//! TLS: one certificate authority per process and a server certificate for 127.0.0.1/localhost,
//! served with rustls (the version and `ring` provider kube 5 uses).

use std::sync::{Arc, OnceLock};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Errors setting up TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Certificate generation failed.
    #[error("could not generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("could not configure TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The process-wide CA and the server configuration signed by it.
pub struct Tls {
    /// The CA certificate, PEM (goes into kubeconfigs as `certificate-authority-data`).
    pub ca_pem: String,
    /// The CA certificate, DER.
    pub ca_der: Vec<u8>,
    /// The server configuration (HTTP/2 and HTTP/1.1 via ALPN).
    pub server: Arc<ServerConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

fn generate() -> Result<Tls, TlsError> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "service-provider-apiserver-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;

    let server_key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "service-provider-apiserver");
    let cert = params.signed_by(&server_key, &ca)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), ca.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        )?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca.pem(),
        ca_der: ca.der().to_vec(),
        server: Arc::new(server),
    })
}

/// The process-wide TLS material, generated on first use.
pub fn tls() -> Result<&'static Tls, TlsError> {
    static TLS: OnceLock<Tls> = OnceLock::new();
    if let Some(t) = TLS.get() {
        return Ok(t);
    }
    let t = generate()?;
    Ok(TLS.get_or_init(|| t))
}

/// The CA certificate as rustls wants it.
pub fn ca_cert_der() -> Result<CertificateDer<'static>, TlsError> {
    Ok(CertificateDer::from(tls()?.ca_der.clone()))
}
