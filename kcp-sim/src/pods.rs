//! What kube-apiserver sets on a new Pod beyond its decode defaults ([`crate::defaults::pod`]):
//! the `Priority` admission plugin's priority and preemption policy, the
//! `DefaultTolerationSeconds` plugin's two NoExecute tolerations, and the strategy's status
//! (`Pending`, with the pod's QoS class). kcp-sim schedules and runs no pod: it stays
//! `Pending`, as on a kube-apiserver without a scheduler, and is deleted at once (a pod bound to
//! no node has nothing to wait for). A Binding ([`crate::answered`]) places a pod on a node as
//! a scheduler would ([`mark_scheduled`]).
//!
//! A delete gives a pod bound to a node its grace period ([`grace_period`]): it stays, marked
//! for deletion at the end of that period, for the node's kubelet to stop it and delete it for
//! good, which kcp-sim (like a test kube-apiserver without kubelets) never does; a delete with a
//! shorter period shortens it, and one with `gracePeriodSeconds=0` (`kubectl delete --force`)
//! removes the pod.
//!
//! Known difference: the `ServiceAccount` plugin is not modelled (the real test servers run
//! with it off), so a pod gets no `serviceAccountName` and no token volume.

use serde_json::{Map, Value, json};

use crate::scheduling::Priority;
use crate::status::{ApiError, ApiResult};

/// The NoExecute taints a pod tolerates for five minutes unless it says otherwise.
const DEFAULT_TOLERATED_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// The `PodScheduled` condition a bound pod gets, replacing an earlier one.
pub fn mark_scheduled(pod: &mut Value, now: &str) {
    let scheduled = json!({"type": "PodScheduled", "status": "True",
        "lastProbeTime": null, "lastTransitionTime": now});
    let status = &mut pod["status"];
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(conditions)) = conditions {
        conditions.retain(|c| c["type"] != "PodScheduled");
        conditions.insert(0, scheduled);
    }
}

/// The pod strategy's `CheckGracefulDelete`: the seconds a delete asking for `requested` gives
/// `pod`: the request's, else the pod's `terminationGracePeriodSeconds` (0 when unset); none for
/// a pod no node runs (unscheduled, or finished); a negative period counts as 1.
pub fn grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let requested = requested_grace(requested);
    let own = pod
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|node| !node.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    let period = if !scheduled || finished {
        0
    } else {
        requested.or(own).unwrap_or(0)
    };
    if period < 0 { 1 } else { period }
}

/// The grace period a delete asks for, as `BeforeDelete` reads it: a negative one counts as 1.
pub fn requested_grace(requested: Option<i64>) -> Option<i64> {
    requested.map(|seconds| if seconds < 0 { 1 } else { seconds })
}

/// Admits a new Pod: its priority (from the PriorityClass `classes` finds by name, empty for
/// the global default), its default tolerations and its first status.
pub fn admit_new(
    name: &str,
    obj: &mut Value,
    classes: impl Fn(&str) -> Option<Priority>,
) -> ApiResult<()> {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    prioritize(name, spec, classes)?;
    tolerate_default_taints(spec);
    let qos = qos_class(spec);
    obj["status"] = json!({"phase": "Pending", "qosClass": qos});
    Ok(())
}

/// The `Priority` plugin: the class's priority (0 without a class), which a pod may not state
/// otherwise itself, and `PreemptLowerPriority` unless the pod chose.
fn prioritize(
    name: &str,
    spec: &mut Map<String, Value>,
    classes: impl Fn(&str) -> Option<Priority>,
) -> ApiResult<()> {
    let class = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let found = classes(class).ok_or_else(|| {
        ApiError::forbidden(format!(
            "pods \"{name}\" is forbidden: no PriorityClass with name {class} was found"
        ))
        .about("", "pods", name)
    })?;
    let priority = found.value;
    if !found.class.is_empty() {
        spec.insert("priorityClassName".into(), json!(found.class));
    }
    if let Some(stated) = spec.get("priority").and_then(Value::as_i64)
        && stated != priority
    {
        return Err(ApiError::forbidden(format!(
            "pods \"{name}\" is forbidden: the integer value of priority ({stated}) must not be \
             provided in pod spec; priority admission controller computed {priority} from the \
             given PriorityClass name"
        ))
        .about("", "pods", name));
    }
    spec.insert("priority".into(), json!(priority));
    if spec.get("preemptionPolicy").is_none_or(Value::is_null) {
        let policy = found
            .preemption
            .unwrap_or_else(|| "PreemptLowerPriority".to_string());
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// The `DefaultTolerationSeconds` plugin: a toleration of each default taint for 300 s, unless
/// the pod already tolerates that taint's NoExecute effect.
fn tolerate_default_taints(spec: &mut Map<String, Value>) {
    let existing: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut added = Vec::new();
    for taint in DEFAULT_TOLERATED_TAINTS {
        if !existing.iter().any(|t| tolerates_no_execute(t, taint)) {
            added.push(json!({
                "key": taint,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }));
        }
    }
    if added.is_empty() {
        return;
    }
    let mut all = existing;
    all.extend(added);
    spec.insert("tolerations".into(), Value::Array(all));
}

/// Whether `toleration` covers the NoExecute effect of the taint with key `taint`.
fn tolerates_no_execute(toleration: &Value, taint: &str) -> bool {
    let text = |key: &str| toleration.get(key).and_then(Value::as_str).unwrap_or("");
    let key_matches =
        text("key") == taint || (text("key").is_empty() && text("operator") == "Exists");
    let effect_matches = matches!(text("effect"), "" | "NoExecute");
    key_matches && effect_matches
}

/// The pod's QoS class from its containers' CPU and memory requests and limits: `BestEffort`
/// when none names any, `Guaranteed` when every container limits both and requests what it
/// limits, `Burstable` otherwise.
pub fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|key| spec.get(*key).and_then(Value::as_array))
        .flatten()
        .collect();
    let amounts = |c: &Value, kind: &str| -> Map<String, Value> {
        c.pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(name, _)| matches!(name.as_str(), "cpu" | "memory"))
                    .map(|(name, q)| (name.clone(), q.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let named_any = containers
        .iter()
        .any(|c| !amounts(c, "requests").is_empty() || !amounts(c, "limits").is_empty());
    if !named_any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = amounts(c, "limits");
        limits.len() == 2 && amounts(c, "requests") == limits
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_on(node: &str, phase: &str) -> Value {
        json!({"spec": {"nodeName": node, "terminationGracePeriodSeconds": 30},
            "status": {"phase": phase}})
    }

    #[test]
    fn a_pod_on_a_node_gets_its_own_grace_period_unless_the_delete_names_one() {
        assert_eq!(grace_period(&pod_on("n1", "Pending"), None), 30);
        assert_eq!(grace_period(&pod_on("n1", "Running"), Some(5)), 5);
        assert_eq!(grace_period(&pod_on("n1", "Running"), Some(0)), 0);
    }

    #[test]
    fn a_negative_grace_period_counts_as_one_second() {
        assert_eq!(grace_period(&pod_on("n1", "Running"), Some(-3)), 1);
    }

    #[test]
    fn a_pod_no_node_runs_has_no_grace_period() {
        assert_eq!(grace_period(&pod_on("", "Pending"), Some(10)), 0);
        assert_eq!(grace_period(&pod_on("n1", "Succeeded"), None), 0);
        assert_eq!(grace_period(&pod_on("n1", "Failed"), Some(10)), 0);
    }

    /// A cluster whose only class is the system's node-critical one.
    fn classes(class: &str) -> Option<Priority> {
        match class {
            "" => Some(Priority {
                class: String::new(),
                value: 0,
                preemption: None,
            }),
            "system-node-critical" => Some(Priority {
                class: class.into(),
                value: 2_000_001_000,
                preemption: Some("PreemptLowerPriority".into()),
            }),
            _ => None,
        }
    }

    fn admitted(spec: Value) -> Value {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": spec});
        admit_new("p", &mut pod, classes).unwrap();
        pod
    }

    #[test]
    fn a_pod_without_a_class_gets_priority_zero_and_stays_pending() {
        let pod = admitted(json!({"containers": [{"name": "c", "image": "i"}]}));
        assert_eq!(pod["spec"]["priority"], 0);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
    }

    #[test]
    fn an_unknown_priority_class_is_forbidden() {
        let mut pod = json!({"spec": {"priorityClassName": "gold", "containers": []}});
        let error = admit_new("p", &mut pod, classes).unwrap_err();
        assert_eq!(error.code, 403);
        assert!(error.message.contains("no PriorityClass with name gold"));
    }

    #[test]
    fn a_pod_of_a_class_takes_its_value() {
        let pod = admitted(json!({"priorityClassName": "system-node-critical", "containers": []}));
        assert_eq!(pod["spec"]["priority"], 2_000_001_000);
    }

    #[test]
    fn the_default_tolerations_are_added_once() {
        let pod = admitted(json!({"containers": [], "tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
        ]}));
        let tolerations = pod["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tolerations.len(), 2);
        assert_eq!(tolerations[0]["tolerationSeconds"], 10);
        assert_eq!(tolerations[1]["key"], "node.kubernetes.io/not-ready");
    }

    #[test]
    fn requests_equal_to_limits_of_cpu_and_memory_are_guaranteed() {
        let both = json!({"cpu": "1", "memory": "1Gi"});
        let spec = json!({"containers": [{"resources": {"limits": both, "requests": both}}]});
        assert_eq!(qos_class(spec.as_object().unwrap()), "Guaranteed");
        let spec = json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]});
        assert_eq!(qos_class(spec.as_object().unwrap()), "Burstable");
    }
}
