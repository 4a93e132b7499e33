//! What kube-apiserver sets on a new Node: the `TaintNodesByCondition` admission plugin taints
//! it `node.kubernetes.io/not-ready:NoSchedule`, so nothing is scheduled there before its
//! kubelet reports Ready and the node lifecycle controller lifts the taint. kcp-sim runs no
//! kubelet and no node lifecycle controller, so the taint stays, as on a kube-apiserver
//! without kube-controller-manager's node controllers.

use serde_json::{Value, json};

/// The taint key of a node that is not ready.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// Admits a new node: the not-ready `NoSchedule` taint is added unless a taint of that key and
/// effect is already there (its value and time are the writer's then).
pub fn admit_new(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let spec = root.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let taints = &mut spec["taints"];
    if !taints.is_array() {
        *taints = json!([]);
    }
    let Some(taints) = taints.as_array_mut() else {
        return;
    };
    let tainted = taints
        .iter()
        .any(|t| t["key"] == NOT_READY_TAINT && t["effect"] == "NoSchedule");
    if !tainted {
        taints.push(json!({"key": NOT_READY_TAINT, "effect": "NoSchedule"}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_node_is_tainted_not_ready() {
        let mut node = json!({"metadata": {"name": "n1"}});
        admit_new(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY_TAINT, "effect": "NoSchedule"}])
        );
    }

    #[test]
    fn the_taint_goes_after_the_writers_own() {
        let mut node = json!({"spec": {"taints": [{"key": "a", "effect": "NoExecute"}]}});
        admit_new(&mut node);
        assert_eq!(node["spec"]["taints"][0]["key"], "a");
        assert_eq!(node["spec"]["taints"][1]["key"], NOT_READY_TAINT);
    }

    #[test]
    fn a_node_already_tainted_not_ready_keeps_its_taint_as_written() {
        let taint = json!({"key": NOT_READY_TAINT, "value": "x", "effect": "NoSchedule"});
        let mut node = json!({"spec": {"taints": [taint.clone()]}});
        admit_new(&mut node);
        assert_eq!(node["spec"]["taints"], json!([taint]));
    }

    #[test]
    fn a_not_ready_taint_of_another_effect_does_not_count() {
        let mut node =
            json!({"spec": {"taints": [{"key": NOT_READY_TAINT, "effect": "NoExecute"}]}});
        admit_new(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(2));
    }
}
