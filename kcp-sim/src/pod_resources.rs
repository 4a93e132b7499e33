//! A pod's and a container's resources as kube's helpers add them up (`resource.PodRequests`,
//! `PodLimits`, `addResourceList`, `maxResourceList`), which the quota evaluators and the
//! LimitRanger both use: lists of exact quantities, summed and compared as Go's `Quantity` does.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::quantity::Quantity;

/// Resource names and amounts (`corev1.ResourceList`).
pub type ResourceList = BTreeMap<String, Quantity>;

/// The resource list at `pointer` in `value` (what does not parse is left out: kcp-sim stored
/// only quantities that parsed).
pub fn list_at(value: &Value, pointer: &str) -> ResourceList {
    let Some(map) = value.pointer(pointer).and_then(Value::as_object) else {
        return ResourceList::new();
    };
    map.iter()
        .filter_map(|(name, text)| {
            let quantity = Quantity::parse(text.as_str()?).ok()?;
            Some((name.clone(), quantity))
        })
        .collect()
}

/// Adds `amount` to the entry `name` (a copy of it when there is none: `addResourceList`).
pub fn add_one(list: &mut ResourceList, name: &str, amount: &Quantity) {
    match list.get_mut(name) {
        Some(total) => total.add(amount),
        None => {
            list.insert(name.to_string(), amount.clone());
        }
    }
}

/// Adds every entry of `other` (`quota.Add`).
pub fn add_all(list: &mut ResourceList, other: &ResourceList) {
    for (name, amount) in other {
        add_one(list, name, amount);
    }
}

/// Raises each entry to `other`'s where that is larger (`maxResourceList`).
pub fn raise_to(list: &mut ResourceList, other: &ResourceList) {
    for (name, amount) in other {
        let below = list
            .get(name)
            .is_none_or(|current| current.compare(amount).is_lt());
        if below {
            list.insert(name.clone(), amount.clone());
        }
    }
}

/// A pod's total `requests` or `limits` (`PodRequests`, `PodLimits`): its containers' sum, its
/// sidecars (init containers that keep running) added, raised to what any init container
/// needs while it runs beside the sidecars started before it; its overhead added.
pub fn pod_total(spec: &Value, which: &str) -> ResourceList {
    let of = |container: &Value| list_at(container, &format!("/resources/{which}"));
    let containers = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut total = ResourceList::new();
    for container in containers("containers") {
        add_all(&mut total, &of(&container));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for container in containers("initContainers") {
        let own = of(&container);
        let running = if container.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_all(&mut total, &own);
            add_all(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut with_sidecars = own;
            add_all(&mut with_sidecars, &sidecars);
            with_sidecars
        };
        raise_to(&mut init_peak, &running);
    }
    raise_to(&mut total, &init_peak);
    let overhead = list_at(spec, "/overhead");
    for (name, amount) in &overhead {
        if which == "requests" || total.contains_key(name) {
            add_one(&mut total, name, amount);
        }
    }
    total
}
