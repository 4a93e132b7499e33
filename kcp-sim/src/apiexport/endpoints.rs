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
        default_manager: "kcp-sim".into(),
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

/// Recomputes a slice's status and stores it when it changed.
pub fn refresh(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let Some(stored) = state.lookup(cluster, &slices(), "", name) else {
        return Ok(());
    };
    let mut slice = stored.value()?;
    if slice.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    let before = slice.get("status").cloned();
    let path = match str_at(&slice, "/spec/export/path") {
        "" => cluster.to_string(),
        p => p.to_string(),
    };
    let export_name = str_at(&slice, "/spec/export/name").to_string();
    match Export::find(state, &path, &export_name) {
        None => {
            if let Some(status) = slice.get_mut("status").and_then(Value::as_object_mut) {
                status.remove("endpoints");
            }
            let why = format!("Error getting APIExport {path}|{export_name}");
            conditions::set(
                &mut slice,
                Condition::failed("APIExportValid", "APIExportNotFound", &why),
            );
        }
        Some(export) => {
            let urls: Vec<Value> = consumer_shards(state, &export.cluster, &export.name)
                .into_iter()
                .filter_map(|s| state.shard_urls.get(s))
                .map(|u| json!({"url": url(u, &export.cluster, &export.name)}))
                .collect();
            conditions::set(&mut slice, Condition::ok("APIExportValid"));
            conditions::set(&mut slice, Condition::ok("PartitionValid"));
            if urls.is_empty() {
                if let Some(status) = slice.get_mut("status").and_then(Value::as_object_mut) {
                    status.remove("endpoints");
                }
            } else {
                slice["status"]["endpoints"] = Value::Array(urls);
            }
        }
    }
    if slice.get("status") != before.as_ref() {
        state.store(cluster, &slices(), "", name, &mut slice)?;
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
