//! What an object uses of a quota, as kube's quota evaluators measure it: every object counts
//! once as `count/<resource>[.<group>]`; pods, services and claims also under their older names
//! and by what they ask for (a pod's requests and limits, a service's node ports and load
//! balancers, a claim's storage); config maps, secrets, replication controllers and quotas count
//! under their plural too. kcp's evaluators know only the `count/` names: in a kcp workspace an
//! object uses nothing else, and a quota's other names are never measured.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::pod_resources::pod_total;
pub(crate) use crate::pod_resources::{ResourceList, add_all, list_at};
use crate::quantity::Quantity;
use crate::resource::{Flavor, GroupResource};

/// The compute resources a pod is charged by name, besides `hugepages-*` and extended ones.
const POD_COMPUTE: [&str; 10] = [
    "pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
];

/// Kinds counted under their plural as well as `count/<plural>`.
const COUNTED_BY_PLURAL: [&str; 4] = [
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

/// The suffix of a claim's resources by storage class (`<class>.storageclass.storage.k8s.io/`).
const BY_STORAGE_CLASS: &str = ".storageclass.storage.k8s.io/";

/// The kind of object a quota's resource name measures.
pub(crate) fn measured_kind(name: &str) -> GroupResource {
    if let Some(counted) = name.strip_prefix("count/") {
        return match counted.split_once('.') {
            Some((resource, group)) => GroupResource::new(group, resource),
            None => GroupResource::new("", counted),
        };
    }
    let core = |resource: &str| GroupResource::new("", resource);
    if name.starts_with("services") {
        return core("services");
    }
    if name == "persistentvolumeclaims"
        || name == "requests.storage"
        || name.contains(BY_STORAGE_CLASS)
    {
        return core("persistentvolumeclaims");
    }
    if COUNTED_BY_PLURAL.contains(&name) {
        return core(name);
    }
    core("pods")
}

/// Of `names`, those the evaluator of `kind` measures (`MatchingResources`).
pub(crate) fn matching<'a>(
    flavor: Flavor,
    kind: &GroupResource,
    names: impl Iterator<Item = &'a String>,
) -> Vec<String> {
    names
        .filter(|name| measures(flavor, kind, name))
        .cloned()
        .collect()
}

fn measures(flavor: Flavor, kind: &GroupResource, name: &str) -> bool {
    if measured_kind(name) != *kind {
        return false;
    }
    if flavor == Flavor::Kcp {
        return name.starts_with("count/");
    }
    if kind.group.is_empty() && kind.resource == "pods" && !name.starts_with("count/") {
        return POD_COMPUTE.contains(&name)
            || name.starts_with("hugepages-")
            || name.starts_with("requests.hugepages-")
            || name.strip_prefix("requests.").is_some_and(is_extended);
    }
    true
}

/// An extended resource (`example.com/widget`): one with a domain that is not Kubernetes'.
fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// `count/<resource>[.<group>]`.
fn count_name(kind: &GroupResource) -> String {
    if kind.group.is_empty() {
        format!("count/{}", kind.resource)
    } else {
        format!("count/{}.{}", kind.resource, kind.group)
    }
}

/// What `object`, of `kind`, uses.
pub(crate) fn of_object(flavor: Flavor, kind: &GroupResource, object: &Value) -> ResourceList {
    let mut used = ResourceList::new();
    used.insert(count_name(kind), Quantity::count(1));
    if !kind.group.is_empty() || flavor == Flavor::Kcp {
        return used;
    }
    match kind.resource.as_str() {
        "pods" if counts_compute(object) => {
            let spec = object.get("spec").unwrap_or(&Value::Null);
            let compute = compute_of(&pod_total(spec, "requests"), &pod_total(spec, "limits"));
            add_all(&mut used, &compute);
        }
        "services" => add_all(&mut used, &of_service(object)),
        "persistentvolumeclaims" => add_all(&mut used, &of_claim(object)),
        plural if COUNTED_BY_PLURAL.contains(&plural) => {
            used.insert(plural.to_string(), Quantity::count(1));
        }
        _ => {}
    }
    used
}

/// A pod is charged for compute until it has finished (`QuotaV1Pod`).
fn counts_compute(pod: &Value) -> bool {
    !matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// What requests and limits charge (`podComputeUsageHelper`): always one pod; cpu, memory and
/// ephemeral storage as requests (under the bare name too) and limits; huge pages and extended
/// resources as requests.
fn compute_of(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut used = ResourceList::new();
    used.insert("pods".into(), Quantity::count(1));
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(resource) {
            used.insert(resource.into(), request.clone());
            used.insert(format!("requests.{resource}"), request.clone());
        }
        if let Some(limit) = limits.get(resource) {
            used.insert(format!("limits.{resource}"), limit.clone());
        }
    }
    for (name, request) in requests {
        if name.starts_with("hugepages-") {
            used.insert(name.clone(), request.clone());
        }
        if name.starts_with("hugepages-") || is_extended(name) {
            used.insert(format!("requests.{name}"), request.clone());
        }
    }
    used
}

/// The resources a quota on cpu or memory makes every container name
/// (`Constraints`: a rule kube keeps for compatibility).
const NAMED_BY_EVERY_CONTAINER: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// For a pod, what its containers leave unnamed of the `restricted` resources that every
/// container must name, worded as kube words it (`must specify limits.memory for: a,b;
/// requests.cpu for: a`); `None` when nothing is missing or `object` is not a pod.
pub(crate) fn unnamed_requests(
    kind: &GroupResource,
    object: &Value,
    restricted: &[String],
) -> Option<String> {
    if !(kind.group.is_empty() && kind.resource == "pods") {
        return None;
    }
    let required: Vec<&String> = restricted
        .iter()
        .filter(|r| NAMED_BY_EVERY_CONTAINER.contains(&r.as_str()))
        .collect();
    let mut missing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for key in ["containers", "initContainers"] {
        let containers = object
            .pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array);
        for container in containers.into_iter().flatten() {
            let named = compute_of(
                &list_at(container, "/resources/requests"),
                &list_at(container, "/resources/limits"),
            );
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for resource in required.iter().filter(|r| !named.contains_key(r.as_str())) {
                missing.entry(resource.as_str()).or_default().push(name);
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(resource, mut containers)| {
            containers.sort_unstable();
            containers.dedup();
            format!("{resource} for: {}", containers.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// A service's charge: one service, its node ports, and a load balancer.
fn of_service(service: &Value) -> ResourceList {
    let ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let with_node_port = ports
        .iter()
        .filter(|p| {
            p.get("nodePort")
                .and_then(Value::as_i64)
                .is_some_and(|n| n != 0)
        })
        .count();
    let all = ports.len();
    let (node_ports, balancers) = match service.pointer("/spec/type").and_then(Value::as_str) {
        Some("NodePort") => (all, 0),
        Some("LoadBalancer") => {
            let allocates = service
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false);
            (if allocates { all } else { with_node_port }, 1)
        }
        _ => (0, 0),
    };
    let count = |n: usize| Quantity::count(i64::try_from(n).unwrap_or(i64::MAX));
    ResourceList::from([
        ("services".to_string(), Quantity::count(1)),
        ("services.nodeports".to_string(), count(node_ports)),
        ("services.loadbalancers".to_string(), count(balancers)),
    ])
}

/// A claim's charge: one claim and its requested storage, also under its storage class.
fn of_claim(claim: &Value) -> ResourceList {
    let mut used = ResourceList::from([("persistentvolumeclaims".to_string(), Quantity::count(1))]);
    let class = claim
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    if let Some(class) = class {
        used.insert(
            format!("{class}{BY_STORAGE_CLASS}persistentvolumeclaims"),
            Quantity::count(1),
        );
    }
    if let Some(storage) = list_at(claim, "/spec/resources/requests").remove("storage") {
        if let Some(class) = class {
            used.insert(
                format!("{class}{BY_STORAGE_CLASS}requests.storage"),
                storage.clone(),
            );
        }
        used.insert("requests.storage".into(), storage);
    }
    used
}
