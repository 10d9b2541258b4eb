//! `cargo xtask corpus`: how much of what the suites send the differential corpus covers.
//!
//! The corpus (`runtime/tests/conformance/corpus.yaml`) is written by hand so that each request
//! runs in a known state on both servers; this task keeps it honest. It runs the end-to-end suites
//! and the kubectl battery on the embedded server with `SERVICE_PROVIDER_APISERVER_RECORD` set, so
//! every request they send is recorded, reduces each request to its *shape* (method, verb,
//! built-in or custom kind, subresource, media types, query parameters and the values of those that
//! select behaviour), and prints the shapes the suites send that no corpus step has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::Value;

use crate::test_binaries::{TestBinaries, TestTarget};

/// The environment variable the embedded server records requests under (apiserver `recording`).
const RECORD_VAR: &str = "SERVICE_PROVIDER_APISERVER_RECORD";
/// Query parameters whose value changes what a server does; others count by name only.
const SELECTING: &[&str] = &[
    "dryRun",
    "fieldValidation",
    "resourceVersionMatch",
    "watch",
    "sendInitialEvents",
    "allowWatchBookmarks",
    "force",
    "propagationPolicy",
];

/// What a request is, for coverage: two requests of one shape meet the same server code.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    method: String,
    /// `get`, `list`, `watch`, `create`, … or the path of a non-resource request.
    verb: String,
    /// `built-in`, `custom` (a group with a dot that Kubernetes does not own) or `-`.
    kind: &'static str,
    subresource: String,
    content_type: String,
    accept: String,
    query: Vec<String>,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.method, self.verb, self.kind)?;
        if !self.subresource.is_empty() {
            write!(f, " /{}", self.subresource)?;
        }
        if !self.content_type.is_empty() {
            write!(f, " body={}", self.content_type)?;
        }
        write!(f, " accept={}", self.accept)?;
        if !self.query.is_empty() {
            write!(f, " ?{}", self.query.join("&"))?;
        }
        Ok(())
    }
}

/// One request as recorded or as a corpus step writes it.
struct Request<'a> {
    method: &'a str,
    path: &'a str,
    query: &'a str,
    content_type: &'a str,
    accept: &'a str,
}

impl Request<'_> {
    fn shape(&self) -> Shape {
        let segments: Vec<&str> = self
            .path
            .trim_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        // /api/v1/... or /apis/<group>/<version>/...; kcp's /clusters/<name> prefix is dropped.
        let segments = match segments.as_slice() {
            ["clusters", _, rest @ ..] => rest.to_vec(),
            _ => segments,
        };
        let (group, rest) = match segments.as_slice() {
            ["api", _version, rest @ ..] => ("", rest),
            ["apis", group, _version, rest @ ..] => (*group, rest),
            _ => ("-", &[][..]),
        };
        let rest = match rest {
            ["namespaces", _ns, tail @ ..] if !tail.is_empty() => tail,
            other => other,
        };
        let query: BTreeMap<&str, &str> = self
            .query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
        let watch = query
            .get("watch")
            .is_some_and(|w| *w == "true" || *w == "1");
        let (verb, subresource) = match (self.method, rest) {
            (_, []) if group == "-" => (self.path.to_string(), String::new()),
            (_, []) => ("discovery".to_string(), String::new()),
            ("GET", [_]) if watch => ("watch".into(), String::new()),
            ("GET", [_]) => ("list".into(), String::new()),
            ("POST", [_]) => ("create".into(), String::new()),
            ("DELETE", [_]) => ("deletecollection".into(), String::new()),
            (method, [_, _]) => (object_verb(method), String::new()),
            (method, [_, _, sub, ..]) => (object_verb(method), sub.to_string()),
            (method, _) => (method.to_lowercase(), String::new()),
        };
        let kind = if group == "-" {
            "-"
        } else if group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io") {
            "built-in"
        } else {
            "custom"
        };
        let query = query
            .iter()
            .map(|(name, value)| {
                // resourceVersion 0 (any) and none select other server code than a version.
                let version_kind =
                    *name == "resourceVersion" && (*value == "0" || value.is_empty());
                if SELECTING.contains(name) || version_kind {
                    format!("{name}={value}")
                } else {
                    (*name).to_string()
                }
            })
            .collect();
        Shape {
            method: self.method.to_string(),
            verb,
            kind,
            subresource,
            content_type: media_type(self.content_type),
            accept: media_type(self.accept),
            query,
        }
    }
}

fn object_verb(method: &str) -> String {
    match method {
        "GET" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        "POST" => "create",
        other => return other.to_lowercase(),
    }
    .to_string()
}

/// The media type with the parameters that select a format (`as=Table`, `stream=watch`); a
/// list of types (`Accept`) keeps its first.
fn media_type(header: &str) -> String {
    let first = header.split(',').next().unwrap_or("").trim();
    let mut parts = first.split(';').map(str::trim);
    let mut out = parts.next().unwrap_or("").to_string();
    for param in parts {
        if param.starts_with("as=") || param.starts_with("stream=") {
            out.push(';');
            out.push_str(param);
        }
    }
    if out == "*/*" { String::new() } else { out }
}

pub(crate) fn run(root: &Path, recording: Option<&Path>) -> anyhow::Result<ExitCode> {
    let recorded_file;
    let recording = match recording {
        Some(path) => path,
        None => {
            recorded_file = root.join("target").join("conformance-recording.jsonl");
            record(&recorded_file)?;
            &recorded_file
        }
    };
    let text = std::fs::read_to_string(recording)
        .with_context(|| format!("reading {}", recording.display()))?;
    let mut sent: BTreeMap<Shape, usize> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).context("a recorded request")?;
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let shape = Request {
            method: s("method"),
            path: s("path"),
            query: s("query"),
            content_type: s("contentType"),
            accept: s("accept"),
        }
        .shape();
        *sent.entry(shape).or_default() += 1;
    }
    let corpus_path = root.join("runtime/tests/conformance/corpus.yaml");
    let corpus: Vec<Value> = serde_norway::from_str(
        &std::fs::read_to_string(&corpus_path)
            .with_context(|| format!("reading {}", corpus_path.display()))?,
    )?;
    let covered: BTreeSet<Shape> = corpus
        .iter()
        .map(|step| {
            let s = |k: &str| step.get(k).and_then(Value::as_str).unwrap_or("");
            Request {
                method: s("method"),
                path: s("path"),
                query: s("query"),
                content_type: s("contentType"),
                accept: s("accept"),
            }
            .shape()
        })
        .collect();
    let missing: Vec<(&Shape, &usize)> =
        sent.iter().filter(|(s, _)| !covered.contains(s)).collect();
    println!(
        "{} requests recorded in {} shapes; the corpus has {} steps in {} shapes and covers {} of the recorded shapes",
        sent.values().sum::<usize>(),
        sent.len(),
        corpus.len(),
        covered.len(),
        sent.len() - missing.len(),
    );
    for (shape, count) in &missing {
        println!("  not in the corpus ({count:>6}x): {shape}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the suites that talk to the embedded server with recording on.
fn record(file: &Path) -> anyhow::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(file);
    let binaries = TestBinaries::build()?;
    let suites = [
        crate::STANDARD_SUITE,
        crate::KCP_SUITE,
        TestTarget {
            package: "service-provider-apiserver",
            name: "kubectl",
        },
    ];
    for target in suites {
        let status = binaries.run(target, &[], &[(RECORD_VAR, file.as_os_str())])?;
        anyhow::ensure!(status.success(), "{target} failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(method: &str, path: &str, query: &str) -> String {
        Request {
            method,
            path,
            query,
            content_type: "",
            accept: "application/json",
        }
        .shape()
        .to_string()
    }

    #[test]
    fn requests_reduce_to_what_selects_server_code() {
        assert_eq!(
            shape(
                "GET",
                "/api/v1/namespaces/a/configmaps",
                "labelSelector=x&limit=5"
            ),
            "GET list built-in accept=application/json ?labelSelector&limit"
        );
        assert_eq!(
            shape(
                "GET",
                "/apis/corpus.test/v1/namespaces/a/widgets",
                "watch=true&resourceVersion=7"
            ),
            "GET watch custom accept=application/json ?resourceVersion&watch=true"
        );
        assert_eq!(
            shape(
                "PATCH",
                "/clusters/root:a/apis/apps/v1/namespaces/a/deployments/d/status",
                "dryRun=All"
            ),
            "PATCH patch built-in /status accept=application/json ?dryRun=All"
        );
        assert_eq!(
            shape("GET", "/apis/apps/v1", ""),
            "GET discovery built-in accept=application/json"
        );
        assert_eq!(
            shape("GET", "/version", ""),
            "GET /version - accept=application/json"
        );
    }
}
