//! The provider's Prometheus metrics: reconciles, errors, durations and queue depth per mode, as
//! `service_provider_*`, and the same events under controller-runtime's names and labels
//! (`controller_runtime_*`, `workqueue_*`, `leader_election_master_status`), so the dashboards
//! and alerts built for the platform's Go providers work unchanged.
//!
//! Every label has a fixed, small set of values (mode, result, error kind, controller and Lease
//! name), never an object name, namespace or logical cluster: the series count does not grow with
//! the number of tenants.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::tenant::Mode;

/// The `mode` label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ModeLabel {
    /// Standard mode.
    standard,
    /// kcp mode.
    kcp,
}

impl From<Mode> for ModeLabel {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Standard => ModeLabel::standard,
            Mode::Kcp => ModeLabel::kcp,
        }
    }
}

/// How a reconcile ended (the `result` label).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ReconcileResult {
    /// The object is ready.
    ready,
    /// The author reported progress.
    progressing,
    /// Waiting for cluster access.
    waiting,
    /// Invalid input, reported in status.
    invalid,
    /// A transient error; retried with backoff.
    error,
    /// The author's code panicked.
    panic,
    /// The author's code did not finish within the reconcile timeout.
    timeout,
    /// Deletion finished; the finalizer is removed.
    deleted,
    /// Deletion is under way (blocked, or access being given back).
    deleting,
    /// Nothing to do (object gone, ignored, no ProviderConfig).
    skipped,
}

/// Which kind of error (the `kind` label).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ErrorKind {
    /// Retried with backoff.
    transient,
    /// Reported, not retried until something changes.
    invalid_input,
    /// A panic in the author's code.
    panic,
    /// The author's code ran past the reconcile timeout.
    timeout,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: ModeLabel,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    mode: ModeLabel,
    result: ReconcileResult,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    mode: ModeLabel,
    kind: ErrorKind,
}

fn duration_histogram() -> Histogram {
    // 1 ms to ~33 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.001, 2.0, 16,
    ))
}

/// controller-runtime's `controller` label (pkg/internal/controller/metrics/metrics.go).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// controller-runtime's `controller` and `result` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResultLabels {
    controller: String,
    result: &'static str,
}

/// The labels of controller-runtime's work queue metrics: the queue is named after its
/// controller, and `name` and `controller` both hold that name
/// (pkg/internal/metrics/workqueue.go, `WithLabelValues(name, name)`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

/// `workqueue_depth` has a `priority` label as well, empty without controller-runtime's
/// priority queue (which this queue is not).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueDepthLabels {
    name: String,
    controller: String,
    priority: &'static str,
}

/// `leader_election_master_status`'s `name`: the Lease (pkg/metrics/leaderelection.go).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

/// `controller_runtime_reconcile_time_seconds`' buckets, as controller-runtime sets them.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The work queue histograms' buckets: `prometheus.ExponentialBuckets(10e-9, 10, 12)`, 10 ns to
/// 1000 s.
fn queue_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        10e-9, 10.0, 12,
    ))
}

/// The families under controller-runtime's names.
#[derive(Clone)]
struct ControllerRuntime {
    reconcile_total: Family<ControllerResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    terminal_errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    timeouts: Family<ControllerLabels, Counter>,
    reconcile_time: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    queue_depth: Family<QueueDepthLabels, Gauge>,
    queue_adds: Family<QueueLabels, Counter>,
    queue_retries: Family<QueueLabels, Counter>,
    queue_latency: Family<QueueLabels, Histogram, fn() -> Histogram>,
    queue_work: Family<QueueLabels, Histogram, fn() -> Histogram>,
    queue_unfinished: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    queue_longest: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    leader: Family<LeaseLabels, Gauge>,
}

impl ControllerRuntime {
    /// Registers every family in `registry` under the names of controller-runtime v0.24
    /// (pkg/internal/controller/metrics/metrics.go, pkg/internal/metrics/workqueue.go,
    /// pkg/metrics/leaderelection.go). Counters get their `_total` from the encoder.
    fn register(registry: &mut Registry) -> Self {
        let this = ControllerRuntime {
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            terminal_errors: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_time_histogram),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_retries: Family::default(),
            queue_latency: Family::new_with_constructor(queue_histogram),
            queue_work: Family::new_with_constructor(queue_histogram),
            queue_unfinished: Family::default(),
            queue_longest: Family::default(),
            leader: Family::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            this.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            this.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            this.terminal_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            this.panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            this.timeouts.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            this.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            this.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            this.active_workers.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            this.queue_depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            this.queue_adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
            this.queue_retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            this.queue_latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            this.queue_work.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            this.queue_unfinished.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            this.queue_longest.clone(),
        );
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            this.leader.clone(),
        );
        this
    }
}

/// How a reconcile ended, in controller-runtime's terms (its `result` label and error counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerResult {
    /// Done; not due again until something changes (`success`).
    Success,
    /// Due again after a delay the reconcile chose (`requeue_after`).
    RequeueAfter,
    /// Failed (`error`); `terminal` when it is not retried (invalid input).
    Error {
        /// Not retried until something changes (controller-runtime's `TerminalError`).
        terminal: bool,
    },
}

/// One controller's series under controller-runtime's names: the handles of its label values,
/// created (at zero) when the controller is, as controller-runtime's `initMetrics` does. Cheap
/// to clone.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    name: String,
    success: Counter,
    requeue_after: Counter,
    error: Counter,
    errors: Counter,
    terminal_errors: Counter,
    panics: Counter,
    timeouts: Counter,
    time: Histogram,
    max_concurrent: Gauge,
    active_workers: Gauge,
    queue: QueueMetrics,
}

impl ControllerMetrics {
    /// The controller's name (the `controller` label).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Records one reconcile that took `seconds`.
    pub fn reconciled(&self, result: ControllerResult, seconds: f64) {
        match result {
            ControllerResult::Success => self.success.inc(),
            ControllerResult::RequeueAfter => self.requeue_after.inc(),
            ControllerResult::Error { terminal } => {
                self.errors.inc();
                if terminal {
                    self.terminal_errors.inc();
                }
                self.error.inc()
            }
        };
        self.time.observe(seconds);
    }

    /// The author's code panicked (counted besides the error it is).
    pub fn panicked(&self) {
        self.panics.inc();
    }

    /// The author's code ran past the reconcile timeout (counted besides the error it is).
    pub fn timed_out(&self) {
        self.timeouts.inc();
    }

    /// How many reconciles may run at once.
    pub fn set_max_concurrent(&self, max: usize) {
        self.max_concurrent
            .set(i64::try_from(max).unwrap_or(i64::MAX));
    }

    /// A worker took a key.
    pub fn worker_started(&self) {
        self.active_workers.inc();
    }

    /// A worker finished its key.
    pub fn worker_finished(&self) {
        self.active_workers.dec();
    }

    /// The series of the controller's work queue.
    pub fn queue(&self) -> &QueueMetrics {
        &self.queue
    }
}

/// A work queue's series under client-go's names, as controller-runtime registers them. Cheap to
/// clone.
#[derive(Clone, Debug)]
pub struct QueueMetrics {
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    latency: Histogram,
    work: Histogram,
    unfinished: Gauge<f64, AtomicU64>,
    longest: Gauge<f64, AtomicU64>,
}

impl QueueMetrics {
    /// A key became due (client-go's `add`: not counted again while it waits).
    pub fn added(&self) {
        self.adds.inc();
    }

    /// A key was put back with a delay (client-go's `retry`).
    pub fn retried(&self) {
        self.retries.inc();
    }

    /// A key was handed out after waiting `seconds` since it became due.
    pub fn handed_out(&self, waited_seconds: f64) {
        self.latency.observe(waited_seconds);
    }

    /// A key's processing took `seconds`.
    pub fn worked(&self, seconds: f64) {
        self.work.observe(seconds);
    }

    /// Keys due and waiting for a worker.
    pub fn set_depth(&self, depth: usize) {
        self.depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// The running keys' time so far: their sum and the longest.
    pub fn set_running(&self, total_seconds: f64, longest_seconds: f64) {
        self.unfinished.set(total_seconds);
        self.longest.set(longest_seconds);
    }
}

/// The metrics, shared by every part of the runtime. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    durations: Family<ModeLabels, Histogram, fn() -> Histogram>,
    queue_depth: Family<ModeLabels, Gauge>,
    objects: Family<ModeLabels, Gauge>,
    leader: Family<ModeLabels, Gauge>,
    controller_runtime: ControllerRuntime,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric: the runtime's own prefixed `service_provider_`, and
    /// controller-runtime's under their names.
    pub fn new() -> Self {
        let mut root = Registry::default();
        let controller_runtime = ControllerRuntime::register(&mut root);
        let registry = root.sub_registry_with_prefix("service_provider");
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles of Service API objects, by mode and result",
            reconciles.clone(),
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Failed reconciles, by mode and kind",
            errors.clone(),
        );
        let durations: Family<ModeLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        registry.register(
            "reconcile_duration_seconds",
            "Duration of reconciles, by mode",
            durations.clone(),
        );
        let queue_depth = Family::<ModeLabels, Gauge>::default();
        registry.register(
            "queue_depth",
            "Objects waiting to be reconciled now or later, by mode",
            queue_depth.clone(),
        );
        let objects = Family::<ModeLabels, Gauge>::default();
        registry.register(
            "objects",
            "Service API objects known to the runtime, by mode",
            objects.clone(),
        );
        let leader = Family::<ModeLabels, Gauge>::default();
        registry.register(
            "leader",
            "1 while this replica reconciles the mode, 0 while it stands by",
            leader.clone(),
        );
        Metrics {
            registry: Arc::new(root),
            reconciles,
            errors,
            durations,
            queue_depth,
            objects,
            leader,
            controller_runtime,
        }
    }

    /// The series of controller `name` (controller-runtime's `controller` label, and its work
    /// queue's name), every one created at zero.
    pub fn controller(&self, name: &str) -> ControllerMetrics {
        let cr = &self.controller_runtime;
        let labels = ControllerLabels {
            controller: name.to_owned(),
        };
        let total = |result| {
            cr.reconcile_total
                .get_or_create(&ControllerResultLabels {
                    controller: name.to_owned(),
                    result,
                })
                .clone()
        };
        // controller-runtime's `requeue` (a result with `Requeue: true` and no error) has no
        // counterpart here, but its series exists at zero as in a Go provider's /metrics.
        let _ = total("requeue");
        let queue = QueueLabels {
            name: name.to_owned(),
            controller: name.to_owned(),
        };
        ControllerMetrics {
            name: name.to_owned(),
            success: total("success"),
            requeue_after: total("requeue_after"),
            error: total("error"),
            errors: cr.reconcile_errors.get_or_create(&labels).clone(),
            terminal_errors: cr.terminal_errors.get_or_create(&labels).clone(),
            panics: cr.panics.get_or_create(&labels).clone(),
            timeouts: cr.timeouts.get_or_create(&labels).clone(),
            time: cr.reconcile_time.get_or_create(&labels).clone(),
            max_concurrent: cr.max_concurrent.get_or_create(&labels).clone(),
            active_workers: cr.active_workers.get_or_create(&labels).clone(),
            queue: QueueMetrics {
                depth: cr
                    .queue_depth
                    .get_or_create(&QueueDepthLabels {
                        name: name.to_owned(),
                        controller: name.to_owned(),
                        priority: "",
                    })
                    .clone(),
                adds: cr.queue_adds.get_or_create(&queue).clone(),
                retries: cr.queue_retries.get_or_create(&queue).clone(),
                latency: cr.queue_latency.get_or_create(&queue).clone(),
                work: cr.queue_work.get_or_create(&queue).clone(),
                unfinished: cr.queue_unfinished.get_or_create(&queue).clone(),
                longest: cr.queue_longest.get_or_create(&queue).clone(),
            },
        }
    }

    /// Records whether this replica holds Lease `lease` (`leader_election_master_status`).
    pub fn set_lease_held(&self, lease: &str, held: bool) {
        self.controller_runtime
            .leader
            .get_or_create(&LeaseLabels {
                name: lease.to_owned(),
            })
            .set(i64::from(held));
    }

    /// Records one reconcile.
    pub fn reconciled(&self, mode: Mode, result: ReconcileResult, seconds: f64) {
        let mode = ModeLabel::from(mode);
        self.reconciles
            .get_or_create(&ResultLabels { mode, result })
            .inc();
        self.durations
            .get_or_create(&ModeLabels { mode })
            .observe(seconds);
        let kind = match result {
            ReconcileResult::error => Some(ErrorKind::transient),
            ReconcileResult::invalid => Some(ErrorKind::invalid_input),
            ReconcileResult::panic => Some(ErrorKind::panic),
            ReconcileResult::timeout => Some(ErrorKind::timeout),
            _ => None,
        };
        if let Some(kind) = kind {
            self.errors.get_or_create(&ErrorLabels { mode, kind }).inc();
        }
    }

    /// Sets the queue depth and object count of a mode.
    pub fn set_queue(&self, mode: Mode, depth: usize, objects: usize) {
        let labels = ModeLabels { mode: mode.into() };
        self.queue_depth
            .get_or_create(&labels)
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
        self.objects
            .get_or_create(&labels)
            .set(i64::try_from(objects).unwrap_or(i64::MAX));
    }

    /// Records whether this replica leads a mode.
    pub fn set_leader(&self, mode: Mode, leader: bool) {
        self.leader
            .get_or_create(&ModeLabels { mode: mode.into() })
            .set(i64::from(leader));
    }

    /// How many reconciles of `mode` ended with `result`.
    pub fn reconcile_count(&self, mode: Mode, result: ReconcileResult) -> u64 {
        self.reconciles
            .get_or_create(&ResultLabels {
                mode: mode.into(),
                result,
            })
            .get()
    }

    /// The metrics in the Prometheus text format, with bucket bounds written as Go's client writes
    /// them (`le="60"`, not `le="60.0"`), so queries and alerts that match a Go provider's bucket
    /// label match ours.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        go_bucket_bounds(&out)
    }
}

/// `text` with every `le="…"` label value rewritten in Go's float format.
fn go_bucket_bounds(text: &str) -> String {
    const LE: &str = "le=\"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(LE) {
        let value_start = start + LE.len();
        let Some(len) = rest[value_start..].find('"') else {
            break;
        };
        out.push_str(&rest[..value_start]);
        let value = &rest[value_start..value_start + len];
        // The label `le`, not a name ending in `le` (`{` or `,` before it).
        let is_label = matches!(rest[..start].chars().next_back(), Some('{' | ','));
        match value.parse::<f64>() {
            Ok(bound) if is_label && bound.is_finite() => out.push_str(&go_float(bound)),
            _ => out.push_str(value),
        }
        rest = &rest[value_start + len..];
    }
    out.push_str(rest);
    out
}

/// `v` as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it, which client_golang's text
/// format uses for bucket bounds: the shortest digits that read back as `v`, in decimal notation
/// unless the exponent is below -4 or at least 6 (then `1e-08`, `1e+06`: a sign and at least two
/// exponent digits).
fn go_float(v: f64) -> String {
    // Rust's `{:e}` gives the same shortest digits (`1e-8`, `1.25e0`); only the layout differs.
    let scientific = format!("{v:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` of a finite float has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    if (-4..6).contains(&exponent) {
        format!("{v}")
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_bounded_series() {
        let m = Metrics::new();
        m.reconciled(Mode::Standard, ReconcileResult::ready, 0.01);
        m.reconciled(Mode::Standard, ReconcileResult::error, 0.02);
        m.reconciled(Mode::Kcp, ReconcileResult::panic, 0.02);
        m.set_queue(Mode::Standard, 3, 10);
        m.set_leader(Mode::Standard, true);
        let text = m.encode();
        for expected in [
            r#"service_provider_reconciles_total{mode="standard",result="ready"} 1"#,
            r#"service_provider_reconcile_errors_total{mode="standard",kind="transient"} 1"#,
            r#"service_provider_reconcile_errors_total{mode="kcp",kind="panic"} 1"#,
            r#"service_provider_queue_depth{mode="standard"} 3"#,
            r#"service_provider_leader{mode="standard"} 1"#,
            "service_provider_reconcile_duration_seconds_bucket",
        ] {
            assert!(text.contains(expected), "{expected} missing in\n{text}");
        }
        assert_eq!(m.reconcile_count(Mode::Standard, ReconcileResult::ready), 1);
    }

    #[test]
    fn controller_runtimes_names_labels_and_buckets() {
        let m = Metrics::new();
        let c = m.controller("velero");
        c.set_max_concurrent(16);
        c.reconciled(ControllerResult::Success, 0.003);
        c.reconciled(ControllerResult::RequeueAfter, 0.2);
        c.reconciled(ControllerResult::Error { terminal: true }, 0.2);
        c.panicked();
        c.queue().added();
        c.queue().set_depth(2);
        m.set_lease_held("velero-standard", true);
        m.reconciled(Mode::Standard, ReconcileResult::ready, 0.003);
        let text = m.encode();
        for expected in [
            r#"controller_runtime_reconcile_total{controller="velero",result="success"} 1"#,
            r#"controller_runtime_reconcile_total{controller="velero",result="requeue_after"} 1"#,
            r#"controller_runtime_reconcile_total{controller="velero",result="error"} 1"#,
            r#"controller_runtime_reconcile_total{controller="velero",result="requeue"} 0"#,
            r#"controller_runtime_reconcile_errors_total{controller="velero"} 1"#,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="velero"} 1"#,
            r#"controller_runtime_reconcile_panics_total{controller="velero"} 1"#,
            r#"controller_runtime_reconcile_timeouts_total{controller="velero"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="velero"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="60",controller="velero"} 3"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="+Inf",controller="velero"} 3"#,
            r#"workqueue_queue_duration_seconds_bucket{le="1e-08",name="velero",controller="velero"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="velero"} 3"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="velero"} 16"#,
            r#"controller_runtime_active_workers{controller="velero"} 0"#,
            r#"workqueue_depth{name="velero",controller="velero",priority=""} 2"#,
            r#"workqueue_adds_total{name="velero",controller="velero"} 1"#,
            r#"workqueue_retries_total{name="velero",controller="velero"} 0"#,
            r#"workqueue_queue_duration_seconds_count{name="velero",controller="velero"} 0"#,
            r#"workqueue_work_duration_seconds_count{name="velero",controller="velero"} 0"#,
            r#"workqueue_unfinished_work_seconds{name="velero",controller="velero"} 0"#,
            r#"workqueue_longest_running_processor_seconds{name="velero",controller="velero"} 0"#,
            r#"leader_election_master_status{name="velero-standard"} 1"#,
            // The runtime's own names stay.
            r#"service_provider_reconciles_total{mode="standard",result="ready"} 1"#,
        ] {
            assert!(text.contains(expected), "{expected} missing in\n{text}");
        }
        assert_eq!(
            text.matches("controller_runtime_reconcile_time_seconds_bucket{")
                .count(),
            RECONCILE_TIME_BUCKETS.len() + 1,
            "controller-runtime's 40 buckets and +Inf"
        );
    }

    #[test]
    fn bucket_bounds_are_written_as_go_writes_them() {
        // strconv.FormatFloat(v, 'g', -1, 64) for each.
        for (bound, go) in [
            (60.0, "60"),
            (0.005, "0.005"),
            (1.25, "1.25"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e-8, "1e-08"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1.5e-10, "1.5e-10"),
        ] {
            assert_eq!(go_float(bound), go, "{bound}");
        }
        let text =
            "a_bucket{x=\"y\",le=\"60.0\"} 1\na_bucket{le=\"+Inf\",x=\"y\"} 2\nsale=\"1.0\"\n";
        assert_eq!(
            go_bucket_bounds(text),
            "a_bucket{x=\"y\",le=\"60\"} 1\na_bucket{le=\"+Inf\",x=\"y\"} 2\nsale=\"1.0\"\n"
        );
    }
}
