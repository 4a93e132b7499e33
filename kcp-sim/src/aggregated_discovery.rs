//! Aggregated discovery (`apidiscovery.k8s.io/v2`): `GET /api` and `GET /apis` answered with one
//! `APIGroupDiscoveryList` holding every group, version and resource, as kube-apiserver answers
//! a client that asks for it in `Accept` (kubectl and client-go do, before falling back to one
//! request per group-version).
//!
//! Shape as kube-apiserver writes it: a builtin resource's `responseKind` leaves group and
//! version empty (they are the document's), a custom resource's names them; a subresource lists
//! its own verbs; every version is `Current`.

use serde_json::{Value, json};

use crate::resource::{Registry, ResourceType};

/// The `Content-Type` of an aggregated answer (and what `Accept` must name).
pub const CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `GET /api` (`core`) or `GET /apis`, aggregated.
pub fn group_discovery_list(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = if core {
        let resources = resources_of(registry, "", "v1");
        if resources.is_empty() {
            Vec::new()
        } else {
            vec![json!({"metadata": {}, "versions": [version_entry("v1", resources)]})]
        }
    } else {
        registry
            .groups()
            .into_iter()
            .map(|(group, versions)| {
                let versions: Vec<Value> = versions
                    .iter()
                    .map(|v| version_entry(v, resources_of(registry, group, v)))
                    .collect();
                json!({"metadata": {"name": group}, "versions": versions})
            })
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

fn version_entry(version: &str, resources: Vec<Value>) -> Value {
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

fn resources_of(registry: &Registry, group: &str, version: &str) -> Vec<Value> {
    let mut types: Vec<&ResourceType> = registry
        .types()
        .filter(|t| t.group == group && t.serves(version))
        .map(|t| &**t)
        .collect();
    types.sort_by(|a, b| a.plural.cmp(&b.plural));
    types.iter().map(|t| resource_entry(t, version)).collect()
}

fn resource_entry(t: &ResourceType, version: &str) -> Value {
    let response_kind = if t.is_typed() {
        json!({"group": "", "version": "", "kind": t.kind})
    } else {
        json!({"group": t.group, "version": version, "kind": t.kind})
    };
    let mut entry = json!({
        "resource": t.plural,
        "responseKind": response_kind,
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": t.verbs(),
    });
    if !t.short_names.is_empty() {
        entry["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        entry["categories"] = json!(t.categories);
    }
    let subresources: Vec<Value> = t
        .subresources(version)
        .into_iter()
        .map(|sub| {
            let kind = if sub.group.is_empty() && sub.version.is_empty() {
                json!({"group": response_kind["group"], "version": response_kind["version"], "kind": sub.kind})
            } else {
                json!({"group": sub.group, "version": sub.version, "kind": sub.kind})
            };
            json!({"subresource": sub.name, "responseKind": kind, "verbs": sub.verbs})
        })
        .collect();
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}
