//! The `LimitRanger` admission plugin's defaults for a new Pod: each container without a limit
//! or request of a resource gets the default that its namespace's LimitRanges give containers
//! (`default`, `defaultRequest`), and the pod is annotated with what was set. The ranges' minimum
//! and maximum checks follow ([`crate::limit_range_checks`]).

use serde_json::{Map, Value, json};

/// The annotation saying which defaults the plugin set.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The default limits and requests a LimitRange gives containers
/// (`defaultContainerResourceRequirements`).
fn container_defaults(range: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let mut limits = Map::new();
    let mut requests = Map::new();
    let items = range.pointer("/spec/limits").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        for (key, into) in [("default", &mut limits), ("defaultRequest", &mut requests)] {
            if let Some(values) = item.get(key).and_then(Value::as_object) {
                into.extend(values.clone());
            }
        }
    }
    (limits, requests)
}

/// Fills what `container` lacks of `defaults` into its `resources.<field>`; the names set,
/// sorted.
fn fill(
    container: &mut Map<String, Value>,
    field: &str,
    defaults: &Map<String, Value>,
) -> Vec<String> {
    let resources = container.entry("resources").or_insert_with(|| json!({}));
    if !resources.is_object() {
        *resources = json!({});
    }
    let Some(resources) = resources.as_object_mut() else {
        return Vec::new();
    };
    let own = resources.entry(field).or_insert_with(|| json!({}));
    if !own.is_object() {
        *own = json!({});
    }
    let mut set = Vec::new();
    if let Some(own) = own.as_object_mut() {
        for (name, value) in defaults {
            if !own.contains_key(name) {
                own.insert(name.clone(), value.clone());
                set.push(name.clone());
            }
        }
    }
    if resources
        .get(field)
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        resources.remove(field);
    }
    set.sort();
    set
}

/// `mergePodResourceRequirements` for one LimitRange: the defaults filled into every container
/// and init container, and the annotation naming them (when any was set).
fn merge(pod: &mut Value, range: &Value) {
    let (limits, requests) = container_defaults(range);
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (list, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let containers = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut);
        for container in containers
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let set_requests = fill(container, "requests", &requests);
            let set_limits = fill(container, "limits", &limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {what} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[ANNOTATION] = json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
    }
}

/// The LimitRanges of `namespace`, in the order they are listed.
pub fn ranges_in(state: &crate::store::State, cluster: &str, namespace: &str) -> Vec<Value> {
    let ranges = crate::resource::GroupResource::new("", "limitranges");
    state
        .clusters
        .get(cluster)
        .map(|c| {
            c.in_namespace(&ranges, namespace)
                .filter_map(|stored| stored.value().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Admits a new pod under the LimitRanges of its namespace, in the order they are listed.
pub fn admit_pod(pod: &mut Value, ranges: &[Value]) {
    for range in ranges {
        merge(pod, range);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(item: Value) -> Value {
        json!({"spec": {"limits": [item]}})
    }

    #[test]
    fn a_container_without_resources_gets_the_ranges_defaults_and_the_pod_says_so() {
        let mut pod = json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let lr = range(
            json!({"type": "Container", "default": {"cpu": "1", "memory": "1Gi"},
            "defaultRequest": {"cpu": "500m"}}),
        );
        admit_pod(&mut pod, &[lr]);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container c; cpu, memory limit for container c"
        );
    }

    #[test]
    fn a_containers_own_values_are_kept_and_not_named() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
            "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}}]}});
        let lr = range(json!({"type": "Container", "default": {"cpu": "1"},
            "defaultRequest": {"cpu": "1"}}));
        admit_pod(&mut pod, &[lr]);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "2"}, "requests": {"cpu": "2"}})
        );
        assert!(pod["metadata"].get("annotations").is_none());
    }

    #[test]
    fn pod_type_limits_give_no_container_defaults() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        admit_pod(
            &mut pod,
            &[range(json!({"type": "Pod", "max": {"cpu": "4"}}))],
        );
        assert!(pod["spec"]["containers"][0].get("resources").is_none());
    }
}
