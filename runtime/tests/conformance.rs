//! Differential conformance: the embedded API server measured against a real kube-apiserver.
//!
//! One corpus of requests (`conformance/corpus.yaml`: the shapes of request our suites, the test
//! kit and kubectl send — CRUD, every patch type, server-side apply and its conflicts, dry run,
//! field validation, selectors, pagination, `resourceVersionMatch`, watches from a version,
//! with bookmarks and initial events, too old a version, subresources, tables, protobuf, and the
//! errors a client meets) is sent in order to both servers. Each answer is normalised where two
//! servers must differ (uids, timestamps, resourceVersions, continue tokens, tokens) and
//! compared: status code, media type, warnings and body, field by field. Every difference that
//! is not on `conformance/allowed.yaml` (deliberate, each with its reason) fails the test, and so
//! does an allow-list entry that no longer matches a difference, so the list stays short.
//!
//! Skipped, saying so, where the real binaries are not built, unless the real backend is asked
//! for (`SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver`, as `cargo xtask test-real` and CI do).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::Value;
use service_provider_apiserver::{ApiServer, protobuf};
use service_provider_runtime::dev::realstack::{Binaries, RealStack};

/// Requests, in order; both servers start empty but for what each creates itself.
const CORPUS: &str = include_str!("conformance/corpus.yaml");
/// Differences kept on purpose, each with its reason.
const ALLOWED: &str = include_str!("conformance/allowed.yaml");

/// How long a step may poll (`until`) or read a watch.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// One request of the corpus.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    /// What the step asks, unique in the corpus: the allow-list names steps by it.
    name: String,
    method: String,
    path: String,
    #[serde(default)]
    query: Option<String>,
    #[serde(default, rename = "contentType")]
    content_type: Option<String>,
    #[serde(default)]
    accept: Option<String>,
    /// A JSON (or YAML-as-JSON) body; a string is sent verbatim (for YAML and malformed bodies).
    #[serde(default)]
    body: Option<Value>,
    /// Send `body` encoded as protobuf (the apiserver's encoder, as a Go client would).
    #[serde(default)]
    protobuf: bool,
    /// Variables to remember from this answer, per server: name → JSON pointer.
    #[serde(default)]
    save: BTreeMap<String, String>,
    /// A watch: read this many events, then close.
    #[serde(default)]
    events: Option<usize>,
    /// Repeat the request until it answers this code (a CRD that is not served yet).
    #[serde(default)]
    until: Option<u16>,
}

/// A difference kept on purpose.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Allowed {
    step: String,
    /// Where: `code`, `content-type`, `warning`, or a JSON pointer into the body (a prefix: the
    /// entry covers everything under it).
    at: String,
    reason: String,
}

/// What a client observes of one answer, normalised.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    code: u16,
    content_type: String,
    warnings: Vec<String>,
    body: Value,
}

/// One server and the variables the corpus saved from its answers.
struct Target {
    name: &'static str,
    client: kube::Client,
    vars: BTreeMap<String, String>,
}

impl Target {
    fn substitute(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.vars {
            out = out.replace(&format!("${{{name}}}"), value);
        }
        out
    }

    async fn answer(&mut self, step: &Step) -> anyhow::Result<Answer> {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let answer = self.send(step).await?;
            match step.until {
                Some(code) if answer.0.code != code && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                _ => {
                    for (var, pointer) in &step.save {
                        let value = answer.1.pointer(pointer).ok_or_else(|| {
                            anyhow::anyhow!(
                                "{}: step {:?} saves {var} from {pointer}, which the answer lacks: {}",
                                self.name,
                                step.name,
                                answer.1
                            )
                        })?;
                        let value = match value {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        self.vars.insert(var.clone(), value);
                    }
                    return Ok(answer.0);
                }
            }
        }
    }

    /// Sends the step; the normalised answer and the raw body (for `save`).
    async fn send(&self, step: &Step) -> anyhow::Result<(Answer, Value)> {
        let mut uri = self.substitute(&step.path);
        if let Some(query) = &step.query {
            uri.push('?');
            uri.push_str(&self.substitute(query));
        }
        let mut request = http::Request::builder()
            .method(step.method.as_str())
            .uri(uri);
        if let Some(content_type) = &step.content_type {
            request = request.header(http::header::CONTENT_TYPE, content_type);
        }
        // No Accept unless the step names one, as kube-rs and client-go's dynamic client send.
        if let Some(accept) = &step.accept {
            request = request.header(http::header::ACCEPT, accept);
        }
        let body = match &step.body {
            None => Vec::new(),
            Some(Value::String(text)) => self.substitute(text).into_bytes(),
            Some(value) => {
                let json: Value = serde_json::from_str(&self.substitute(&value.to_string()))?;
                if step.protobuf {
                    protobuf::encode(&json)?.to_vec()
                } else {
                    serde_json::to_vec(&json)?
                }
            }
        };
        let response = self.client.send(request.body(body.into())?).await?;
        let code = response.status().as_u16();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let warnings = response
            .headers()
            .get_all("warning")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        let mut body = response.into_body();
        let raw = match step.events {
            Some(count) if code == 200 => {
                let mut buffer = Vec::new();
                let mut events = Vec::new();
                let deadline = Instant::now() + STEP_TIMEOUT;
                while events.len() < count {
                    let frame = tokio::time::timeout_at(deadline.into(), body.frame())
                        .await
                        .map_err(|_| {
                            anyhow::anyhow!(
                                "{}: step {:?} read {} of {count} watch events in {STEP_TIMEOUT:?}: {events:?}",
                                self.name,
                                step.name,
                                events.len()
                            )
                        })?;
                    let Some(frame) = frame else { break };
                    if let Ok(data) = frame?.into_data() {
                        buffer.extend_from_slice(&data);
                    }
                    events.extend(take_events(&mut buffer, &content_type)?);
                }
                // One frame may carry more events than asked for (a backlog).
                events.truncate(count);
                Value::Array(events)
            }
            _ => {
                // A stream that stays open is an answer too (a watch where the other server
                // refuses one), not a reason to stop comparing.
                match tokio::time::timeout(STEP_TIMEOUT, body.collect()).await {
                    Ok(bytes) => decode(&bytes?.to_bytes(), &content_type),
                    Err(_) => Value::String(format!("<still open after {STEP_TIMEOUT:?}>")),
                }
            }
        };
        Ok((
            Answer {
                code,
                content_type: media_type(&content_type),
                warnings,
                body: normalise(raw.clone()),
            },
            raw,
        ))
    }
}

/// The complete watch events at the front of `buffer` (JSON lines or protobuf frames), removed
/// from it.
fn take_events(buffer: &mut Vec<u8>, content_type: &str) -> anyhow::Result<Vec<Value>> {
    let mut events = Vec::new();
    if content_type.starts_with(protobuf::MEDIA_TYPE) {
        while let Some((kind, object, rest)) = protobuf::next_watch_event(buffer)? {
            let consumed = buffer.len() - rest.len();
            events.push(serde_json::json!({ "type": kind, "object": object }));
            buffer.drain(..consumed);
        }
    } else {
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            events.push(serde_json::from_slice(&line)?);
        }
    }
    Ok(events)
}

/// A body as JSON: protobuf decoded, JSON parsed, anything else as a string.
fn decode(body: &Bytes, content_type: &str) -> Value {
    if content_type.starts_with(protobuf::MEDIA_TYPE) {
        return protobuf::decode(body)
            .unwrap_or_else(|e| Value::String(format!("<protobuf that does not decode: {e}>")));
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// The media type without parameters other than those that select a format (`as`, `stream`).
fn media_type(content_type: &str) -> String {
    let mut parts = content_type.split(';').map(str::trim);
    let mut out = parts.next().unwrap_or("").to_string();
    for param in parts {
        if !param.starts_with("charset=") {
            out.push(';');
            out.push_str(param);
        }
    }
    out
}

/// Fields two conforming servers fill differently: their values become a marker that keeps
/// only whether the field was set.
const VARYING: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
    "continue",
    "token",
    "expirationTimestamp",
    "lastUpdateTime",
    "selfLink",
];

fn normalise(value: Value) -> Value {
    match value {
        // A name completed from generateName is random on each server.
        Value::Object(mut map)
            if map.get("generateName").is_some_and(Value::is_string)
                && map.contains_key("name") =>
        {
            map.insert("name".into(), Value::String("<generated>".into()));
            normalise_map(map)
        }
        Value::Object(map) => normalise_map(map),
        Value::Array(items) => Value::Array(items.into_iter().map(normalise).collect()),
        Value::String(text) => Value::String(normalise_text(&text)),
        other => other,
    }
}

fn normalise_map(map: serde_json::Map<String, Value>) -> Value {
    Value::Object(
        map.into_iter()
            .map(|(key, value)| {
                let value = if VARYING.contains(&key.as_str()) && !value.is_null() {
                    Value::String("<varies>".into())
                } else if key == "managedFields" {
                    normalise_managed_fields(value)
                } else {
                    normalise(value)
                };
                (key, value)
            })
            .collect(),
    )
}

/// kube-apiserver orders managedFields by operation, then by the second each entry was written
/// in, then by manager (apimachinery `util/managedfields/internal/managedfields.go:194-221`), as
/// the embedded server does. Two writes a moment apart fall in one second on one server and in
/// two on the other, so with the times masked the order compared is the one without them.
fn normalise_managed_fields(value: Value) -> Value {
    match normalise(value) {
        Value::Array(mut entries) => {
            let field =
                |entry: &Value, name: &str| entry[name].as_str().unwrap_or_default().to_owned();
            entries.sort_by_key(|entry| {
                ["operation", "manager", "apiVersion", "subresource"].map(|name| field(entry, name))
            });
            Value::Array(entries)
        }
        other => other,
    }
}

/// Messages quote resourceVersions and uids ("the ResourceVersion in the precondition (5)",
/// "too old resource version: 5 (9)"): digit runs in such messages are the servers' own counters.
fn normalise_text(text: &str) -> String {
    if !(text.contains("resource version")
        || text.contains("ResourceVersion")
        || text.contains("UID"))
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut in_digits = false;
    let text = replace_uids(text);
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// `text` with every UUID (8-4-4-4-12 hex digits) replaced by `<uid>`.
fn replace_uids(text: &str) -> String {
    let bytes = text.as_bytes();
    let is_uid = |at: usize| {
        bytes.len() >= at + 36
            && bytes[at..at + 36].iter().enumerate().all(|(i, b)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    *b == b'-'
                } else {
                    b.is_ascii_hexdigit()
                }
            })
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        if is_uid(at) {
            out.push_str("<uid>");
            at += 36;
        } else {
            let c = text[at..]
                .chars()
                .next()
                .expect("a char at a char boundary");
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

/// Where `real` and `embedded` differ: (where, real, embedded).
fn differences(real: &Answer, embedded: &Answer) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    if real.code != embedded.code {
        out.push((
            "code".into(),
            real.code.to_string(),
            embedded.code.to_string(),
        ));
    }
    if real.content_type != embedded.content_type {
        out.push((
            "content-type".into(),
            real.content_type.clone(),
            embedded.content_type.clone(),
        ));
    }
    if real.warnings != embedded.warnings {
        out.push((
            "warning".into(),
            format!("{:?}", real.warnings),
            format!("{:?}", embedded.warnings),
        ));
    }
    diff_values("", &real.body, &embedded.body, &mut out);
    out
}

fn diff_values(at: &str, real: &Value, embedded: &Value, out: &mut Vec<(String, String, String)>) {
    match (real, embedded) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff_values(&here, x, y, out),
                    (x, y) => out.push((here, show(x), show(y))),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_values(&format!("{at}/{i}"), x, y, out);
            }
        }
        (a, b) if a != b => out.push((at.to_string(), a.to_string(), b.to_string())),
        _ => {}
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "(absent)".into(), Value::to_string)
}

/// The entry that allows a difference at `at` in `step`: its `at` is equal, or a JSON pointer
/// prefix of it, where a `*` segment stands for any one segment (an array index).
fn allowed_by<'a>(allowed: &'a [Allowed], step: &str, at: &str) -> Option<&'a Allowed> {
    allowed.iter().find(|a| {
        a.step == step
            && (at == a.at || {
                let pattern: Vec<&str> = a.at.split('/').collect();
                let path: Vec<&str> = at.split('/').collect();
                a.at.starts_with('/')
                    && pattern.len() <= path.len()
                    && pattern.iter().zip(&path).all(|(p, s)| *p == "*" || p == s)
            })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_server_answers_the_corpus_as_kube_apiserver_does() -> anyhow::Result<()> {
    let Some(binaries) = Binaries::for_test() else {
        return Ok(());
    };
    let corpus: Vec<Step> = serde_norway::from_str(CORPUS)?;
    let allowed: Vec<Allowed> = serde_norway::from_str(ALLOWED)?;
    let mut names = std::collections::BTreeSet::new();
    for step in &corpus {
        assert!(names.insert(&step.name), "two steps named {:?}", step.name);
    }
    let mut entries = std::collections::BTreeSet::new();
    for entry in &allowed {
        assert!(
            names.contains(&entry.step),
            "allowed.yaml names step {:?}, which the corpus lacks",
            entry.step
        );
        assert!(
            entries.insert((&entry.step, &entry.at)),
            "allowed.yaml has {:?} at {} twice",
            entry.step,
            entry.at
        );
    }

    let stack = RealStack::start_with(binaries, Duration::from_secs(120)).await?;
    let kube_apiserver = stack.kube_apiserver("conformance").await?;
    let embedded = ApiServer::start().await?;
    let mut real = Target {
        name: "kube-apiserver",
        client: kube_apiserver.client().await?,
        vars: BTreeMap::new(),
    };
    let mut ours = Target {
        name: "embedded",
        client: embedded.client(),
        vars: BTreeMap::new(),
    };

    let mut report = String::new();
    let mut unexpected = 0;
    let mut used = vec![false; allowed.len()];
    for step in &corpus {
        let a = real.answer(step).await?;
        let b = ours.answer(step).await?;
        for (at, x, y) in differences(&a, &b) {
            match allowed_by(&allowed, &step.name, &at) {
                Some(entry) => {
                    let index = allowed
                        .iter()
                        .position(|e| std::ptr::eq(e, entry))
                        .expect("an entry of the list");
                    used[index] = true;
                }
                None => {
                    unexpected += 1;
                    writeln!(
                        report,
                        "{} {}: at {at}\n    kube-apiserver: {x}\n    embedded:       {y}",
                        step.name, step.method
                    )?;
                }
            }
        }
    }
    for (entry, used) in allowed.iter().zip(&used) {
        if !used {
            writeln!(
                report,
                "allowed.yaml: {:?} at {} matches no difference any more ({}): remove it",
                entry.step, entry.at, entry.reason
            )?;
            unexpected += 1;
        }
    }
    eprintln!(
        "differential conformance: {} requests, {} differences allowed ({} entries), {unexpected} unexpected",
        corpus.len(),
        used.iter().filter(|u| **u).count(),
        allowed.len(),
    );
    assert!(
        unexpected == 0,
        "the embedded server and kube-apiserver answer differently:\n{report}"
    );
    Ok(())
}

/// The comparison sees what a client would: a changed field, a missing one, another code.
#[test]
fn a_difference_a_client_can_observe_is_found() {
    let answer = |code, body| Answer {
        code,
        content_type: "application/json".into(),
        warnings: Vec::new(),
        body: normalise(body),
    };
    let real = answer(
        200,
        serde_json::json!({"metadata": {"uid": "a", "resourceVersion": "5"}, "data": {"k": "v"}}),
    );
    let same = answer(
        200,
        serde_json::json!({"metadata": {"uid": "b", "resourceVersion": "9"}, "data": {"k": "v"}}),
    );
    assert!(differences(&real, &same).is_empty());
    let other = answer(
        201,
        serde_json::json!({"metadata": {"uid": "b"}, "data": {}}),
    );
    let found: Vec<String> = differences(&real, &other)
        .into_iter()
        .map(|d| d.0)
        .collect();
    assert_eq!(
        found,
        ["code", "/data/k", "/metadata/resourceVersion"],
        "{found:?}"
    );
    assert_eq!(
        normalise_text("too old resource version: 5 (17)"),
        "too old resource version: N (N)"
    );
    let entry = |at: &str| Allowed {
        step: "s".into(),
        at: at.into(),
        reason: String::new(),
    };
    let list = [entry("/items/*/metadata/generation"), entry("code")];
    assert!(allowed_by(&list, "s", "/items/3/metadata/generation").is_some());
    assert!(allowed_by(&list, "s", "/items/3/metadata/generation/x").is_some());
    assert!(allowed_by(&list, "s", "/items/3/metadata/name").is_none());
    assert!(allowed_by(&list, "s", "code").is_some());
    assert!(allowed_by(&list, "other", "code").is_none());
}
