//! Phases and conditions as pure functions (spec section 2.10), with kcp-rs's summary `Ready`
//! condition on every kind.
//!
//! * `Available` on a Compiled* object comes from its Deployment: not written while a
//!   required Secret is missing (`RequiredSecretsMissing`, naming them), missing
//!   (`DeploymentUnavailable`), up when `updatedReplicas == readyReplicas == spec.replicas`
//!   (`ReplicasUp`), else `ReplicasUnavailable`.
//! * Sources copy their Compiled* object's `Available` (or report it not rendered yet).
//! * Phases: `Deleting` while deleting, `Running` exactly when available, else
//!   `Provisioning`, for every kind alike (upstream's Shard never leaves `Running`, and its
//!   Kubeconfig is `Ready` before its Secret exists: spec section 9 item 8).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::runtime::conditions::{ConditionStatus, ConditionUpdate, find_condition};

use crate::api::{CONDITION_AVAILABLE, CONDITION_READY};

/// `Available` of a Compiled* object, from its Deployment `namespace/name`.
pub fn deployment_available(
    deployment: Option<&Deployment>,
    namespace: &str,
    name: &str,
) -> ConditionUpdate {
    let Some(dep) = deployment else {
        return ConditionUpdate::new(CONDITION_AVAILABLE, false, "DeploymentUnavailable")
            .message(format!("Deployment {namespace}/{name} does not exist."));
    };
    let wanted = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = dep.status.clone().unwrap_or_default();
    let updated = status.updated_replicas.unwrap_or(0);
    let ready = status.ready_replicas.unwrap_or(0);
    if updated == wanted && ready == wanted {
        ConditionUpdate::new(CONDITION_AVAILABLE, true, "ReplicasUp").message(format!(
            "Deployment {namespace}/{name} is fully up and running."
        ))
    } else {
        ConditionUpdate::new(CONDITION_AVAILABLE, false, "ReplicasUnavailable").message(format!(
            "Deployment {namespace}/{name} has {ready} of {wanted} replicas ready ({updated} updated)."
        ))
    }
}

/// `Available` of a Compiled* object whose Deployment `namespace/name` is not written because
/// required Secrets (`missing`, never empty) do not exist: names each of them.
pub fn required_secrets_missing(
    namespace: &str,
    name: &str,
    missing: &[String],
) -> ConditionUpdate {
    let list = missing
        .iter()
        .map(|s| format!("{namespace}/{s}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (noun, verb) = if missing.len() == 1 {
        ("Secret", "exists")
    } else {
        ("Secrets", "exist")
    };
    ConditionUpdate::new(CONDITION_AVAILABLE, false, REASON_REQUIRED_SECRETS_MISSING).message(
        format!(
            "Deployment {namespace}/{name} is not created until the required {noun} {list} {verb}."
        ),
    )
}

/// The `Available` reason while required Secrets are missing.
pub const REASON_REQUIRED_SECRETS_MISSING: &str = "RequiredSecretsMissing";

/// `Available` of a source object, copied from its Compiled* object's conditions.
pub fn copied_available(
    compiled: Option<&[Condition]>,
    compiled_kind: &str,
    name: &str,
) -> ConditionUpdate {
    match compiled.and_then(|c| find_condition(c, CONDITION_AVAILABLE)) {
        Some(c) => {
            let status = match c.status.as_str() {
                "True" => ConditionStatus::True,
                "False" => ConditionStatus::False,
                _ => ConditionStatus::Unknown,
            };
            ConditionUpdate::new(CONDITION_AVAILABLE, status, &c.reason).message(c.message.clone())
        }
        None => ConditionUpdate::new(CONDITION_AVAILABLE, false, "DeploymentUnavailable")
            .message(format!("{compiled_kind} {name} has not been rendered yet.")),
    }
}

/// The phase: `Deleting`, `Running` exactly when `available`, else `Provisioning`.
pub fn phase(deleting: bool, available: bool) -> &'static str {
    if deleting {
        "Deleting"
    } else if available {
        "Running"
    } else {
        "Provisioning"
    }
}

/// The summary `Ready` condition: true when every given condition is true; otherwise false
/// with the first failing condition's reason and message.
pub fn ready(conditions: &[&ConditionUpdate]) -> ConditionUpdate {
    match conditions
        .iter()
        .find(|c| c.status != ConditionStatus::True)
    {
        None => ConditionUpdate::new(CONDITION_READY, true, "AllConditionsTrue")
            .message("The object is ready."),
        Some(c) => ConditionUpdate::new(CONDITION_READY, false, &c.reason)
            .message(format!("{}: {}", c.type_, c.message)),
    }
}

/// The summary `Ready` condition of an object whose pass stopped on what its user wrote
/// (`reason` and `message` from [`crate::error::Error`]); the next pass that gets through
/// computes `Ready` again with [`ready`], which clears it.
pub fn stopped(reason: &str, message: impl Into<String>) -> ConditionUpdate {
    ConditionUpdate::new(CONDITION_READY, false, reason).message(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus};

    fn dep(replicas: i32, updated: i32, ready: i32) -> Deployment {
        Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                updated_replicas: Some(updated),
                ready_replicas: Some(ready),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn missing_required_secrets_are_each_named_with_their_namespace() {
        let missing = ["a".to_owned(), "b".to_owned()];
        let c = required_secrets_missing("kcp", "root-kcp", &missing);
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.reason, REASON_REQUIRED_SECRETS_MISSING);
        assert_eq!(
            c.message,
            "Deployment kcp/root-kcp is not created until the required Secrets kcp/a, kcp/b exist."
        );
    }

    #[test]
    fn available_needs_every_replica_updated_and_ready() {
        assert_eq!(
            deployment_available(Some(&dep(2, 2, 2)), "kcp", "x").reason,
            "ReplicasUp"
        );
        assert_eq!(
            deployment_available(Some(&dep(2, 2, 1)), "kcp", "x").reason,
            "ReplicasUnavailable"
        );
        let missing = deployment_available(None, "kcp", "root-kcp");
        assert_eq!(missing.reason, "DeploymentUnavailable");
        assert_eq!(missing.message, "Deployment kcp/root-kcp does not exist.");
    }

    #[test]
    fn shard_phase_falls_back_from_running_when_unavailable() {
        assert_eq!(phase(false, true), "Running");
        assert_eq!(phase(false, false), "Provisioning");
        assert_eq!(phase(true, true), "Deleting");
    }

    #[test]
    fn source_reports_not_rendered_until_its_compiled_object_exists() {
        let c = copied_available(None, "CompiledShard", "alpha");
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.message, "CompiledShard alpha has not been rendered yet.");
    }

    #[test]
    fn ready_names_the_first_failing_condition() {
        let ok = ConditionUpdate::new("RootShard", true, "Valid");
        let bad = ConditionUpdate::new("Available", false, "ReplicasUnavailable").message("1 of 2");
        let r = ready(&[&ok, &bad]);
        assert_eq!(
            (r.status, r.reason.as_str()),
            (ConditionStatus::False, "ReplicasUnavailable")
        );
        assert_eq!(ready(&[&ok]).status, ConditionStatus::True);
    }
}
