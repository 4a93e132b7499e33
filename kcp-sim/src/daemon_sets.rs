//! DaemonSets as kube-apiserver's strategy keeps them: a new one's status holds the four counts
//! Go writes without omitempty, and its template generation (the v1 annotation
//! `deprecated.daemonset.template.generation`) starts at 1 and goes up with each change of the
//! pod template; a client cannot set it on update.
//!
//! kcp-sim runs no DaemonSet controller: no pods are scheduled, and the counts stay 0.

use serde_json::{Value, json};

/// The v1 annotation that carries the internal `spec.templateGeneration`.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// `PrepareForCreate`: an empty status and a template generation of at least 1.
pub fn admit_new(obj: &mut Value) {
    obj["status"] = json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
        "numberMisscheduled": 0, "numberReady": 0});
    let generation = template_generation(obj).max(1);
    set_template_generation(obj, generation);
}

/// A new DaemonSet's template generation as its writer's field manager sees it: kube-apiserver
/// records the creator as the owner of the annotation (the strategy's generation of 1 is there
/// when the fields are recorded).
pub fn stamp_new_template_generation(obj: &mut Value) {
    let generation = template_generation(obj).max(1);
    set_template_generation(obj, generation);
}

/// `PrepareForUpdate`: the template generation is the old one, one more when the pod template
/// changed.
pub fn on_update(old: &Value, new: &mut Value) {
    let mut generation = template_generation(old);
    if old.pointer("/spec/template") != new.pointer("/spec/template") {
        generation += 1;
    }
    set_template_generation(new, generation);
}

fn template_generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(TEMPLATE_GENERATION))
        .and_then(Value::as_str)
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[TEMPLATE_GENERATION] = json!(generation.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_daemon_set_is_at_template_generation_one() {
        let mut set = json!({"metadata": {"name": "agent"}, "status": {"numberReady": 3}});
        admit_new(&mut set);
        assert_eq!(set["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        assert_eq!(set["status"]["numberReady"], 0);
    }

    #[test]
    fn a_template_change_raises_the_template_generation() {
        let old = json!({"metadata": {"annotations": {TEMPLATE_GENERATION: "1"}},
            "spec": {"template": {"spec": {"containers": [{"image": "a"}]}}}});
        let mut new = json!({"metadata": {"annotations": {TEMPLATE_GENERATION: "7"}},
            "spec": {"template": {"spec": {"containers": [{"image": "b"}]}}}});
        on_update(&old, &mut new);
        assert_eq!(new["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
    }

    #[test]
    fn a_client_cannot_set_the_template_generation() {
        let old = json!({"metadata": {"annotations": {TEMPLATE_GENERATION: "3"}}, "spec": {}});
        let mut new = json!({"metadata": {"annotations": {TEMPLATE_GENERATION: "9"}}, "spec": {}});
        on_update(&old, &mut new);
        assert_eq!(new["metadata"]["annotations"][TEMPLATE_GENERATION], "3");
    }
}
