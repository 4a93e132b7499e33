//! A pod's ephemeral containers (the ones `kubectl debug` adds), as kube-apiserver's pod
//! registry keeps them: a pod is never created with one; only the pod's `ephemeralcontainers`
//! subresource writes them, and it writes nothing else of the pod; each is validated as the
//! pod's other containers are, with the fields an ephemeral container may not hold refused;
//! none is changed or removed once added.
//!
//! Each rule was checked on kube-apiserver v1.34.2 (conformance files
//! `workload-ephemeral-containers` and `kubectl-debug`).
//!
//! Known difference: a change of an existing ephemeral container is refused with kube's
//! message, which ends with a diff of the container as its internal Go struct prints it; kcp-sim
//! names the changed fields after it instead, as it does for a pod update.

use serde_json::{Map, Value};

use crate::schema::field::{ErrorType, FieldError};

/// The subresource's name.
pub const SUBRESOURCE: &str = "ephemeralcontainers";

/// What an ephemeral container may hold besides the fields of every container: the fields
/// kube's `allowedEphemeralContainerFields` refuses, in the Go struct's order, by JSON name.
const REFUSED_FIELDS: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

const REFUSED: &str = "cannot be set for an Ephemeral Container";

/// The pod a write through the subresource stores: the stored pod with the ephemeral containers
/// the write sent, and the sent name, namespace, uid and resourceVersion (kube's
/// `dropNonEphemeralContainerUpdates`); everything else the write sent is dropped.
pub fn stored(old: &Value, sent: &Value) -> Value {
    let mut pod = old.clone();
    crate::object_meta::take_metadata(
        &mut pod,
        sent,
        &["name", "namespace", "uid", "resourceVersion"],
    );
    let ephemeral = sent.pointer("/spec/ephemeralContainers").cloned();
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        match ephemeral {
            Some(list) => spec.insert("ephemeralContainers".into(), list),
            None => spec.remove("ephemeralContainers"),
        };
    }
    pod
}

/// The refusal of a new pod that holds ephemeral containers.
pub fn create_errors(pod: &Value) -> Vec<FieldError> {
    if containers(pod, "ephemeralContainers").is_empty() {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        "spec.ephemeralContainers",
        "cannot be set on create",
    )]
}

/// The errors of a write through the subresource from `old` to `new`: each ephemeral
/// container's own (`validateEphemeralContainers`), then each existing one removed or changed
/// (`ValidatePodEphemeralContainersUpdate`).
pub fn update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = container_errors(new);
    let sent = containers(new, "ephemeralContainers");
    for existing in containers(old, "ephemeralContainers") {
        let name = text(existing, "name");
        match sent.iter().find(|c| text(c, "name") == name) {
            None => errors.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(now) if *now != existing => errors.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!(
                    "existing ephemeral containers {name:?} may not be changed\nchanged: {}",
                    changed_fields(existing, now).join(", ")
                ),
            )),
            Some(_) => {}
        }
    }
    errors
}

/// Each ephemeral container's errors, in kube's order: its name and image, its name unique
/// among all the pod's containers, its target one of the pod's other containers, then each
/// field it may not hold and each volume mount's sub-path.
fn container_errors(pod: &Value) -> Vec<FieldError> {
    let others: Vec<&str> = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|list| containers(pod, list))
        .map(|c| text(c, "name"))
        .collect();
    let mut names = others.clone();
    let mut errors = Vec::new();
    for (index, container) in containers(pod, "ephemeralContainers").iter().enumerate() {
        let at = format!("spec.ephemeralContainers[{index}]");
        let name = text(container, "name");
        errors.extend(name_and_image_errors(container, &at));
        if names.contains(&name) {
            errors.push(FieldError::new(
                ErrorType::Duplicate,
                format!("{at}.name"),
                Some(Value::String(name.into())),
                "",
            ));
        } else {
            names.push(name);
        }
        let target = text(container, "targetContainerName");
        if !target.is_empty() && !others.contains(&target) {
            errors.push(FieldError::new(
                ErrorType::NotFound,
                format!("{at}.targetContainerName"),
                Some(Value::String(target.into())),
                "",
            ));
        }
        errors.extend(refused_field_errors(container, &at));
    }
    errors
}

/// `validateContainerCommon`'s name and image: a name is required and a DNS label, an image
/// is required.
fn name_and_image_errors(container: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = text(container, "name");
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    } else {
        errors.extend(
            kcp_core::name_validation::dns1123_label_errors(name)
                .into_iter()
                .map(|why| {
                    FieldError::invalid(format!("{at}.name"), Value::String(name.into()), why)
                }),
        );
    }
    if text(container, "image").trim().is_empty() {
        errors.push(FieldError::required(format!("{at}.image"), ""));
    }
    errors
}

/// The fields an ephemeral container holds that it may not (the defaulted empty `resources`
/// holds nothing), and volume mounts with a sub-path.
fn refused_field_errors(container: &Value, at: &str) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = REFUSED_FIELDS
        .iter()
        .filter(|field| {
            container
                .get(**field)
                .is_some_and(|v| holds_something(field, v))
        })
        .map(|field| FieldError::forbidden(format!("{at}.{field}"), REFUSED))
        .collect();
    for (index, mount) in items(container.get("volumeMounts")).iter().enumerate() {
        for field in ["subPath", "subPathExpr"] {
            if !text(mount, field).is_empty() {
                errors.push(FieldError::forbidden(
                    format!("{at}.volumeMounts[{index}].{field}"),
                    REFUSED,
                ));
            }
        }
    }
    errors
}

/// Whether a field is not Go's zero value: a pointer or slice that is set (even to an empty
/// value), or `resources`, a struct, with any of its maps or lists set.
fn holds_something(field: &str, value: &Value) -> bool {
    match (field, value) {
        (_, Value::Null) => false,
        ("resources", Value::Object(members)) => members.values().any(|v| !v.is_null()),
        _ => true,
    }
}

/// The fields of a container that differ between two versions of it, by name.
fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let empty = Map::new();
    let (old, new) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| old.get(*key) != new.get(*key))
        .cloned()
        .collect()
}

fn containers<'a>(pod: &'a Value, list: &str) -> Vec<&'a Value> {
    items(pod.get("spec").and_then(|spec| spec.get(list)))
}

fn items(list: Option<&Value>) -> Vec<&Value> {
    list.and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default()
}

fn text<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(ephemeral: Value) -> Value {
        json!({
            "metadata": {"name": "p", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}], "ephemeralContainers": ephemeral},
        })
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn the_subresource_stores_only_the_ephemeral_containers() {
        let old = pod(Value::Null);
        let mut sent = pod(json!([{"name": "debugger", "image": "busybox"}]));
        sent["metadata"]["labels"] = json!({"app": "changed"});
        sent["spec"]["containers"][0]["image"] = json!("nginx:2");
        let stored = stored(&old, &sent);
        assert_eq!(stored["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(stored["spec"]["containers"][0]["image"], json!("nginx"));
        assert_eq!(
            stored["spec"]["ephemeralContainers"],
            json!([{"name": "debugger", "image": "busybox"}])
        );
    }

    #[test]
    fn a_new_pod_may_not_hold_one() {
        // As kube-apiserver v1.34.2 answered (workload-ephemeral-containers/a-pod-update-does-not-add-ephemeral-containers).
        assert_eq!(
            messages(&create_errors(&pod(
                json!([{"name": "d", "image": "busybox"}])
            ))),
            ["spec.ephemeralContainers: Forbidden: cannot be set on create"]
        );
        assert!(create_errors(&pod(Value::Null)).is_empty());
    }

    #[test]
    fn names_are_unique_among_all_containers_and_targets_exist() {
        let new = pod(json!([
            {"name": "web", "image": "busybox"},
            {"name": "d", "image": "busybox", "targetContainerName": "nobody"},
        ]));
        assert_eq!(
            messages(&update_errors(&pod(Value::Null), &new)),
            [
                "spec.ephemeralContainers[0].name: Duplicate value: \"web\"",
                "spec.ephemeralContainers[1].targetContainerName: Not found: \"nobody\"",
            ]
        );
    }

    #[test]
    fn fields_of_running_services_are_refused_in_struct_order() {
        let new = pod(json!([{
            "name": "d", "image": "busybox", "resources": {"limits": {"cpu": "1"}},
            "lifecycle": {"preStop": {}}, "ports": [{"containerPort": 80}],
        }]));
        let fields: Vec<String> = update_errors(&pod(Value::Null), &new)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.ephemeralContainers[0].ports",
                "spec.ephemeralContainers[0].resources",
                "spec.ephemeralContainers[0].lifecycle",
            ]
        );
    }

    #[test]
    fn an_empty_resources_is_no_resources() {
        let new = pod(json!([{"name": "d", "image": "busybox", "resources": {}}]));
        assert!(update_errors(&pod(Value::Null), &new).is_empty());
    }

    #[test]
    fn an_existing_one_is_never_removed_or_changed() {
        let old = pod(json!([{"name": "d", "image": "busybox"}]));
        assert_eq!(
            messages(&update_errors(&old, &pod(json!([])))),
            [
                "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"d\" may not be removed\n"
            ]
        );
        let changed = update_errors(&old, &pod(json!([{"name": "d", "image": "busybox:2"}])));
        assert_eq!(changed[0].field, "spec.ephemeralContainers");
        assert!(changed[0].detail.ends_with("changed: image"));
    }
}
