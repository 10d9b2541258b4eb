//! The reconcile core shared by every mode: a pool of workers that run the reconcile algorithm on
//! the mode's work queue ([`crate::queue`]) while this replica leads the mode.

pub(crate) mod finalizer;
pub(crate) mod plan;
pub mod reconciler;
pub mod source;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::ops::metrics::Metrics;
use crate::platform::Platform;
use crate::queue::{BackoffPolicy, Queue, Requeue};
use crate::reconcile::Reconcile;
use crate::tenant::{Identity, Mode};

pub use reconciler::{Options, Reconciler};
pub use source::{Refusal, Source};

/// The name of a mode's controller: its `controller` label in controller-runtime's metrics and
/// its work queue's name. Standard mode's is the provider's name, as the Go runtime names its
/// controller (`Named(providerName)` in opencontrolplane-runtime's `SetupWithManager`), so a Go
/// provider's dashboards find it; kcp mode's is `<provider-name>-kcp`.
pub fn controller_name(provider_name: &str, mode: Mode) -> String {
    match mode {
        Mode::Standard => provider_name.to_owned(),
        Mode::Kcp => format!("{provider_name}-kcp"),
    }
}

/// Runs one mode: takes keys from its queue and reconciles them, at most `concurrency` at a
/// time, while this replica leads the mode.
pub struct Controller<P: Reconcile, S: Source<P>> {
    reconciler: Arc<Reconciler<P, S>>,
    platform: Arc<Platform<P>>,
    queue: Queue<Identity>,
    metrics: Metrics,
    concurrency: usize,
    /// The Lease this mode is elected by, when leader election is on.
    lease: Option<String>,
}

impl<P: Reconcile, S: Source<P>> Controller<P, S> {
    /// A controller for `source`'s objects; registers its queue with the platform's triggers.
    pub fn new(
        source: Arc<S>,
        platform: Arc<Platform<P>>,
        metrics: Metrics,
        options: Options,
        concurrency: usize,
    ) -> Self {
        let concurrency = concurrency.max(1);
        let reconciler = Arc::new(Reconciler::new(
            source.clone(),
            platform.clone(),
            metrics.clone(),
            options,
        ));
        let controller_metrics = reconciler.controller_metrics();
        controller_metrics.set_max_concurrent(concurrency);
        let queue =
            Queue::new(BackoffPolicy::default()).with_metrics(controller_metrics.queue().clone());
        let keys_source = source.clone();
        platform
            .triggers()
            .register(source.mode(), queue.clone(), move || keys_source.keys());
        Controller {
            reconciler,
            platform,
            queue,
            metrics,
            concurrency,
            lease: None,
        }
    }

    /// Reports `leader_election_master_status` for `lease`, the Lease this mode is elected by
    /// (only with leader election on, as a Go provider reports it only then).
    pub fn set_lease(&mut self, lease: impl Into<String>) {
        self.lease = Some(lease.into());
    }

    /// The mode's queue (sources trigger keys on it).
    pub fn queue(&self) -> &Queue<Identity> {
        &self.queue
    }

    /// The reconciler.
    pub fn reconciler(&self) -> &Arc<Reconciler<P, S>> {
        &self.reconciler
    }

    /// Reconciles until `shutdown`, while `leader` says this replica leads. On shutdown no new
    /// reconcile starts and the running ones finish.
    pub async fn run(self, mut leader: watch::Receiver<bool>, shutdown: CancellationToken) {
        let mode = self.reconciler.source().mode();
        let permits = Arc::new(Semaphore::new(self.concurrency));
        let mut running = JoinSet::new();
        let gauges = tokio::spawn({
            let queue = self.queue.clone();
            let metrics = self.metrics.clone();
            let source = self.reconciler.source().clone();
            async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tick.tick().await;
                    metrics.set_queue(mode, queue.depth(), source.len());
                    queue.report();
                }
            }
        });
        let mut leading = false;
        if let Some(lease) = &self.lease {
            self.metrics.set_lease_held(lease, false);
        }
        'outer: loop {
            let is_leader = *leader.borrow_and_update();
            if is_leader != leading {
                leading = is_leader;
                self.metrics.set_leader(mode, leading);
                if let Some(lease) = &self.lease {
                    self.metrics.set_lease_held(lease, leading);
                }
                self.platform.set_leader(mode, leading);
                if leading {
                    tracing::info!(mode = mode.as_str(), "leading: reconciling every object");
                    for id in self.reconciler.source().keys() {
                        self.queue.trigger(id);
                    }
                } else {
                    tracing::info!(mode = mode.as_str(), "standing by: another replica leads");
                }
            }
            if !leading {
                tokio::select! {
                    changed = leader.changed() => {
                        if changed.is_err() { break 'outer; }
                        continue 'outer;
                    }
                    _ = shutdown.cancelled() => break 'outer,
                }
            }
            let permit = tokio::select! {
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break 'outer,
                },
                _ = shutdown.cancelled() => break 'outer,
                changed = leader.changed() => {
                    if changed.is_err() { break 'outer; }
                    continue 'outer;
                }
            };
            let key = tokio::select! {
                key = self.queue.next() => match key {
                    Some(key) => key,
                    None => break 'outer,
                },
                _ = shutdown.cancelled() => break 'outer,
                changed = leader.changed() => {
                    if changed.is_err() { break 'outer; }
                    continue 'outer;
                }
            };
            let reconciler = self.reconciler.clone();
            let queue = self.queue.clone();
            let workers = reconciler.controller_metrics().clone();
            workers.worker_started();
            running.spawn(async move {
                // A panic here would be a bug in the runtime itself (the author's code is
                // guarded inside); it must still not leave the key marked as running forever.
                let requeue = AssertUnwindSafe(reconciler.reconcile(&key))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        tracing::error!(object = %key, "the reconcile panicked in the runtime; retrying with backoff");
                        Requeue::Backoff
                    });
                queue.done(&key, requeue);
                workers.worker_finished();
                drop(permit);
            });
            while running.try_join_next().is_some() {}
        }
        self.queue.shutdown();
        if !running.is_empty() {
            tracing::info!(
                mode = mode.as_str(),
                running = running.len(),
                "waiting for running reconciles to finish"
            );
        }
        while running.join_next().await.is_some() {}
        gauges.abort();
        self.metrics.set_leader(mode, false);
        if let Some(lease) = &self.lease {
            self.metrics.set_lease_held(lease, false);
        }
    }
}
