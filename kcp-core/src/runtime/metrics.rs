//! Per-controller metrics in a `prometheus-client` registry.
//!
//! The series keep controller-runtime's names, so dashboards built for the Go controllers work
//! unchanged: `controller_runtime_reconcile_total{controller, result}`,
//! `controller_runtime_reconcile_time_seconds{controller}` and `workqueue_depth{name}`. One
//! registry per process: the process glue serves it on `/metrics`, and each component adds its
//! own series to the same registry.

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
    /// Done, and asked to look again later.
    Requeue,
    /// Failed (transient or permanent).
    Error,
}

impl ReconcileResult {
    /// The `result` label value, as controller-runtime writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Requeue => "requeue",
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

/// The controller series of one process; cheap to clone (clones share the series).
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    reconciles: Family<ResultLabels, Counter>,
    duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    depth: Family<QueueLabels, Gauge>,
}

impl ControllerMetrics {
    /// Creates the series and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = ControllerMetrics {
            reconciles: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            depth: Family::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Reconciliations per controller and result",
            metrics.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Time per reconciliation, per controller",
            metrics.duration.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Keys waiting in a controller's work queue",
            metrics.depth.clone(),
        );
        metrics
    }

    /// Series that are counted but never exposed (for controllers run without a registry).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    /// Counts one reconcile of `controller`.
    pub fn observe(&self, controller: &str, result: ReconcileResult, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: result.as_str().to_string(),
            })
            .inc();
        self.duration
            .get_or_create(&ControllerLabels {
                controller: controller.to_string(),
            })
            .observe(took.as_secs_f64());
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
    fn queue_depth_is_a_gauge_per_queue() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.set_depth("q", 5);
        m.set_depth("q", 2);
        assert!(encode(&registry).contains("workqueue_depth{name=\"q\"} 2"));
    }
}
