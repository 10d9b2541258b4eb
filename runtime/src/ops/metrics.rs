//! The provider's Prometheus metrics: reconciles, errors, durations and queue depth per mode.
//!
//! Every label has a fixed, small set of values (mode, result, error kind), never an object name,
//! namespace or logical cluster: the series count does not grow with the number of tenants.

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::context::Mode;

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
    /// A fresh registry with every metric, names prefixed `service_provider_`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("service_provider");
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
            registry: Arc::new(registry),
            reconciles,
            errors,
            durations,
            queue_depth,
            objects,
            leader,
        }
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

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
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
}
