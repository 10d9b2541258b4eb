//! An HTTP/2 client that does not tolerate a stream reset after the response, shared by the
//! test binaries: curl. hyper's client (kube's) tolerates the reset that early answers used to
//! cause, so it cannot show that the server answers cleanly while the client still sends.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// POSTs a JSON body larger than a stream's flow-control window to `url` with curl over
/// HTTP/2, so that an answer the server gives early comes while the body is still being sent.
/// With `ca_pem`, HTTP/2 is negotiated over TLS with ALPN, trusting that CA; without, it is spoken
/// in clear text from the start (`--http2-prior-knowledge`). Returns `"<status code> <HTTP
/// version>"` (e.g. `"404 2"`) and the response body as JSON.
pub(crate) async fn post_large_body(
    url: &str,
    token: &str,
    ca_pem: Option<&str>,
) -> (String, serde_json::Value) {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "sp-h2-{}-{}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body.json");
    std::fs::write(
        &body,
        serde_json::to_vec(&serde_json::json!({"data": "x".repeat(5 << 19)})).unwrap(),
    )
    .unwrap();
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sS", "-X", "POST"]);
    match ca_pem {
        None => {
            cmd.arg("--http2-prior-knowledge");
        }
        Some(pem) => {
            let ca = dir.join("ca.pem");
            std::fs::write(&ca, pem).unwrap();
            cmd.arg("--http2").arg("--cacert").arg(ca);
        }
    }
    cmd.args(["-H", &format!("authorization: Bearer {token}")])
        .args(["-H", "content-type: application/json", "--data-binary"])
        .arg(format!("@{}", body.display()))
        .args(["-w", "\n%{http_code} %{http_version}"])
        .arg(url);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .expect("curl runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{url}: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (response, code) = stdout.rsplit_once('\n').unwrap();
    let response =
        serde_json::from_str(response).unwrap_or_else(|e| panic!("{url}: {e}: {response}"));
    (code.to_string(), response)
}
