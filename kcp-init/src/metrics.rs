//! The agent's own metrics per InitTarget, in the process's `prometheus-client` registry:
//! `kcp_init_clusters_initialized_total`, `kcp_init_cluster_failures_total`,
//! `kcp_init_clusters_pending` and `kcp_init_initialization_duration_seconds`. The runtime's
//! per-controller series (`controller_runtime_reconcile_total{controller="inittarget/<name>"}`,
//! ...) come from [`kcp_core::runtime::ControllerMetrics`] in the same registry.

use std::sync::Mutex;
use std::time::Duration;

use kcp_core::runtime::ControllerMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upper bounds (seconds) of the initialization-duration histogram buckets.
const BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    target: String,
}

fn target(name: &str) -> TargetLabels {
    TargetLabels {
        target: name.to_string(),
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The metrics of one agent.
#[derive(Debug)]
pub struct Metrics {
    initialized: Family<TargetLabels, Counter>,
    failures: Family<TargetLabels, Counter>,
    pending: Family<TargetLabels, Gauge>,
    duration: Family<TargetLabels, Histogram, fn() -> Histogram>,
    controllers: ControllerMetrics,
    /// Where the series live when the agent was not given a registry (tests, benches).
    own: Option<Mutex<Registry>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Metrics in a registry of their own (see [`Metrics::render`]).
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let mut metrics = Self::register(&mut registry);
        metrics.own = Some(Mutex::new(registry));
        metrics
    }

    /// Metrics registered in the process's `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Metrics {
            initialized: Family::default(),
            failures: Family::default(),
            pending: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            controllers: ControllerMetrics::register(registry),
            own: None,
        };
        registry.register(
            "kcp_init_clusters_initialized",
            "Logical clusters initialized (initializer removed)",
            metrics.initialized.clone(),
        );
        registry.register(
            "kcp_init_cluster_failures",
            "Initialization attempts that failed permanently (template, invalid object, forbidden)",
            metrics.failures.clone(),
        );
        registry.register(
            "kcp_init_clusters_pending",
            "Logical clusters that still carry the initializer",
            metrics.pending.clone(),
        );
        registry.register(
            "kcp_init_initialization_duration_seconds",
            "Time of the attempt that removed the initializer",
            metrics.duration.clone(),
        );
        metrics
    }

    /// The runtime's per-controller series.
    pub fn controllers(&self) -> &ControllerMetrics {
        &self.controllers
    }

    /// A cluster of `target` finished initializing after `took`.
    pub fn initialized(&self, target_name: &str, took: Duration) {
        self.initialized.get_or_create(&target(target_name)).inc();
        self.duration
            .get_or_create(&target(target_name))
            .observe(took.as_secs_f64());
    }

    /// An attempt for a cluster of `target` failed permanently.
    pub fn failed(&self, target_name: &str) {
        self.failures.get_or_create(&target(target_name)).inc();
    }

    /// How many clusters of `target` wait for initialization.
    pub fn set_pending(&self, target_name: &str, pending: u64) {
        self.pending
            .get_or_create(&target(target_name))
            .set(i64::try_from(pending).unwrap_or(i64::MAX));
    }

    /// Clusters of `target` initialized so far by this process.
    pub fn initialized_count(&self, target_name: &str) -> u64 {
        self.initialized.get_or_create(&target(target_name)).get()
    }

    /// The text exposition of metrics created by [`Metrics::new`]; empty for metrics
    /// registered in a process registry (that registry is served instead).
    pub fn render(&self) -> String {
        match &self.own {
            Some(registry) => match registry.lock() {
                Ok(g) => kcp_core::runtime::metrics::encode(&g),
                Err(poisoned) => kcp_core::runtime::metrics::encode(&poisoned.into_inner()),
            },
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initializations_count_and_fall_into_duration_buckets() {
        let m = Metrics::new();
        m.initialized("t", Duration::from_millis(300));
        let text = m.render();
        assert!(
            text.contains("kcp_init_clusters_initialized_total{target=\"t\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "kcp_init_initialization_duration_seconds_bucket{le=\"0.25\",target=\"t\"} 0"
            ),
            "{text}"
        );
        assert!(text.contains(
            "kcp_init_initialization_duration_seconds_bucket{le=\"0.5\",target=\"t\"} 1"
        ));
    }

    #[test]
    fn pending_is_a_gauge_that_can_go_down() {
        let m = Metrics::new();
        m.set_pending("t", 3);
        m.set_pending("t", 1);
        assert!(
            m.render()
                .contains("kcp_init_clusters_pending{target=\"t\"} 1")
        );
    }

    #[test]
    fn failures_are_counted_per_target() {
        let m = Metrics::new();
        m.failed("a");
        assert!(
            m.render()
                .contains("kcp_init_cluster_failures_total{target=\"a\"} 1")
        );
    }
}
