//! Phases and conditions: what the controller observed, written into each kind's status.
//!
//! The reconciler describes what it saw as an [`Observation`]; [`observe_upstream`] and
//! [`observe_capi`] turn it into the status of a KINDCluster (upstream's `ready`,
//! `failureMessage` and capped event history, plus `phase`) and of a KindCluster (both CAPI
//! contract versions, Kubernetes conditions, deprecated failure fields). Pure functions: the
//! caller decides the time, so transitions are testable.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kcp_core::runtime::{ConditionUpdate, set_condition};

use crate::api::capi::Initialization;
use crate::api::{KINDClusterStatus, KindClusterStatus, Phase};

/// Condition type: the cluster is usable (summary; copied by CAPI into `InfrastructureReady`).
pub const CONDITION_READY: &str = "Ready";
/// Condition type: the kind cluster exists.
pub const CONDITION_PROVISIONED: &str = "ClusterProvisioned";
/// Condition type: the kubeconfig Secret is up to date.
pub const CONDITION_KUBECONFIG: &str = "KubeconfigReady";
/// Condition type: reconciliation is paused (the annotation, or `Cluster.spec.paused`).
pub const CONDITION_PAUSED: &str = "Paused";

/// Condition and Event reasons.
pub mod reason {
    /// Waiting for CAPI to set the `Cluster` owner reference.
    pub const WAITING_FOR_CLUSTER_OWNER: &str = "WaitingForClusterOwner";
    /// `kind create cluster` is running.
    pub const PROVISIONING: &str = "Provisioning";
    /// The cluster exists; its kubeconfig is being published.
    pub const PROVISIONED: &str = "Provisioned";
    /// The cluster exists and its kubeconfig Secret is current.
    pub const READY: &str = "ClusterReady";
    /// Creating the cluster failed.
    pub const CREATE_FAILED: &str = "CreateFailed";
    /// The spec cannot be acted on.
    pub const INVALID_SPEC: &str = "InvalidSpec";
    /// Another object already asked for the same kind cluster name.
    pub const NAME_IN_USE: &str = "ClusterNameInUse";
    /// A kind cluster of that name exists but was not created for this object.
    pub const NOT_OWNED: &str = "ClusterNotOwned";
    /// An unmarked cluster this object's provider made was taken over.
    pub const ADOPTED: &str = "ClusterAdopted";
    /// The cluster disappeared out of band and is being created again.
    pub const MISSING: &str = "ClusterMissing";
    /// The object is being deleted.
    pub const DELETING: &str = "Deleting";
    /// Reconciliation is paused.
    pub const PAUSED: &str = "Paused";
    /// Reconciliation is not paused.
    pub const NOT_PAUSED: &str = "NotPaused";
}

/// What the controller saw and decided for one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The phase the object is in.
    pub phase: Phase,
    /// A CamelCase reason (see [`reason`]).
    pub reason: &'static str,
    /// A human-readable message (the failure, for failures).
    pub message: String,
    /// The kind cluster's name, once known.
    pub cluster_name: Option<String>,
    /// Whether the kubeconfig Secret is up to date (`None`: not looked at).
    pub kubeconfig_ready: Option<bool>,
    /// An entry for upstream's event history: (message, reason).
    pub history: Option<(String, String)>,
    /// The object's generation.
    pub generation: Option<i64>,
}

impl Observation {
    /// An observation of `phase` for `reason` with `message`.
    pub fn new(phase: Phase, reason: &'static str, message: impl Into<String>) -> Self {
        Observation {
            phase,
            reason,
            message: message.into(),
            cluster_name: None,
            kubeconfig_ready: None,
            history: None,
            generation: None,
        }
    }

    /// Sets the kind cluster name.
    pub fn cluster(mut self, name: &str) -> Self {
        self.cluster_name = Some(name.to_string());
        self
    }

    /// Adds an upstream history entry.
    pub fn history(mut self, message: &str, reason: impl Into<String>) -> Self {
        self.history = Some((message.to_string(), reason.into()));
        self
    }

    /// Sets whether the kubeconfig Secret is current.
    pub fn kubeconfig(mut self, ready: bool) -> Self {
        self.kubeconfig_ready = Some(ready);
        self
    }

    /// Sets the observed generation.
    pub fn generation(mut self, generation: Option<i64>) -> Self {
        self.generation = generation;
        self
    }
}

/// Writes `obs` into a KINDCluster's status.
pub fn observe_upstream(status: &mut KINDClusterStatus, obs: &Observation, now: Time) {
    status.phase = Some(obs.phase);
    status.ready = Some(obs.phase == Phase::Ready);
    status.failure_message = if obs.phase == Phase::Failed {
        obs.message.clone()
    } else {
        String::new()
    };
    if let Some((message, reason)) = &obs.history {
        status.record(message, reason, now);
    }
    status.observed_generation = obs.generation;
}

fn provisioned_condition(obs: &Observation) -> ConditionUpdate {
    match obs.phase {
        Phase::Provisioned | Phase::Ready => {
            ConditionUpdate::new(CONDITION_PROVISIONED, true, reason::PROVISIONED)
        }
        _ => ConditionUpdate::new(CONDITION_PROVISIONED, false, obs.reason).message(&obs.message),
    }
}

/// Writes `obs` into a KindCluster's status (`Paused` is set separately, by [`set_paused`]).
pub fn observe_capi(status: &mut KindClusterStatus, obs: &Observation, now: Time) {
    let ready = obs.phase == Phase::Ready;
    status.phase = Some(obs.phase);
    status.ready = ready;
    let was_provisioned = status
        .initialization
        .as_ref()
        .is_some_and(|i| i.provisioned == Some(true));
    if ready || was_provisioned {
        status.initialization = Some(Initialization {
            provisioned: Some(true),
        });
    }
    if obs.cluster_name.is_some() {
        status.cluster_name.clone_from(&obs.cluster_name);
    }
    let generation = obs.generation;
    let ready_condition = ConditionUpdate::new(CONDITION_READY, ready, obs.reason)
        .message(&obs.message)
        .generation(generation);
    set_condition(&mut status.conditions, ready_condition, now.clone());
    set_condition(
        &mut status.conditions,
        provisioned_condition(obs).generation(generation),
        now.clone(),
    );
    if let Some(kubeconfig) = obs.kubeconfig_ready {
        let (r, m) = if kubeconfig {
            (reason::READY, "the kubeconfig Secret is up to date")
        } else {
            (obs.reason, obs.message.as_str())
        };
        let update = ConditionUpdate::new(CONDITION_KUBECONFIG, kubeconfig, r)
            .message(m)
            .generation(generation);
        set_condition(&mut status.conditions, update, now.clone());
    }
    let failed = obs.phase == Phase::Failed;
    status.failure_reason = failed.then(|| obs.reason.to_string());
    status.failure_message = failed.then(|| obs.message.clone());
    status.observed_generation = generation;
}

/// Sets the `Paused` condition of a KindCluster; `why` says what paused it.
pub fn set_paused(status: &mut KindClusterStatus, paused: bool, why: &str, now: Time) {
    let update = if paused {
        ConditionUpdate::new(CONDITION_PAUSED, true, reason::PAUSED).message(why)
    } else {
        ConditionUpdate::new(CONDITION_PAUSED, false, reason::NOT_PAUSED)
    };
    set_condition(&mut status.conditions, update, now);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Time {
        Time(jiff::Timestamp::from_second(second).unwrap())
    }

    fn ready() -> Observation {
        Observation::new(Phase::Ready, reason::READY, "kind cluster \"dev\" is ready")
            .cluster("dev")
            .kubeconfig(true)
            .history("Cluster was successfully created", "")
            .generation(Some(1))
    }

    #[test]
    fn a_ready_kind_cluster_satisfies_both_contract_versions() {
        let mut status = KindClusterStatus::default();
        observe_capi(&mut status, &ready(), at(10));
        insta::assert_yaml_snapshot!(status);
    }

    #[test]
    fn a_failed_create_fills_the_deprecated_failure_fields() {
        let mut status = KindClusterStatus::default();
        let obs = Observation::new(
            Phase::Failed,
            reason::CREATE_FAILED,
            "docker is not running",
        );
        observe_capi(&mut status, &obs, at(10));
        insta::assert_yaml_snapshot!(status);
    }

    #[test]
    fn provisioned_stays_true_once_reached() {
        let mut status = KindClusterStatus::default();
        observe_capi(&mut status, &ready(), at(10));
        let missing = Observation::new(Phase::Provisioning, reason::MISSING, "recreating");
        observe_capi(&mut status, &missing, at(20));
        assert!(!status.ready);
        assert_eq!(
            status.initialization.and_then(|i| i.provisioned),
            Some(true)
        );
    }

    #[test]
    fn the_upstream_status_keeps_ready_failure_and_history() {
        let mut status = KINDClusterStatus::default();
        let failed = Observation::new(Phase::Failed, reason::CREATE_FAILED, "boom")
            .history("Cluster cannot be created", "boom");
        observe_upstream(&mut status, &failed, at(5));
        observe_upstream(&mut status, &ready(), at(10));
        insta::assert_yaml_snapshot!(status);
    }

    #[test]
    fn a_repeated_failure_is_one_history_entry() {
        let mut status = KINDClusterStatus::default();
        let failed = Observation::new(Phase::Failed, reason::CREATE_FAILED, "boom")
            .history("Cluster cannot be created", "boom");
        observe_upstream(&mut status, &failed, at(5));
        observe_upstream(&mut status, &failed, at(6));
        assert_eq!(status.conditions.len(), 1);
    }

    #[test]
    fn the_history_keeps_the_newest_ten_entries() {
        let mut status = KINDClusterStatus::default();
        for i in 0..15 {
            status.record("Cluster cannot be created", &format!("attempt {i}"), at(i));
        }
        assert_eq!(status.conditions.len(), crate::api::upstream::HISTORY_LIMIT);
        assert_eq!(status.conditions[0].reason, "attempt 5");
        assert_eq!(status.conditions[9].reason, "attempt 14");
    }

    #[test]
    fn pausing_sets_a_paused_condition() {
        let mut status = KindClusterStatus::default();
        set_paused(&mut status, true, "the Cluster has spec.paused", at(1));
        assert!(kcp_core::runtime::conditions::is_true(
            &status.conditions,
            CONDITION_PAUSED
        ));
        set_paused(&mut status, false, "", at(2));
        assert!(!kcp_core::runtime::conditions::is_true(
            &status.conditions,
            CONDITION_PAUSED
        ));
    }
}
