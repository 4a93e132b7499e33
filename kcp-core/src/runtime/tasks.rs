//! A set of keyed background tasks for dynamic sub-controllers (one per InitTarget, one per
//! PublishedResource, ...).
//!
//! Starting, restarting and stopping never wait for a task: a stopped task gets its
//! [`CancellationToken`] cancelled and finishes in the background (draining its work), while the
//! caller goes on handling events. [`TaskSet::shutdown`] is the only call that waits: for every
//! task, running or stopping, up to a grace period, after which the rest are aborted.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

use tokio::task::{Id, JoinSet};
use tokio_util::sync::CancellationToken;

struct Running {
    fingerprint: String,
    token: CancellationToken,
    id: Id,
}

/// Keyed background tasks; see the [module documentation](self).
pub struct TaskSet<K> {
    running: HashMap<K, Running>,
    keys_by_id: HashMap<Id, K>,
    tasks: JoinSet<()>,
}

impl<K> Default for TaskSet<K> {
    fn default() -> Self {
        TaskSet {
            running: HashMap::new(),
            keys_by_id: HashMap::new(),
            tasks: JoinSet::new(),
        }
    }
}

impl<K: Clone + Eq + Hash> TaskSet<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ensures a task runs for `key` with this `fingerprint` (what it was started for): starts
    /// one if none runs, restarts it if the fingerprint differs, and does nothing otherwise.
    /// Returns whether a task was started. `task` gets a token that is cancelled when the task
    /// should stop.
    pub fn ensure<F, Fut>(&mut self, key: K, fingerprint: &str, task: F) -> bool
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.reap();
        if self
            .running
            .get(&key)
            .is_some_and(|r| r.fingerprint == fingerprint)
        {
            return false;
        }
        self.stop(&key);
        let token = CancellationToken::new();
        let handle = self.tasks.spawn(task(token.clone()));
        let id = handle.id();
        self.keys_by_id.insert(id, key.clone());
        self.running.insert(
            key,
            Running {
                fingerprint: fingerprint.to_string(),
                token,
                id,
            },
        );
        true
    }

    /// Asks the task of `key` to stop, without waiting for it. Returns whether one ran.
    pub fn stop(&mut self, key: &K) -> bool {
        match self.running.remove(key) {
            Some(running) => {
                running.token.cancel();
                self.keys_by_id.remove(&running.id);
                true
            }
            None => false,
        }
    }

    /// Stops every task whose key `keep` rejects; returns how many were stopped.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) -> usize {
        let stale: Vec<K> = self.running.keys().filter(|k| !keep(k)).cloned().collect();
        for key in &stale {
            self.stop(key);
        }
        stale.len()
    }

    /// Whether a task runs for `key`.
    pub fn contains(&self, key: &K) -> bool {
        self.running.contains_key(key)
    }

    /// The keys with a running task.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.running.keys()
    }

    /// Tasks still running or stopping.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no task is running or stopping.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Forgets tasks that have ended (on their own or after a stop), so that a task that ended
    /// by itself is started again by the next [`TaskSet::ensure`].
    pub fn reap(&mut self) {
        while let Some(result) = self.tasks.try_join_next_with_id() {
            let id = match result {
                Ok((id, ())) => id,
                Err(err) => {
                    if err.is_panic() {
                        tracing::error!("a background task panicked");
                    }
                    err.id()
                }
            };
            if let Some(key) = self.keys_by_id.remove(&id) {
                self.running.remove(&key);
            }
        }
    }

    /// Stops every task and waits up to `grace` for all of them (running and stopping) to end;
    /// aborts what is left after that.
    pub async fn shutdown(&mut self, grace: Duration) {
        for (_, running) in self.running.drain() {
            running.token.cancel();
        }
        self.keys_by_id.clear();
        let drained = tokio::time::timeout(grace, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                left = self.tasks.len(),
                ?grace,
                "tasks did not stop in time; aborting them"
            );
            self.tasks.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A task that counts starts and, once cancelled, takes `linger` to finish.
    fn task(
        starts: Arc<AtomicUsize>,
        finished: Arc<AtomicUsize>,
        linger: Duration,
    ) -> impl FnOnce(CancellationToken) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        move |token| {
            starts.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                token.cancelled().await;
                tokio::time::sleep(linger).await;
                finished.fetch_add(1, Ordering::SeqCst);
            })
        }
    }

    fn counters() -> (Arc<AtomicUsize>, Arc<AtomicUsize>) {
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)))
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_fingerprint_keeps_the_running_task() {
        let (starts, finished) = counters();
        let mut set = TaskSet::new();
        assert!(set.ensure(
            "t",
            "v1",
            task(starts.clone(), finished.clone(), Duration::ZERO)
        ));
        assert!(!set.ensure(
            "t",
            "v1",
            task(starts.clone(), finished.clone(), Duration::ZERO)
        ));
        tokio::task::yield_now().await;
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_fingerprint_restarts_the_task() {
        let (starts, finished) = counters();
        let mut set = TaskSet::new();
        set.ensure(
            "t",
            "v1",
            task(starts.clone(), finished.clone(), Duration::ZERO),
        );
        set.ensure(
            "t",
            "v2",
            task(starts.clone(), finished.clone(), Duration::ZERO),
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "the old task was stopped"
        );
        assert!(set.contains(&"t"));
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_a_slow_task_does_not_wait_for_it() {
        let (starts, finished) = counters();
        let mut set = TaskSet::new();
        set.ensure(
            "t",
            "v1",
            task(starts, finished.clone(), Duration::from_secs(30)),
        );
        let before = tokio::time::Instant::now();
        assert!(set.stop(&"t"));
        assert_eq!(before.elapsed(), Duration::ZERO);
        assert!(!set.contains(&"t"));
        assert_eq!(set.len(), 1, "still stopping in the background");
        tokio::time::sleep(Duration::from_secs(31)).await;
        set.reap();
        assert!(set.is_empty());
        assert_eq!(finished.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_waits_for_running_and_stopping_tasks() {
        let (starts, finished) = counters();
        let mut set = TaskSet::new();
        set.ensure(
            "a",
            "v1",
            task(starts.clone(), finished.clone(), Duration::from_secs(2)),
        );
        set.ensure(
            "b",
            "v1",
            task(starts.clone(), finished.clone(), Duration::from_secs(3)),
        );
        set.stop(&"a");
        set.shutdown(Duration::from_secs(10)).await;
        assert_eq!(finished.load(Ordering::SeqCst), 2);
        assert!(set.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_aborts_tasks_that_outlive_the_grace_period() {
        let (starts, finished) = counters();
        let mut set = TaskSet::new();
        set.ensure(
            "a",
            "v1",
            task(starts, finished.clone(), Duration::from_secs(60)),
        );
        let before = tokio::time::Instant::now();
        set.shutdown(Duration::from_secs(5)).await;
        assert!(before.elapsed() < Duration::from_secs(6));
        assert_eq!(finished.load(Ordering::SeqCst), 0);
        assert!(set.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_ended_by_itself_is_started_again() {
        let starts = Arc::new(AtomicUsize::new(0));
        let mut set = TaskSet::new();
        let s = starts.clone();
        set.ensure("t", "v1", move |_token| {
            s.fetch_add(1, Ordering::SeqCst);
            async {}
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let s = starts.clone();
        assert!(set.ensure("t", "v1", move |_token| {
            s.fetch_add(1, Ordering::SeqCst);
            async {}
        }));
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(starts.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn retain_stops_the_tasks_it_rejects() {
        let (starts, finished) = counters();
        let mut set = TaskSet::new();
        for k in ["a", "b", "c"] {
            set.ensure(
                k,
                "v1",
                task(starts.clone(), finished.clone(), Duration::ZERO),
            );
        }
        assert_eq!(set.retain(|k| *k == "b"), 2);
        let mut keys: Vec<_> = set.keys().copied().collect();
        keys.sort();
        assert_eq!(keys, vec!["b"]);
    }
}
