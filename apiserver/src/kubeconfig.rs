//! kubeconfig files for kubectl and clients: with a bearer token, or with a client certificate
//! as kind and k3d write them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::tls::ClientCertificate;

/// A kubeconfig (YAML) for one cluster, user and token.
pub fn kubeconfig(
    name: &str,
    url: &str,
    ca_pem: Option<&str>,
    user: &str,
    token: &str,
    namespace: &str,
) -> String {
    document(name, url, ca_pem, user, json!({"token": token}), namespace)
}

/// A kubeconfig (YAML) for one cluster whose user authenticates with a client certificate
/// (`client-certificate-data`, `client-key-data`), like kind's and k3d's admin kubeconfigs.
pub fn kubeconfig_with_certificate(
    name: &str,
    url: &str,
    ca_pem: Option<&str>,
    user: &str,
    cert: &ClientCertificate,
    namespace: &str,
) -> String {
    let credentials = json!({
        "client-certificate-data": STANDARD.encode(&cert.cert_pem),
        "client-key-data": STANDARD.encode(&cert.key_pem),
    });
    document(name, url, ca_pem, user, credentials, namespace)
}

fn document(
    name: &str,
    url: &str,
    ca_pem: Option<&str>,
    user: &str,
    credentials: Value,
    namespace: &str,
) -> String {
    let mut cluster = json!({"server": url});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = json!(STANDARD.encode(ca));
    }
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    });
    serde_norway::to_string(&doc).unwrap_or_default()
}
