//! The work queue: which keys are due for a reconcile, when, and how often they may fail; and the
//! [`Triggers`] through which watches put keys into the queue of their mode.
//!
//! Written here rather than taken from kube-runtime because kube-runtime's scheduler keys work by
//! `ObjectRef` (namespace and name), which cannot tell apart two objects of the same name in two
//! kcp workspaces; this queue takes any key, in practice an [`Identity`].
//!
//! Guarantees:
//! - a key is queued at most once (triggers while it waits are merged);
//! - a key is never handed out twice at once: a trigger that arrives while it is being reconciled
//!   marks it dirty, and it is handed out again as soon as the running reconcile finishes;
//! - delayed requeues keep the earliest deadline per key;
//! - transient failures back off per key, exponentially from [`BackoffPolicy::initial`] to
//!   [`BackoffPolicy::max`], and a success resets the key's backoff;
//! - after [`Queue::shutdown`] no key is handed out any more; running reconciles finish.
//!
//! With [`Queue::with_metrics`] it reports client-go's work queue metrics as controller-runtime
//! registers them: a key counts as added when it becomes due (at once, or when its delay ran out)
//! and is not due already; a delayed put-back counts as a retry; depth is the keys due and
//! waiting; queue duration runs from due to handed out, work duration from handed out to done.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::ops::metrics::QueueMetrics;
use crate::tenant::{Identity, Mode};

/// How per-key backoff grows after consecutive transient failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// Delay after the first failure.
    pub initial: Duration,
    /// The delay never grows beyond this.
    pub max: Duration,
}

impl Default for BackoffPolicy {
    /// 5 ms doubling to 5 min, like client-go's per-item limiter (which stops at 1000 s).
    fn default() -> Self {
        BackoffPolicy {
            initial: Duration::from_millis(5),
            max: Duration::from_secs(300),
        }
    }
}

impl BackoffPolicy {
    /// The delay after `failures` consecutive failures (`failures >= 1`).
    pub fn delay(&self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(31);
        self.initial
            .checked_mul(1u32 << exp)
            .map_or(self.max, |d| d.min(self.max))
    }
}

/// What to do with a key after its reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Nothing until something triggers it again.
    Never,
    /// Again after this delay; resets the key's backoff.
    After(Duration),
    /// A transient failure: again after the key's next backoff delay.
    Backoff,
}

/// Collections with room for more than this many keys are shrunk once they are mostly empty.
const SHRINK_ABOVE: usize = 1024;

struct State<K> {
    /// Keys ready to be handed out, in arrival order.
    ready: VecDeque<K>,
    /// Keys in `ready`.
    queued: HashSet<K>,
    /// Keys handed out and not yet done.
    running: HashSet<K>,
    /// Running keys that were triggered again meanwhile.
    dirty: HashSet<K>,
    /// Delayed keys by deadline; `seq` keeps entries with equal deadlines apart.
    delayed: BTreeSet<(Instant, u64, K)>,
    /// The deadline of each delayed key.
    deadline: HashMap<K, (Instant, u64)>,
    /// Consecutive failures per key.
    failures: HashMap<K, u32>,
    seq: u64,
    shut_down: bool,
    /// Where to report, if anywhere; the two maps below are kept only then.
    metrics: Option<QueueMetrics>,
    /// When each key due and waiting (queued, or dirty while running) became due.
    due_since: HashMap<K, Instant>,
    /// When each running key was handed out.
    running_since: HashMap<K, Instant>,
}

impl<K: Clone + Eq + Hash + Ord> State<K> {
    /// Makes `key` due (it has been since `since`). Counted as an add unless it was due already;
    /// a dirty key put back when its reconcile is done was counted when it became dirty.
    fn push_ready(&mut self, key: K, since: Instant) {
        let added = if self.running.contains(&key) {
            self.dirty.insert(key.clone())
        } else if self.queued.insert(key.clone()) {
            self.ready.push_back(key.clone());
            true
        } else {
            false
        };
        if let Some(metrics) = &self.metrics {
            self.due_since.entry(key).or_insert(since);
            if added {
                metrics.added();
            }
        }
    }

    /// Reports the depth: keys due and waiting for a worker.
    fn report_depth(&self) {
        if let Some(metrics) = &self.metrics {
            metrics.set_depth(self.queued.len() + self.dirty.len());
        }
    }

    fn cancel_delay(&mut self, key: &K) {
        if let Some((at, seq)) = self.deadline.remove(key) {
            self.delayed.remove(&(at, seq, key.clone()));
        }
    }

    /// Delays `key` until `at`, unless it is delayed until earlier already.
    fn schedule(&mut self, key: K, at: Instant) {
        if let Some((existing, _)) = self.deadline.get(&key)
            && *existing <= at
        {
            return;
        }
        self.reschedule(key, at);
    }

    /// Delays `key` until `at`, whatever its delay was.
    fn reschedule(&mut self, key: K, at: Instant) {
        self.cancel_delay(&key);
        self.seq += 1;
        self.deadline.insert(key.clone(), (at, self.seq));
        self.delayed.insert((at, self.seq, key));
    }

    /// Gives back the room a burst left in the collections that drain (ready, running, dirty,
    /// failures): with ten thousand keys triggered at once that is megabytes held for nothing
    /// once the burst is over. Only a collection far larger than its contents is shrunk, so a
    /// steady load does not reallocate.
    fn shrink(&mut self) {
        fn oversized(len: usize, capacity: usize) -> bool {
            capacity > SHRINK_ABOVE && len < capacity / 8
        }
        if oversized(self.ready.len(), self.ready.capacity()) {
            self.ready.shrink_to(self.ready.len() * 2);
        }
        if oversized(self.queued.len(), self.queued.capacity()) {
            self.queued.shrink_to(self.queued.len() * 2);
        }
        if oversized(self.running.len(), self.running.capacity()) {
            self.running.shrink_to(self.running.len() * 2);
        }
        if oversized(self.dirty.len(), self.dirty.capacity()) {
            self.dirty.shrink_to(self.dirty.len() * 2);
        }
        if oversized(self.failures.len(), self.failures.capacity()) {
            self.failures.shrink_to(self.failures.len() * 2);
        }
        if oversized(self.due_since.len(), self.due_since.capacity()) {
            self.due_since.shrink_to(self.due_since.len() * 2);
        }
        if oversized(self.running_since.len(), self.running_since.capacity()) {
            self.running_since.shrink_to(self.running_since.len() * 2);
        }
    }

    /// Moves every delayed key whose deadline passed into `ready`; returns the next deadline.
    fn promote(&mut self, now: Instant) -> Option<Instant> {
        while let Some((at, seq, key)) = self.delayed.first().cloned() {
            if at > now {
                return Some(at);
            }
            self.delayed.remove(&(at, seq, key.clone()));
            self.deadline.remove(&key);
            // Due since its deadline, not since a worker came to look.
            self.push_ready(key, at);
        }
        None
    }
}

/// A deduplicating, delaying work queue with per-key backoff. Cheap to clone.
pub struct Queue<K> {
    state: Arc<Mutex<State<K>>>,
    notify: Arc<Notify>,
    backoff: BackoffPolicy,
}

impl<K> Clone for Queue<K> {
    fn clone(&self) -> Self {
        Queue {
            state: self.state.clone(),
            notify: self.notify.clone(),
            backoff: self.backoff,
        }
    }
}

impl<K: Clone + Eq + Hash + Ord + Send + 'static> Queue<K> {
    /// An empty queue.
    pub fn new(backoff: BackoffPolicy) -> Self {
        Queue {
            state: Arc::new(Mutex::new(State {
                ready: VecDeque::new(),
                queued: HashSet::new(),
                running: HashSet::new(),
                dirty: HashSet::new(),
                delayed: BTreeSet::new(),
                deadline: HashMap::new(),
                failures: HashMap::new(),
                seq: 0,
                shut_down: false,
                metrics: None,
                due_since: HashMap::new(),
                running_since: HashMap::new(),
            })),
            notify: Arc::new(Notify::new()),
            backoff,
        }
    }

    /// Reports to `metrics` from now on (see the module documentation).
    pub fn with_metrics(self, metrics: QueueMetrics) -> Self {
        self.lock().metrics = Some(metrics);
        self
    }

    /// Brings the reported metrics up to date with the clock: keys whose delay ran out count as
    /// due although no worker looked yet (all busy), and the running keys' time so far
    /// (`workqueue_unfinished_work_seconds`, `..._longest_running_processor_seconds`). Called
    /// periodically, as client-go's queue does every 500 ms.
    pub fn report(&self) {
        let mut state = self.lock();
        if state.metrics.is_none() {
            return;
        }
        let now = Instant::now();
        state.promote(now);
        state.report_depth();
        let (total, longest) = state
            .running_since
            .values()
            .map(|since| now.saturating_duration_since(*since).as_secs_f64())
            .fold((0.0, 0.0_f64), |(total, longest), s| {
                (total + s, longest.max(s))
            });
        if let Some(metrics) = &state.metrics {
            metrics.set_running(total, longest);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // A panic while holding this lock can only come from a bug in this module; the state is
        // still consistent enough to keep serving, so do not propagate the poison.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reconcile `key` as soon as possible.
    pub fn trigger(&self, key: K) {
        {
            let mut state = self.lock();
            if state.shut_down {
                return;
            }
            state.push_ready(key, Instant::now());
            state.report_depth();
        }
        self.notify.notify_one();
    }

    /// Reconcile `key` after `delay`, unless it is already due earlier.
    pub fn trigger_after(&self, key: K, delay: Duration) {
        self.delay(key, delay, false);
    }

    /// Reconcile `key` after `delay`, replacing its pending delay whether that was earlier or
    /// later: for a deadline that moves, such as a token's refresh time. A key already due stays
    /// due.
    pub fn reschedule_after(&self, key: K, delay: Duration) {
        self.delay(key, delay, true);
    }

    fn delay(&self, key: K, delay: Duration, replace: bool) {
        if delay.is_zero() {
            if replace {
                self.lock().cancel_delay(&key);
            }
            return self.trigger(key);
        }
        {
            let mut state = self.lock();
            if state.shut_down {
                return;
            }
            let at = Instant::now() + delay;
            if replace {
                state.reschedule(key, at);
            } else {
                state.schedule(key, at);
            }
            if let Some(metrics) = &state.metrics {
                metrics.retried();
            }
        }
        self.notify.notify_one();
    }

    /// Waits for the next key that is due and not running, and marks it running. `None` once the
    /// queue is shut down.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Register interest before looking, so a trigger between the look and the wait is
            // not lost.
            notified.as_mut().enable();
            let next_deadline = {
                let mut state = self.lock();
                if state.shut_down {
                    return None;
                }
                let next_deadline = state.promote(Instant::now());
                if let Some(key) = state.ready.pop_front() {
                    state.queued.remove(&key);
                    // The reconcile decides when this key is due next.
                    state.cancel_delay(&key);
                    state.running.insert(key.clone());
                    if state.metrics.is_some() {
                        let now = Instant::now();
                        let since = state.due_since.remove(&key).unwrap_or(now);
                        state.running_since.insert(key.clone(), now);
                        if let Some(metrics) = &state.metrics {
                            metrics.handed_out(now.saturating_duration_since(since).as_secs_f64());
                        }
                        state.report_depth();
                    }
                    let more = !state.ready.is_empty();
                    drop(state);
                    if more {
                        // Another waiter may take the next key.
                        self.notify.notify_one();
                    }
                    return Some(key);
                }
                next_deadline
            };
            match next_deadline {
                Some(at) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Reports that the reconcile of `key` (handed out by [`next`](Self::next)) finished, and
    /// when it is due again. A key triggered while it ran is due again at once.
    pub fn done(&self, key: &K, requeue: Requeue) {
        {
            let mut state = self.lock();
            state.running.remove(key);
            if let Some(since) = state.running_since.remove(key)
                && let Some(metrics) = &state.metrics
            {
                metrics.worked(since.elapsed().as_secs_f64());
            }
            let delay = match requeue {
                Requeue::Never => {
                    state.failures.remove(key);
                    None
                }
                Requeue::After(delay) => {
                    state.failures.remove(key);
                    Some(delay)
                }
                Requeue::Backoff => {
                    let failures = state.failures.entry(key.clone()).or_insert(0);
                    *failures = failures.saturating_add(1);
                    let failures = *failures;
                    Some(self.backoff.delay(failures))
                }
            };
            if state.shut_down {
                return;
            }
            if let Some(metrics) = &state.metrics
                && delay.is_some_and(|d| !d.is_zero())
            {
                // controller-runtime puts the key back with AddAfter / AddRateLimited, a retry
                // whether or not the key is dirty meanwhile.
                metrics.retried();
            }
            if state.dirty.remove(key) {
                // Counted as an add, and due since, when it was triggered while it ran.
                if state.queued.insert(key.clone()) {
                    state.ready.push_back(key.clone());
                }
            } else if let Some(delay) = delay {
                let at = Instant::now() + delay;
                state.schedule(key.clone(), at);
            }
            state.report_depth();
            state.shrink();
        }
        self.notify.notify_one();
    }

    /// Drops everything known about `key` (its object is gone): pending work, delays, backoff.
    /// A running reconcile of it still reports [`done`](Self::done).
    pub fn forget(&self, key: &K) {
        let mut state = self.lock();
        state.cancel_delay(key);
        state.failures.remove(key);
        state.dirty.remove(key);
        state.due_since.remove(key);
        if state.queued.remove(key) {
            state.ready.retain(|k| k != key);
        }
        state.report_depth();
    }

    /// Consecutive transient failures of `key`.
    pub fn failures(&self, key: &K) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Keys waiting to be handed out now or later (not counting running ones).
    pub fn depth(&self) -> usize {
        let state = self.lock();
        state.queued.len() + state.deadline.len()
    }

    /// Keys being reconciled.
    pub fn running(&self) -> usize {
        self.lock().running.len()
    }

    /// Stops handing out keys; [`next`](Self::next) returns `None` from now on.
    pub fn shutdown(&self) {
        self.lock().shut_down = true;
        self.notify.notify_waiters();
        // `notify_waiters` does not store a permit; a waiter that registered but was not yet
        // polled would miss it, so leave one behind as well.
        self.notify.notify_one();
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.lock().shut_down
    }
}

type KeysFn = Arc<dyn Fn() -> Vec<Identity> + Send + Sync>;

struct Target {
    mode: Mode,
    queue: Queue<Identity>,
    keys: KeysFn,
}

/// Routes triggers to the queue of the mode an [`Identity`] belongs to. Cheap to clone.
#[derive(Clone, Default)]
pub struct Triggers {
    targets: Arc<RwLock<Vec<Target>>>,
}

impl std::fmt::Debug for Triggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Triggers").finish_non_exhaustive()
    }
}

impl Triggers {
    /// Routes keys of `mode` to `queue`; `keys` lists every object of the mode.
    pub fn register(
        &self,
        mode: Mode,
        queue: Queue<Identity>,
        keys: impl Fn() -> Vec<Identity> + Send + Sync + 'static,
    ) {
        self.targets
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Target {
                mode,
                queue,
                keys: Arc::new(keys),
            });
    }

    /// Reconcile `id` soon.
    pub fn trigger(&self, id: Identity) {
        let mode = id.mode();
        let targets = self.targets.read().unwrap_or_else(|e| e.into_inner());
        if let Some(target) = targets.iter().find(|t| t.mode == mode) {
            target.queue.trigger(id);
        }
    }

    /// Reconcile every object of every mode soon (the ProviderConfig changed); how many.
    pub fn trigger_all(&self) -> usize {
        let targets: Vec<(Queue<Identity>, KeysFn)> = self
            .targets
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|t| (t.queue.clone(), t.keys.clone()))
            .collect();
        let mut triggered = 0;
        for (queue, keys) in targets {
            for id in keys() {
                queue.trigger(id);
                triggered += 1;
            }
        }
        triggered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> Queue<String> {
        Queue::new(BackoffPolicy::default())
    }

    async fn next_now(q: &Queue<String>) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(1), q.next())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn deduplicates_triggers() {
        let q = queue();
        q.trigger("a".into());
        q.trigger("a".into());
        q.trigger("b".into());
        assert_eq!(q.depth(), 2);
        assert_eq!(next_now(&q).await.as_deref(), Some("a"));
        assert_eq!(next_now(&q).await.as_deref(), Some("b"));
        assert_eq!(next_now(&q).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn never_hands_out_a_running_key_and_reruns_it_when_triggered_meanwhile() {
        let q = queue();
        q.trigger("a".into());
        let a = next_now(&q).await.unwrap();
        q.trigger("a".into());
        assert_eq!(next_now(&q).await, None, "a is running");
        q.done(&a, Requeue::After(Duration::from_secs(60)));
        assert_eq!(
            next_now(&q).await.as_deref(),
            Some("a"),
            "dirty key runs again at once"
        );
        q.done(&a, Requeue::Never);
        assert_eq!(next_now(&q).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn delays_and_keeps_the_earliest_deadline() {
        let q = queue();
        q.trigger_after("a".into(), Duration::from_secs(10));
        q.trigger_after("a".into(), Duration::from_secs(30));
        assert_eq!(next_now(&q).await, None);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(next_now(&q).await, None);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(next_now(&q).await.as_deref(), Some("a"));
        q.done(&"a".into(), Requeue::Never);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(
            next_now(&q).await,
            None,
            "the later deadline was merged away"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reschedule_moves_a_delay_either_way_and_each_key_comes_once_when_due() {
        let q = queue();
        let start = Instant::now();
        q.trigger_after("b".into(), Duration::from_secs(20));
        q.trigger_after("a".into(), Duration::from_secs(10));
        q.trigger_after("c".into(), Duration::from_secs(30));
        q.forget(&"c".into());
        q.reschedule_after("b".into(), Duration::from_secs(5));
        q.trigger_after("d".into(), Duration::from_secs(1));
        q.reschedule_after("d".into(), Duration::from_secs(15));
        // Which key came, after how many seconds.
        let mut came = Vec::new();
        while let Ok(Some(key)) = tokio::time::timeout(Duration::from_secs(60), q.next()).await {
            q.done(&key, Requeue::Never);
            came.push((key, start.elapsed().as_secs()));
        }
        let came: Vec<(&str, u64)> = came.iter().map(|(k, s)| (k.as_str(), *s)).collect();
        assert_eq!(came, [("b", 5), ("a", 10), ("d", 15)]);
        assert_eq!(q.depth(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn next_waits_for_a_deadline() {
        let q = queue();
        q.trigger_after("a".into(), Duration::from_millis(500));
        let started = Instant::now();
        let key = q.next().await;
        assert_eq!(key.as_deref(), Some("a"));
        assert!(started.elapsed() >= Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn backs_off_exponentially_and_resets_on_success() {
        let q = queue();
        let a: String = "a".into();
        let mut delays = Vec::new();
        q.trigger(a.clone());
        for _ in 0..4 {
            let key = q.next().await.unwrap();
            q.done(&key, Requeue::Backoff);
            let before = Instant::now();
            let key = q.next().await.unwrap();
            delays.push(before.elapsed());
            q.done(&key, Requeue::Backoff);
            q.trigger(a.clone());
        }
        assert_eq!(q.failures(&a), 8);
        assert!(delays.windows(2).all(|w| w[1] > w[0]), "{delays:?}");
        let key = q.next().await.unwrap();
        q.done(&key, Requeue::After(Duration::from_secs(1)));
        assert_eq!(q.failures(&a), 0);
    }

    #[test]
    fn backoff_policy_caps() {
        let p = BackoffPolicy::default();
        assert_eq!(p.delay(1), Duration::from_millis(5));
        assert_eq!(p.delay(2), Duration::from_millis(10));
        assert_eq!(p.delay(10), Duration::from_millis(2560));
        assert_eq!(p.delay(40), Duration::from_secs(300));
        assert_eq!(p.delay(u32::MAX), Duration::from_secs(300));
    }

    #[tokio::test(start_paused = true)]
    async fn trigger_beats_a_pending_delay() {
        let q = queue();
        q.trigger_after("a".into(), Duration::from_secs(60));
        q.trigger("a".into());
        assert_eq!(next_now(&q).await.as_deref(), Some("a"));
        q.done(&"a".into(), Requeue::Never);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(
            next_now(&q).await,
            None,
            "running the key cancelled its delay"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forget_drops_pending_work() {
        let q = queue();
        q.trigger("a".into());
        q.trigger_after("b".into(), Duration::from_secs(1));
        q.forget(&"a".into());
        q.forget(&"b".into());
        assert_eq!(q.depth(), 0);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(next_now(&q).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_wakes_waiters_and_stops_handing_out() {
        let q = queue();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.next().await }
        });
        tokio::task::yield_now().await;
        q.shutdown();
        assert_eq!(waiter.await.unwrap(), None);
        q.trigger("a".into());
        assert_eq!(next_now(&q).await, None);
    }

    /// The value of the series `series` in `metrics`' text.
    fn sample(metrics: &crate::ops::Metrics, series: &str) -> f64 {
        let text = metrics.encode();
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{series} missing in\n{text}"))
            .parse()
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn reports_client_gos_work_queue_metrics() {
        let metrics = crate::ops::Metrics::new();
        let q = queue().with_metrics(metrics.controller("c").queue().clone());
        let labels = r#"{name="c",controller="c"}"#;
        let adds = format!("workqueue_adds_total{labels}");
        let retries = format!("workqueue_retries_total{labels}");
        let depth = r#"workqueue_depth{name="c",controller="c",priority=""}"#;
        let latency = format!("workqueue_queue_duration_seconds_count{labels}");
        let latency_sum = format!("workqueue_queue_duration_seconds_sum{labels}");
        let work = format!("workqueue_work_duration_seconds_count{labels}");
        let unfinished = format!("workqueue_unfinished_work_seconds{labels}");

        q.trigger("a".into());
        q.trigger("a".into());
        q.trigger("b".into());
        assert_eq!(
            sample(&metrics, &adds),
            2.0,
            "a trigger of a due key is no add"
        );
        assert_eq!(sample(&metrics, depth), 2.0);
        tokio::time::advance(Duration::from_secs(2)).await;
        let a = next_now(&q).await.unwrap();
        assert_eq!(sample(&metrics, depth), 1.0);
        assert_eq!(sample(&metrics, &latency), 1.0);
        assert!(
            sample(&metrics, &latency_sum) >= 2.0,
            "waited from its trigger"
        );
        q.trigger("a".into());
        assert_eq!(
            sample(&metrics, &adds),
            3.0,
            "triggered while running: an add"
        );
        assert_eq!(sample(&metrics, depth), 2.0);
        tokio::time::advance(Duration::from_secs(3)).await;
        q.report();
        assert!(sample(&metrics, &unfinished) >= 3.0, "a has run for 3 s");
        q.done(&a, Requeue::After(Duration::from_secs(10)));
        assert_eq!(sample(&metrics, &work), 1.0);
        assert_eq!(sample(&metrics, &retries), 1.0);
        assert_eq!(
            sample(&metrics, &adds),
            3.0,
            "the dirty key was counted already"
        );

        let first = next_now(&q).await.unwrap();
        let second = next_now(&q).await.unwrap();
        q.done(&first, Requeue::Never);
        q.done(&second, Requeue::Backoff);
        assert_eq!(sample(&metrics, &retries), 2.0);
        assert_eq!(sample(&metrics, depth), 0.0);
        tokio::time::advance(Duration::from_secs(1)).await;
        // No worker looked, yet the backed-off key is due: it counts.
        q.report();
        assert_eq!(sample(&metrics, depth), 1.0);
        assert_eq!(sample(&metrics, &adds), 4.0);
        assert_eq!(sample(&metrics, &unfinished), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_waiters_each_get_a_different_key() {
        let q = queue();
        let w1 = tokio::spawn({
            let q = q.clone();
            async move { q.next().await }
        });
        let w2 = tokio::spawn({
            let q = q.clone();
            async move { q.next().await }
        });
        tokio::task::yield_now().await;
        q.trigger("a".into());
        q.trigger("b".into());
        let mut got = vec![w1.await.unwrap().unwrap(), w2.await.unwrap().unwrap()];
        got.sort();
        assert_eq!(got, ["a", "b"]);
        assert_eq!(q.running(), 2);
    }
}
