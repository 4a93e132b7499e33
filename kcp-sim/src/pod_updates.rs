//! What an update may change of a Pod's spec, as kube-apiserver's `ValidatePodUpdate` allows
//! it: the containers' and init containers' images, a first or a shorter
//! `activeDeadlineSeconds`, tolerations added to the existing ones, and a negative
//! `terminationGracePeriodSeconds` set to 1. Any other change is one `spec: Forbidden` error.
//!
//! Known difference: kube-apiserver's message ends with a diff of the two specs as its internal
//! Go structs print them; kcp-sim's names the changed fields of the spec instead.

use serde_json::{Map, Value, json};

use crate::schema::field::FieldError;

/// What kube-apiserver says may change.
pub const MAY_CHANGE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The errors of an update of a Pod from `old` to `new` (both with their defaults), in
/// kube-apiserver's order: containers added or removed (alone), images left empty, the
/// deadline, changed tolerations, then any other change.
pub fn spec_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let empty = Value::Object(Map::new());
    let old_spec = old.get("spec").unwrap_or(&empty);
    let new_spec = new.get("spec").unwrap_or(&empty);
    let mut errors = Vec::new();
    for list in ["containers", "initContainers"] {
        let (old_items, new_items) = (items(old_spec, list), items(new_spec, list));
        if old_items.len() != new_items.len() {
            errors.push(FieldError::forbidden(
                format!("spec.{list}"),
                "pod updates may not add or remove containers",
            ));
            return errors;
        }
        for (index, container) in new_items.iter().enumerate() {
            if container
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .is_empty()
            {
                errors.push(FieldError::required(
                    format!("spec.{list}[{index}].image"),
                    "",
                ));
            }
        }
    }
    if let Some(error) = deadline_error(old_spec, new_spec) {
        errors.push(error);
        return errors;
    }
    errors.extend(toleration_errors(old_spec, new_spec));
    let changed = changed_fields(old_spec, &munged(old_spec, new_spec));
    if !changed.is_empty() {
        errors.push(FieldError::forbidden(
            "spec",
            format!("{MAY_CHANGE}\nchanged: {}", changed.join(", ")),
        ));
    }
    errors
}

fn items<'v>(spec: &'v Value, list: &str) -> &'v [Value] {
    spec.get(list)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `activeDeadlineSeconds` may be set, or lowered, never raised or removed.
fn deadline_error(old_spec: &Value, new_spec: &Value) -> Option<FieldError> {
    let field = "spec.activeDeadlineSeconds";
    let old = old_spec
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64);
    match new_spec
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
    {
        Some(new) if !(0..=i64::from(i32::MAX)).contains(&new) => Some(FieldError::invalid(
            field,
            json!(new),
            format!("must be between 0 and {}, inclusive", i32::MAX),
        )),
        Some(new) if old.is_some_and(|old| old < new) => Some(FieldError::invalid(
            field,
            json!(new),
            "must be less than or equal to previous value",
        )),
        None if old.is_some() => Some(FieldError::invalid(
            field,
            // Go's field errors print a nil pointer as the string "null".
            json!("null"),
            "must not update from a positive integer to nil value",
        )),
        _ => None,
    }
}

/// Every existing toleration must stay (its `tolerationSeconds` may change).
fn toleration_errors(old_spec: &Value, new_spec: &Value) -> Vec<FieldError> {
    let without_seconds = |toleration: &Value| {
        let mut toleration = toleration.clone();
        if let Some(fields) = toleration.as_object_mut() {
            fields.remove("tolerationSeconds");
        }
        toleration
    };
    let kept: Vec<Value> = items(new_spec, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    items(old_spec, "tolerations")
        .iter()
        .enumerate()
        .filter(|(_, toleration)| !kept.contains(&without_seconds(toleration)))
        .map(|(index, _)| {
            FieldError::forbidden(
                format!("spec.tolerations[{index}]"),
                "existing toleration can not be modified except its tolerationSeconds",
            )
        })
        .collect()
}

/// The new spec with what may change put back to the old values.
fn munged(old_spec: &Value, new_spec: &Value) -> Value {
    let mut munged = new_spec.clone();
    for list in ["containers", "initContainers"] {
        let old_images: Vec<Option<Value>> = items(old_spec, list)
            .iter()
            .map(|container| container.get("image").cloned())
            .collect();
        let containers = munged.get_mut(list).and_then(Value::as_array_mut);
        for (container, image) in containers.into_iter().flatten().zip(old_images) {
            if let (Some(fields), Some(image)) = (container.as_object_mut(), image) {
                fields.insert("image".to_owned(), image);
            }
        }
    }
    let Some(fields) = munged.as_object_mut() else {
        return munged;
    };
    for key in ["activeDeadlineSeconds", "tolerations"] {
        match old_spec.get(key) {
            Some(value) => fields.insert(key.to_owned(), value.clone()),
            None => fields.remove(key),
        };
    }
    let grace = |spec: &Value| {
        spec.get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
    };
    if grace(old_spec).is_some_and(|old| old < 0) && grace(new_spec) == Some(1) {
        fields.insert(
            "terminationGracePeriodSeconds".to_owned(),
            json!(grace(old_spec)),
        );
    }
    munged
}

/// The top-level fields of the spec whose values differ, as Go's semantic equality sees them
/// (a missing, null or empty list or map is the same as none).
fn changed_fields(old_spec: &Value, new_spec: &Value) -> Vec<String> {
    let (old, new) = (meaningful(old_spec), meaningful(new_spec));
    let (Value::Object(old), Value::Object(new)) = (&old, &new) else {
        return Vec::new();
    };
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| old.get(*key) != new.get(*key))
        .map(|key| format!("spec.{key}"))
        .collect()
}

fn meaningful(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| (key.clone(), meaningful(value)))
                .filter(|(_, value)| !is_nothing(value))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(meaningful).collect()),
        other => other.clone(),
    }
}

fn is_nothing(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    fn web(image: &str) -> Value {
        json!({"name": "web", "image": image})
    }

    #[test]
    fn a_new_image_may_be_set() {
        let old = pod(json!({"containers": [web("nginx:1")]}));
        let new = pod(json!({"containers": [web("nginx:2")]}));
        assert!(spec_errors(&old, &new).is_empty());
    }

    #[test]
    fn an_environment_change_is_forbidden_and_named() {
        let old = pod(json!({"containers": [web("nginx")]}));
        let mut new = old.clone();
        new["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
        let errors = spec_errors(&old, &new);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec");
        assert!(errors[0].detail.starts_with(MAY_CHANGE));
        assert!(errors[0].detail.ends_with("changed: spec.containers"));
    }

    #[test]
    fn a_container_added_is_forbidden_alone() {
        let old = pod(json!({"containers": [web("nginx")]}));
        let new = pod(
            json!({"containers": [web("nginx"), {"name": "side", "image": "b"}],
            "hostname": "x"}),
        );
        let messages: Vec<String> = spec_errors(&old, &new)
            .iter()
            .map(FieldError::message)
            .collect();
        assert_eq!(
            messages,
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
    }

    #[test]
    fn a_deadline_may_be_lowered_but_not_raised_or_removed() {
        let old = pod(json!({"containers": [web("n")], "activeDeadlineSeconds": 30}));
        let lowered = pod(json!({"containers": [web("n")], "activeDeadlineSeconds": 10}));
        assert!(spec_errors(&old, &lowered).is_empty());
        let raised = pod(json!({"containers": [web("n")], "activeDeadlineSeconds": 60}));
        assert_eq!(
            spec_errors(&old, &raised)[0].message(),
            "spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"
        );
        let removed = pod(json!({"containers": [web("n")]}));
        assert_eq!(
            spec_errors(&old, &removed)[0].field,
            "spec.activeDeadlineSeconds"
        );
    }

    #[test]
    fn tolerations_may_be_added_but_not_removed() {
        let toleration = json!({"key": "a", "operator": "Exists"});
        let old = pod(json!({"containers": [web("n")], "tolerations": [toleration]}));
        let added = pod(json!({"containers": [web("n")],
            "tolerations": [toleration, {"key": "b", "operator": "Exists"}]}));
        assert!(spec_errors(&old, &added).is_empty());
        let removed = pod(json!({"containers": [web("n")], "tolerations": []}));
        assert_eq!(spec_errors(&old, &removed)[0].field, "spec.tolerations[0]");
    }
}
