//! Recording the requests the embedded server answers, so that `cargo xtask corpus` can tell which
//! requests of the suites the differential corpus (runtime `tests/conformance/`) lacks: with
//! `SERVICE_PROVIDER_APISERVER_RECORD=<file>` set, every server in the process appends one JSON
//! line per request to `<file>` — method, path, query, content type and accepted type. Bodies are
//! left out: a request's shape does not depend on them, and they may hold credentials.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

use http::{HeaderMap, Method};

/// The environment variable naming the file requests are appended to.
const RECORD_VAR: &str = "SERVICE_PROVIDER_APISERVER_RECORD";

/// Appends the request to the recording, when one is asked for.
pub(crate) fn record(method: &Method, path: &str, query: Option<&str>, headers: &HeaderMap) {
    static FILE: OnceLock<Option<Mutex<File>>> = OnceLock::new();
    let Some(file) = FILE.get_or_init(open) else {
        return;
    };
    let header = |name: http::header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let mut line = serde_json::json!({
        "method": method.as_str(),
        "path": path,
        "query": query.unwrap_or(""),
        "contentType": header(http::header::CONTENT_TYPE),
        "accept": header(http::header::ACCEPT),
    })
    .to_string();
    line.push('\n');
    // One write per line on a file opened for appending: lines of concurrent test processes do
    // not interleave.
    if let Ok(mut file) = file.lock() {
        let _ = file.write_all(line.as_bytes());
    }
}

fn open() -> Option<Mutex<File>> {
    let path = std::env::var_os(RECORD_VAR).filter(|p| !p.is_empty())?;
    match OpenOptions::new().create(true).append(true).open(&path) {
        Ok(file) => Some(Mutex::new(file)),
        Err(e) => {
            eprintln!(
                "{RECORD_VAR}={}: cannot open it to record requests: {e}",
                path.to_string_lossy()
            );
            None
        }
    }
}
