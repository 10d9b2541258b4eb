//! The simulated operator's work queue: keys deduplicated while waiting, never handled twice at
//! once (a key enqueued while it is being handled runs again afterwards), delayed requeues, and
//! per-key exponential backoff after failures.
//!
//! Written here rather than taken from kube-runtime's `Controller` because one queue serves
//! several kinds on two clusters, and any watch event may wake any key (a granted ClusterRequest
//! wakes the AccessRequests waiting on it); the `Controller` ties a queue to one kind.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What handling a key asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing: wait for the next event.
    Done,
    /// Handle the key again after this long.
    After(Duration),
}

/// First retry delay after a failure; doubles per consecutive failure up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(5);
/// Longest retry delay (the simulation never waits minutes: tests would time out first).
const MAX_BACKOFF: Duration = Duration::from_secs(2);

struct State<K> {
    ready: VecDeque<K>,
    queued: HashSet<K>,
    running: HashSet<K>,
    /// Keys enqueued while running: handled again once the running pass ends.
    dirty: HashSet<K>,
    /// The earliest pending delayed requeue per key (later ones are dropped).
    delayed: HashMap<K, Instant>,
    failures: HashMap<K, u32>,
}

/// A work queue of keys `K`.
pub(crate) struct WorkQueue<K> {
    state: Mutex<State<K>>,
    notify: Notify,
}

impl<K: Clone + Eq + Hash + Send + Sync + std::fmt::Debug + 'static> WorkQueue<K> {
    /// An empty queue.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                ready: VecDeque::new(),
                queued: HashSet::new(),
                running: HashSet::new(),
                dirty: HashSet::new(),
                delayed: HashMap::new(),
                failures: HashMap::new(),
            }),
            notify: Notify::new(),
        })
    }

    /// Handles `key` as soon as a worker is free.
    pub(crate) fn enqueue(&self, key: K) {
        let mut s = self.state.lock();
        if s.running.contains(&key) {
            s.dirty.insert(key);
            return;
        }
        if s.queued.insert(key.clone()) {
            s.ready.push_back(key);
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Handles `key` after `delay` (unless an earlier requeue of it is already pending).
    pub(crate) fn enqueue_after(self: &Arc<Self>, key: K, delay: Duration) {
        let at = Instant::now() + delay;
        {
            let mut s = self.state.lock();
            match s.delayed.get(&key) {
                Some(existing) if *existing <= at => return,
                _ => {
                    s.delayed.insert(key.clone(), at);
                }
            }
        }
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let Some(queue) = queue.upgrade() else { return };
            let due = {
                let mut s = queue.state.lock();
                // Only the timer that set the current deadline fires; replaced ones do nothing.
                if s.delayed.get(&key) == Some(&at) {
                    s.delayed.remove(&key);
                    true
                } else {
                    false
                }
            };
            if due {
                queue.enqueue(key);
            }
        });
    }

    fn take(&self) -> Option<K> {
        let mut s = self.state.lock();
        let key = s.ready.pop_front()?;
        s.queued.remove(&key);
        s.running.insert(key.clone());
        Some(key)
    }

    fn finish(self: &Arc<Self>, key: K, outcome: Result<Next, ()>) {
        let (rerun, retry) = {
            let mut s = self.state.lock();
            s.running.remove(&key);
            let rerun = s.dirty.remove(&key);
            let retry = match outcome {
                Ok(_) => {
                    s.failures.remove(&key);
                    None
                }
                Err(()) => {
                    let n = s.failures.entry(key.clone()).or_insert(0);
                    *n = n.saturating_add(1);
                    let delay = MIN_BACKOFF
                        .saturating_mul(1u32 << (*n - 1).min(16))
                        .min(MAX_BACKOFF);
                    Some(delay)
                }
            };
            (rerun, retry)
        };
        if rerun {
            self.enqueue(key.clone());
        }
        match (outcome, retry) {
            (_, Some(delay)) => self.enqueue_after(key, delay),
            (Ok(Next::After(delay)), None) => self.enqueue_after(key, delay),
            _ => {}
        }
    }

    /// Runs `workers` tasks handling keys with `handle` until `stop` is cancelled. A handler
    /// error is retried with backoff; a panic in a handler is caught and retried the same way.
    pub(crate) fn run<F, Fut>(self: &Arc<Self>, workers: usize, stop: CancellationToken, handle: F)
    where
        F: Fn(K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Next, ()>> + Send + 'static,
    {
        let handle = Arc::new(handle);
        for _ in 0..workers.max(1) {
            let queue = self.clone();
            let stop = stop.clone();
            let handle = handle.clone();
            tokio::spawn(async move {
                loop {
                    let key = loop {
                        // Register interest before looking, so an enqueue between the look and
                        // the wait is not missed.
                        let notified = queue.notify.notified();
                        if let Some(k) = queue.take() {
                            break Some(k);
                        }
                        tokio::select! {
                            _ = stop.cancelled() => break None,
                            _ = notified => {}
                        }
                    };
                    let Some(key) = key else { return };
                    let fut = handle(key.clone());
                    let outcome = match tokio::spawn(fut).await {
                        Ok(r) => r,
                        Err(e) => {
                            tracing::error!(?key, "simulated operator: handler panicked: {e}");
                            Err(())
                        }
                    };
                    queue.finish(key, outcome);
                    // Other workers may be parked while several keys wait.
                    if !queue.state.lock().ready.is_empty() {
                        queue.notify.notify_one();
                    }
                }
            });
        }
    }

    /// How many keys wait or run.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        let s = self.state.lock();
        s.ready.len() + s.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    async fn until(cond: impl Fn() -> bool) {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !cond() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("condition within 5s");
    }

    #[tokio::test]
    async fn a_key_enqueued_while_running_runs_again_and_never_concurrently() {
        let q = WorkQueue::<u32>::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let concurrent = Arc::new(AtomicUsize::new(0));
        let max_concurrent = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let stop = CancellationToken::new();
        {
            let (runs, concurrent, max_concurrent, gate) = (
                runs.clone(),
                concurrent.clone(),
                max_concurrent.clone(),
                gate.clone(),
            );
            q.run(4, stop.clone(), move |_k| {
                let (runs, concurrent, max_concurrent, gate) = (
                    runs.clone(),
                    concurrent.clone(),
                    max_concurrent.clone(),
                    gate.clone(),
                );
                async move {
                    let now = concurrent.fetch_add(1, Ordering::SeqCst) + 1;
                    max_concurrent.fetch_max(now, Ordering::SeqCst);
                    let _permit = gate.acquire().await.map_err(|_| ())?;
                    concurrent.fetch_sub(1, Ordering::SeqCst);
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(Next::Done)
                }
            });
        }
        q.enqueue(7);
        until(|| concurrent.load(Ordering::SeqCst) == 1).await;
        // Enqueued twice while running: one more run, not two, and never in parallel.
        q.enqueue(7);
        q.enqueue(7);
        gate.add_permits(10);
        until(|| runs.load(Ordering::SeqCst) == 2 && q.pending() == 0).await;
        assert_eq!(max_concurrent.load(Ordering::SeqCst), 1);
        stop.cancel();
    }

    #[tokio::test]
    async fn failures_are_retried_and_delayed_requeues_fire() {
        let q = WorkQueue::<&'static str>::new();
        let attempts = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        {
            let attempts = attempts.clone();
            q.run(2, stop.clone(), move |k| {
                let attempts = attempts.clone();
                async move {
                    let n = attempts.fetch_add(1, Ordering::SeqCst);
                    match (k, n) {
                        ("flaky", 0 | 1) => Err(()),
                        ("flaky", 2) => Ok(Next::After(Duration::from_millis(10))),
                        _ => Ok(Next::Done),
                    }
                }
            });
        }
        q.enqueue("flaky");
        // Two failures, a success asking for a requeue, and the requeue itself.
        until(|| attempts.load(Ordering::SeqCst) == 4).await;
        stop.cancel();
    }
}
