//! APIExportEndpointSlices: kcp creates one per APIExport under the export's name (unless the
//! export carries [`SKIP_ANNOTATION`]); users create more. `status.endpoints` lists one apiexport
//! virtual workspace URL per shard that holds a consumer of the export (a workspace with a
//! binding to it), so it is empty while nothing binds the export. Partitions are not simulated:
//! every shard counts.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::conditions::{self, Condition};
use super::export::Export;
use super::{bindings, binds_export, slices, str_at};
use crate::managed_fields::{self, FieldManager};
use crate::semantics::{self, WriteOptions};
use crate::status::ApiResult;
use crate::store::State;

/// An APIExport annotation that stops kcp from creating its endpoint slice.
pub const SKIP_ANNOTATION: &str = "apiexports.apis.kcp.io/skip-endpointslice";

/// The virtual workspace URL of an export on a shard.
pub fn url(shard_url: &str, export_cluster: &str, export: &str) -> String {
    format!("{shard_url}/services/apiexport/{export_cluster}/{export}")
}

/// Creates the endpoint slice of an export, unless it exists or the export opts out.
pub fn ensure_default(state: &mut State, cluster: &str, export: &Value) -> ApiResult<()> {
    let name = str_at(export, "/metadata/name");
    let skip = export
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SKIP_ANNOTATION))
        .is_some();
    if skip || state.lookup(cluster, &slices(), "", name).is_some() {
        return Ok(());
    }
    let Some(rt) = state
        .clusters
        .get(cluster)
        .and_then(|c| c.registry.get(&slices()))
        .cloned()
    else {
        return Ok(());
    };
    let path = state
        .clusters
        .get(cluster)
        .map(|c| c.path.clone())
        .unwrap_or_default();
    let body = json!({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
        "metadata": {"name": name, "ownerReferences": [{"apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExport", "name": name, "uid": str_at(export, "/metadata/uid")}]},
        "spec": {"export": {"name": name, "path": path}},
    });
    let opts = WriteOptions {
        default_manager: crate::kcp::CONTROLLER_MANAGER.into(),
        ..WriteOptions::default()
    };
    semantics::create(state, cluster, &rt, "v1alpha1", None, body, &opts)?;
    Ok(())
}

/// The shards holding a consumer of an export (stops looking once every shard has one).
fn consumer_shards(state: &State, export_cluster: &str, export: &str) -> BTreeSet<usize> {
    let gr = bindings();
    let shards = state.shard_urls.len().max(1);
    let mut found = BTreeSet::new();
    for data in state.clusters.values() {
        if found.len() == shards {
            break;
        }
        if found.contains(&data.shard) {
            continue;
        }
        let binds = data
            .objects
            .get(&gr)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|o| o.value().ok())
            .any(|b| binds_export(&b, export_cluster, export));
        if binds {
            found.insert(data.shard);
        }
    }
    found
}

/// Recomputes a slice's status and stores it when it changed, as kcp writes it: each shard's
/// endpoint slice controller applies its shard's endpoint (an empty status while the shard
/// holds no consumer) under the shard's name, and kcp's controller updates the conditions.
pub fn refresh(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let Some(stored) = state.lookup(cluster, &slices(), "", name) else {
        return Ok(());
    };
    let old = stored.value()?;
    if old.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    let path = match str_at(&old, "/spec/export/path") {
        "" => cluster.to_string(),
        p => p.to_string(),
    };
    let export_name = str_at(&old, "/spec/export/name").to_string();
    let mut conditions_of = old.clone();
    let mut endpoints: Vec<Option<Value>> = vec![None; state.shard_urls.len().max(1)];
    match Export::find(state, &path, &export_name) {
        None => {
            let why = format!("Error getting APIExport {path}|{export_name}");
            conditions::set(
                &mut conditions_of,
                Condition::failed("APIExportValid", "APIExportNotFound", &why),
            );
        }
        Some(export) => {
            for shard in consumer_shards(state, &export.cluster, &export.name) {
                if let (Some(slot), Some(shard_url)) =
                    (endpoints.get_mut(shard), state.shard_urls.get(shard))
                {
                    *slot = Some(json!({"url": url(shard_url, &export.cluster, &export.name)}));
                }
            }
            conditions::set(&mut conditions_of, Condition::ok("APIExportValid"));
            conditions::set(&mut conditions_of, Condition::ok("PartitionValid"));
        }
    }
    let time = semantics::now();
    let api_version = format!("{}/v1alpha1", super::GROUP);
    let mut next = old.clone();
    for (shard, endpoint) in endpoints.into_iter().enumerate() {
        let manager = crate::kcp::shard_name(shard);
        let status = match endpoint {
            Some(e) => json!({"endpoints": [e]}),
            None => json!({}),
        };
        let applied = json!({"apiVersion": api_version, "kind": "APIExportEndpointSlice",
            "metadata": {"name": name}, "status": status});
        let who = FieldManager {
            manager: &manager,
            subresource: Some("status"),
            time: &time,
            api_version: &api_version,
        };
        if let Ok(applied) = managed_fields::apply(Some(&next), &applied, &who, true) {
            next = applied;
        }
    }
    let mut updated = next.clone();
    updated["status"]["conditions"] = conditions_of["status"]["conditions"].clone();
    let who = FieldManager {
        manager: crate::kcp::CONTROLLER_MANAGER,
        subresource: Some("status"),
        time: &time,
        api_version: &api_version,
    };
    managed_fields::record_update(Some(&next), &mut updated, &who);
    if updated != old {
        state.store(cluster, &slices(), "", name, &mut updated)?;
    }
    Ok(())
}

/// Recomputes every slice (in any cluster) that refers to the export `name` in `cluster`.
pub fn refresh_for_export(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let gr = slices();
    let mut found = Vec::new();
    for (owner, data) in &state.clusters {
        for obj in data.objects.get(&gr).into_iter().flat_map(|m| m.values()) {
            let Ok(slice) = obj.value() else { continue };
            if str_at(&slice, "/spec/export/name") != name {
                continue;
            }
            let path = match str_at(&slice, "/spec/export/path") {
                "" => owner.as_str(),
                p => p,
            };
            if state.resolve_cluster(path) == Some(cluster) {
                found.push((owner.clone(), str_at(&slice, "/metadata/name").to_string()));
            }
        }
    }
    for (owner, slice) in found {
        refresh(state, &owner, &slice)?;
    }
    Ok(())
}
