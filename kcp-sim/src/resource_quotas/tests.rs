//! The quota evaluators' arithmetic, each expectation as kube-apiserver v1.34.2 answered the
//! conformance case named beside it (`resource-quotas.yaml`).

use serde_json::{Value, json};

use super::usage::{self, ResourceList};
use super::{QuotaWrite, charge_of, scopes};
use crate::resource::{Flavor, GroupResource};

fn pods() -> GroupResource {
    GroupResource::new("", "pods")
}

fn texts(list: &ResourceList) -> Value {
    list.iter()
        .map(|(name, q)| (name.clone(), Value::String(q.to_text())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn container(name: &str, resources: Value) -> Value {
    json!({"name": name, "image": "busybox", "resources": resources})
}

/// `a-pod-is-charged-its-containers-sum-or-its-largest-init-container`.
#[test]
fn a_pod_is_charged_its_containers_sum_raised_to_its_largest_init_container() {
    let pod = json!({"spec": {
    "initContainers": [container("setup", json!({
        "requests": {"cpu": "1", "memory": "10Mi", "example.com/widget": "1"},
        "limits": {"cpu": "1", "example.com/widget": "1"}}))],
    "containers": [
        container("a", json!({"requests": {"cpu": "250m", "memory": "100Mi"}, "limits": {"cpu": "500m"}})),
        container("b", json!({"requests": {"cpu": "500m", "memory": "200Mi", "example.com/widget": "2"},
            "limits": {"cpu": "1", "example.com/widget": "2"}})),
    ]}});
    let used = usage::of_object(Flavor::Kubernetes, &pods(), &pod);
    assert_eq!(
        texts(&used),
        json!({"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1",
            "limits.cpu": "1500m", "memory": "300Mi", "requests.memory": "300Mi",
            "requests.example.com/widget": "2"})
    );
}

#[test]
fn a_sidecar_adds_to_the_sum_and_runs_beside_later_init_containers() {
    let pod = json!({"spec": {
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
            container("migrate", json!({"requests": {"cpu": "1"}})),
        ],
        "containers": [container("main", json!({"requests": {"cpu": "500m"}}))]}});
    let used = usage::of_object(Flavor::Kubernetes, &pods(), &pod);
    // The main container and the sidecar: 700m; the migration beside the sidecar: 1200m.
    assert_eq!(used["requests.cpu"].to_text(), "1200m");
}

/// `a-finished-pod-gives-back-its-compute-share-but-not-its-count`.
#[test]
fn a_finished_pod_counts_only_as_an_object() {
    let pod = json!({"spec": {"containers": [container("main", json!({"requests": {"cpu": "300m"}}))]},
        "status": {"phase": "Succeeded"}});
    assert_eq!(
        texts(&usage::of_object(Flavor::Kubernetes, &pods(), &pod)),
        json!({"count/pods": "1"})
    );
}

/// `a-pod-must-name-each-resource-its-quota-limits`.
#[test]
fn every_container_must_name_the_cpu_and_memory_a_quota_limits() {
    let pod = json!({"spec": {
        "initContainers": [container("setup", json!({}))],
        "containers": [container("main", json!({})), container("side", json!({"requests": {"cpu": "100m"}}))]}});
    let restricted = ["requests.cpu", "limits.memory", "pods"].map(String::from);
    assert_eq!(
        usage::unnamed_requests(&pods(), &pod, &restricted).as_deref(),
        Some("must specify limits.memory for: main,setup,side; requests.cpu for: main,setup")
    );
}

/// `services-count-their-node-ports-and-load-balancers`.
#[test]
fn a_load_balancer_counts_each_port_as_a_node_port() {
    let service = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
    let used = usage::of_object(
        Flavor::Kubernetes,
        &GroupResource::new("", "services"),
        &service,
    );
    assert_eq!(
        texts(&used),
        json!({"count/services": "1", "services": "1", "services.loadbalancers": "1", "services.nodeports": "2"})
    );
}

#[test]
fn an_update_is_charged_only_what_it_adds() {
    let rt = crate::resource::builtin_types(crate::resource::Flavor::Kubernetes)
        .into_iter()
        .find(|t| t.group.is_empty() && t.plural == "services")
        .unwrap();
    let old = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    let new = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}});
    let write = QuotaWrite {
        rt: &rt,
        namespace: "ns",
        name: "s",
        object: &new,
        old: Some(&old),
        dry_run: false,
    };
    assert_eq!(
        texts(&charge_of(
            Flavor::Kubernetes,
            &GroupResource::new("", "services"),
            &write
        )),
        json!({"services.nodeports": "1"})
    );
}

/// `a-counted-kind-of-a-group-is-limited-by-count`.
#[test]
fn a_counted_name_measures_its_group_and_resource() {
    assert_eq!(
        usage::measured_kind("count/deployments.apps"),
        GroupResource::new("apps", "deployments")
    );
    assert_eq!(
        usage::measured_kind("requests.storage"),
        GroupResource::new("", "persistentvolumeclaims")
    );
    assert_eq!(usage::measured_kind("limits.cpu"), pods());
    let names = ["limits.cpu", "requests.storage", "services", "bogus"].map(String::from);
    assert_eq!(
        usage::matching(Flavor::Kubernetes, &pods(), names.iter()),
        vec!["limits.cpu".to_string()]
    );
}

/// `a-best-effort-scope-counts-only-pods-without-resources`.
#[test]
fn a_best_effort_scope_covers_only_pods_without_cpu_or_memory() {
    let quota = json!({"spec": {"scopes": ["BestEffort"]}});
    let free = json!({"spec": {"containers": [container("main", json!({"requests": {"ephemeral-storage": "1Gi"}}))]}});
    let sized =
        json!({"spec": {"containers": [container("main", json!({"limits": {"memory": "1Gi"}}))]}});
    assert!(scopes::cover(&quota, &pods(), &free));
    assert!(!scopes::cover(&quota, &pods(), &sized));
    assert!(!scopes::cover(
        &quota,
        &GroupResource::new("", "configmaps"),
        &json!({})
    ));
}

#[test]
fn a_priority_class_selector_matches_the_class_name() {
    let quota = json!({"spec": {"scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
    let high = json!({"spec": {"priorityClassName": "high", "containers": []}});
    let none = json!({"spec": {"containers": []}});
    assert!(scopes::cover(&quota, &pods(), &high));
    assert!(!scopes::cover(&quota, &pods(), &none));
}

/// `kcp-resource-quotas.yaml`, `a-workspace-quota-is-counted-and-enforced`.
#[test]
fn kcp_measures_only_counted_names() {
    let names = ["secrets", "count/secrets"].map(String::from);
    let secrets = GroupResource::new("", "secrets");
    assert_eq!(
        usage::matching(Flavor::Kcp, &secrets, names.iter()),
        vec!["count/secrets".to_string()]
    );
    assert_eq!(
        texts(&usage::of_object(Flavor::Kcp, &secrets, &json!({}))),
        json!({"count/secrets": "1"})
    );
}
