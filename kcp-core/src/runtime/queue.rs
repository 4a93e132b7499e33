//! A keyed work queue for multi-cluster controllers.
//!
//! The semantics are client-go's rate-limited work queue:
//! - **Dedup**: a key added while it waits is queued once.
//! - **Never two workers on one key**: a key added while a worker holds it is marked dirty and
//!   queued again when [`WorkQueue::done`] releases it.
//! - **Delayed adds**: [`WorkQueue::add_after`] queues a key later; of several pending delays
//!   for one key the earliest wins, an immediate add makes it moot, and every timer is cancelled
//!   by [`WorkQueue::shutdown`] (no task outlives the queue's controller).
//! - **Per-key backoff**: [`WorkQueue::retry`] counts consecutive failures of a key and delays
//!   it by the [`Backoff`] for that count; [`WorkQueue::forget`] resets the count.
//! - **Drain**: after [`WorkQueue::shutdown`], [`WorkQueue::next`] hands out nothing more, and
//!   workers finish the key they hold.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::retry::Backoff;
use crate::runtime::metrics::ControllerMetrics;

/// The key of one object in a multi-cluster controller: (cluster, namespace, name).
///
/// Same-named objects in two logical clusters are different keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The logical cluster (or any string naming where the object lives).
    pub cluster: String,
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// A cluster-scoped object's key.
    pub fn cluster_scoped(cluster: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            cluster: cluster.into(),
            namespace: None,
            name: name.into(),
        }
    }

    /// A namespaced object's key.
    pub fn namespaced(
        cluster: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        ObjectKey {
            cluster: cluster.into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}|{ns}/{}", self.cluster, self.name),
            None => write!(f, "{}|{}", self.cluster, self.name),
        }
    }
}

struct State<K> {
    ready: VecDeque<K>,
    queued: HashSet<K>,
    in_flight: HashSet<K>,
    dirty: HashSet<K>,
    /// Pending delayed add per key: its deadline and the timer generation that may fire it.
    delayed: HashMap<K, (Instant, u64)>,
    failures: HashMap<K, u32>,
    /// When each ready key was queued (for the queue-duration metric).
    queued_at: HashMap<K, Instant>,
    generation: u64,
    shut_down: bool,
}

struct Inner<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    stop: CancellationToken,
    backoff: Backoff,
    /// The queue's name and the series its adds and waits are counted in, once set.
    observer: OnceLock<(String, ControllerMetrics)>,
}

/// A deduplicating, rate-limited work queue (see the [module documentation](self)).
///
/// Cheap to clone; clones share the queue.
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: self.inner.clone(),
        }
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Send + 'static,
{
    /// An empty queue whose retries back off by `backoff`.
    pub fn new(backoff: Backoff) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    ready: VecDeque::new(),
                    queued: HashSet::new(),
                    in_flight: HashSet::new(),
                    dirty: HashSet::new(),
                    delayed: HashMap::new(),
                    failures: HashMap::new(),
                    queued_at: HashMap::new(),
                    generation: 0,
                    shut_down: false,
                }),
                notify: Notify::new(),
                stop: CancellationToken::new(),
                backoff,
                observer: OnceLock::new(),
            }),
        }
    }

    /// Counts this queue's adds and waits under `name` in `metrics` (the first call wins).
    pub fn observe_with(&self, name: impl Into<String>, metrics: ControllerMetrics) {
        let _ = self.inner.observer.set((name.into(), metrics));
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // A poisoned lock only means a panic elsewhere; the state itself stays consistent
        // because every mutation below completes before the guard is dropped.
        match self.inner.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Queues `key` now (once, however often it is added).
    pub fn add(&self, key: K) {
        let mut s = self.lock();
        if s.shut_down {
            return;
        }
        if let Some((name, metrics)) = self.inner.observer.get() {
            metrics.queue_added(name);
        }
        s.delayed.remove(&key);
        if s.in_flight.contains(&key) {
            s.dirty.insert(key);
        } else if s.queued.insert(key.clone()) {
            s.queued_at.insert(key.clone(), Instant::now());
            s.ready.push_back(key);
            drop(s);
            self.inner.notify.notify_one();
        }
    }

    /// Queues `key` after `delay`; an earlier pending delay for the key is kept.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let deadline = Instant::now() + delay;
        let generation = {
            let mut s = self.lock();
            if s.shut_down || s.queued.contains(&key) {
                return;
            }
            if let Some((existing, _)) = s.delayed.get(&key)
                && *existing <= deadline
            {
                return;
            }
            s.generation += 1;
            let generation = s.generation;
            s.delayed.insert(key.clone(), (deadline, generation));
            generation
        };
        let queue = self.clone();
        let stop = self.inner.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep_until(deadline) => queue.fire(key, generation),
            }
        });
    }

    fn fire(&self, key: K, generation: u64) {
        let due = {
            let mut s = self.lock();
            match s.delayed.get(&key) {
                Some((_, g)) if *g == generation => {
                    s.delayed.remove(&key);
                    true
                }
                _ => false,
            }
        };
        if due {
            self.add(key);
        }
    }

    /// Records one more consecutive failure of `key` and queues it after the backoff delay
    /// for that many failures. Returns the delay.
    pub fn retry(&self, key: K) -> Duration {
        let failures = {
            let mut s = self.lock();
            let n = s.failures.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let delay = self.inner.backoff.delay(failures);
        self.add_after(key, delay);
        delay
    }

    /// Consecutive failures recorded for `key`.
    pub fn failures(&self, key: &K) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Resets the failure count of `key` (after a success).
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// Drops everything about `key`: a waiting or delayed add and its failure count (its
    /// object is gone). A worker holding it finishes; it is not queued again.
    pub fn remove(&self, key: &K) {
        let mut s = self.lock();
        s.failures.remove(key);
        s.delayed.remove(key);
        s.dirty.remove(key);
        s.queued_at.remove(key);
        if s.queued.remove(key) {
            s.ready.retain(|k| k != key);
        }
    }

    /// The next key to work on, marked in flight until [`WorkQueue::done`]. `None` once the
    /// queue is shut down.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                if s.shut_down {
                    return None;
                }
                if let Some(key) = s.ready.pop_front() {
                    s.queued.remove(&key);
                    s.in_flight.insert(key.clone());
                    let waited = s.queued_at.remove(&key).map(|at| at.elapsed());
                    let more = !s.ready.is_empty();
                    drop(s);
                    if let (Some(waited), Some((name, metrics))) =
                        (waited, self.inner.observer.get())
                    {
                        metrics.queue_waited(name, waited);
                    }
                    if more {
                        self.inner.notify.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Releases a key taken with [`WorkQueue::next`]; if it was added meanwhile it is queued
    /// again now.
    pub fn done(&self, key: &K) {
        let mut s = self.lock();
        s.in_flight.remove(key);
        if s.dirty.remove(key) && !s.shut_down && s.queued.insert(key.clone()) {
            s.queued_at.insert(key.clone(), Instant::now());
            s.ready.push_back(key.clone());
            drop(s);
            self.inner.notify.notify_one();
        }
    }

    /// Keys waiting to be worked on (not counting delayed or in-flight ones).
    pub fn len(&self) -> usize {
        self.lock().ready.len()
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys currently held by workers.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight.len()
    }

    /// Keys waiting for a delayed add.
    pub fn delayed(&self) -> usize {
        self.lock().delayed.len()
    }

    /// Stops handing out keys and cancels every delayed add. Idempotent.
    pub fn shutdown(&self) {
        {
            let mut s = self.lock();
            s.shut_down = true;
            s.delayed.clear();
            s.ready.clear();
            s.queued.clear();
            s.queued_at.clear();
        }
        self.inner.stop.cancel();
        self.inner.notify.notify_waiters();
    }

    /// Whether [`WorkQueue::shutdown`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.lock().shut_down
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::new(
            Backoff::new(Duration::from_secs(1), Duration::from_secs(8)).without_jitter(),
        )
    }

    /// Lets spawned timer tasks run up to the current (paused) time.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_twice_is_handed_out_once() {
        let q = queue();
        q.add("a");
        q.add("a");
        assert_eq!(q.len(), 1);
        assert_eq!(q.next().await, Some("a"));
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn keys_come_out_in_the_order_they_were_added() {
        let q = queue();
        for k in ["c", "a", "b"] {
            q.add(k);
        }
        assert_eq!(q.next().await, Some("c"));
        assert_eq!(q.next().await, Some("a"));
        assert_eq!(q.next().await, Some("b"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_while_in_flight_waits_until_done() {
        let q = queue();
        q.add("a");
        let held = q.next().await;
        q.add("a");
        assert_eq!(q.len(), 0, "a second worker must not get the held key");
        q.done(&"a");
        assert_eq!(held, Some("a"));
        assert_eq!(q.len(), 1);
        assert_eq!(q.next().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn two_waiting_workers_never_hold_the_same_key() {
        let q = queue();
        let (w1, w2) = (q.clone(), q.clone());
        let first = tokio::spawn(async move { w1.next().await });
        let second = tokio::spawn(async move { w2.next().await });
        settle().await;
        q.add("a");
        settle().await;
        q.add("a");
        settle().await;
        let done: Vec<_> = [&first, &second].iter().map(|h| h.is_finished()).collect();
        assert_eq!(done.iter().filter(|d| **d).count(), 1, "{done:?}");
        q.done(&"a");
        settle().await;
        assert!(first.is_finished() && second.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_add_arrives_after_its_delay() {
        let q = queue();
        q.add_after("a", Duration::from_secs(5));
        tokio::time::advance(Duration::from_millis(4_999)).await;
        settle().await;
        assert!(q.is_empty());
        tokio::time::advance(Duration::from_millis(1)).await;
        settle().await;
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_earliest_of_two_delays_wins_and_fires_once() {
        let q = queue();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(2));
        tokio::time::advance(Duration::from_secs(2)).await;
        settle().await;
        assert_eq!(q.next().await, Some("a"));
        q.done(&"a");
        tokio::time::advance(Duration::from_secs(10)).await;
        settle().await;
        assert!(q.is_empty(), "the superseded timer must not fire");
    }

    #[tokio::test(start_paused = true)]
    async fn an_immediate_add_cancels_a_pending_delay() {
        let q = queue();
        q.add_after("a", Duration::from_secs(3));
        q.add("a");
        assert_eq!(q.next().await, Some("a"));
        q.done(&"a");
        tokio::time::advance(Duration::from_secs(3)).await;
        settle().await;
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn retries_back_off_exponentially_up_to_the_cap() {
        let q = queue();
        let delays: Vec<u64> = (0..6).map(|_| q.retry("a").as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 8, 8]);
        assert_eq!(q.failures(&"a"), 6);
    }

    #[tokio::test(start_paused = true)]
    async fn forget_resets_the_backoff() {
        let q = queue();
        q.retry("a");
        q.retry("a");
        q.forget(&"a");
        assert_eq!(q.retry("a"), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_per_key() {
        let q = queue();
        q.retry("a");
        q.retry("a");
        assert_eq!(q.retry("b"), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_cancels_delayed_adds() {
        let q = queue();
        q.add_after("a", Duration::from_secs(1));
        q.shutdown();
        tokio::time::advance(Duration::from_secs(2)).await;
        settle().await;
        assert!(q.is_empty());
        assert_eq!(q.delayed(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_wakes_waiting_workers_with_none() {
        let q = queue();
        let w = q.clone();
        let waiting = tokio::spawn(async move { w.next().await });
        settle().await;
        q.shutdown();
        assert_eq!(waiting.await.ok(), Some(None));
        q.add("late");
        assert!(q.is_empty(), "a shut-down queue accepts nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn removing_a_key_drops_its_pending_adds() {
        let q = queue();
        q.add("a");
        q.add_after("b", Duration::from_secs(1));
        q.remove(&"a");
        q.remove(&"b");
        tokio::time::advance(Duration::from_secs(2)).await;
        settle().await;
        assert!(q.is_empty());
    }

    #[test]
    fn object_keys_of_two_clusters_differ() {
        let a = ObjectKey::namespaced("c1", "ns", "x");
        let b = ObjectKey::namespaced("c2", "ns", "x");
        assert_ne!(a, b);
        assert_eq!(a.to_string(), "c1|ns/x");
        assert_eq!(ObjectKey::cluster_scoped("c1", "x").to_string(), "c1|x");
    }
}
