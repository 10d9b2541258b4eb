//! TLS: one certificate authority per process, a server certificate for 127.0.0.1/localhost and
//! client certificates signed by it, served with rustls (the version and `ring` provider kube 5
//! uses). Client certificates are requested, not required, and checked per request by the
//! authenticator (`crate::auth::x509`), as kube-apiserver does with `--client-ca-file`.

use std::sync::{Arc, OnceLock};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};

/// Errors setting up TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Certificate generation failed.
    #[error("could not generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("could not configure TLS: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client certificate verifier could not be built from the CA.
    #[error("could not configure client certificate verification: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// The process-wide CA and the server configuration signed by it.
pub struct Tls {
    /// The CA certificate, PEM (goes into kubeconfigs as `certificate-authority-data`).
    pub ca_pem: String,
    /// The CA certificate, DER.
    pub ca_der: Vec<u8>,
    /// The server configuration (HTTP/2 and HTTP/1.1 via ALPN).
    pub server: Arc<ServerConfig>,
    ca: CertifiedIssuer<'static, KeyPair>,
    /// Checks client certificates against the CA (chain, validity, `clientAuth` usage).
    clients: Arc<dyn ClientCertVerifier>,
}

/// A client certificate and its key, PEM, as a kubeconfig carries them
/// (`client-certificate-data`, `client-key-data`).
#[derive(Clone)]
pub struct ClientCertificate {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key (PKCS#8), PEM.
    pub key_pem: String,
}

impl std::fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertificate").finish_non_exhaustive()
    }
}

/// The certificate chain a client presented on its connection; handed to every request of the
/// connection as an extension.
#[derive(Clone, Debug)]
pub struct PeerCertificates(pub Arc<[CertificateDer<'static>]>);

/// Asks for a client certificate and proves the client holds its key, but leaves trust to the
/// authenticator: an untrusted certificate must be a 401 on the request (kube-apiserver's
/// `tls.RequestClientCert`), not a failed handshake.
#[derive(Debug)]
struct RequestClientCert(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

impl Tls {
    /// Signs a client certificate for `user` (the subject's CN) in `group` (its `O`), valid for
    /// client authentication, as kind (`kubernetes-admin`, `kubeadm:cluster-admins`) and k3d
    /// (`system:admin`, `system:masters`) put into their admin kubeconfigs. One group only:
    /// rcgen keeps one value per attribute type (the authenticator reads any number).
    pub fn client_certificate(
        &self,
        user: &str,
        group: Option<&str>,
    ) -> Result<ClientCertificate, TlsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        if let Some(g) = group {
            params.distinguished_name.push(DnType::OrganizationName, g);
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.ca)?;
        Ok(ClientCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Whether `chain` (end entity first) is signed by the CA, currently valid and meant for
    /// client authentication; the error says why not.
    pub fn verify_client(&self, chain: &[CertificateDer<'_>]) -> Result<(), rustls::Error> {
        let (end_entity, intermediates) = chain
            .split_first()
            .ok_or(rustls::Error::NoCertificatesPresented)?;
        self.clients
            .verify_client_cert(end_entity, intermediates, UnixTime::now())
            .map(|_| ())
    }
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
    let mut roots = RootCertStore::empty();
    roots.add(ca.der().clone())?;
    let clients = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()?;
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(Arc::new(RequestClientCert(clients.clone())))
        .with_single_cert(
            vec![cert.der().clone(), ca.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        )?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca.pem(),
        ca_der: ca.der().to_vec(),
        server: Arc::new(server),
        ca,
        clients,
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
