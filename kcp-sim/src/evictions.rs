//! The `pods/<name>/eviction` subresource, as kube-apiserver's `EvictionREST` answers it
//! (`kubectl drain` posts an Eviction for each pod on the node):
//!
//! - a pod that is not running (`Pending`, `Succeeded`, `Failed`) or already terminating is
//!   deleted with the Eviction's delete options, no budget asked;
//! - a running pod is deleted only if the one PodDisruptionBudget that selects it allows a
//!   disruption, which the eviction then spends (`status.disruptionsAllowed` down by one, the pod
//!   in `status.disruptedPods`); a budget its controller has not yet looked at
//!   (`observedGeneration` behind `generation`), or one with no disruption left, refuses with
//!   `429`; two budgets answer `500`.
//!
//! kcp-sim runs no disruption controller, so a budget is only ever up to date when a client
//! wrote its status, as on a kube-apiserver without kube-controller-manager.

use serde_json::{Map, Value, json};

use crate::managed_fields::FieldManager;
use crate::resource::GroupResource;
use crate::semantics::{self, DeleteRequest};
use crate::status::{ApiError, ApiResult, StatusCause};
use crate::store::State;

/// The message of a refusal by a budget.
const REFUSED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// Evicts the pod an Eviction names (in the URL too): deletes it if its budget allows, and
/// answers kube-apiserver's `Success` Status; a refusal is an error.
pub fn evict(
    state: &mut State,
    cluster: &str,
    namespace: &str,
    url_name: Option<&str>,
    eviction: &Value,
) -> ApiResult<Value> {
    let name = crate::answered::named_in_url(url_name, eviction, "Eviction")?;
    let options = delete_options(eviction.get("deleteOptions"));
    let pods = state
        .served_type(cluster, &GroupResource::new("", "pods"))
        .ok_or_else(ApiError::path_not_found)?;
    let pod = semantics::get(state, cluster, &pods, namespace, name)?.value()?;
    if !budget_applies(&pod) {
        semantics::delete(state, cluster, &pods, namespace, name, &options)?;
        return Ok(success());
    }
    let budgets = budgets_of(state, cluster, namespace, &pod);
    match budgets.as_slice() {
        [] => {}
        [budget] => {
            if !may_ignore(&pod, budget) {
                spend(state, cluster, namespace, name, budget, options.dry_run)?;
            }
        }
        _ => {
            return Err(ApiError::new(
                500,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    }
    semantics::delete(state, cluster, &pods, namespace, name, &options)?;
    Ok(success())
}

fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// The Eviction's `deleteOptions`, as a DELETE of the pod would take them.
fn delete_options(options: Option<&Value>) -> DeleteRequest {
    let text = |pointer: &str| {
        options
            .and_then(|o| o.pointer(pointer))
            .and_then(Value::as_str)
            .map(String::from)
    };
    DeleteRequest {
        propagation: text("/propagationPolicy"),
        precondition_uid: text("/preconditions/uid"),
        precondition_resource_version: text("/preconditions/resourceVersion"),
        dry_run: options
            .and_then(|o| o.get("dryRun"))
            .and_then(Value::as_array)
            .is_some_and(|modes| !modes.is_empty()),
        grace_period_seconds: options
            .and_then(|o| o.get("gracePeriodSeconds"))
            .and_then(Value::as_i64),
    }
}

/// `canIgnorePDB`'s converse: only a running pod that is not terminating asks its budget.
fn budget_applies(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
    !terminating && !matches!(phase, Some("Pending" | "Succeeded" | "Failed"))
}

/// The budgets in the pod's namespace whose selector selects it (a budget without a selector
/// selects nothing, an empty one everything).
fn budgets_of(state: &State, cluster: &str, namespace: &str, pod: &Value) -> Vec<Value> {
    let empty = Map::new();
    let labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let budgets = GroupResource::new("policy", "poddisruptionbudgets");
    crate::apiexport::objects_of(state, cluster, &budgets)
        .into_iter()
        .filter(|b| b.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
        .filter(|b| {
            b.pointer("/spec/selector")
                .filter(|s| !s.is_null())
                .is_some_and(|s| crate::validation::selects(s, labels))
        })
        .collect()
}

/// Whether an unready pod may go without spending a disruption: its budget lets unhealthy pods
/// go (`AlwaysAllow`), or it is healthy enough without this pod.
fn may_ignore(pod: &Value, budget: &Value) -> bool {
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if ready {
        return false;
    }
    let number = |pointer: &str| budget.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let always = budget.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"));
    let desired = number("/status/desiredHealthy");
    always || (desired > 0 && number("/status/currentHealthy") >= desired)
}

/// `checkAndDecrement`: refuses when the budget allows no disruption, else spends one and names
/// the pod in `status.disruptedPods` (nothing is written for a dry run).
fn spend(
    state: &mut State,
    cluster: &str,
    namespace: &str,
    pod: &str,
    budget: &Value,
    dry_run: bool,
) -> ApiResult<()> {
    let number = |pointer: &str| budget.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let name = budget
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let refuse = |message: String| {
        ApiError::new(429, "TooManyRequests", REFUSED).with_causes(vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message,
            field: String::new(),
        }])
    };
    if number("/status/observedGeneration") < number("/metadata/generation") {
        // Only this refusal says when to ask again.
        return Err(refuse(format!(
            "The disruption budget {name} is still being processed by the server."
        ))
        .retry_after(10));
    }
    let allowed = number("/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(format!(
            "poddisruptionbudget.policy \"{name}\" is forbidden: pdb disruptions allowed is negative"
        )));
    }
    if allowed == 0 {
        return Err(refuse(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            number("/status/desiredHealthy"),
            number("/status/currentHealthy")
        )));
    }
    if dry_run {
        return Ok(());
    }
    let mut spent = budget.clone();
    spent["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if allowed == 1 {
        no_disruption_allowed(&mut spent["status"]);
    }
    let disrupted = &mut spent["status"]["disruptedPods"];
    if !disrupted.is_object() {
        *disrupted = json!({});
    }
    let now = semantics::now();
    disrupted[pod] = json!(now);
    // The API server itself writes the budget's status (`kube-apiserver` in managedFields).
    let writer = FieldManager {
        manager: "kube-apiserver",
        subresource: Some("status"),
        time: &now,
        api_version: "policy/v1",
    };
    crate::managed_fields::record_update(Some(budget), &mut spent, &writer);
    let gr = GroupResource::new("policy", "poddisruptionbudgets");
    state.store(cluster, &gr, namespace, name, &mut spent)?;
    Ok(())
}

/// `UpdateDisruptionAllowedCondition` once the last disruption is spent: the budget's
/// `DisruptionAllowed` condition turns `False` (`InsufficientPods`), a new transition time only
/// when its status changed (`SetStatusCondition`).
fn no_disruption_allowed(status: &mut Value) {
    let observed = status
        .get("observedGeneration")
        .cloned()
        .unwrap_or(json!(0));
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    let existing = conditions
        .iter_mut()
        .find(|c| c["type"] == "DisruptionAllowed");
    match existing {
        Some(condition) => {
            if condition["status"] != "False" {
                condition["status"] = json!("False");
                condition["lastTransitionTime"] = json!(semantics::now());
            }
            condition["reason"] = json!("InsufficientPods");
            condition["message"] = json!("");
            condition["observedGeneration"] = observed;
        }
        None => conditions.push(json!({
            "type": "DisruptionAllowed",
            "status": "False",
            "observedGeneration": observed,
            "lastTransitionTime": semantics::now(),
            "reason": "InsufficientPods",
            "message": "",
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_running_pod_asks_its_budget() {
        let pod = |phase: &str| json!({"status": {"phase": phase}});
        assert!(budget_applies(&pod("Running")));
        for phase in ["Pending", "Succeeded", "Failed"] {
            assert!(!budget_applies(&pod(phase)), "{phase}");
        }
        let terminating = json!({"metadata": {"deletionTimestamp": "2026-11-30T10:00:00Z"},
            "status": {"phase": "Running"}});
        assert!(!budget_applies(&terminating));
    }

    #[test]
    fn an_unready_pod_goes_free_under_always_allow_or_a_met_budget() {
        let pod = json!({"status": {"phase": "Running", "conditions": []}});
        let always = json!({"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}});
        assert!(may_ignore(&pod, &always));
        let met = json!({"status": {"desiredHealthy": 1, "currentHealthy": 2}});
        assert!(may_ignore(&pod, &met));
        let unmet = json!({"status": {"desiredHealthy": 0, "currentHealthy": 0}});
        assert!(!may_ignore(&pod, &unmet));
    }

    #[test]
    fn a_ready_pod_always_spends_a_disruption() {
        let pod = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let always = json!({"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}});
        assert!(!may_ignore(&pod, &always));
    }

    #[test]
    fn the_eviction_takes_its_delete_options() {
        let options = json!({"gracePeriodSeconds": 0, "dryRun": ["All"],
            "preconditions": {"uid": "u1"}});
        let request = delete_options(Some(&options));
        assert_eq!(request.grace_period_seconds, Some(0));
        assert!(request.dry_run);
        assert_eq!(request.precondition_uid.as_deref(), Some("u1"));
    }
}
