//! The provider's own metrics, in the process's `prometheus-client` registry:
//! `capi_agent_selection_duration_seconds` (listing, ranking and claiming an Agent),
//! `capi_agent_claims_total{result}` (claimed, conflict, none), and
//! `capi_agent_unbind_duration_seconds` (from the start of deletion to the Agent's release),
//! plus the runtime's per-controller series.

use std::time::Duration;

use kcp_core::runtime::ControllerMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How a claim attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimResult {
    /// An Agent was bound.
    Claimed,
    /// Another AgentMachine bound the Agent first (409).
    Conflict,
    /// No eligible Agent.
    NoneEligible,
}

impl ClaimResult {
    fn as_str(self) -> &'static str {
        match self {
            ClaimResult::Claimed => "claimed",
            ClaimResult::Conflict => "conflict",
            ClaimResult::NoneEligible => "none",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: String,
}

/// The provider's metrics; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    selection: Histogram,
    unbind: Histogram,
    claims: Family<ResultLabels, Counter>,
    /// The runtime's per-controller series.
    pub controllers: ControllerMetrics,
}

impl Metrics {
    /// Creates the series and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Metrics {
            // 100 µs .. ~3 s
            selection: Histogram::new(exponential_buckets(0.0001, 2.0, 15)),
            // 1 s .. ~4.5 h
            unbind: Histogram::new(exponential_buckets(1.0, 2.0, 15)),
            claims: Family::default(),
            controllers: ControllerMetrics::register(registry),
        };
        registry.register(
            "capi_agent_selection_duration_seconds",
            "Time to list, rank and claim an Agent for an AgentMachine",
            metrics.selection.clone(),
        );
        registry.register(
            "capi_agent_unbind_duration_seconds",
            "Time from the start of a Machine's deletion to its Agent's release",
            metrics.unbind.clone(),
        );
        registry.register(
            "capi_agent_claims",
            "Agent claim attempts by result",
            metrics.claims.clone(),
        );
        metrics
    }

    /// Series that are counted but not exposed.
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    /// Records one selection.
    pub fn selection(&self, took: Duration) {
        self.selection.observe(took.as_secs_f64());
    }

    /// Records one unbind.
    pub fn unbind(&self, took: Duration) {
        self.unbind.observe(took.as_secs_f64());
    }

    /// Counts one claim attempt.
    pub fn claim(&self, result: ClaimResult) {
        self.claims
            .get_or_create(&ResultLabels {
                result: result.as_str().to_owned(),
            })
            .inc();
    }

    /// Claim attempts with `result` so far.
    pub fn claims(&self, result: ClaimResult) -> u64 {
        self.claims
            .get_or_create(&ResultLabels {
                result: result.as_str().to_owned(),
            })
            .get()
    }
}
