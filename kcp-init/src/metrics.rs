//! Agent metrics per InitTarget, rendered in the Prometheus text format: clusters initialized,
//! failed attempts, clusters pending, and how long initializations took.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the initialization-duration histogram buckets.
const BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

#[derive(Debug, Default, Clone)]
struct TargetMetrics {
    initialized: u64,
    failed: u64,
    pending: u64,
    bucket_counts: [u64; BUCKETS.len()],
    duration_sum: f64,
}

/// The metrics of one agent process.
#[derive(Debug, Default)]
pub struct Metrics {
    targets: Mutex<BTreeMap<String, TargetMetrics>>,
}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, target: &str, f: impl FnOnce(&mut TargetMetrics) -> T) -> T {
        let mut targets = match self.targets.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(targets.entry(target.to_string()).or_default())
    }

    /// A cluster of `target` finished initializing after `took`.
    pub fn initialized(&self, target: &str, took: Duration) {
        let secs = took.as_secs_f64();
        self.with(target, |m| {
            m.initialized += 1;
            m.duration_sum += secs;
            for (i, bound) in BUCKETS.iter().enumerate() {
                if secs <= *bound {
                    m.bucket_counts[i] += 1;
                }
            }
        });
    }

    /// An attempt for a cluster of `target` failed permanently.
    pub fn failed(&self, target: &str) {
        self.with(target, |m| m.failed += 1);
    }

    /// How many clusters of `target` wait for initialization.
    pub fn set_pending(&self, target: &str, pending: u64) {
        self.with(target, |m| m.pending = pending);
    }

    /// Clusters of `target` initialized so far by this process.
    pub fn initialized_count(&self, target: &str) -> u64 {
        self.with(target, |m| m.initialized)
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let targets = match self.targets.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let mut out = String::new();
        let mut family =
            |name: &str, kind: &str, help: &str, value: &dyn Fn(&TargetMetrics) -> u64| {
                let _ = writeln!(out, "# HELP {name} {help}");
                let _ = writeln!(out, "# TYPE {name} {kind}");
                for (target, m) in &targets {
                    let _ = writeln!(out, "{name}{{target=\"{}\"}} {}", escape(target), value(m));
                }
            };
        family(
            "kcp_init_clusters_initialized_total",
            "counter",
            "Logical clusters initialized (initializer removed).",
            &|m| m.initialized,
        );
        family(
            "kcp_init_cluster_failures_total",
            "counter",
            "Initialization attempts that failed permanently (template, invalid object, forbidden).",
            &|m| m.failed,
        );
        family(
            "kcp_init_clusters_pending",
            "gauge",
            "Logical clusters that still carry the initializer.",
            &|m| m.pending,
        );
        let name = "kcp_init_initialization_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from the first attempt to the removal of the initializer."
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (target, m) in &targets {
            let t = escape(target);
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{name}_bucket{{target=\"{t}\",le=\"{bound}\"}} {}",
                    m.bucket_counts[i]
                );
            }
            let _ = writeln!(
                out,
                "{name}_bucket{{target=\"{t}\",le=\"+Inf\"}} {}",
                m.initialized
            );
            let _ = writeln!(out, "{name}_sum{{target=\"{t}\"}} {}", m.duration_sum);
            let _ = writeln!(out, "{name}_count{{target=\"{t}\"}} {}", m.initialized);
        }
        out
    }
}

/// Escapes a label value for the text format.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
        assert!(text.contains(
            "kcp_init_initialization_duration_seconds_bucket{target=\"t\",le=\"0.25\"} 0"
        ));
        assert!(text.contains(
            "kcp_init_initialization_duration_seconds_bucket{target=\"t\",le=\"0.5\"} 1"
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
}
