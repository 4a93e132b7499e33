//! Deletion of an AgentMachine as an explicit state machine around the Machine's
//! pre-terminate hook (`pre-terminate.delete.hook.machine.cluster.x-k8s.io/agentmachine`).
//!
//! CAPI drains the Machine, then waits at the pre-terminate hook; the provider unbinds the
//! Agent there (assisted-service reboots the host into discovery), waits until the host is
//! back in an unbound state, then removes the hook, and CAPI deletes the AgentMachine. [`step`]
//! decides the next action from what is observed, nothing else:
//!
//! - the hook wait is detected from the v1beta2 `Deleting`/`WaitingForPreTerminateHook`
//!   condition *and* from the v1beta1 `PreTerminateDeleteHookSucceeded` condition, wherever it
//!   is (`status.conditions` or `status.deprecated.v1beta1.conditions`);
//! - the finalizer is released when the Machine is gone, when the hook is done or absent on a
//!   Machine past the hook phase, or when the AgentMachine is deleted without its Machine being
//!   deleted (after unbinding);
//! - the unbind wait is bounded ([`DEFAULT_UNBIND_TIMEOUT`], counted from the unbind, not from
//!   the Machine's deletion): past it the hook and finalizer are released anyway and the
//!   AgentMachine says so (condition `Deleting`, reason `UnbindTimedOut`), so deletion is never
//!   stuck.

use std::time::Duration;

use crate::api::PRE_TERMINATE_HOOK;
use crate::binding::is_bound;
use crate::foreign::{Agent, CapiCondition, Machine, UNBOUND_STATES};

/// How long deletion waits for an unbound Agent to return to discovery.
pub const DEFAULT_UNBIND_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How often the unbind wait looks again.
pub const UNBIND_POLL: Duration = Duration::from_secs(5);

/// Where the owning Machine is in its deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPhase {
    /// The Machine does not exist (any more).
    Gone,
    /// The Machine is not being deleted.
    Live,
    /// Being deleted, not yet at the pre-terminate hook (draining).
    BeforeHook,
    /// Parked at the pre-terminate hook: our turn.
    AtHook,
    /// Past the hook (it succeeded, or our annotation is not there to wait on).
    PastHook,
}

fn find<'a>(conditions: &'a [CapiCondition], type_: &str) -> Option<&'a CapiCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The hook phase of `machine` (`None`: it is gone).
pub fn hook_phase(machine: Option<&Machine>) -> HookPhase {
    let Some(machine) = machine else {
        return HookPhase::Gone;
    };
    if machine.metadata.deletion_timestamp.is_none() {
        return HookPhase::Live;
    }
    let status = machine.status.clone().unwrap_or_default();
    if find(&status.conditions, "Deleting")
        .is_some_and(|c| c.reason == "WaitingForPreTerminateHook")
    {
        return HookPhase::AtHook;
    }
    let legacy = status
        .deprecated
        .and_then(|d| d.v1beta1)
        .map(|v| v.conditions)
        .unwrap_or_default();
    let hook = find(&status.conditions, "PreTerminateDeleteHookSucceeded")
        .or_else(|| find(&legacy, "PreTerminateDeleteHookSucceeded"));
    match hook.map(|c| c.status.as_str()) {
        Some("False") => return HookPhase::AtHook,
        Some("True") => return HookPhase::PastHook,
        _ => {}
    }
    if has_hook(machine) {
        HookPhase::BeforeHook
    } else {
        HookPhase::PastHook
    }
}

/// Whether the Machine carries our pre-terminate hook annotation.
pub fn has_hook(machine: &Machine) -> bool {
    machine
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(PRE_TERMINATE_HOOK))
}

/// The Agent as deletion sees it.
#[derive(Debug, Clone, Copy)]
pub enum AgentView<'a> {
    /// The AgentMachine has no `status.agentRef`.
    None,
    /// The referenced Agent does not exist.
    Missing,
    /// The referenced Agent.
    Present(&'a Agent),
}

/// Why the hook and the finalizer are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    /// The Machine is gone.
    MachineGone,
    /// CAPI reports the hook done, or the Machine is past it.
    PastHook,
    /// No Agent was ever bound.
    NoAgent,
    /// The bound Agent no longer exists.
    AgentMissing,
    /// The Agent is back in an unbound (or error) state.
    AgentUnbound,
    /// The object is paused: release without unbinding (backup/restore must not unbind hosts).
    Paused,
    /// The unbind wait exceeded its bound.
    TimedOut,
}

/// The next deletion action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing is being deleted: reconcile normally.
    NotDeleting,
    /// The Machine is draining: wait (a Machine event wakes us).
    WaitForHook,
    /// Remove the binding from the Agent.
    Unbind,
    /// The Agent is unbinding; look again after [`UNBIND_POLL`].
    WaitForUnbound,
    /// Remove the hook annotation (if the Machine exists) and the finalizer.
    Release(ReleaseReason),
}

/// What [`step`] looks at.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The Machine's hook phase.
    pub phase: HookPhase,
    /// Whether the AgentMachine has a deletionTimestamp.
    pub agent_machine_deleting: bool,
    /// Whether the AgentMachine is paused.
    pub paused: bool,
    /// The Agent.
    pub agent: AgentView<'a>,
    /// How long the unbind wait has been going on: since this provider started unbinding
    /// (`UNBIND_STARTED_ANNOTATION`), not since the Machine's deletion, whose drain can take
    /// longer than the whole bound.
    pub unbinding_for: Duration,
    /// The bound on the unbind wait.
    pub timeout: Duration,
}

/// The next deletion action for what is observed.
pub fn step(o: &Observed<'_>) -> Step {
    let must_deprovision = match o.phase {
        // Beyond upstream, which releases at once and leaves the host bound to a cluster that
        // no longer has its Machine: a bound Agent is unbound first (no hook to wait at).
        HookPhase::Gone => {
            return match o.agent {
                AgentView::Present(agent) if is_bound(agent) && !o.paused => Step::Unbind,
                _ => Step::Release(ReleaseReason::MachineGone),
            };
        }
        HookPhase::PastHook => return Step::Release(ReleaseReason::PastHook),
        HookPhase::AtHook => true,
        // An AgentMachine deleted while its Machine lives: deprovision now, nothing to wait on.
        HookPhase::Live | HookPhase::BeforeHook => o.agent_machine_deleting,
    };
    if !must_deprovision {
        return if o.phase == HookPhase::Live {
            Step::NotDeleting
        } else {
            Step::WaitForHook
        };
    }
    if o.paused {
        return Step::Release(ReleaseReason::Paused);
    }
    match o.agent {
        AgentView::None => Step::Release(ReleaseReason::NoAgent),
        AgentView::Missing => Step::Release(ReleaseReason::AgentMissing),
        AgentView::Present(agent) if is_bound(agent) => Step::Unbind,
        AgentView::Present(agent) if UNBOUND_STATES.contains(&agent.state()) => {
            Step::Release(ReleaseReason::AgentUnbound)
        }
        AgentView::Present(_) if o.unbinding_for >= o.timeout => {
            Step::Release(ReleaseReason::TimedOut)
        }
        AgentView::Present(_) => Step::WaitForUnbound,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::foreign::{
        AgentSpec, AgentStatus, DebugInfo, Deprecated, DeprecatedV1Beta1, MachineSpec,
        MachineStatus,
    };

    fn machine(deleting: bool, hook: bool, conditions: Vec<CapiCondition>) -> Machine {
        let mut m = Machine::new("m", MachineSpec::default());
        if deleting {
            m.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        }
        if hook {
            m.metadata.annotations = Some([(PRE_TERMINATE_HOOK.to_string(), String::new())].into());
        }
        m.status = Some(MachineStatus {
            conditions,
            deprecated: None,
        });
        m
    }

    fn cond(type_: &str, status: &str, reason: &str) -> CapiCondition {
        CapiCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
        }
    }

    fn agent(bound: bool, state: &str) -> Agent {
        let mut a = Agent::new("a", AgentSpec::default());
        if bound {
            a.metadata.labels = Some([("agentMachineRef".to_string(), "m".to_string())].into());
        }
        a.status = Some(AgentStatus {
            debug_info: DebugInfo {
                state: state.into(),
            },
            ..AgentStatus::default()
        });
        a
    }

    fn observed<'a>(phase: HookPhase, agent: AgentView<'a>) -> Observed<'a> {
        Observed {
            phase,
            agent_machine_deleting: false,
            paused: false,
            agent,
            unbinding_for: Duration::ZERO,
            timeout: DEFAULT_UNBIND_TIMEOUT,
        }
    }

    #[test]
    fn the_v1beta2_deleting_condition_means_waiting_at_the_hook() {
        let m = machine(
            true,
            true,
            vec![cond("Deleting", "True", "WaitingForPreTerminateHook")],
        );
        assert_eq!(hook_phase(Some(&m)), HookPhase::AtHook);
    }

    #[test]
    fn the_legacy_condition_is_read_from_the_deprecated_section() {
        let mut m = machine(true, true, vec![cond("Deleting", "True", "DrainingNode")]);
        m.status.as_mut().unwrap().deprecated = Some(Deprecated {
            v1beta1: Some(DeprecatedV1Beta1 {
                conditions: vec![cond(
                    "PreTerminateDeleteHookSucceeded",
                    "False",
                    "WaitingExternalHook",
                )],
            }),
        });
        assert_eq!(hook_phase(Some(&m)), HookPhase::AtHook);
        m.status
            .as_mut()
            .unwrap()
            .deprecated
            .as_mut()
            .unwrap()
            .v1beta1
            .as_mut()
            .unwrap()
            .conditions[0]
            .status = "True".into();
        assert_eq!(hook_phase(Some(&m)), HookPhase::PastHook);
    }

    #[test]
    fn a_draining_machine_with_the_hook_is_before_the_hook() {
        let m = machine(true, true, vec![cond("Deleting", "True", "DrainingNode")]);
        assert_eq!(hook_phase(Some(&m)), HookPhase::BeforeHook);
    }

    #[test]
    fn a_deleting_machine_without_our_hook_is_past_it() {
        let m = machine(
            true,
            false,
            vec![cond("Deleting", "True", "WaitingForInfrastructure")],
        );
        assert_eq!(hook_phase(Some(&m)), HookPhase::PastHook);
    }

    #[test]
    fn a_gone_machine_releases_the_finalizer() {
        assert_eq!(
            step(&observed(HookPhase::Gone, AgentView::None)),
            Step::Release(ReleaseReason::MachineGone)
        );
    }

    #[test]
    fn a_bound_agent_of_a_gone_machine_is_unbound_before_the_finalizer_goes() {
        let bound = agent(true, "installed");
        assert_eq!(
            step(&observed(HookPhase::Gone, AgentView::Present(&bound))),
            Step::Unbind
        );
        let unbinding = agent(false, "unbinding");
        assert_eq!(
            step(&observed(HookPhase::Gone, AgentView::Present(&unbinding))),
            Step::Release(ReleaseReason::MachineGone)
        );
    }

    #[test]
    fn a_bound_agent_at_the_hook_is_unbound_then_waited_for() {
        let bound = agent(true, "installed");
        assert_eq!(
            step(&observed(HookPhase::AtHook, AgentView::Present(&bound))),
            Step::Unbind
        );
        let unbinding = agent(false, "unbinding");
        assert_eq!(
            step(&observed(HookPhase::AtHook, AgentView::Present(&unbinding))),
            Step::WaitForUnbound
        );
    }

    #[test]
    fn terminal_unbound_states_release() {
        for state in [
            "discovering-unbound",
            "unbinding-pending-user-action",
            "error",
        ] {
            let a = agent(false, state);
            assert_eq!(
                step(&observed(HookPhase::AtHook, AgentView::Present(&a))),
                Step::Release(ReleaseReason::AgentUnbound),
                "{state}"
            );
        }
    }

    #[test]
    fn no_agent_or_a_missing_agent_releases() {
        assert_eq!(
            step(&observed(HookPhase::AtHook, AgentView::None)),
            Step::Release(ReleaseReason::NoAgent)
        );
        assert_eq!(
            step(&observed(HookPhase::AtHook, AgentView::Missing)),
            Step::Release(ReleaseReason::AgentMissing)
        );
    }

    #[test]
    fn paused_releases_without_unbinding() {
        let bound = agent(true, "installed");
        let mut o = observed(HookPhase::AtHook, AgentView::Present(&bound));
        o.paused = true;
        assert_eq!(step(&o), Step::Release(ReleaseReason::Paused));
        let live = observed(HookPhase::Live, AgentView::Present(&bound));
        assert_eq!(
            step(&Observed {
                paused: true,
                ..live
            }),
            Step::NotDeleting
        );
    }

    #[test]
    fn the_unbind_wait_is_bounded() {
        let unbinding = agent(false, "unbinding");
        let mut o = observed(HookPhase::AtHook, AgentView::Present(&unbinding));
        o.unbinding_for = DEFAULT_UNBIND_TIMEOUT;
        assert_eq!(step(&o), Step::Release(ReleaseReason::TimedOut));
    }

    #[test]
    fn an_agent_machine_deleted_under_a_live_machine_deprovisions() {
        let bound = agent(true, "installed");
        let mut o = observed(HookPhase::Live, AgentView::Present(&bound));
        assert_eq!(step(&o), Step::NotDeleting);
        o.agent_machine_deleting = true;
        assert_eq!(step(&o), Step::Unbind);
    }

    #[test]
    fn a_draining_machine_waits_for_the_hook() {
        let bound = agent(true, "installed");
        assert_eq!(
            step(&observed(HookPhase::BeforeHook, AgentView::Present(&bound))),
            Step::WaitForHook
        );
    }
}
