//! Request counters by (cluster, verb, resource, code, user), readable from Rust and at `/metrics`,
//! and an opt-in log of the requests in the order they were answered.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    /// Who asked: the authenticated user's name; empty when the request was not authenticated
    /// (a public endpoint, a credential the server refused). Tells a client's requests from
    /// those of the others sharing the cluster (a test from the platform it simulates).
    pub user: String,
}

/// One request in the log [`Counters::start_log`] turns on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Position among the requests of every server in this process: entries of different
    /// servers' logs sort into the order they were answered in.
    pub sequence: u64,
    /// The cluster (or shard/surface) name, as in [`CounterKey::cluster`].
    pub cluster: String,
    /// The verb, as in [`CounterKey::verb`].
    pub verb: String,
    /// The resource, as in [`CounterKey::resource`].
    pub resource: String,
    /// The namespace (empty for cluster-scoped objects and collections across namespaces).
    pub namespace: String,
    /// The object's name (empty for collections).
    pub name: String,
    /// HTTP status code answered.
    pub code: u16,
}

impl LoggedRequest {
    fn new(sequence: u64, key: &CounterKey, namespace: &str, name: &str) -> Self {
        LoggedRequest {
            sequence,
            cluster: key.cluster.clone(),
            verb: key.verb.clone(),
            resource: key.resource.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            code: key.code,
        }
    }
}

/// Orders the logs of every server in the process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Request counters of one cluster.
#[derive(Debug, Default)]
pub struct Counters {
    map: Mutex<BTreeMap<CounterKey, u64>>,
    // Off unless a test asks: a benchmark's millions of requests are not kept.
    logging: AtomicBool,
    log: Mutex<Vec<LoggedRequest>>,
}

impl Counters {
    /// Starts keeping every request answered from now on, in order (see [`Counters::log`]).
    pub fn start_log(&self) {
        self.logging.store(true, Ordering::SeqCst);
    }

    /// The requests answered since [`Counters::start_log`], in the order they were answered.
    pub fn log(&self) -> Vec<LoggedRequest> {
        self.log.lock().clone()
    }

    /// Logs one request when the log is on.
    pub fn log_request(&self, key: &CounterKey, namespace: &str, name: &str) {
        if !self.logging.load(Ordering::Relaxed) {
            return;
        }
        // Taken under the lock, so that one server's log is in sequence order.
        let mut log = self.log.lock();
        let sequence = SEQUENCE.fetch_add(1, Ordering::SeqCst);
        log.push(LoggedRequest::new(sequence, key, namespace, name));
    }

    /// Counts a request another server answered and logs it (when the log is on) at
    /// `sequence`: a real kube-apiserver's audit log read into the same counters, with its
    /// completion time as the sequence, so that the logs of several real servers sort into the
    /// order they answered in.
    pub fn record_answered(&self, key: CounterKey, namespace: &str, name: &str, sequence: u64) {
        if self.logging.load(Ordering::Relaxed) {
            let entry = LoggedRequest::new(sequence, &key, namespace, name);
            self.log.lock().push(entry);
        }
        *self.map.lock().entry(key).or_insert(0) += 1;
    }

    /// Counts one request.
    pub fn record(&self, key: CounterKey) {
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

    /// Sets every counter back to zero and empties the log.
    pub fn reset(&self) {
        self.map.lock().clear();
        self.log.lock().clear();
    }

    /// The counters in the Prometheus text format (`apiserver_request_total`), summed over
    /// users as kube-apiserver's are.
    pub fn prometheus(&self) -> String {
        let mut out = String::from(
            "# HELP apiserver_request_total Counter of apiserver requests broken out for each cluster, verb, resource and HTTP response code.\n# TYPE apiserver_request_total counter\n",
        );
        let mut series: BTreeMap<(&str, &str, &str, u16), u64> = BTreeMap::new();
        let map = self.map.lock();
        for (k, v) in map.iter() {
            *series
                .entry((&k.cluster, &k.verb, &k.resource, k.code))
                .or_insert(0) += v;
        }
        for ((cluster, verb, resource, code), v) in series {
            let _ = writeln!(
                out,
                "apiserver_request_total{{cluster=\"{}\",verb=\"{}\",resource=\"{}\",code=\"{code}\"}} {v}",
                escape(cluster),
                escape(verb),
                escape(resource),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn asked_by(user: &str) -> CounterKey {
        CounterKey {
            cluster: "c".into(),
            verb: "get".into(),
            resource: "pods".into(),
            code: 200,
            user: user.into(),
        }
    }

    #[test]
    fn requests_are_counted_per_user_and_exported_summed_over_users() {
        let counters = Counters::default();
        counters.record(asked_by("alice"));
        counters.record(asked_by("bob"));
        counters.record(asked_by("bob"));
        let mut by_user: Vec<_> = counters
            .snapshot()
            .into_iter()
            .map(|(k, n)| (k.user, n))
            .collect();
        by_user.sort();
        assert_eq!(by_user, [("alice".to_string(), 1), ("bob".to_string(), 2)]);
        assert_eq!(counters.total("get", "pods"), 3);
        assert!(
            counters.prometheus().ends_with(
                "apiserver_request_total{cluster=\"c\",verb=\"get\",resource=\"pods\",code=\"200\"} 3\n"
            ),
            "one series per cluster, verb, resource and code: {}",
            counters.prometheus()
        );
    }
}
