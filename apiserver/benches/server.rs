//! Throughput and memory of the embedded API server, measured with `kube::Client` over loopback
//! HTTPS: GET/s, create/s, update/s, watch fan-out to 100 watchers, memory per stored 1 KiB object.
//!
//! `cargo bench -p service-provider-apiserver --bench server` (numbers, not pass/fail). Set
//! `BENCH_SECONDS` to change the duration of the throughput phases (default 3).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{PostParams, WatchEvent, WatchParams};
use serde_json::json;
use service_provider_apiserver::internals::{self, DEFAULT_LOGICAL_CLUSTER, storage};
use service_provider_apiserver::{ApiServer, Cluster};

fn concurrency() -> usize {
    std::env::var("BENCH_CONCURRENCY")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32)
}

fn cm(name: &str, payload: usize) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "payload".to_string(),
            "x".repeat(payload),
        )])),
        ..Default::default()
    }
}

fn seconds() -> Duration {
    Duration::from_secs(
        std::env::var("BENCH_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3),
    )
}

/// Runs `op(task, i)` from CONCURRENCY tasks until the duration is over; returns operations/s.
async fn throughput<F, Fut>(op: F) -> (f64, f64, f64)
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let cpu0 = cpu_seconds();
    let count = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + seconds();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..concurrency() {
        let (op, count) = (op.clone(), count.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while Instant::now() < deadline {
                op(t, i).await;
                i += 1;
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.expect("benchmark task");
    }
    let n = count.load(Ordering::Relaxed) as f64;
    (n / start.elapsed().as_secs_f64(), n, cpu_seconds() - cpu0)
}

async fn bench_get(c: &Cluster) {
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    api.create(&PostParams::default(), &cm("target", 1024))
        .await
        .expect("create");
    let (rate, ops, cpu) = throughput(move |_, _| {
        let api = api.clone();
        async move {
            api.get("target").await.expect("get");
        }
    })
    .await;
    println!(
        "GET (1 KiB ConfigMap), {} concurrent clients: {rate:.0} requests/s   (target >= 20000)",
        concurrency()
    );
    cpu_report("GET", ops, cpu);
}

/// GETs with a bare hyper HTTP/1 client (one connection per task): the server's own cost without
/// kube's client stack.
async fn bench_raw_get(c: &Cluster) {
    use http_body_util::BodyExt;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let _ = api
        .create(&PostParams::default(), &cm("target", 1024))
        .await;
    let addr = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, c.port()));
    let token = c.admin_token().to_string();
    let cpu0 = cpu_seconds();
    let count = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + seconds();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency() {
        let (count, token) = (count.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let (mut send, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .expect("handshake");
            tokio::spawn(conn);
            while Instant::now() < deadline {
                let req = http::Request::get("/api/v1/namespaces/default/configmaps/target")
                    .header("authorization", format!("Bearer {token}"))
                    .header("host", "localhost")
                    .body(http_body_util::Empty::<bytes::Bytes>::new())
                    .expect("request");
                let resp = send.send_request(req).await.expect("response");
                let _ = resp.into_body().collect().await.expect("body");
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let rate = count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    println!(
        "GET with a bare hyper client (plain HTTP), {} connections: {rate:.0} requests/s",
        concurrency()
    );
    cpu_report(
        "bare GET",
        count.load(Ordering::Relaxed) as f64,
        cpu_seconds() - cpu0,
    );
}

async fn bench_create(c: &Cluster) {
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let (rate, ops, cpu) = throughput(move |t, i| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &cm(&format!("c-{t}-{i}"), 1024))
                .await
                .expect("create");
        }
    })
    .await;
    println!(
        "create (1 KiB ConfigMap), {} concurrent clients: {rate:.0} requests/s   (target >= 5000)",
        concurrency()
    );
    cpu_report("create", ops, cpu);
}

async fn bench_update(c: &Cluster) {
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let mut current = Vec::new();
    for t in 0..concurrency() {
        current.push(tokio::sync::Mutex::new(
            api.create(&PostParams::default(), &cm(&format!("u-{t}"), 1024))
                .await
                .expect("create"),
        ));
    }
    let current = Arc::new(current);
    let (rate, ops, cpu) = throughput(move |t, i| {
        let (api, current) = (api.clone(), current.clone());
        async move {
            let mut obj = current[t].lock().await;
            let mut next = obj.clone();
            next.data
                .get_or_insert_default()
                .insert("i".into(), i.to_string());
            *obj = api
                .replace(&format!("u-{t}"), &PostParams::default(), &next)
                .await
                .expect("update");
        }
    })
    .await;
    println!(
        "update (1 KiB ConfigMap, optimistic concurrency), {} concurrent clients: {rate:.0} requests/s",
        concurrency()
    );
    cpu_report("update", ops, cpu);
}

/// What a watcher decodes each event into.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decode {
    /// The typed ConfigMap (k8s-openapi), as a controller would.
    Typed,
    /// Only `metadata.resourceVersion` (kube's WatchEvent over a minimal type): the server's
    /// fan-out cost with the cheapest client-side decoding.
    Light,
}

/// The least a watch event can be decoded into.
#[derive(Clone, Debug, serde::Deserialize)]
struct Light {
    #[allow(dead_code)]
    metadata: LightMeta,
}

#[derive(Clone, Debug, serde::Deserialize)]
struct LightMeta {
    #[serde(rename = "resourceVersion")]
    #[allow(dead_code)]
    resource_version: String,
}

async fn bench_watch(c: &Cluster, decode: Decode) {
    const WATCHERS: usize = 100;
    const EVENTS: usize = 10_000;
    let ns = if decode == Decode::Typed {
        "watch-typed"
    } else {
        "watch-light"
    };
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.client());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": ns}})).expect("ns"),
    )
    .await
    .expect("create ns");
    let api: Api<ConfigMap> = Api::namespaced(c.client(), ns);
    let rv = internals::shard_of(c).store().current_rv().to_string();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(WATCHERS);
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        // One client (connection) per watcher, as separate controllers would have.
        let api: Api<ConfigMap> = Api::namespaced(c.client(), ns);
        let rv = rv.clone();
        let ready = ready_tx.clone();
        let client = c.client();
        watchers.push(tokio::spawn(async move {
            let mut n = 0;
            match decode {
                Decode::Typed => {
                    let mut s = api.watch(&WatchParams::default().timeout(290), &rv).await.expect("watch").boxed();
                    let _ = ready.send(()).await;
                    while n < EVENTS {
                        match s.next().await {
                            Some(Ok(WatchEvent::Added(_))) => n += 1,
                            Some(Ok(_)) => {}
                            other => panic!("watch ended early: {other:?}"),
                        }
                    }
                }
                Decode::Light => {
                    let url = format!("/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=290");
                    let req = http::Request::get(url).body(Vec::new()).expect("request");
                    let mut s = client.request_events::<Light>(req).await.expect("watch").boxed();
                    let _ = ready.send(()).await;
                    while n < EVENTS {
                        match s.next().await {
                            Some(Ok(WatchEvent::Added(_))) => n += 1,
                            Some(Ok(_)) => {}
                            other => panic!("watch ended early: {other:?}"),
                        }
                    }
                }
            }
            Instant::now()
        }));
    }
    for _ in 0..WATCHERS {
        ready_rx.recv().await.expect("watcher ready");
    }
    let _ = api;
    // Writes go through the in-process API (same semantics as HTTP writes), so the measurement is
    // the fan-out: encoding once, streaming to 100 connections, decoding in 100 kube clients.
    let shard = internals::shard_of(c).clone();
    let cluster = shard
        .logical_cluster(DEFAULT_LOGICAL_CLUSTER)
        .expect("cluster");
    let info = storage::core("configmaps");
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    for i in 0..EVENTS {
        let obj = serde_json::to_value(cm(&format!("w-{i}"), 64)).expect("json");
        shard.api(&cluster).create(&info, ns, obj).expect("create");
    }
    let written = start.elapsed();
    let mut last = start;
    for w in watchers {
        last = last.max(w.await.expect("watcher"));
    }
    let total = last - start;
    let cpu = cpu_seconds() - cpu0;
    println!(
        "watch ({}): {EVENTS} events to each of {WATCHERS} watchers ({} deliveries): all delivered {:.3} s after the first write (writes took {:.3} s; target <= 1 s)",
        if decode == Decode::Typed {
            "typed ConfigMap decode"
        } else {
            "metadata-only decode"
        },
        EVENTS * WATCHERS,
        total.as_secs_f64(),
        written.as_secs_f64()
    );
    println!(
        "    watch: {:.2} s CPU for writes, fan-out and decoding in 100 kube clients → {:.2} s if both cores were ours",
        cpu,
        cpu / 2.0
    );
}

/// CPU time (user + system) this process has used, from /proc (10 ms resolution).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    (ticks(11) + ticks(12)) / 100.0
}

/// Prints the CPU cost per operation of a phase (client and server together), which does not
/// depend on how busy the shared machine is.
fn cpu_report(what: &str, ops: f64, cpu: f64) {
    if ops > 0.0 {
        println!(
            "    {what}: {:.1} µs CPU per operation (client + server) → {:.0}/s if both cores were ours",
            cpu / ops * 1e6,
            ops / cpu * 2.0
        );
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn bench_memory() {
    const N: usize = 50_000;
    // A cluster of its own with a history of one event, so the watch history holds no old versions.
    let c = ApiServer::start_with(
        "memory",
        service_provider_apiserver::ClusterOptions::default().history(1),
    )
    .await
    .expect("cluster");
    let shard = internals::shard_of(&c).clone();
    let cluster = shard
        .logical_cluster(DEFAULT_LOGICAL_CLUSTER)
        .expect("cluster");
    let info = storage::core("configmaps");
    let before = rss_bytes();
    let mut stored_bytes = 0usize;
    for i in 0..N {
        // Built one at a time: objects built beforehand would free their memory as they are
        // stored, for the store to reuse, and the resident growth would undercount.
        let obj = serde_json::to_value(cm(&format!("m-{i:06}"), 1024)).expect("json");
        let o = shard
            .api(&cluster)
            .create(&info, "default", obj)
            .expect("create");
        stored_bytes += o.bytes.len();
    }
    let after = rss_bytes();
    let per_object = (after.saturating_sub(before)) as f64 / N as f64;
    let json = stored_bytes as f64 / N as f64;
    println!(
        "memory: {N} ConfigMaps with 1 KiB of data: {per_object:.0} B resident per object; stored JSON {json:.0} B (incl. metadata and managedFields); overhead beyond the 1 KiB payload {:.0} B   (target <= 3072)",
        per_object - 1024.0
    );
}

/// Cluster start-up: the first cluster of a process also builds the shared built-in registry
/// (schemas, type shapes); later ones only bootstrap their objects and listener.
async fn bench_startup() {
    const N: usize = 20;
    let t = Instant::now();
    let first = ApiServer::start_with("startup-0", Default::default())
        .await
        .expect("cluster");
    let first_time = t.elapsed();
    let mut clusters = vec![first];
    let t = Instant::now();
    for i in 1..=N {
        clusters.push(
            ApiServer::start_with(&format!("startup-{i}"), Default::default())
                .await
                .expect("cluster"),
        );
    }
    let each = t.elapsed() / N as u32;
    println!(
        "startup: first cluster of the process {:.1} ms; each further cluster {:.1} ms   (target <= 50 ms)",
        first_time.as_secs_f64() * 1e3,
        each.as_secs_f64() * 1e3
    );
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_string()
}

fn main() {
    println!(
        "(machine load average at start: {} on {} cores; other work competes for the CPU)",
        load_average(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = std::env::var("BENCH_WORKERS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        b.worker_threads(n);
    }
    let rt = b.enable_all().build().expect("runtime");
    rt.block_on(async {
        // Memory first, before the throughput phases grow the allocator's pools.
        let only = std::env::var("BENCH_ONLY").unwrap_or_default();
        let run = |name: &str| only.is_empty() || only.split(',').any(|o| o == name);
        if run("startup") {
            bench_startup().await;
        }
        if run("memory") {
            bench_memory().await;
        }
        let mut opts = service_provider_apiserver::ClusterOptions::default();
        if std::env::var("BENCH_HTTP").as_deref() == Ok("1") {
            opts = opts.http();
        }
        let c = ApiServer::start_with("bench", opts).await.expect("cluster");
        if run("get") {
            bench_get(&c).await;
        }
        if run("rawget") && std::env::var("BENCH_HTTP").as_deref() == Ok("1") {
            bench_raw_get(&c).await;
        }
        if run("create") {
            bench_create(&c).await;
        }
        if run("update") {
            bench_update(&c).await;
        }
        if run("watch") {
            bench_watch(&c, Decode::Typed).await;
        }
        if run("watchlight") || run("watch") {
            bench_watch(&c, Decode::Light).await;
        }
    });
}
