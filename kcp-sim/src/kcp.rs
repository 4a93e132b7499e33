//! kcp semantics: workspaces and their logical clusters, WorkspaceTypes with initializers, the
//! `kcp.io/cluster` annotation, and the rules of the initializingworkspaces virtual workspace.
//!
//! Creating a Workspace creates a logical cluster with a generated name under the path
//! `<parent path>:<workspace name>`. Its `LogicalCluster` singleton (`cluster`) carries the
//! initializers of the Workspace's type and of every type it extends; the phase is
//! `Initializing` until the last initializer is removed, then `Ready`, and the Workspace mirrors
//! both.

use std::collections::BTreeSet;
use std::sync::Arc;

use kcp_core::kcp::{CLUSTER_ANNOTATION, LOGICAL_CLUSTER_NAME, PATH_ANNOTATION};
use serde_json::{Value, json};

use crate::managed_fields::{self, FieldManager};
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

/// The `403` kcp's admission plugins refuse a request with (`admission.NewForbidden`):
/// `<resource>.<group> "<name>" is forbidden: <why>`, about that object.
pub fn admission_forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    ApiError::forbidden(format!("{qualified} {name:?} is forbidden: {why}"))
        .about(group, resource, name)
}

/// The finalizer kcp's workspace scheduler puts on a Workspace (its logical cluster goes first).
pub const WORKSPACE_FINALIZER: &str = "core.kcp.io/logicalcluster";

/// The finalizer kcp's admission puts on a new APIBinding (its bound objects go first).
pub const APIBINDING_FINALIZER: &str = "apis.kcp.io/apibinding-finalizer";

/// The finalizers kcp's own controllers remove when what they wait for is done; kcp-sim does
/// that work inside the delete request, so these never hold an object longer.
pub fn own_finalizers(rt: &ResourceType) -> &'static [&'static str] {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("tenancy.kcp.io", "Workspace") => &[WORKSPACE_FINALIZER],
        ("apis.kcp.io", "APIBinding") => &[APIBINDING_FINALIZER],
        _ => &[],
    }
}

/// The field manager kcp's controllers write as.
pub const CONTROLLER_MANAGER: &str = "kcp";

/// Stores what one of kcp's controllers changed on an object, as kcp's controllers write: the
/// object (metadata, spec) and its status as two updates by [`CONTROLLER_MANAGER`] at
/// `api_version` (each recorded in `managedFields` only when it changed something), a changed
/// spec counting as a new generation.
pub fn controller_write(
    state: &mut State,
    cluster: &str,
    gr: &GroupResource,
    old: &Value,
    new: &mut Value,
    api_version: &str,
) -> ApiResult<Arc<Stored>> {
    let time = now();
    let main = FieldManager {
        manager: CONTROLLER_MANAGER,
        subresource: None,
        time: &time,
        api_version,
    };
    let status = FieldManager {
        subresource: Some("status"),
        ..main
    };
    let mut without_status_change = new.clone();
    match (old.get("status"), without_status_change.as_object_mut()) {
        (Some(s), Some(root)) => {
            root.insert("status".into(), s.clone());
        }
        (None, Some(root)) => {
            root.remove("status");
        }
        _ => {}
    }
    if old.get("spec") != new.get("spec")
        && let Some(generation) = old.pointer("/metadata/generation").and_then(Value::as_i64)
    {
        without_status_change["metadata"]["generation"] = json!(generation + 1);
    }
    managed_fields::record_update(Some(old), &mut without_status_change, &main);
    let mut written = without_status_change.clone();
    match (new.get("status"), written.as_object_mut()) {
        (Some(s), Some(root)) => {
            root.insert("status".into(), s.clone());
        }
        (None, Some(root)) => {
            root.remove("status");
        }
        _ => {}
    }
    managed_fields::record_update(Some(&without_status_change), &mut written, &status);
    *new = written;
    let (namespace, name) = (
        new.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        new.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    );
    state.store(cluster, gr, &namespace, &name, new)
}

/// Whether `rt` is one of kcp's own kinds (`*.kcp.io`), which kcp serves as custom resources.
pub fn is_kcp_kind(rt: &ResourceType) -> bool {
    rt.group.ends_with(".kcp.io")
}

/// The defaults kcp's CRD schemas give its kinds when a request is decoded, before the write's
/// managed fields are recorded: an APIResourceSchema's `spec.nameValidation` and its versions'
/// `served`, a WorkspaceType's `spec.defaultChildWorkspaceType` (`root:universal`), a
/// Workspace's and a LogicalCluster's `spec` (`{}`), a LogicalCluster's
/// `spec.directlyDeletable` (`false`).
pub fn decode_defaults(rt: &ResourceType, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let spec_default = matches!(
        (rt.group.as_str(), rt.kind.as_str()),
        ("tenancy.kcp.io", "Workspace") | ("core.kcp.io", "LogicalCluster")
    );
    if spec_default {
        root.entry("spec").or_insert_with(|| json!({}));
    }
    let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("apis.kcp.io", "APIResourceSchema") => {
            spec.entry("nameValidation")
                .or_insert_with(|| json!(crate::apiexport::schema::DEFAULT_NAME_VALIDATION));
            let versions = spec.get_mut("versions").and_then(Value::as_array_mut);
            for version in versions
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                version.entry("served").or_insert_with(|| json!(true));
            }
        }
        ("tenancy.kcp.io", "WorkspaceType") => {
            spec.entry("defaultChildWorkspaceType")
                .or_insert_with(|| json!({"name": "universal", "path": ROOT}));
        }
        ("core.kcp.io", "LogicalCluster") => {
            spec.entry("directlyDeletable")
                .or_insert_with(|| json!(false));
        }
        _ => {}
    }
}

/// The kinds kcp's `pathannotation` admission gives the `kcp.io/path` of their workspace.
const PATH_ANNOTATED: &[(&str, &str)] = &[
    ("apis.kcp.io", "APIExport"),
    ("apis.kcp.io", "APIBinding"),
    ("tenancy.kcp.io", "WorkspaceType"),
    ("cache.kcp.io", "CachedResource"),
];

/// Sets `kcp.io/cluster` on every object stored in a kcp logical cluster (clients cannot change
/// it), and, as kcp's `pathannotation` admission, `kcp.io/path` on APIExports, APIBindings and
/// WorkspaceTypes and on any object that carries one (the workspace's path, whatever was sent).
pub fn stamp_cluster(state: &State, cluster: &str, obj: &mut Value) -> ApiResult<()> {
    if state.flavor != Flavor::Kcp {
        return Ok(());
    }
    let group = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.rsplit_once('/'))
        .map_or("", |(group, _)| group)
        .to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let meta = obj
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[CLUSTER_ANNOTATION] = json!(cluster);
    let path = state.clusters.get(cluster).map(|c| c.path.as_str());
    let listed = PATH_ANNOTATED
        .iter()
        .any(|(g, k)| *g == group && *k == kind);
    let logical_cluster = group == "core.kcp.io" && kind == "LogicalCluster";
    let annotated = listed || (!logical_cluster && annotations.get(PATH_ANNOTATION).is_some());
    if let Some(path) = path.filter(|p| annotated && !p.is_empty()) {
        annotations[PATH_ANNOTATION] = json!(path);
    }
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
