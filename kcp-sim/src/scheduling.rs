//! PriorityClasses (`scheduling.k8s.io/v1`) and what the `Priority` admission plugin reads from
//! them: a Kubernetes cluster starts with the two system classes kube-apiserver makes at boot,
//! at most one class may be the global default, and a pod's priority and preemption policy come
//! from its class (or from the global default when it names none).

use serde_json::{Value, json};

use crate::resource::GroupResource;
use crate::semantics::{self, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// The classes kube-apiserver makes at boot: name, value, description.
const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another \
         node if necessary.",
    ),
];

/// What a pod takes from a class: its name, value and preemption policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Priority {
    /// The class's name (empty for no class).
    pub class: String,
    /// The class's value.
    pub value: i64,
    /// The class's preemption policy, if it states one.
    pub preemption: Option<String>,
}

fn classes_key() -> GroupResource {
    GroupResource::new("scheduling.k8s.io", "priorityclasses")
}

/// Creates the system classes in `cluster` unless they exist.
pub fn ensure_system_classes(state: &mut State, cluster: &str) -> ApiResult<()> {
    let Some(rt) = state
        .clusters
        .get(cluster)
        .and_then(|c| c.registry.get(&classes_key()))
        .map(|rt| (**rt).clone())
    else {
        return Ok(());
    };
    let opts = WriteOptions {
        default_manager: "kcp-sim".into(),
        ..WriteOptions::default()
    };
    for (name, value, description) in SYSTEM_CLASSES {
        let body = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "description": description});
        match semantics::create(state, cluster, &rt, "v1", None, body, &opts) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The stored classes of `cluster`, and the system classes where none are stored (a kcp
/// workspace serves no PriorityClasses, yet its pods may name the system classes).
fn classes(state: &State, cluster: &str) -> Vec<Value> {
    let stored: Vec<Value> = state
        .clusters
        .get(cluster)
        .and_then(|c| c.objects.get(&classes_key()))
        .into_iter()
        .flat_map(|objects| objects.values())
        .filter_map(|stored| stored.value().ok())
        .collect();
    if !stored.is_empty() {
        return stored;
    }
    SYSTEM_CLASSES
        .iter()
        .map(|(name, value, _)| json!({"metadata": {"name": name}, "value": value}))
        .collect()
}

fn priority_of(class: &Value) -> Priority {
    Priority {
        class: class
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        value: class.get("value").and_then(Value::as_i64).unwrap_or(0),
        preemption: class
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .map(String::from),
    }
}

/// The priority of a pod naming `class` (empty: the global default's, or 0 without one);
/// `None` when no class of that name exists.
pub fn priority(state: &State, cluster: &str, class: &str) -> Option<Priority> {
    let classes = classes(state, cluster);
    let is_default = |c: &&Value| c.get("globalDefault").and_then(Value::as_bool) == Some(true);
    if class.is_empty() {
        let fallback = Priority {
            class: String::new(),
            value: 0,
            preemption: None,
        };
        return Some(
            classes
                .iter()
                .find(is_default)
                .map_or(fallback, priority_of),
        );
    }
    classes
        .iter()
        .find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(class))
        .map(priority_of)
}

/// The `Priority` plugin on a new class: only one class may be the global default.
pub fn admit_new_class(state: &State, cluster: &str, name: &str, obj: &Value) -> ApiResult<()> {
    if obj.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let existing = classes(state, cluster).into_iter().find(|c| {
        c.get("globalDefault").and_then(Value::as_bool) == Some(true)
            && c.pointer("/metadata/name").and_then(Value::as_str) != Some(name)
    });
    let Some(existing) = existing else {
        return Ok(());
    };
    let other = existing
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Err(ApiError::forbidden(format!(
        "priorityclasses.scheduling.k8s.io \"{name}\" is forbidden: PriorityClass {other} is \
         already marked as default. Only one default can exist"
    ))
    .about("scheduling.k8s.io", "priorityclasses", name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Flavor;

    fn state() -> State {
        let mut state = State::new(Flavor::Kubernetes, 100, 100);
        state.add_cluster("c", "c");
        ensure_system_classes(&mut state, "c").unwrap();
        state
    }

    #[test]
    fn a_kubernetes_cluster_has_the_system_classes() {
        let found = priority(&state(), "c", "system-node-critical").unwrap();
        assert_eq!(found.value, 2_000_001_000);
        assert_eq!(found.preemption.as_deref(), Some("PreemptLowerPriority"));
    }

    #[test]
    fn an_unknown_class_has_no_priority() {
        assert_eq!(priority(&state(), "c", "gold"), None);
    }

    #[test]
    fn a_pod_without_a_class_gets_priority_zero_without_a_default() {
        assert_eq!(priority(&state(), "c", "").unwrap().value, 0);
    }
}
