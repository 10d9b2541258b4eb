//! What both benchmarks share: the provider they run, the observer that records when each
//! object first became Ready, reading a process's memory, and their command-line arguments.
//! Each benchmark loads it with `#[path]`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use service_provider::kube::api::{ApiResource, DynamicObject, ObjectMeta};
use service_provider::kube::runtime::{WatchStreamExt, watcher};
use service_provider::kube::{Api, Resource};
use service_provider::prelude::*;
use tokio::sync::Notify;

/// The benchmarks' provider: a trivial reconcile that makes no API call, in either mode.
#[service_provider(
    group = "bench.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Bench",
    kcp
)]
pub(crate) struct BenchSpec {
    /// Anything.
    #[serde(default)]
    pub value: String,
}

impl Reconcile for Bench {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

/// When each object first became Ready, from one watch per client, keyed by what `key` picks
/// (the name in standard mode, the logical cluster in kcp).
#[derive(Clone)]
pub(crate) struct ReadyTimes {
    key: fn(&ObjectMeta) -> Option<String>,
    times: Arc<Mutex<HashMap<String, Instant>>>,
    changed: Arc<Notify>,
}

impl ReadyTimes {
    pub(crate) fn new(key: fn(&ObjectMeta) -> Option<String>) -> Self {
        ReadyTimes {
            key,
            times: Arc::default(),
            changed: Arc::default(),
        }
    }

    /// Watches the Service API objects of kind `K` (any provider's: read as `DynamicObject`).
    pub(crate) fn watch<K: Resource<DynamicType = ()>>(
        &self,
        client: service_provider::kube::Client,
    ) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        let resource = ApiResource::erase::<K>(&());
        tokio::spawn(async move {
            let api = Api::<DynamicObject>::all_with(client, &resource);
            let stream = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects();
            let mut stream = std::pin::pin!(stream);
            loop {
                let object = match stream.try_next().await {
                    Ok(Some(object)) => object,
                    Ok(None) => return,
                    Err(e) => {
                        eprintln!("the observer's watch failed: {e}");
                        continue;
                    }
                };
                let status = &object.data["status"];
                let ready = status["phase"] == "Ready"
                    && status["observedGeneration"].as_i64().is_some()
                    && status["observedGeneration"].as_i64() == object.metadata.generation;
                if let (true, Some(key)) = (ready, (this.key)(&object.metadata)) {
                    let now = Instant::now();
                    this.times.lock().unwrap().entry(key).or_insert(now);
                    this.changed.notify_waiters();
                }
            }
        })
    }

    /// Forgets every time recorded, for a second round over the same objects.
    pub(crate) fn forget(&self) {
        self.times.lock().unwrap().clear();
    }

    /// When the last of `keys` became Ready.
    pub(crate) async fn wait(&self, keys: &[String], timeout: Duration) -> Instant {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (latest, missing) = {
                let times = self.times.lock().unwrap();
                let found: Vec<Instant> =
                    keys.iter().filter_map(|k| times.get(k).copied()).collect();
                (found.iter().max().copied(), keys.len() - found.len())
            };
            if missing == 0 {
                return latest.unwrap_or_else(Instant::now);
            }
            assert!(
                Instant::now() < deadline,
                "{missing} objects did not become Ready in {timeout:?}"
            );
            let _ = tokio::time::timeout(Duration::from_secs(1), notified).await;
        }
    }
}

/// A process's memory in MiB, from `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memory {
    /// Resident now (`VmRSS`).
    pub resident: f64,
    /// Resident at the peak (`VmHWM`).
    pub peak: f64,
    /// The anonymous part of `resident`: heap and stacks (`RssAnon`).
    pub anonymous: f64,
}

pub(crate) fn memory_of(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
    };
    Some(Memory {
        resident: field("VmRSS:")?,
        peak: field("VmHWM:")?,
        anonymous: field("RssAnon:")?,
    })
}

/// Logs to stderr when `RUST_LOG` is set.
pub(crate) fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// The value after `--name` on the command line (`cargo bench` adds `--bench`; the rest is ours).
pub(crate) fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}
