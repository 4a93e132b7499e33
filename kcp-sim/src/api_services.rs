//! APIServices, as kube-aggregator keeps them in a Kubernetes cluster: one per served group
//! version (the core group's is `v1.`), each `Local` and `Available`. kube-apiserver writes
//! those of its builtin groups at start (labelled `automanaged: onstart`) and one per served
//! version of every CustomResourceDefinition's group as the CRD comes and goes (`automanaged:
//! "true"`, priority 1000 and 100). Their priorities are also the order in which `GET /apis`
//! lists the groups, highest first, then by name, after the aggregator's own group.
//!
//! The priorities are kube-apiserver v1.34.2's (the test bed's pin), as its APIServices state
//! them; the `api-services` conformance case holds them to a real server.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::resource::{GroupResource, ResourceType};
use crate::semantics::{self, DeleteRequest, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// kube-aggregator's own group, listed first and given no APIService.
const AGGREGATOR_GROUP: &str = "apiregistration.k8s.io";

/// The label naming who keeps an APIService.
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// `groupPriorityMinimum` and `versionPriority` of kube-apiserver's builtin group versions.
const BUILTIN_PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("resource.k8s.io", "v1", 16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// The priorities of a CRD's group versions.
const CUSTOM_PRIORITY: (i64, i64) = (1000, 100);

/// The key `GET /apis` sorts a group by: the aggregator's group first, then by priority
/// (highest first), then by name.
pub fn group_order(group: &str) -> (bool, Reverse<i64>, &str) {
    let priority = BUILTIN_PRIORITIES
        .iter()
        .find(|(g, ..)| *g == group)
        .map_or(CUSTOM_PRIORITY.0, |&(_, _, p, _)| p);
    (group != AGGREGATOR_GROUP, Reverse(priority), group)
}

/// Whether kube-apiserver serves `group` itself (the core group included), rather than its
/// apiextensions handler for custom resources.
pub fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || BUILTIN_PRIORITIES.iter().any(|(g, ..)| *g == group)
}

/// One APIService kcp-sim keeps.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Registration {
    group: String,
    version: String,
    onstart: bool,
}

impl Registration {
    fn name(&self) -> String {
        format!("{}.{}", self.version, self.group)
    }

    fn object(&self) -> Value {
        let (group_priority, version_priority) = BUILTIN_PRIORITIES
            .iter()
            .find(|(g, v, ..)| *g == self.group && *v == self.version)
            .map_or(CUSTOM_PRIORITY, |&(_, _, g, v)| (g, v));
        let managed = if self.onstart { "onstart" } else { "true" };
        json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": self.name(), "labels": {AUTOMANAGED: managed}},
            "spec": {
                "group": self.group,
                "version": self.version,
                "groupPriorityMinimum": group_priority,
                "versionPriority": version_priority,
            },
        })
    }
}

/// The APIServices the served types of `cluster` call for.
fn wanted(state: &State, cluster: &str) -> BTreeSet<Registration> {
    let Some(c) = state.clusters.get(cluster) else {
        return BTreeSet::new();
    };
    let mut wanted = BTreeSet::new();
    for t in c.registry.types().filter(|t| t.group != AGGREGATOR_GROUP) {
        let onstart = !state.is_custom(cluster, t.group_resource());
        for version in &t.versions {
            wanted.insert(Registration {
                group: t.group.clone(),
                version: version.clone(),
                onstart,
            });
        }
    }
    wanted
}

fn api_services_type(state: &State, cluster: &str) -> Option<ResourceType> {
    state.served_type(
        cluster,
        &GroupResource::new(AGGREGATOR_GROUP, "apiservices"),
    )
}

/// Makes the APIServices of `cluster` follow what it serves: creates the missing ones and
/// deletes those of CRD group versions no longer served. Ones a user made are left alone.
/// Nothing happens where APIServices are not served (a kcp workspace).
pub fn sync(state: &mut State, cluster: &str) -> ApiResult<()> {
    let Some(rt) = api_services_type(state, cluster) else {
        return Ok(());
    };
    let wanted = wanted(state, cluster);
    let existing = crate::apiexport::objects_of(state, cluster, rt.group_resource());
    let names: BTreeSet<String> = existing
        .iter()
        .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
        .map(String::from)
        .collect();
    for registration in wanted.iter().filter(|r| !names.contains(&r.name())) {
        register(state, cluster, &rt, registration)?;
    }
    let wanted_names: BTreeSet<String> = wanted.iter().map(Registration::name).collect();
    let stale = existing.iter().filter(|o| {
        o.pointer(&format!(
            "/metadata/labels/{}",
            AUTOMANAGED.replace('/', "~1")
        )) == Some(&json!("true"))
    });
    for object in stale {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !wanted_names.contains(name) {
            semantics::delete(state, cluster, &rt, "", name, &DeleteRequest::default())?;
        }
    }
    Ok(())
}

/// Creates one APIService, `Available` as a local one is from the start.
fn register(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    registration: &Registration,
) -> ApiResult<()> {
    let opts = WriteOptions {
        default_manager: "kube-apiserver".into(),
        ..WriteOptions::default()
    };
    let written = semantics::create(state, cluster, rt, "v1", None, registration.object(), &opts)?;
    let mut object = written.object.value()?;
    object["status"] = json!({"conditions": [{
        "type": "Available",
        "status": "True",
        "lastTransitionTime": semantics::now(),
        "reason": "Local",
        "message": "Local APIServices are always available",
    }]});
    let name = registration.name();
    state
        .store(cluster, rt.group_resource(), "", &name, &mut object)
        .map_err(|e| ApiError::internal(format!("storing APIService {name}: {}", e.message)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_sort_by_priority_after_the_aggregators_own() {
        let mut groups = vec![
            "zz.example.com",
            "flowcontrol.apiserver.k8s.io",
            "apps",
            AGGREGATOR_GROUP,
            "discovery.k8s.io",
            "resource.k8s.io",
            "a.example.com",
        ];
        groups.sort_by_key(|g| group_order(g));
        assert_eq!(
            groups,
            [
                AGGREGATOR_GROUP,
                "apps",
                "discovery.k8s.io",
                "resource.k8s.io",
                "flowcontrol.apiserver.k8s.io",
                "a.example.com",
                "zz.example.com",
            ]
        );
    }

    #[test]
    fn the_core_groups_apiservice_is_named_v1_dot() {
        let core = Registration {
            group: String::new(),
            version: "v1".into(),
            onstart: true,
        };
        assert_eq!(core.name(), "v1.");
        assert_eq!(core.object()["spec"]["groupPriorityMinimum"], 18000);
    }
}
