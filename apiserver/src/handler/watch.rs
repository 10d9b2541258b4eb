//! watch: a chunked stream of newline-delimited JSON events, resumable from a resourceVersion,
//! with bookmarks, timeouts, selector transitions and the streaming-list (`sendInitialEvents`) protocol.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;

use super::negotiate::Output;
use super::read::Selectors;
use super::response::Body;
use super::table::{self, Include};
use super::{ClusterScope, Ctx};
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceInfo;
use crate::shard::Shard;
use crate::store::{
    Event, EventType, StoreError, WatchFilter, WatchStart, WatchStream, watch_line,
};

/// How often a watch with `allowWatchBookmarks` gets a BOOKMARK: kube-apiserver's cacher sends
/// one roughly every minute (`bookmarkFrequency`), and one 2 s before the watch's timeout
/// (`cacheWatcher.nextBookmarkTime`), so that a client resuming after the timeout starts close
/// to now.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// How long before a watch's timeout its last bookmark comes.
const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(2);
/// Watch lifetime when the client sets no `timeoutSeconds` (kube-apiserver: 30–60 min).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
/// Events batched into one chunk at most.
const BATCH: usize = 512;

struct Encoder {
    info: Arc<ResourceInfo>,
    sel: Selectors,
    output: Output,
    include: Include,
    headers_sent: bool,
    plain: bool,
    /// An event could not be converted to the watched version: the watch has sent its ERROR
    /// event and ends.
    failed: bool,
}

impl Encoder {
    fn matches(&self, o: &crate::store::StoredObject) -> ApiResult<bool> {
        self.sel.matches(&self.info, o)
    }

    /// Appends the line for an event to `out`, if the watcher sees it. An event that cannot be
    /// converted (a failing conversion webhook) ends the watch with an ERROR event carrying an
    /// InternalError, as kube-apiserver's etcd watcher does (apiserver `storage/etcd3/
    /// watcher.go` `processEvents`, `transformErrorToEvent`).
    fn encode_into(&mut self, ev: &Event, out: &mut BytesMut) {
        if self.failed {
            return;
        }
        match self.encode(ev) {
            Ok(Some(line)) => out.extend_from_slice(&line),
            Ok(None) => {}
            Err(e) => {
                out.extend_from_slice(&self.error_line(&ApiError::internal(&e.message)));
                self.failed = true;
            }
        }
    }

    /// The line for an event, or `None` when the watcher does not see it.
    fn encode(&mut self, ev: &Event) -> ApiResult<Option<Bytes>> {
        let cur = self.matches(&ev.object)?;
        let kind = match ev.kind {
            EventType::Added => cur.then_some(EventType::Added),
            EventType::Deleted => cur.then_some(EventType::Deleted),
            EventType::Modified => {
                let prev = match ev.prev.as_deref() {
                    Some(p) => self.matches(p)?,
                    None => false,
                };
                match (prev, cur) {
                    (true, true) => Some(EventType::Modified),
                    (false, true) => Some(EventType::Added),
                    (true, false) => Some(EventType::Deleted),
                    (false, false) => None,
                }
            }
        };
        let Some(kind) = kind else {
            return Ok(None);
        };
        if self.plain && kind == ev.kind && convert::stored_form_matches(&self.info, &ev.object) {
            return Ok(Some(ev.line()));
        }
        Ok(Some(match self.output {
            Output::Table => {
                let v = convert::served_value(&self.info, &ev.object)?;
                let rv = ev.object.rv.to_string();
                let t = table::table(
                    &self.info,
                    &[v],
                    self.include,
                    &rv,
                    None,
                    !self.headers_sent,
                );
                self.headers_sent = true;
                watch_line(kind.as_str(), &serde_json::to_vec(&t).unwrap_or_default())
            }
            Output::Metadata | Output::MetadataProtobuf => {
                let v = table::partial_metadata(&convert::served_value(&self.info, &ev.object)?);
                self.line(kind.as_str(), &v)
            }
            Output::Protobuf => self.line(
                kind.as_str(),
                &convert::served_value(&self.info, &ev.object)?,
            ),
            _ => watch_line(
                kind.as_str(),
                &convert::served_bytes(&self.info, &ev.object)?,
            ),
        }))
    }

    /// One event in the stream's encoding: a JSON line, or a length-prefixed protobuf frame.
    fn line(&self, kind: &str, v: &serde_json::Value) -> Bytes {
        if self.output.is_protobuf() {
            match crate::protobuf::watch_frame(kind, v) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!("watch event not encoded as protobuf: {e}");
                    Bytes::new()
                }
            }
        } else {
            watch_line(kind, &serde_json::to_vec(v).unwrap_or_default())
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = match self.output {
            Output::Table => {
                json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv.to_string()}, "columnDefinitions": [], "rows": []})
            }
            Output::Metadata | Output::MetadataProtobuf => {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
            }
            _ => {
                json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": meta})
            }
        };
        self.line("BOOKMARK", &obj)
    }

    fn error_line(&self, e: &ApiError) -> Bytes {
        self.line("ERROR", &e.to_status())
    }
}

/// Starts a watch.
pub(crate) fn watch(cx: &Ctx<'_>) -> ApiResult<Response<Body>> {
    let sel = Selectors::parse(cx)?;
    let q = cx.query;
    let bookmarks = q.flag("allowWatchBookmarks");
    let send_initial = q.get("sendInitialEvents").map(|v| v == "true");
    let rv_param = q.get("resourceVersion").filter(|r| !r.is_empty());
    let rv_match = q.get("resourceVersionMatch").filter(|r| !r.is_empty());
    if send_initial.is_some() {
        if rv_match != Some("NotOlderThan") {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![crate::error::Cause {
                    reason: "FieldValueForbidden".into(),
                    message: "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan".into(),
                    field: "sendInitialEvents".into(),
                }],
            ));
        }
    } else if rv_match.is_some() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let timeout = match q.get("timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t}")))?,
        ),
        None => DEFAULT_TIMEOUT,
    };
    let start = match (send_initial, rv_param) {
        (Some(true), _) => WatchStart::Now,
        (Some(false), None | Some("0")) => WatchStart::After(cx.target.shard.store().current_rv()),
        (_, None | Some("0")) => WatchStart::Now,
        (_, Some(rv)) => WatchStart::After(crate::meta::parse_rv(rv)?),
    };
    let filter = WatchFilter {
        resource: Some(cx.info.store.clone()),
        cluster: match &cx.target.cluster {
            ClusterScope::One(c) => Some(c.clone()),
            ClusterScope::Wildcard => None,
        },
        namespace: if cx.info.namespaced && !cx.ri.namespace.is_empty() {
            Some(cx.ri.namespace.clone())
        } else {
            None
        },
        name: sel
            .field
            .required_name()
            .map(str::to_string)
            .or_else(|| (!cx.ri.name.is_empty()).then(|| cx.ri.name.clone())),
    };
    let encoder = Encoder {
        plain: matches!(cx.output, Output::Json),
        failed: false,
        info: cx.info.clone(),
        sel,
        output: if cx.output == Output::Yaml {
            Output::Json
        } else {
            cx.output
        },
        include: Include::parse(q.get("includeObject")),
        headers_sent: false,
    };
    let content_type = if cx.output.is_protobuf() {
        crate::protobuf::WATCH_MEDIA_TYPE
    } else {
        "application/json"
    };
    let mut resp_status = StatusCode::OK;
    let body: Body = match cx.target.shard.store().watch(filter, start) {
        Ok(stream) => stream_body(
            cx.target.shard.clone(),
            stream,
            encoder,
            bookmarks,
            // The end of the initial events is a bookmark: sent only to a client that takes them.
            send_initial == Some(true) && bookmarks,
            timeout,
        ),
        // kube-apiserver answers a too-old resourceVersion with 200 and one ERROR event.
        Err(StoreError::Expired { requested, oldest }) => {
            super::response::full(encoder.error_line(&ApiError::expired(requested, oldest)))
        }
        Err(e) => {
            resp_status = StatusCode::INTERNAL_SERVER_ERROR;
            super::response::full(encoder.error_line(&ApiError::internal(e)))
        }
    };
    let mut r = Response::new(body);
    *r.status_mut() = resp_status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(r)
}

struct State {
    shard: std::sync::Weak<Shard>,
    stream: WatchStream,
    enc: Encoder,
    bookmarks: bool,
    deadline: tokio::time::Instant,
    last_rv: u64,
    /// When the next bookmark is due; `None` once the pre-timeout one is sent.
    next_bookmark: Option<tokio::time::Instant>,
}

/// The next bookmark after `now`: a minute later, or 2 s before the deadline if that comes first
/// (none when that moment has passed), as kube-apiserver's `cacheWatcher.nextBookmarkTime`.
fn next_bookmark(
    now: tokio::time::Instant,
    deadline: tokio::time::Instant,
) -> Option<tokio::time::Instant> {
    let heartbeat = now + BOOKMARK_EVERY;
    let pre_timeout = deadline.checked_sub(BOOKMARK_BEFORE_TIMEOUT)?;
    let at = heartbeat.min(pre_timeout);
    (at > now).then_some(at)
}

fn stream_body(
    shard: Arc<Shard>,
    mut stream: WatchStream,
    mut enc: Encoder,
    bookmarks: bool,
    initial_end: bool,
    timeout: Duration,
) -> Body {
    // The first chunk: the backlog (history replay or initial objects), then the end-of-initial-events
    // bookmark for streaming lists.
    let mut first = BytesMut::new();
    let mut last_rv = stream.start_rv;
    let backlog = std::mem::take(&mut stream.backlog);
    for ev in &backlog {
        enc.encode_into(ev, &mut first);
    }
    if initial_end && !enc.failed {
        first.extend_from_slice(&enc.bookmark(stream.start_rv, true));
    } else if let Some(ev) = backlog.last() {
        last_rv = last_rv.max(ev.rv);
    }
    let now = tokio::time::Instant::now();
    let state = State {
        shard: Arc::downgrade(&shard),
        stream,
        enc,
        bookmarks,
        deadline: now + timeout,
        last_rv,
        next_bookmark: next_bookmark(now, now + timeout),
    };
    let head = futures::stream::iter(
        (!first.is_empty()).then(|| Ok::<_, std::convert::Infallible>(Frame::data(first.freeze()))),
    );
    let tail = futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.enc.failed {
                return None;
            }
            let wake = match st.next_bookmark {
                Some(b) if st.bookmarks => st.deadline.min(b),
                _ => st.deadline,
            };
            tokio::select! {
                ev = st.stream.rx.recv() => {
                    let ev = ev?;
                    let mut buf = BytesMut::new();
                    st.last_rv = st.last_rv.max(ev.rv);
                    st.enc.encode_into(&ev, &mut buf);
                    let mut n = 1;
                    let mut yielded = false;
                    while n < BATCH {
                        match st.stream.rx.try_recv() {
                            Ok(ev) => {
                                st.last_rv = st.last_rv.max(ev.rv);
                                st.enc.encode_into(&ev, &mut buf);
                                n += 1;
                            }
                            // During a burst, give writers one turn to add to the batch: one
                            // larger write instead of a syscall and a client wake-up per event.
                            Err(_) if !yielded && n < 8 => {
                                yielded = true;
                                tokio::task::yield_now().await;
                            }
                            Err(_) => break,
                        }
                    }
                    if !buf.is_empty() {
                        return Some((Ok(Frame::data(buf.freeze())), st));
                    }
                }
                _ = tokio::time::sleep_until(wake) => {
                    if tokio::time::Instant::now() >= st.deadline {
                        return None;
                    }
                    st.next_bookmark = next_bookmark(tokio::time::Instant::now(), st.deadline);
                    // Read the store's version before checking the queue: if the queue is empty then,
                    // every event up to that version has been delivered.
                    let shard = st.shard.upgrade()?;
                    let rv = shard.store().current_rv();
                    if st.stream.rx.is_empty() {
                        st.last_rv = st.last_rv.max(rv);
                    }
                    return Some((Ok(Frame::data(st.enc.bookmark(st.last_rv, false))), st));
                }
            }
        }
    });
    StreamBody::new(head.chain(tail)).boxed_unsync()
}
