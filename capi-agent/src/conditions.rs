//! The AgentMachine's conditions as a pure function of its reservation and its Agent.
//!
//! `AgentReserved` says whether an Agent is bound; `AgentSpecSynced`, `AgentValidated`,
//! `AgentRequirementsMet` and `Installed` copy the Agent's `SpecSynced`, `Validated`,
//! `RequirementsMet` and `Installed` (missing: False/`ConditionNotFound`; True:
//! True/`AgentConditionTrue`; otherwise False with the Agent's reason and message); `Ready`
//! summarizes the five. Unlike upstream, the conditions stay live after Ready (an Agent that
//! stops reporting `Installed` makes the AgentMachine not ready again).

use kcp_core::runtime::{ConditionStatus, ConditionUpdate};

use crate::foreign::Agent;

/// Condition type: an Agent is bound.
pub const AGENT_RESERVED: &str = "AgentReserved";
/// Condition type: copied from the Agent's `SpecSynced`.
pub const AGENT_SPEC_SYNCED: &str = "AgentSpecSynced";
/// Condition type: copied from the Agent's `Validated`.
pub const AGENT_VALIDATED: &str = "AgentValidated";
/// Condition type: copied from the Agent's `RequirementsMet`.
pub const AGENT_REQUIREMENTS_MET: &str = "AgentRequirementsMet";
/// Condition type: copied from the Agent's `Installed`.
pub const INSTALLED: &str = "Installed";
/// Condition type: the summary.
pub const READY: &str = "Ready";
/// Condition type: reconciliation is paused (annotation or `Cluster.spec.paused`).
pub const PAUSED: &str = "Paused";
/// Condition type (AgentMachine): the bootstrap data was read and its token Secret written.
pub const BOOTSTRAP_DATA_READY: &str = "BootstrapDataReady";
/// Condition type (AgentMachine): deletion progress.
pub const DELETING: &str = "Deleting";
/// Condition type (AgentCluster): the ClusterDeployment exists.
pub const CLUSTER_DEPLOYMENT_READY: &str = "ClusterDeploymentReady";
/// Condition type (AgentCluster): the AgentClusterInstall exists.
pub const AGENT_CLUSTER_INSTALL_READY: &str = "AgentClusterInstallReady";
/// Condition type (AgentCluster): the control-plane endpoint is known.
pub const CONTROL_PLANE_ENDPOINT_READY: &str = "ControlPlaneEndpointReady";

/// Reason: no Agent is bound because of an error (the message says which).
pub const REASON_AGENT_NOT_YET_FOUND: &str = "AgentNotYetFound";
/// Reason: no Agent is eligible.
pub const REASON_NO_SUITABLE_AGENTS: &str = "NoSuitableAgents";
/// Reason: an Agent is bound.
pub const REASON_AGENT_RESERVED: &str = "AgentReserved";
/// Reason: the copied Agent condition is True.
pub const REASON_AGENT_CONDITION_TRUE: &str = "AgentConditionTrue";
/// Reason: the Agent does not report the condition.
pub const REASON_CONDITION_NOT_FOUND: &str = "ConditionNotFound";

/// The copied conditions: (AgentMachine type, Agent type).
pub const COPIED: [(&str, &str); 4] = [
    (AGENT_SPEC_SYNCED, "SpecSynced"),
    (AGENT_VALIDATED, "Validated"),
    (AGENT_REQUIREMENTS_MET, "RequirementsMet"),
    (INSTALLED, "Installed"),
];

/// Where an AgentMachine stands with respect to an Agent.
#[derive(Debug, Clone, Copy)]
pub enum Reservation<'a> {
    /// No Agent: none eligible (`error: None`), or something prevented selection.
    NotReserved {
        /// What prevented selection, if anything.
        error: Option<&'a str>,
    },
    /// This Agent is bound.
    Reserved(&'a Agent),
}

/// The six conditions (AgentReserved, the four copied ones, Ready), in that order.
pub fn machine_conditions(reservation: Reservation<'_>) -> Vec<ConditionUpdate> {
    let mut out = Vec::with_capacity(6);
    match reservation {
        Reservation::NotReserved { error } => {
            let reserved = match error {
                Some(e) => ConditionUpdate::new(AGENT_RESERVED, false, REASON_AGENT_NOT_YET_FOUND)
                    .message(e),
                None => ConditionUpdate::new(AGENT_RESERVED, false, REASON_NO_SUITABLE_AGENTS)
                    .message("no Agent matches the selector and is approved, validated, connected and unbound"),
            };
            out.push(reserved);
            for (type_, _) in COPIED {
                out.push(
                    ConditionUpdate::new(type_, false, REASON_AGENT_NOT_YET_FOUND)
                        .message("Agent not yet reserved"),
                );
            }
        }
        Reservation::Reserved(agent) => {
            out.push(ConditionUpdate::new(
                AGENT_RESERVED,
                true,
                REASON_AGENT_RESERVED,
            ));
            for (type_, agent_type) in COPIED {
                out.push(copied(agent, type_, agent_type));
            }
        }
    }
    out.push(summary(&out));
    out
}

fn copied(agent: &Agent, type_: &str, agent_type: &str) -> ConditionUpdate {
    match agent.condition(agent_type) {
        None => ConditionUpdate::new(type_, false, REASON_CONDITION_NOT_FOUND)
            .message(format!("the Agent does not report {agent_type}")),
        Some(c) if c.status == "True" => {
            ConditionUpdate::new(type_, true, REASON_AGENT_CONDITION_TRUE)
        }
        Some(c) => {
            let reason = if c.reason.is_empty() {
                REASON_CONDITION_NOT_FOUND
            } else {
                &c.reason
            };
            ConditionUpdate::new(type_, false, reason).message(c.message.clone())
        }
    }
}

/// The summary `Ready`: True when every condition in `parts` is True; otherwise False with the
/// reason and message of the first that is not.
pub fn summary(parts: &[ConditionUpdate]) -> ConditionUpdate {
    match parts.iter().find(|c| c.status != ConditionStatus::True) {
        None => ConditionUpdate::new(READY, true, "Ready"),
        Some(c) => ConditionUpdate::new(READY, false, &c.reason).message(
            format!("{}: {}", c.type_, c.message)
                .trim_end_matches(": ")
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::{AgentCondition, AgentSpec, AgentStatus};

    fn agent(conditions: &[(&str, &str, &str)]) -> Agent {
        let mut a = Agent::new("a", AgentSpec::default());
        a.status = Some(AgentStatus {
            conditions: conditions
                .iter()
                .map(|(t, s, r)| AgentCondition {
                    type_: (*t).into(),
                    status: (*s).into(),
                    reason: (*r).into(),
                    message: format!("{t} is {s}"),
                })
                .collect(),
            ..AgentStatus::default()
        });
        a
    }

    fn brief(updates: &[ConditionUpdate]) -> Vec<(String, &'static str, String)> {
        updates
            .iter()
            .map(|c| (c.type_.clone(), c.status.as_str(), c.reason.clone()))
            .collect()
    }

    #[test]
    fn without_agents_everything_is_false_with_no_suitable_agents() {
        let c = machine_conditions(Reservation::NotReserved { error: None });
        insta::assert_debug_snapshot!(brief(&c));
    }

    #[test]
    fn an_error_is_the_reserved_message() {
        let c = machine_conditions(Reservation::NotReserved {
            error: Some("no cluster deployment reference"),
        });
        assert_eq!(c[0].reason, REASON_AGENT_NOT_YET_FOUND);
        assert_eq!(c[0].message, "no cluster deployment reference");
    }

    #[test]
    fn ready_follows_the_agent_conditions() {
        let all_true = agent(&[
            ("SpecSynced", "True", "x"),
            ("Validated", "True", "x"),
            ("RequirementsMet", "True", "x"),
            ("Installed", "True", "x"),
        ]);
        let c = machine_conditions(Reservation::Reserved(&all_true));
        assert_eq!(c[5].status, ConditionStatus::True);
    }

    #[test]
    fn a_missing_or_false_agent_condition_keeps_ready_false() {
        let partly = agent(&[
            ("SpecSynced", "True", "x"),
            ("Validated", "True", "x"),
            ("Installed", "False", "InstallationInProgress"),
        ]);
        let c = machine_conditions(Reservation::Reserved(&partly));
        insta::assert_debug_snapshot!(brief(&c));
    }
}
