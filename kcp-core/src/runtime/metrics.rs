//! Per-controller metrics in a `prometheus-client` registry.
//!
//! The series keep controller-runtime's names and labels, so dashboards and alerts built for the
//! Go controllers work unchanged: `controller_runtime_reconcile_total{controller, result}`,
//! `controller_runtime_reconcile_errors_total`, `controller_runtime_terminal_reconcile_errors_total`
//! (permanent failures), `controller_runtime_reconcile_time_seconds`,
//! `controller_runtime_max_concurrent_reconciles`, `controller_runtime_active_workers`
//! (`{controller}`), and the `workqueue_*` family (`{name}`): `depth`, `adds_total`,
//! `queue_duration_seconds`, `work_duration_seconds`, `retries_total`,
//! `unfinished_work_seconds`, `longest_running_processor_seconds`. One registry per process: the
//! process glue serves it on `/metrics`, and each component adds its own series to the same
//! registry. A family a controller cannot measure (a kube-runtime controller's queue, which
//! kube keeps to itself) is registered without samples rather than filled with made-up ones.
//! `controller_runtime_reconcile_panics_total` is left out: a panicking reconcile is not
//! recovered and counted here, so the series would always read 0.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How one reconcile ended, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done.
    Success,
    /// Done, and asked to look again at once (controller-runtime's `Requeue: true`; kcp-rs
    /// reconciles never ask this, but the series exists as controller-runtime creates it).
    Requeue,
    /// Done, and asked to look again after a delay.
    RequeueAfter,
    /// Failed (transient or permanent).
    Error,
}

impl ReconcileResult {
    /// Every result, in the order controller-runtime creates their series at start.
    pub const ALL: [ReconcileResult; 4] = [
        ReconcileResult::Error,
        ReconcileResult::RequeueAfter,
        ReconcileResult::Requeue,
        ReconcileResult::Success,
    ];

    /// How a reconcile's result is counted.
    pub fn of<E>(result: &Result<crate::runtime::Outcome, E>) -> Self {
        match result {
            Ok(crate::runtime::Outcome::Done) => ReconcileResult::Success,
            Ok(crate::runtime::Outcome::RequeueAfter(_)) => ReconcileResult::RequeueAfter,
            Err(_) => ReconcileResult::Error,
        }
    }

    /// The `result` label value, as controller-runtime writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

fn duration_histogram() -> Histogram {
    // 5 ms .. ~80 s, doubling.
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

type Seconds = Gauge<f64, AtomicU64>;

/// The controller series of one process; cheap to clone (clones share the series).
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    terminal: Family<ControllerLabels, Counter>,
    duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active: Family<ControllerLabels, Gauge>,
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    queue_wait: Family<QueueLabels, Histogram, fn() -> Histogram>,
    work: Family<QueueLabels, Histogram, fn() -> Histogram>,
    retries: Family<QueueLabels, Counter>,
    unfinished: Family<QueueLabels, Seconds>,
    longest: Family<QueueLabels, Seconds>,
}

/// One reconcile in progress, counted in `controller_runtime_active_workers` until dropped.
#[derive(Debug)]
pub struct ActiveWorker {
    gauge: Gauge,
}

impl Drop for ActiveWorker {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl ControllerMetrics {
    /// Creates the series and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = ControllerMetrics {
            reconciles: Family::default(),
            errors: Family::default(),
            terminal: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            max_concurrent: Family::default(),
            active: Family::default(),
            depth: Family::default(),
            adds: Family::default(),
            queue_wait: Family::new_with_constructor(duration_histogram),
            work: Family::new_with_constructor(duration_histogram),
            retries: Family::default(),
            unfinished: Family::default(),
            longest: Family::default(),
        };
        metrics.register_in(registry);
        metrics
    }

    fn register_in(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.reconciles.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.errors.clone(),
        );
        r.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            self.terminal.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.duration.clone(),
        );
        r.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        r.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            self.active.clone(),
        );
        r.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_wait.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
        r.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress",
            self.unfinished.clone(),
        );
        r.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor has been running",
            self.longest.clone(),
        );
    }

    /// Series that are counted but never exposed (for controllers run without a registry).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }
}

impl Default for ControllerMetrics {
    /// [`ControllerMetrics::unregistered`].
    fn default() -> Self {
        Self::unregistered()
    }
}

impl ControllerMetrics {
    /// Counts one reconcile of `controller` (an error in the errors total too).
    pub fn observe(&self, controller: &str, result: ReconcileResult, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: result.as_str().to_string(),
            })
            .inc();
        if result == ReconcileResult::Error {
            self.errors
                .get_or_create(&controller_labels(controller))
                .inc();
        }
        self.duration
            .get_or_create(&ControllerLabels {
                controller: controller.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts a permanent failure of `controller` (controller-runtime's terminal error: not
    /// retried with backoff), besides its count in [`ControllerMetrics::observe`].
    pub fn terminal(&self, controller: &str) {
        self.terminal
            .get_or_create(&controller_labels(controller))
            .inc();
    }

    /// Creates every series of `controller` (and of its queue, named after it) at zero, as
    /// controller-runtime does when a controller starts, so that dashboards and alerts see it
    /// before its first reconcile; `workers` is how many reconciles it runs at once.
    pub fn init_controller(&self, controller: &str, workers: usize) {
        for result in ReconcileResult::ALL {
            let _ = self.reconciles.get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: result.as_str().to_string(),
            });
        }
        let labels = controller_labels(controller);
        let _ = self.errors.get_or_create(&labels);
        let _ = self.terminal.get_or_create(&labels);
        let _ = self.duration.get_or_create(&labels);
        let _ = self.active.get_or_create(&labels);
        self.set_max_concurrent(controller, workers);
        let queue = queue_labels(controller);
        let _ = self.depth.get_or_create(&queue);
        let _ = self.adds.get_or_create(&queue);
        let _ = self.queue_wait.get_or_create(&queue);
        let _ = self.work.get_or_create(&queue);
        let _ = self.retries.get_or_create(&queue);
        let _ = self.unfinished.get_or_create(&queue);
        let _ = self.longest.get_or_create(&queue);
    }

    /// Sets how many reconciles of `controller` may run at once.
    pub fn set_max_concurrent(&self, controller: &str, workers: usize) {
        self.max_concurrent
            .get_or_create(&controller_labels(controller))
            .set(i64::try_from(workers).unwrap_or(i64::MAX));
    }

    /// Counts a reconcile of `controller` as running until the guard is dropped.
    pub fn active(&self, controller: &str) -> ActiveWorker {
        let gauge = self
            .active
            .get_or_create(&controller_labels(controller))
            .clone();
        gauge.inc();
        ActiveWorker { gauge }
    }

    /// Counts one add to the queue `name`.
    pub fn queue_added(&self, name: &str) {
        self.adds.get_or_create(&queue_labels(name)).inc();
    }

    /// Records how long a key waited in the queue `name` before a worker took it.
    pub fn queue_waited(&self, name: &str, waited: Duration) {
        self.queue_wait
            .get_or_create(&queue_labels(name))
            .observe(waited.as_secs_f64());
    }

    /// Records how long a worker of the queue `name` took over one key.
    pub fn work_done(&self, name: &str, took: Duration) {
        self.work
            .get_or_create(&queue_labels(name))
            .observe(took.as_secs_f64());
    }

    /// Counts one retry (a backed-off add) in the queue `name`.
    pub fn retried(&self, name: &str) {
        self.retries.get_or_create(&queue_labels(name)).inc();
    }

    /// Sets the seconds of work in progress in the queue `name`, and of its longest item.
    pub fn set_in_progress(&self, name: &str, unfinished: Duration, longest: Duration) {
        let labels = queue_labels(name);
        self.unfinished
            .get_or_create(&labels)
            .set(unfinished.as_secs_f64());
        self.longest
            .get_or_create(&labels)
            .set(longest.as_secs_f64());
    }

    /// Sets the queue depth of `controller`.
    pub fn set_depth(&self, controller: &str, depth: usize) {
        self.depth
            .get_or_create(&QueueLabels {
                name: controller.to_string(),
            })
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// Reconciles of `controller` with `result` so far.
    pub fn reconciles(&self, controller: &str, result: ReconcileResult) -> u64 {
        self.reconciles
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: result.as_str().to_string(),
            })
            .get()
    }
}

fn controller_labels(controller: &str) -> ControllerLabels {
    ControllerLabels {
        controller: controller.to_string(),
    }
}

fn queue_labels(name: &str) -> QueueLabels {
    QueueLabels {
        name: name.to_string(),
    }
}

/// The registry in the Prometheus text format (OpenMetrics text, which Prometheus reads).
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, registry).is_err() {
        // Writing into a String cannot fail; an encoder error would be a bug in a metric.
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_are_counted_per_controller_and_result_under_controller_runtime_names() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.observe(
            "inittarget",
            ReconcileResult::Success,
            Duration::from_millis(3),
        );
        m.observe(
            "inittarget",
            ReconcileResult::Error,
            Duration::from_millis(3),
        );
        m.observe(
            "inittarget",
            ReconcileResult::Error,
            Duration::from_millis(3),
        );
        let text = encode(&registry);
        assert!(
            text.contains(
                "controller_runtime_reconcile_total{controller=\"inittarget\",result=\"error\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "controller_runtime_reconcile_time_seconds_count{controller=\"inittarget\"} 3"
            ),
            "{text}"
        );
    }

    #[test]
    fn errors_workers_and_queue_series_keep_controller_runtimes_names() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.observe("c", ReconcileResult::Error, Duration::from_millis(1));
        m.set_max_concurrent("c", 4);
        let running = m.active("c");
        m.queue_added("c");
        m.retried("c");
        m.queue_waited("c", Duration::from_millis(2));
        m.work_done("c", Duration::from_millis(2));
        m.set_in_progress("c", Duration::from_secs(3), Duration::from_secs(2));
        let text = encode(&registry);
        for line in [
            "controller_runtime_reconcile_errors_total{controller=\"c\"} 1",
            "controller_runtime_max_concurrent_reconciles{controller=\"c\"} 4",
            "controller_runtime_active_workers{controller=\"c\"} 1",
            "workqueue_adds_total{name=\"c\"} 1",
            "workqueue_retries_total{name=\"c\"} 1",
            "workqueue_queue_duration_seconds_count{name=\"c\"} 1",
            "workqueue_work_duration_seconds_count{name=\"c\"} 1",
            "workqueue_unfinished_work_seconds{name=\"c\"} 3.0",
            "workqueue_longest_running_processor_seconds{name=\"c\"} 2.0",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        drop(running);
        assert!(
            encode(&registry).contains("controller_runtime_active_workers{controller=\"c\"} 0")
        );
    }

    #[test]
    fn a_started_controller_has_every_series_before_its_first_reconcile() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.init_controller("c", 2);
        let text = encode(&registry);
        for line in [
            "controller_runtime_reconcile_total{controller=\"c\",result=\"success\"} 0",
            "controller_runtime_reconcile_errors_total{controller=\"c\"} 0",
            "controller_runtime_max_concurrent_reconciles{controller=\"c\"} 2",
            "workqueue_depth{name=\"c\"} 0",
            "workqueue_work_duration_seconds_count{name=\"c\"} 0",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }

    #[test]
    fn queue_depth_is_a_gauge_per_queue() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.set_depth("q", 5);
        m.set_depth("q", 2);
        assert!(encode(&registry).contains("workqueue_depth{name=\"q\"} 2"));
    }
}
