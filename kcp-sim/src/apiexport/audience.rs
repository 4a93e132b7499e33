//! Which apiexport virtual workspaces see the objects of a consumer cluster: the export of every
//! binding sees the resources it bound, and the resources of the claims the binding accepted.
//!
//! When that changes for a resource, every object of it is written again (a new
//! resourceVersion, as kcp's claim labelling writes each object), so that watchers through the
//! virtual workspace see objects come into view (ADDED) or leave it (DELETED).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::export::Export;
use super::view::{accepted_claims, claimed_resources};
use super::{bindings, objects_of, str_at, view_key};
use crate::resource::GroupResource;
use crate::status::ApiResult;
use crate::store::{Audience, State};

/// Recomputes the audiences of a cluster's resources and rewrites the objects of those that
/// changed.
pub fn refresh(state: &mut State, cluster: &str) -> ApiResult<()> {
    let wanted = wanted(state, cluster);
    let Some(data) = state.clusters.get_mut(cluster) else {
        return Ok(());
    };
    let mut changed: BTreeSet<GroupResource> = BTreeSet::new();
    for (gr, audience) in &wanted {
        if data.audiences.get(gr) != Some(audience) {
            changed.insert(gr.clone());
        }
    }
    for gr in data.audiences.keys() {
        if !wanted.contains_key(gr) {
            changed.insert(gr.clone());
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    data.audiences = wanted;
    for gr in changed {
        rewrite(state, cluster, &gr)?;
    }
    Ok(())
}

/// The audiences the bindings of a cluster ask for.
fn wanted(state: &State, cluster: &str) -> HashMap<GroupResource, Audience> {
    let mut keys: BTreeMap<GroupResource, BTreeSet<String>> = BTreeMap::new();
    for binding in objects_of(state, cluster, &bindings()) {
        let export_cluster = str_at(&binding, "/status/apiExportClusterName");
        let export_name = str_at(&binding, "/spec/reference/export/name");
        if export_cluster.is_empty() {
            continue;
        }
        let key = view_key(export_cluster, export_name);
        for gr in bound_resources(&binding) {
            keys.entry(gr).or_default().insert(key.clone());
        }
        let Some(export) = Export::load(state, export_cluster, export_name) else {
            continue;
        };
        for claim in accepted_claims(&binding) {
            let offered = export
                .claim_on(&claim.group, &claim.resource)
                .is_some_and(|c| c.same_resource(&claim));
            if !offered {
                continue;
            }
            for gr in claimed_resources(&claim) {
                keys.entry(gr).or_default().insert(key.clone());
            }
        }
    }
    keys.into_iter()
        .map(|(gr, set)| {
            let audience: Audience = set.into_iter().map(Arc::from).collect();
            (gr, audience)
        })
        .collect()
}

/// The resources a binding bound (`status.boundResources`).
pub fn bound_resources(binding: &Value) -> Vec<GroupResource> {
    binding
        .pointer("/status/boundResources")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .map(|b| GroupResource::new(str_at(b, "/group"), str_at(b, "/resource")))
                .collect()
        })
        .unwrap_or_default()
}

/// Writes every object of a resource again, so that it carries the new audience.
fn rewrite(state: &mut State, cluster: &str, gr: &GroupResource) -> ApiResult<()> {
    let keys: Vec<String> = state
        .clusters
        .get(cluster)
        .and_then(|c| c.objects.get(gr))
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for key in keys {
        let (ns, name) = key.split_once('/').unwrap_or(("", key.as_str()));
        let Some(obj) = state.lookup(cluster, gr, ns, name) else {
            continue;
        };
        let mut value = obj.value()?;
        super::claim_labels::apply(state, cluster, gr, &mut value);
        state.store(cluster, gr, ns, name, &mut value)?;
    }
    Ok(())
}
