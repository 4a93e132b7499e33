//! kcp semantics: workspaces and their logical clusters, WorkspaceTypes with initializers, the
//! `kcp.io/cluster` annotation, and the rules of the initializingworkspaces virtual workspace.
//!
//! Creating a Workspace creates a logical cluster with a generated name under the path
//! `<parent path>:<workspace name>`. Its `LogicalCluster` singleton (`cluster`) carries the
//! initializers of the Workspace's type and of every type it extends; the phase is
//! `Initializing` until the last initializer is removed, then `Ready`, and the Workspace mirrors
//! both.

use std::collections::BTreeSet;

use kcp_core::kcp::{CLUSTER_ANNOTATION, LOGICAL_CLUSTER_NAME, PATH_ANNOTATION};
use serde_json::{Value, json};

use crate::resource::{Flavor, GroupResource, ResourceType};
use crate::semantics::now;
use crate::status::{ApiError, ApiResult};
use crate::store::{State, Stored};

/// The name of the root logical cluster.
pub const ROOT: &str = "root";

/// The WorkspaceTypes that exist in `root` from the start (none has an initializer).
pub const BUILTIN_WORKSPACE_TYPES: &[&str] = &["universal", "organization", "team"];

fn workspaces() -> GroupResource {
    GroupResource::new("tenancy.kcp.io", "workspaces")
}

fn workspace_types() -> GroupResource {
    GroupResource::new("tenancy.kcp.io", "workspacetypes")
}

fn logical_clusters() -> GroupResource {
    GroupResource::new("core.kcp.io", "logicalclusters")
}

/// Sets `kcp.io/cluster` on every object stored in a kcp logical cluster (clients cannot change it).
pub fn stamp_cluster(state: &State, cluster: &str, obj: &mut Value) -> ApiResult<()> {
    if state.flavor != Flavor::Kcp {
        return Ok(());
    }
    let meta = obj
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[CLUSTER_ANNOTATION] = json!(cluster);
    Ok(())
}

/// The initializer of a WorkspaceType in a logical cluster: `<cluster>:<type name>`.
pub fn initializer_of(type_cluster: &str, type_name: &str) -> String {
    format!("{type_cluster}:{type_name}")
}

fn random_cluster_name() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut name = String::with_capacity(16);
    name.push((b'a' + fastrand::u8(..26)) as char);
    for _ in 1..16 {
        name.push(ALPHABET[fastrand::usize(..ALPHABET.len())] as char);
    }
    name
}

/// Gives a new Workspace its type, logical cluster name, URL and initial phase.
pub fn schedule_workspace(state: &State, cluster: &str, ws: &mut Value) -> ApiResult<()> {
    let name = ws
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let parent_path = state
        .clusters
        .get(cluster)
        .map(|c| c.path.clone())
        .unwrap_or_default();
    let type_ref = ws
        .pointer("/spec/type")
        .cloned()
        .filter(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
        })
        .unwrap_or_else(|| json!({"name": "universal", "path": ROOT}));
    let type_name = type_ref["name"].as_str().unwrap_or_default().to_string();
    let type_path = type_ref
        .get("path")
        .and_then(Value::as_str)
        .map(String::from);
    let type_cluster = match type_path.as_deref() {
        Some(p) => state.resolve_cluster(p).map(String::from),
        None => Some(cluster.to_string()),
    };
    let invalid =
        |why: String| ApiError::invalid("tenancy.kcp.io", "Workspace", &name, "spec.type", &why);
    let Some(type_cluster) = type_cluster else {
        return Err(invalid(format!(
            "Invalid value: workspace {:?} of the type does not exist",
            type_path.unwrap_or_default()
        )));
    };
    let mut initializers = Vec::new();
    collect_initializers(
        state,
        &type_cluster,
        &type_name,
        &mut initializers,
        &mut BTreeSet::new(),
    )
    .map_err(invalid)?;
    let lc = random_cluster_name();
    let path = format!("{parent_path}:{name}");
    let url = format!(
        "{}/clusters/{path}",
        state.shard_urls.first().map(String::as_str).unwrap_or("")
    );
    let phase = if initializers.is_empty() {
        "Ready"
    } else {
        "Initializing"
    };
    let resolved_path = state
        .clusters
        .get(&type_cluster)
        .map(|c| c.path.clone())
        .unwrap_or(type_cluster.clone());
    ws["spec"]["type"] = json!({"name": type_name, "path": resolved_path});
    ws["spec"]["cluster"] = json!(lc);
    ws["spec"]["URL"] = json!(url);
    ws["status"] = json!({
        "phase": phase,
        "initializers": initializers,
        "conditions": [{"type": "WorkspaceScheduled", "status": "True", "lastTransitionTime": now()}],
    });
    Ok(())
}

/// The initializers of a WorkspaceType and every type it extends, in order, without repeats.
fn collect_initializers(
    state: &State,
    type_cluster: &str,
    type_name: &str,
    out: &mut Vec<String>,
    seen: &mut BTreeSet<(String, String)>,
) -> Result<(), String> {
    if !seen.insert((type_cluster.to_string(), type_name.to_string())) {
        return Ok(());
    }
    let found = state
        .clusters
        .get(type_cluster)
        .and_then(|c| c.get(&workspace_types(), "", type_name))
        .ok_or_else(|| {
            format!("Invalid value: WorkspaceType {type_name:?} does not exist in {type_cluster:?}")
        })?;
    let wt = found.value().map_err(|e| e.message)?;
    if wt.pointer("/spec/initializer").and_then(Value::as_bool) == Some(true) {
        let init = initializer_of(type_cluster, type_name);
        if !out.contains(&init) {
            out.push(init);
        }
    }
    let extends = wt
        .pointer("/spec/extend/with")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for parent in extends {
        let Some(parent_name) = parent.get("name").and_then(Value::as_str) else {
            continue;
        };
        let parent_cluster = match parent.get("path").and_then(Value::as_str) {
            Some(p) => state
                .resolve_cluster(p)
                .ok_or_else(|| format!("Invalid value: workspace {p:?} does not exist"))?
                .to_string(),
            None => type_cluster.to_string(),
        };
        collect_initializers(state, &parent_cluster, parent_name, out, seen)?;
    }
    Ok(())
}

/// Publishes a WorkspaceType's virtual workspace URLs (one per shard) in its status.
pub fn publish_virtual_workspaces(state: &State, cluster: &str, wt: &mut Value) {
    let name = wt
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut urls = Vec::new();
    let initializer = wt.pointer("/spec/initializer").and_then(Value::as_bool) == Some(true);
    let terminator = wt.pointer("/spec/terminator").and_then(Value::as_bool) == Some(true);
    let init = initializer_of(cluster, &name);
    for shard in &state.shard_urls {
        if initializer {
            urls.push(json!({"url": format!("{shard}/services/initializingworkspaces/{init}")}));
        }
        if terminator {
            urls.push(json!({"url": format!("{shard}/services/terminatingworkspaces/{init}")}));
        }
    }
    let conditions = wt.pointer("/status/conditions").cloned().unwrap_or_else(
        || json!([{"type": "Ready", "status": "True", "lastTransitionTime": now()}]),
    );
    wt["status"] = json!({"virtualWorkspaces": urls, "conditions": conditions});
}

/// Creates the logical cluster of a newly stored Workspace, with its `cluster` singleton.
pub fn create_logical_cluster(state: &mut State, parent: &str, ws: &Value) -> ApiResult<()> {
    let Some(lc) = ws.pointer("/spec/cluster").and_then(Value::as_str) else {
        return Ok(());
    };
    let name = ws
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let parent_path = state
        .clusters
        .get(parent)
        .map(|c| c.path.clone())
        .unwrap_or_default();
    let path = format!("{parent_path}:{name}");
    state.add_cluster(lc, &path);
    let initializers = ws
        .pointer("/status/initializers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    let phase = ws
        .pointer("/status/phase")
        .cloned()
        .unwrap_or_else(|| json!("Ready"));
    let url = ws.pointer("/spec/URL").cloned().unwrap_or(Value::Null);
    let rv = state.next_rv();
    let obj = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {
            "name": LOGICAL_CLUSTER_NAME,
            "uid": ws.pointer("/metadata/uid").and_then(Value::as_str).map(|u| format!("{u}-lc")).unwrap_or_default(),
            "creationTimestamp": now(),
            "generation": 1,
            "resourceVersion": rv.to_string(),
            "annotations": {CLUSTER_ANNOTATION: lc, PATH_ANNOTATION: path},
        },
        "spec": {
            "owner": {
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "resource": "workspaces",
                "name": name,
                "cluster": parent,
                "uid": ws.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
            },
            "initializers": initializers,
        },
        "status": {"phase": phase, "initializers": initializers, "URL": url},
    });
    let stored = Stored::encode(&obj, rv)?;
    state.put(lc, &logical_clusters(), "", LOGICAL_CLUSTER_NAME, stored)?;
    // As kcp: a workspace gets its `default` namespace once it is Ready, not while initializers
    // still work on it (seen on kcp v0.30.0).
    if phase == json!("Ready") {
        crate::semantics::ensure_namespace(state, lc, "default")?;
    }
    Ok(())
}

/// Moves a logical cluster whose last initializer went from Initializing to Ready, and mirrors
/// its phase and initializers on its Workspace.
pub fn logical_cluster_changed(state: &mut State, cluster: &str, lc: &Value) -> ApiResult<()> {
    let initializers = lc
        .pointer("/status/initializers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let phase = lc
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if initializers.is_empty() && phase == "Initializing" {
        let mut ready = lc.clone();
        ready["status"]["phase"] = json!("Ready");
        let stored = state.encode_next(&mut ready)?;
        state.put(
            cluster,
            &logical_clusters(),
            "",
            LOGICAL_CLUSTER_NAME,
            stored,
        )?;
        crate::semantics::ensure_namespace(state, cluster, "default")?;
        return mirror_on_workspace(state, &ready);
    }
    mirror_on_workspace(state, lc)
}

fn mirror_on_workspace(state: &mut State, lc: &Value) -> ApiResult<()> {
    let (Some(owner_cluster), Some(owner_name)) = (
        lc.pointer("/spec/owner/cluster").and_then(Value::as_str),
        lc.pointer("/spec/owner/name").and_then(Value::as_str),
    ) else {
        return Ok(());
    };
    let Some(ws) = state.lookup(owner_cluster, &workspaces(), "", owner_name) else {
        return Ok(());
    };
    let mut ws = ws.value()?;
    let phase = lc.pointer("/status/phase").cloned().unwrap_or(Value::Null);
    let initializers = lc
        .pointer("/status/initializers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    if ws.pointer("/status/phase") == Some(&phase)
        && ws.pointer("/status/initializers") == Some(&initializers)
    {
        return Ok(());
    }
    ws["status"]["phase"] = phase;
    ws["status"]["initializers"] = initializers;
    let stored = state.encode_next(&mut ws)?;
    let (owner_cluster, owner_name) = (owner_cluster.to_string(), owner_name.to_string());
    state.put(&owner_cluster, &workspaces(), "", &owner_name, stored)?;
    Ok(())
}

fn initializers_of(lc: &Value) -> Vec<String> {
    lc.pointer("/status/initializers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a LogicalCluster still carries an initializer.
pub fn carries_initializer(lc: &Value, initializer: &str) -> bool {
    lc.pointer("/status/initializers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|i| i.as_str() == Some(initializer)))
}

/// The kcp rules of an update: a LogicalCluster's initializers can only be removed, and through
/// an initializingworkspaces virtual workspace only that workspace's own initializer can go.
pub fn check_update(
    rt: &ResourceType,
    old: &Value,
    new: &Value,
    through_initializer: Option<&str>,
) -> ApiResult<()> {
    if rt.group != "core.kcp.io" || rt.kind != "LogicalCluster" {
        return Ok(());
    }
    let before = initializers_of(old);
    let after = initializers_of(new);
    let added: Vec<&String> = after.iter().filter(|i| !before.contains(i)).collect();
    let removed: Vec<&String> = before.iter().filter(|i| !after.contains(i)).collect();
    let name = LOGICAL_CLUSTER_NAME;
    if !added.is_empty() {
        return Err(ApiError::invalid(
            "core.kcp.io",
            "LogicalCluster",
            name,
            "status.initializers",
            &format!("Forbidden: initializers cannot be added, found {added:?}"),
        ));
    }
    if let Some(own) = through_initializer {
        if let Some(other) = removed.iter().find(|i| i.as_str() != own) {
            return Err(ApiError::forbidden(format!(
                "logicalclusters.core.kcp.io \"cluster\" is forbidden: only the initializer {own:?} may be removed through this virtual workspace, not {other:?}"
            ))
            .about("core.kcp.io", "logicalclusters", name));
        }
        let spec_changed = old.get("spec") != new.get("spec")
            || old.pointer("/metadata/labels") != new.pointer("/metadata/labels");
        if spec_changed {
            return Err(ApiError::forbidden(
                "logicalclusters.core.kcp.io \"cluster\" is forbidden: an initializer may only change status.initializers",
            )
            .about("core.kcp.io", "logicalclusters", name));
        }
    }
    Ok(())
}

/// The kcp rules of a delete: the LogicalCluster goes with its Workspace, not on its own.
pub fn check_delete(rt: &ResourceType, name: &str) -> ApiResult<()> {
    if rt.group == "core.kcp.io" && rt.kind == "LogicalCluster" {
        return Err(ApiError::forbidden(format!(
            "logicalclusters.core.kcp.io {name:?} is forbidden: delete the Workspace instead"
        ))
        .about("core.kcp.io", "logicalclusters", name));
    }
    Ok(())
}

/// Removes the logical cluster of a deleted Workspace, and those of the workspaces nested in it.
pub fn workspace_removed(state: &mut State, ws: &Stored) -> ApiResult<()> {
    let ws = ws.value()?;
    let Some(lc) = ws.pointer("/spec/cluster").and_then(Value::as_str) else {
        return Ok(());
    };
    let Some(path) = state.clusters.get(lc).map(|c| c.path.clone()) else {
        return Ok(());
    };
    let nested_prefix = format!("{path}:");
    let nested: Vec<String> = state
        .clusters
        .values()
        .filter(|c| c.path.starts_with(&nested_prefix))
        .map(|c| c.name.to_string())
        .collect();
    let mut gone_bindings = Vec::new();
    for name in nested.iter().map(String::as_str).chain([lc]) {
        gone_bindings.extend(crate::apiexport::objects_of(
            state,
            name,
            &crate::apiexport::bindings(),
        ));
        state.remove_cluster(name);
    }
    crate::apiexport::hooks::clusters_removed(state, &gone_bindings)
}

/// Whether a cluster may be reached through the initializingworkspaces virtual workspace of
/// `initializer`: only while its LogicalCluster still carries that initializer.
pub fn initializing_with(
    state: &State,
    cluster: &str,
    initializer: &str,
    shard: Option<usize>,
) -> ApiResult<()> {
    let allowed = state
        .clusters
        .get(cluster)
        .filter(|c| shard.is_none_or(|s| s == c.shard))
        .and_then(|c| c.get(&logical_clusters(), "", LOGICAL_CLUSTER_NAME))
        .and_then(|lc| lc.value().ok())
        .is_some_and(|lc| carries_initializer(&lc, initializer));
    if allowed {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "cluster {cluster:?} is not initializing with initializer {initializer:?}"
        )))
    }
}

/// Sets up the root workspace and its builtin WorkspaceTypes.
pub fn bootstrap(state: &mut State) -> ApiResult<()> {
    state.add_cluster(ROOT, ROOT);
    let url = format!(
        "{}/clusters/{ROOT}",
        state.shard_urls.first().map(String::as_str).unwrap_or("")
    );
    let rv = state.next_rv();
    let root_lc = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": LOGICAL_CLUSTER_NAME, "uid": "root-logicalcluster", "creationTimestamp": now(),
            "generation": 1, "resourceVersion": rv.to_string(),
            "annotations": {CLUSTER_ANNOTATION: ROOT, PATH_ANNOTATION: ROOT}},
        "spec": {},
        "status": {"phase": "Ready", "URL": url},
    });
    state.put(
        ROOT,
        &logical_clusters(),
        "",
        LOGICAL_CLUSTER_NAME,
        Stored::encode(&root_lc, rv)?,
    )?;
    for name in BUILTIN_WORKSPACE_TYPES {
        let rv = state.next_rv();
        let mut wt = json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "WorkspaceType",
            "metadata": {"name": name, "uid": format!("root-workspacetype-{name}"), "creationTimestamp": now(),
                "generation": 1, "resourceVersion": rv.to_string(),
                "annotations": {CLUSTER_ANNOTATION: ROOT}},
            "spec": {},
        });
        publish_virtual_workspaces(state, ROOT, &mut wt);
        state.put(ROOT, &workspace_types(), "", name, Stored::encode(&wt, rv)?)?;
    }
    Ok(())
}
