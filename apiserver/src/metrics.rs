//! Request counters by (cluster, verb, resource, code), readable from Rust and at `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write;

use parking_lot::Mutex;

/// What a counter counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CounterKey {
    /// The cluster (or shard/surface) name.
    pub cluster: String,
    /// Verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`
    /// (non-resource requests: the lower-case HTTP method).
    pub verb: String,
    /// Resource plural with subresource (`deployments/status`); non-resource requests: the path.
    pub resource: String,
    /// HTTP status code answered.
    pub code: u16,
}

/// Request counters of one cluster.
#[derive(Debug, Default)]
pub struct Counters {
    map: Mutex<BTreeMap<CounterKey, u64>>,
}

impl Counters {
    /// Counts one request.
    pub fn record(&self, cluster: &str, verb: &str, resource: &str, code: u16) {
        let key = CounterKey {
            cluster: cluster.into(),
            verb: verb.into(),
            resource: resource.into(),
            code,
        };
        *self.map.lock().entry(key).or_insert(0) += 1;
    }

    /// Requests with this verb, resource and code.
    pub fn get(&self, verb: &str, resource: &str, code: u16) -> u64 {
        self.map
            .lock()
            .iter()
            .filter(|(k, _)| k.verb == verb && k.resource == resource && k.code == code)
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests with this verb and resource, whatever their code.
    pub fn total(&self, verb: &str, resource: &str) -> u64 {
        self.map
            .lock()
            .iter()
            .filter(|(k, _)| k.verb == verb && k.resource == resource)
            .map(|(_, n)| n)
            .sum()
    }

    /// Every request counted.
    pub fn sum(&self) -> u64 {
        self.map.lock().values().sum()
    }

    /// All counters.
    pub fn snapshot(&self) -> Vec<(CounterKey, u64)> {
        self.map
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Sets every counter back to zero.
    pub fn reset(&self) {
        self.map.lock().clear();
    }

    /// The counters in the Prometheus text format (`apiserver_request_total`).
    pub fn prometheus(&self) -> String {
        let mut out = String::from(
            "# HELP apiserver_request_total Counter of apiserver requests broken out for each cluster, verb, resource and HTTP response code.\n# TYPE apiserver_request_total counter\n",
        );
        for (k, v) in self.map.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_request_total{{cluster=\"{}\",verb=\"{}\",resource=\"{}\",code=\"{}\"}} {v}",
                escape(&k.cluster),
                escape(&k.verb),
                escape(&k.resource),
                k.code
            );
        }
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
