//! Workers that drain a [`WorkQueue`] through a [`Reconciler`], applying the one
//! [`Disposition`] mapping: forget, requeue after, retry with the key's backoff, or report a
//! permanent failure and retry at the policy's cap.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio::task::JoinSet;

use crate::runtime::metrics::ControllerMetrics;
use crate::runtime::outcome::{Classify, Disposition, Outcome, RetryPolicy};
use crate::runtime::queue::WorkQueue;

/// A reconcile function over keys of type `K`.
#[async_trait]
pub trait Reconciler<K: Send + Sync>: Send + Sync + 'static {
    /// The reconcile's error; it knows whether it is transient.
    type Error: Classify + fmt::Display + Send + Sync;

    /// Brings the object behind `key` to its desired state.
    async fn reconcile(&self, key: &K) -> Result<Outcome, Self::Error>;

    /// Called once per permanent failure: where a component records its Warning Event (and
    /// condition). The default only logs.
    async fn failed(&self, key: &K, error: &Self::Error) {
        let _ = key;
        tracing::warn!(error = %error, reason = error.reason(), "reconcile failed");
    }
}

/// How workers run.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The controller's name, for metrics and logs.
    pub name: String,
    /// How many keys are reconciled at the same time (at least one).
    pub workers: usize,
    /// Retry of permanent failures.
    pub retry: RetryPolicy,
    /// Where reconciles are counted.
    pub metrics: ControllerMetrics,
}

impl WorkerConfig {
    /// `workers` workers for the controller `name`, default retry policy, unregistered metrics.
    pub fn new(name: impl Into<String>, workers: usize) -> Self {
        WorkerConfig {
            name: name.into(),
            workers: workers.max(1),
            retry: RetryPolicy::default(),
            metrics: ControllerMetrics::unregistered(),
        }
    }
}

/// Runs `config.workers` workers on `queue` until it is shut down, then returns once every
/// worker has finished the key it held (the drain).
pub async fn run_workers<K, R>(queue: WorkQueue<K>, reconciler: Arc<R>, config: WorkerConfig)
where
    K: Clone + Eq + Hash + fmt::Display + Send + Sync + 'static,
    R: Reconciler<K>,
{
    let config = Arc::new(config);
    config
        .metrics
        .init_controller(&config.name, config.workers.max(1));
    queue.observe_with(config.name.clone(), config.metrics.clone());
    let started: InProgress = Arc::new(std::sync::Mutex::new(vec![None; config.workers.max(1)]));
    let mut workers = JoinSet::new();
    for slot in 0..config.workers.max(1) {
        let (queue, reconciler, config) = (queue.clone(), reconciler.clone(), config.clone());
        let started = started.clone();
        workers.spawn(async move {
            while let Some(key) = queue.next().await {
                set_slot(&started, slot, Some(Instant::now()));
                process(&queue, reconciler.as_ref(), &config, key).await;
                set_slot(&started, slot, None);
            }
        });
    }
    let ticker = tokio::spawn(report_in_progress(config.clone(), started));
    while workers.join_next().await.is_some() {}
    ticker.abort();
}

/// When each worker took the key it holds (`None`: idle).
type InProgress = Arc<std::sync::Mutex<Vec<Option<Instant>>>>;

fn set_slot(started: &InProgress, slot: usize, at: Option<Instant>) {
    let mut slots = match started.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(s) = slots.get_mut(slot) {
        *s = at;
    }
}

/// Every second, as controller-runtime's queue does: the seconds of work in progress and of the
/// longest item (`workqueue_unfinished_work_seconds`, `..._longest_running_processor_seconds`).
async fn report_in_progress(config: Arc<WorkerConfig>, started: InProgress) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tick.tick().await;
        let running: Vec<std::time::Duration> = match started.lock() {
            Ok(g) => g.iter().flatten().map(|at| at.elapsed()).collect(),
            Err(poisoned) => poisoned
                .into_inner()
                .iter()
                .flatten()
                .map(|at| at.elapsed())
                .collect(),
        };
        let unfinished = running.iter().sum();
        let longest = running.iter().max().copied().unwrap_or_default();
        config
            .metrics
            .set_in_progress(&config.name, unfinished, longest);
    }
}

async fn process<K, R>(queue: &WorkQueue<K>, reconciler: &R, config: &WorkerConfig, key: K)
where
    K: Clone + Eq + Hash + fmt::Display + Send + Sync + 'static,
    R: Reconciler<K>,
{
    let started = Instant::now();
    let active = config.metrics.active(&config.name);
    let disposition = Disposition::of(reconciler.reconcile(&key).await);
    drop(active);
    let took = started.elapsed();
    config
        .metrics
        .observe(&config.name, disposition.result(), took);
    config.metrics.work_done(&config.name, took);
    queue.done(&key);
    match disposition {
        Disposition::Forget => queue.forget(&key),
        Disposition::RequeueAfter(delay) => {
            queue.forget(&key);
            queue.add_after(key, delay);
        }
        Disposition::Retry(err) => {
            config.metrics.retried(&config.name);
            let delay = queue.retry(key.clone());
            tracing::debug!(controller = %config.name, %key, error = %err, ?delay, "transient failure; retrying");
        }
        Disposition::Failed(err) => {
            config.metrics.terminal(&config.name);
            reconciler.failed(&key, &err).await;
            if let Some(delay) = config.retry.permanent_retry {
                queue.add_after(key, delay);
            }
        }
    }
    config.metrics.set_depth(&config.name, queue.len());
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::retry::Backoff;

    #[derive(Debug)]
    struct TestError(bool);

    impl fmt::Display for TestError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "test error (transient: {})", self.0)
        }
    }

    impl Classify for TestError {
        fn is_transient(&self) -> bool {
            self.0
        }
        fn reason(&self) -> &str {
            "Test"
        }
    }

    /// Answers from a script per key; counts calls, overlaps and failures reported.
    #[derive(Default)]
    struct Scripted {
        answers: Mutex<HashMap<&'static str, Vec<Result<Outcome, TestError>>>>,
        calls: Mutex<Vec<(&'static str, tokio::time::Instant)>>,
        running: Mutex<HashMap<&'static str, usize>>,
        overlaps: AtomicUsize,
        failed: AtomicUsize,
        hold: Duration,
    }

    #[async_trait]
    impl Reconciler<&'static str> for Scripted {
        type Error = TestError;

        async fn reconcile(&self, key: &&'static str) -> Result<Outcome, TestError> {
            {
                let mut running = self.running.lock().unwrap();
                let n = running.entry(key).or_insert(0);
                *n += 1;
                if *n > 1 {
                    self.overlaps.fetch_add(1, Ordering::SeqCst);
                }
            }
            self.calls
                .lock()
                .unwrap()
                .push((key, tokio::time::Instant::now()));
            tokio::time::sleep(self.hold).await;
            *self.running.lock().unwrap().get_mut(key).unwrap() -= 1;
            let mut answers = self.answers.lock().unwrap();
            let script = answers.entry(key).or_default();
            if script.is_empty() {
                Ok(Outcome::Done)
            } else {
                script.remove(0)
            }
        }

        async fn failed(&self, _key: &&'static str, _error: &TestError) {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn setup(
        script: Vec<(&'static str, Vec<Result<Outcome, TestError>>)>,
        hold: Duration,
    ) -> (WorkQueue<&'static str>, Arc<Scripted>, WorkerConfig) {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(4)).without_jitter();
        let queue = WorkQueue::new(backoff);
        let reconciler = Arc::new(Scripted {
            answers: Mutex::new(script.into_iter().collect()),
            hold,
            ..Scripted::default()
        });
        let mut config = WorkerConfig::new("test", 4);
        config.retry = RetryPolicy::new(backoff);
        (queue, reconciler, config)
    }

    fn call_times(r: &Scripted, key: &str, start: tokio::time::Instant) -> Vec<u64> {
        r.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, t)| (*t - start).as_secs())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_with_growing_delays_until_success() {
        let failing = || Err(TestError(true));
        let (queue, r, config) = setup(
            vec![("a", vec![failing(), failing(), failing()])],
            Duration::ZERO,
        );
        let start = tokio::time::Instant::now();
        let run = tokio::spawn(run_workers(queue.clone(), r.clone(), config));
        queue.add("a");
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(call_times(&r, "a", start), vec![0, 1, 3, 7]);
        assert_eq!(queue.failures(&"a"), 0, "success forgets the failures");
        queue.shutdown();
        run.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_failures_are_reported_once_each_and_retried_at_the_cap() {
        let (queue, r, config) = setup(vec![("a", vec![Err(TestError(false))])], Duration::ZERO);
        let start = tokio::time::Instant::now();
        let run = tokio::spawn(run_workers(queue.clone(), r.clone(), config));
        queue.add("a");
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(r.failed.load(Ordering::SeqCst), 1);
        assert_eq!(call_times(&r, "a", start), vec![0, 4]);
        queue.shutdown();
        run.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn requeue_after_looks_again_after_the_delay() {
        let (queue, r, config) = setup(
            vec![("a", vec![Ok(Outcome::RequeueAfter(Duration::from_secs(5)))])],
            Duration::ZERO,
        );
        let start = tokio::time::Instant::now();
        let run = tokio::spawn(run_workers(queue.clone(), r.clone(), config));
        queue.add("a");
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(call_times(&r, "a", start), vec![0, 5]);
        queue.shutdown();
        run.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_during_its_reconcile_runs_again_after_and_never_concurrently() {
        let (queue, r, config) = setup(vec![], Duration::from_secs(2));
        let run = tokio::spawn(run_workers(queue.clone(), r.clone(), config));
        queue.add("a");
        tokio::time::sleep(Duration::from_millis(500)).await;
        queue.add("a");
        queue.add("a");
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(r.calls.lock().unwrap().len(), 2);
        assert_eq!(r.overlaps.load(Ordering::SeqCst), 0);
        queue.shutdown();
        run.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn workers_run_different_keys_in_parallel() {
        let (queue, r, config) = setup(vec![], Duration::from_secs(1));
        let run = tokio::spawn(run_workers(queue.clone(), r.clone(), config));
        let start = tokio::time::Instant::now();
        for k in ["a", "b", "c", "d"] {
            queue.add(k);
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(r.calls.lock().unwrap().len(), 4);
        assert!(r.calls.lock().unwrap().iter().all(|(_, t)| *t == start));
        queue.shutdown();
        run.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drains_the_keys_in_flight_and_starts_no_new_ones() {
        let (queue, r, config) = setup(vec![], Duration::from_secs(3));
        let run = tokio::spawn(run_workers(queue.clone(), r.clone(), config));
        queue.add("a");
        tokio::time::sleep(Duration::from_millis(100)).await;
        queue.shutdown();
        queue.add("b");
        let drained = tokio::time::Instant::now();
        run.await.unwrap();
        assert!(
            drained.elapsed() >= Duration::from_millis(2_900),
            "waited for the key in flight"
        );
        assert_eq!(
            r.running.lock().unwrap().get("a"),
            Some(&0),
            "finished, not aborted"
        );
        assert_eq!(r.calls.lock().unwrap().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn reconciles_are_counted_by_result() {
        let (queue, r, config) = setup(vec![("a", vec![Err(TestError(true))])], Duration::ZERO);
        let metrics = config.metrics.clone();
        let run = tokio::spawn(run_workers(queue.clone(), r, config));
        queue.add("a");
        tokio::time::sleep(Duration::from_secs(3)).await;
        use crate::runtime::metrics::ReconcileResult;
        assert_eq!(metrics.reconciles("test", ReconcileResult::Error), 1);
        assert_eq!(metrics.reconciles("test", ReconcileResult::Success), 1);
        queue.shutdown();
        run.await.unwrap();
    }
}
