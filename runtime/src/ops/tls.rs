//! HTTPS for `/metrics` (`--metrics-secure`, controller-runtime's default) and the conversion
//! webhook: a certificate from `--metrics-cert-path` / `--webhook-cert-path`, or for the metrics
//! a self-signed one made at start-up, as controller-runtime's metrics server does when it is
//! given no certificate.
//!
//! The self-signed certificate is an ECDSA P-256 key and a minimal X.509 v3 certificate for
//! `localhost`, written here in DER with `ring` (already in the build through rustls) rather than
//! with a certificate library that would add half a dozen crates to every provider binary.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// Where a server's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServingCert {
    /// A certificate made at start-up for `localhost`, valid for a year (controller-runtime's
    /// behaviour without `--metrics-cert-path`).
    SelfSigned,
    /// PEM files: `--metrics-cert-path` joined with `--metrics-cert-name` and
    /// `--metrics-cert-key`, or the same `--webhook-cert-…` flags. Read once at start-up.
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// PEM in memory, e.g. made by [`self_signed_pem`] for a server a test starts.
    Pem {
        /// The certificate chain.
        cert: String,
        /// The private key.
        key: String,
    },
}

/// Why a server's TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// rustls refused the certificate or key.
    #[error("the certificate: {0}")]
    Rustls(#[from] rustls::Error),
    /// The random number generator or the signer failed.
    #[error("cannot make a self-signed certificate: {0}")]
    SelfSigned(&'static str),
}

/// A TLS acceptor for `cert` that offers HTTP/1.1 only, as Go providers do without
/// `--enable-http2` (the template's HTTP/2 Rapid Reset mitigation).
pub fn acceptor(cert: &ServingCert) -> Result<TlsAcceptor, TlsError> {
    let (chain, key) = match cert {
        ServingCert::SelfSigned => {
            let (cert, key) = self_signed(&["localhost"])?;
            (vec![cert], key)
        }
        ServingCert::Files { cert, key } => (read_chain(cert)?, read_key(key)?),
        ServingCert::Pem { cert, key } => {
            let pem_error = |e: rustls::pki_types::pem::Error| TlsError::File {
                path: "(in memory)".to_owned(),
                message: e.to_string(),
            };
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(pem_error)?;
            (
                chain,
                PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(pem_error)?,
            )
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, e))?;
    if chain.is_empty() {
        return Err(file_error(path, "no PEM CERTIFICATE in it"));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_error(path, e))
}

/// A self-signed certificate for `hosts` (DNS names or IP addresses; the first is its common
/// name) and its PKCS#8 key, in PEM: the files a server reads with [`ServingCert::Files`], the
/// certificate also the CA bundle a client trusts.
pub fn self_signed_pem(hosts: &[&str]) -> Result<(String, String), TlsError> {
    let (cert, key) = self_signed(hosts)?;
    Ok((
        pem("CERTIFICATE", &cert),
        pem("PRIVATE KEY", key.secret_der()),
    ))
}

fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = encoded
        .as_bytes()
        .chunks(64)
        .map(|chunk| std::str::from_utf8(chunk).unwrap_or_default())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A self-signed certificate for `hosts` (DNS names or IP addresses; the first is its common
/// name) and its PKCS#8 key.
pub fn self_signed(
    hosts: &[&str],
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    let host = hosts.first().copied().unwrap_or("localhost");
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
        .map_err(|_| TlsError::SelfSigned("generating the key"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| TlsError::SelfSigned("reading the generated key"))?;
    let mut serial = [0u8; 16];
    rng.fill(&mut serial)
        .map_err(|_| TlsError::SelfSigned("a random serial number"))?;
    serial[0] &= 0x7f; // positive
    serial[0] |= 0x40; // and without a leading zero byte to strip
    let now = k8s_openapi::jiff::Timestamp::now();
    let not_before = now - k8s_openapi::jiff::SignedDuration::from_hours(1);
    let not_after = now + k8s_openapi::jiff::SignedDuration::from_hours(24 * 365);

    let ecdsa_with_sha256 = der::sequence(&[der::oid(OID_ECDSA_WITH_SHA256)]);
    let name = der::sequence(&[der::set(&[der::sequence(&[
        der::oid(OID_COMMON_NAME),
        der::tlv(0x0c, format!("{host}@{}", now.as_second()).as_bytes()),
    ])])]);
    let spki = der::sequence(&[
        der::sequence(&[der::oid(OID_EC_PUBLIC_KEY), der::oid(OID_PRIME256V1)]),
        der::bit_string(pair.public_key().as_ref()),
    ]);
    let names: Vec<Vec<u8>> = hosts
        .iter()
        .map(|h| match h.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(ip)) => der::tlv(0x87, &ip.octets()),
            Ok(std::net::IpAddr::V6(ip)) => der::tlv(0x87, &ip.octets()),
            Err(_) => der::tlv(0x82, h.as_bytes()),
        })
        .collect();
    let san = der::sequence(&names);
    let extensions = der::sequence(&[der::sequence(&[
        der::oid(OID_SUBJECT_ALT_NAME),
        der::tlv(0x04, &san),
    ])]);
    let tbs = der::sequence(&[
        der::tlv(0xa0, &der::tlv(0x02, &[2])),
        der::tlv(0x02, &serial),
        ecdsa_with_sha256.clone(),
        name.clone(),
        der::sequence(&[der::time(not_before), der::time(not_after)]),
        name,
        spki,
        der::tlv(0xa3, &extensions),
    ]);
    let signature = pair
        .sign(&rng, &tbs)
        .map_err(|_| TlsError::SelfSigned("signing"))?;
    let cert = der::sequence(&[tbs, ecdsa_with_sha256, der::bit_string(signature.as_ref())]);
    Ok((
        CertificateDer::from(cert),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8.as_ref().to_vec())),
    ))
}

const OID_ECDSA_WITH_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_PRIME256V1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// The few DER encodings a certificate needs.
mod der {
    pub(super) fn tlv(tag: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = value.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes = len.to_be_bytes();
            let skip = bytes.iter().take_while(|&&b| b == 0).count();
            out.push(0x80 | (bytes.len() - skip) as u8);
            out.extend_from_slice(&bytes[skip..]);
        }
        out.extend_from_slice(value);
        out
    }

    pub(super) fn sequence(items: &[Vec<u8>]) -> Vec<u8> {
        tlv(0x30, &items.concat())
    }

    pub(super) fn set(items: &[Vec<u8>]) -> Vec<u8> {
        tlv(0x31, &items.concat())
    }

    pub(super) fn oid(encoded: &[u8]) -> Vec<u8> {
        tlv(0x06, encoded)
    }

    pub(super) fn bit_string(bytes: &[u8]) -> Vec<u8> {
        let mut value = vec![0];
        value.extend_from_slice(bytes);
        tlv(0x03, &value)
    }

    /// UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5).
    pub(super) fn time(at: k8s_openapi::jiff::Timestamp) -> Vec<u8> {
        let utc = at.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC);
        if utc.year() < 2050 {
            tlv(0x17, utc.strftime("%y%m%d%H%M%SZ").to_string().as_bytes())
        } else {
            tlv(0x18, utc.strftime("%Y%m%d%H%M%SZ").to_string().as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths() {
        assert_eq!(der::tlv(0x04, &[1, 2]), vec![0x04, 2, 1, 2]);
        let long = der::tlv(0x04, &[0; 300]);
        assert_eq!(&long[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(long.len(), 304);
    }

    #[test]
    fn a_self_signed_certificate_verifies_for_every_name_and_address_it_is_made_for() {
        // webpki parses every field and checks the signature, the validity and the name.
        let hosts = ["localhost", "hello-webhook.system.svc", "127.0.0.1"];
        let (cert, _) = self_signed(&hosts).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        use rustls::client::danger::ServerCertVerifier;
        let now = rustls::pki_types::UnixTime::now();
        for host in hosts {
            let name = rustls::pki_types::ServerName::try_from(host).unwrap();
            verifier
                .verify_server_cert(&cert, &[], &name, &[], now)
                .unwrap_or_else(|e| panic!("{host}: {e}"));
        }
        let other = rustls::pki_types::ServerName::try_from("example.com").unwrap();
        assert!(
            verifier
                .verify_server_cert(&cert, &[], &other, &[], now)
                .is_err()
        );
    }
}
