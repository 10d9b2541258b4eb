//! The simulated operator's workers: they take keys from the runtime's own work queue
//! ([`crate::queue::Queue`]) — one queue for every kind the operator handles, because
//! any watch event may wake any key (a granted ClusterRequest wakes the AccessRequests waiting on
//! it).

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::queue::{BackoffPolicy, Queue, Requeue};

/// What handling a key asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing: wait for the next event.
    Done,
    /// Handle the key again after this long.
    After(Duration),
}

/// The operator's queue: backoff from 5 ms like the runtime's, but capped at 2 s, because the
/// simulation never waits minutes (tests would time out first).
pub(crate) fn new_queue<K: Clone + Eq + Hash + Ord + Send + 'static>() -> Queue<K> {
    Queue::new(BackoffPolicy {
        initial: Duration::from_millis(5),
        max: Duration::from_secs(2),
    })
}

/// Runs `workers` tasks handling keys of `queue` with `handle` until `stop` is cancelled. A
/// handler error is retried with backoff; a panic in a handler is caught and retried the same way.
pub(crate) fn run<K, F, Fut>(queue: &Queue<K>, workers: usize, stop: CancellationToken, handle: F)
where
    K: Clone + Eq + Hash + Ord + Send + Sync + std::fmt::Debug + 'static,
    F: Fn(K) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Next, ()>> + Send + 'static,
{
    {
        let queue = queue.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            queue.shutdown();
        });
    }
    let handle = Arc::new(handle);
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let handle = handle.clone();
        tokio::spawn(async move {
            while let Some(key) = queue.next().await {
                let requeue = match tokio::spawn(handle(key.clone())).await {
                    Ok(Ok(Next::Done)) => Requeue::Never,
                    Ok(Ok(Next::After(delay))) => Requeue::After(delay),
                    Ok(Err(())) => Requeue::Backoff,
                    Err(e) => {
                        tracing::error!(?key, "simulated operator: handler panicked: {e}");
                        Requeue::Backoff
                    }
                };
                queue.done(&key, requeue);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_panicking_handler_is_retried_and_the_workers_survive() {
        let queue = new_queue::<u32>();
        let calls = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let seen = calls.clone();
        run(&queue, 1, stop.clone(), move |key| {
            let seen = seen.clone();
            async move {
                if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                    panic!("first attempt of {key} fails");
                }
                Ok(Next::Done)
            }
        });
        queue.trigger(7);
        tokio::time::timeout(Duration::from_secs(5), async {
            while calls.load(Ordering::SeqCst) < 2 || queue.running() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the key is handled again after the panic");
        // The worker survived the panic: a new key is handled too.
        queue.trigger(8);
        tokio::time::timeout(Duration::from_secs(5), async {
            while calls.load(Ordering::SeqCst) < 3 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the worker still runs");
        stop.cancel();
    }
}
