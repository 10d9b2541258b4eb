//! kubeconfig files for kubectl and clients.

use base64::Engine;
use serde_json::json;

/// A kubeconfig (YAML) for one cluster, user and token.
pub fn kubeconfig(
    name: &str,
    url: &str,
    ca_pem: Option<&str>,
    user: &str,
    token: &str,
    namespace: &str,
) -> String {
    let mut cluster = json!({"server": url});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] =
            json!(base64::engine::general_purpose::STANDARD.encode(ca));
    }
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    });
    serde_norway::to_string(&doc).unwrap_or_default()
}
