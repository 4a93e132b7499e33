//! Upstream's metrics, in the process's `prometheus-client` registry:
//! `kcp_operator_{rootshard,shard,frontproxy}_count{phase,namespace}`,
//! `kcp_operator_{cacheserver,kubeconfig,virtualworkspace}_count{namespace}`,
//! `kcp_operator_reconciliation_duration_seconds{controller,result}`,
//! `kcp_operator_reconciliation_errors_total{controller,error_type}` and
//! `kcp_operator_condition_status{resource_type,resource_name,namespace,condition_type}`
//! (1 when the condition is True, else 0). The counts and conditions are refreshed from the
//! controllers' caches (every 30 s, as upstream).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::runtime::metrics::ControllerMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

const BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: String,
    namespace: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabels {
    namespace: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: String,
    error_type: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionLabels {
    resource_type: String,
    resource_name: String,
    namespace: String,
    condition_type: String,
}

/// The kinds counted by phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhasedKind {
    /// RootShard.
    RootShard,
    /// Shard.
    Shard,
    /// FrontProxy.
    FrontProxy,
}

/// The kinds counted by namespace only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountedKind {
    /// CacheServer.
    CacheServer,
    /// Kubeconfig.
    Kubeconfig,
    /// VirtualWorkspace.
    VirtualWorkspace,
}

/// kcp-operator's metrics.
#[derive(Debug, Clone)]
pub struct Metrics {
    phased: [Family<PhaseLabels, Gauge>; 3],
    counted: [Family<NamespaceLabels, Gauge>; 3],
    duration: Family<ResultLabels, Histogram, fn() -> Histogram>,
    errors: Family<ErrorLabels, Counter>,
    conditions: Family<ConditionLabels, Gauge>,
    /// controller-runtime's series (`controller_runtime_*`, `workqueue_*`), beside upstream's.
    controllers: ControllerMetrics,
}

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

impl Metrics {
    /// How often the counts and conditions are refreshed.
    pub const REFRESH: Duration = Duration::from_secs(30);

    /// Registers the metrics in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Metrics {
            phased: Default::default(),
            counted: Default::default(),
            duration: Family::new_with_constructor(histogram),
            errors: Family::default(),
            conditions: Family::default(),
            controllers: ControllerMetrics::register(registry),
        };
        for (family, kind) in m.phased.iter().zip(["rootshard", "shard", "frontproxy"]) {
            registry.register(
                format!("kcp_operator_{kind}_count"),
                format!("Number of {kind} objects by phase"),
                family.clone(),
            );
        }
        for (family, kind) in
            m.counted
                .iter()
                .zip(["cacheserver", "kubeconfig", "virtualworkspace"])
        {
            registry.register(
                format!("kcp_operator_{kind}_count"),
                format!("Number of {kind} objects"),
                family.clone(),
            );
        }
        registry.register(
            "kcp_operator_reconciliation_duration_seconds",
            "Duration of reconciles",
            m.duration.clone(),
        );
        registry.register(
            "kcp_operator_reconciliation_errors",
            "Failed reconciles by error type",
            m.errors.clone(),
        );
        registry.register(
            "kcp_operator_condition_status",
            "1 when the condition is True, else 0",
            m.conditions.clone(),
        );
        m
    }

    /// controller-runtime's series, which each controller's harness counts into.
    pub fn controllers(&self) -> ControllerMetrics {
        self.controllers.clone()
    }

    /// Metrics registered nowhere (embedders that do not serve metrics, tests).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    /// Records one reconcile of `controller` in upstream's `kcp_operator_*` series: its
    /// duration and, when it failed, the error (controller-runtime's series are counted by the
    /// controller's [`kcp_core::runtime::Harness`]).
    pub fn observe(&self, controller: &str, took: Duration, error: Option<&str>) {
        let result = if error.is_some() { "error" } else { "success" };
        self.duration
            .get_or_create(&ResultLabels {
                controller: controller.into(),
                result: result.into(),
            })
            .observe(took.as_secs_f64());
        if let Some(error_type) = error {
            self.errors
                .get_or_create(&ErrorLabels {
                    controller: controller.into(),
                    error_type: error_type.into(),
                })
                .inc();
        }
    }

    /// Sets the counts of a phased kind from `(namespace, phase)` of every object.
    pub fn set_phased<'a>(
        &self,
        kind: PhasedKind,
        objects: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        let mut counts: BTreeMap<(String, String), i64> = BTreeMap::new();
        for (ns, phase) in objects {
            *counts.entry((ns.to_owned(), phase.to_owned())).or_default() += 1;
        }
        let family = &self.phased[kind as usize];
        family.clear();
        for ((namespace, phase), n) in counts {
            family
                .get_or_create(&PhaseLabels { phase, namespace })
                .set(n);
        }
    }

    /// Sets the counts of a kind from the namespace of every object.
    pub fn set_counted<'a>(
        &self,
        kind: CountedKind,
        namespaces: impl IntoIterator<Item = &'a str>,
    ) {
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        for ns in namespaces {
            *counts.entry(ns.to_owned()).or_default() += 1;
        }
        let family = &self.counted[kind as usize];
        family.clear();
        for (namespace, n) in counts {
            family.get_or_create(&NamespaceLabels { namespace }).set(n);
        }
    }

    /// Sets the condition series of one object.
    pub fn set_conditions(
        &self,
        resource_type: &str,
        namespace: &str,
        name: &str,
        conditions: &[Condition],
    ) {
        for c in conditions {
            let labels = ConditionLabels {
                resource_type: resource_type.into(),
                resource_name: name.into(),
                namespace: namespace.into(),
                condition_type: c.type_.clone(),
            };
            self.conditions
                .get_or_create(&labels)
                .set(i64::from(c.status == "True"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    #[test]
    fn counts_and_reconciles_are_exposed_under_upstream_names() {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.set_phased(
            PhasedKind::RootShard,
            [
                ("kcp", "Running"),
                ("kcp", "Running"),
                ("x", "Provisioning"),
            ],
        );
        m.set_counted(CountedKind::Kubeconfig, ["kcp"]);
        m.observe(
            "rootshard",
            Duration::from_millis(3),
            Some("ReferenceNotFound"),
        );
        let text = encode(&registry);
        assert!(
            text.contains(r#"kcp_operator_rootshard_count{phase="Running",namespace="kcp"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"kcp_operator_kubeconfig_count{namespace="kcp"} 1"#));
        assert!(text.contains(r#"kcp_operator_reconciliation_errors_total{controller="rootshard",error_type="ReferenceNotFound"} 1"#));
        assert!(text.contains("kcp_operator_reconciliation_duration_seconds_count"));
    }
}
