//! kcp semantics: workspaces and their logical clusters, WorkspaceTypes with initializers, the
//! `kcp.io/cluster` annotation, and the rules of the initializingworkspaces virtual workspace.
//!
//! Creating a Workspace creates a logical cluster with a generated name under the path
//! `<parent path>:<workspace name>`. Its `LogicalCluster` singleton (`cluster`) carries the
//! initializers of the Workspace's type and of every type it extends; the phase is
//! `Initializing` until the last initializer is removed, then `Ready`, and the Workspace mirrors
//! both.

pub mod lifecycle_views;
pub mod recorded_schemas;
pub mod root_ca;
pub mod system_apis;
pub mod termination;
pub mod types;
pub mod workspace_updates;

use std::sync::Arc;

use kcp_core::kcp::{CLUSTER_ANNOTATION, LOGICAL_CLUSTER_NAME, PATH_ANNOTATION};
use serde_json::{Value, json};

use crate::apiexport::conditions::{self, Condition};
use crate::managed_fields::{self, FieldManager};
use crate::resource::{Flavor, GroupResource, ResourceType};
use crate::schema::{self, CrdSchemas};
use crate::semantics::now;
use crate::status::{ApiError, ApiResult};
use crate::store::{State, Stored};
pub use lifecycle_views::LifecycleView;

/// The name of the root logical cluster.
pub const ROOT: &str = "root";

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
    take_status(&mut without_status_change, old);
    if old.get("spec") != new.get("spec")
        && let Some(generation) = old.pointer("/metadata/generation").and_then(Value::as_i64)
    {
        without_status_change["metadata"]["generation"] = json!(generation + 1);
    }
    managed_fields::record_update(Some(old), &mut without_status_change, &main);
    let mut written = without_status_change.clone();
    take_status(&mut written, new);
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

/// The schemas kcp serves its own kind `rt` with, recorded from a real kcp
/// ([`recorded_schemas`]): in a kcp server they prune, default and validate every write of it,
/// as kube-apiserver admits a custom resource.
pub fn own_schemas(state: &State, rt: &ResourceType) -> Option<&'static CrdSchemas> {
    if state.flavor != Flavor::Kcp || !is_kcp_kind(rt) {
        return None;
    }
    recorded_schemas::crd_schemas(&rt.group, &rt.kind)
}

/// Admits a write of one of kcp's own kinds by kcp's schema of it, as kube-apiserver admits a
/// custom resource: pruned, defaulted and validated. APIExports, APIBindings and
/// APIResourceSchemas are only pruned and defaulted here: their validation is checked with
/// kcp's admission, in its order ([`crate::apiexport::hooks`]).
pub fn admit_own_kind(
    schemas: &CrdSchemas,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    part: schema::Part,
) -> ApiResult<Vec<String>> {
    let validated_by_hooks = rt.group == crate::apiexport::GROUP
        && matches!(
            rt.kind.as_str(),
            "APIExport" | "APIBinding" | "APIResourceSchema"
        );
    if validated_by_hooks {
        return Ok(schema::prune_and_default_reporting(schemas, obj, part));
    }
    schema::admit_reporting(schemas, rt, obj, old, part)
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
/// WorkspaceTypes and on any object that carries one (the workspace's path, whatever was sent);
/// and the permission claim labels ([`crate::apiexport::claim_labels`]).
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
    claim_labels(state, cluster, &group, &kind, obj);
    Ok(())
}

/// As kcp's permission claim admission: the claim labels of the object's resource.
fn claim_labels(state: &State, cluster: &str, group: &str, kind: &str, obj: &mut Value) {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    let gr = state
        .clusters
        .get(cluster)
        .and_then(|c| c.registry.by_kind(group, version, kind))
        .map(|rt| rt.group_resource().clone());
    if let Some(gr) = gr {
        crate::apiexport::claim_labels::apply(state, cluster, &gr, obj);
    }
}

/// The initializer of a WorkspaceType in a logical cluster: `<cluster>:<type name>`.
pub fn initializer_of(type_cluster: &str, type_name: &str) -> String {
    format!("{type_cluster}:{type_name}")
}

/// A logical cluster name as kcp draws them: 16 characters of base 36.
fn random_cluster_name() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..16)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// A version 4 UUID, as the uids kcp's objects get.
fn random_uid() -> String {
    let (a, b) = (fastrand::u64(..), fastrand::u64(..));
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        ((b >> 48) & 0x3fff) | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// The name of a shard of the simulated kcp: `root` for the first, as kcp names its first
/// shard, `shard-<n>` for the others.
pub fn shard_name(shard: usize) -> String {
    match shard {
        0 => ROOT.to_string(),
        n => format!("shard-{n}"),
    }
}

/// The `internal.tenancy.kcp.io/shard` value of a shard: the first 8 base-36 digits of the
/// SHA-224 of its name, as kcp's scheduler writes it.
pub fn shard_hash(shard: usize) -> String {
    use sha2::{Digest as _, Sha224};
    let digest = Sha224::digest(shard_name(shard).as_bytes());
    let digits = crate::apiexport::labels::big_endian_digits(
        &digest,
        b"0123456789abcdefghijklmnopqrstuvwxyz",
    );
    digits.chars().take(8).collect()
}

/// The user every request of kcp-sim is taken to come from (it has no authentication): kcp's
/// admin user.
pub const ADMIN_USER: &str = "kcp-admin";

/// The user of kcp's shard admin (`shard-admin` in kcp's admin kubeconfig, group
/// `system:masters`), the one kind of user kcp lets list every workspace at once.
pub const SHARD_ADMIN_USER: &str = "shard-admin";

/// The groups of [`ADMIN_USER`].
pub const ADMIN_GROUPS: &[&str] = &["system:kcp:admin", "system:authenticated"];

/// The uid of [`ADMIN_USER`] (kcp gives its admin user one when it starts).
pub const ADMIN_UID: &str = "5c1a2e0f-3b7d-4c68-9a41-0d2f6e8b7c35";

/// The annotation kcp records a workspace's creator in.
pub const OWNER_ANNOTATION: &str = "experimental.tenancy.kcp.io/owner";

/// The annotation naming a logical cluster's WorkspaceType (`<path>:<name>`).
pub const TYPE_ANNOTATION: &str = "internal.tenancy.kcp.io/type";

/// The label kcp mirrors a workspace's (and a logical cluster's) phase in.
pub const PHASE_LABEL: &str = "tenancy.kcp.io/phase";

/// The finalizer kcp puts on a LogicalCluster.
pub const LOGICAL_CLUSTER_FINALIZER: &str = "core.kcp.io/logicalcluster-deletion";

const SCHEDULED: &str = "WorkspaceScheduled";
const INITIALIZED: &str = "WorkspaceInitialized";

/// The owner annotation kcp's workspace admission writes for [`ADMIN_USER`]: its user info as
/// Go writes it (username, uid, groups).
fn owner_of_creator() -> String {
    let groups: Vec<String> = ADMIN_GROUPS.iter().map(|g| json!(g).to_string()).collect();
    format!(
        "{{\"username\":{},\"uid\":{},\"groups\":[{}]}}",
        json!(ADMIN_USER),
        json!(ADMIN_UID),
        groups.join(",")
    )
}

/// The owner annotation once the workspace is Ready: kcp keeps only the user name.
fn owner_when_ready(owner: &str) -> Option<String> {
    let info: Value = serde_json::from_str(owner).ok()?;
    Some(format!("{{\"username\":{}}}", info.get("username")?))
}

/// The `(path, name)` of a Workspace's `spec.type`.
fn type_reference(ws: &Value) -> (String, String) {
    let text = |p: &str| {
        ws.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (text("/spec/type/path"), text("/spec/type/name"))
}

/// The type of the workspace (logical cluster) `cluster`: `(path, name)` from its
/// LogicalCluster's [`TYPE_ANNOTATION`].
fn type_of_cluster(state: &State, cluster: &str) -> Option<(String, String)> {
    let lc = state
        .lookup(cluster, &logical_clusters(), "", LOGICAL_CLUSTER_NAME)?
        .value()
        .ok()?;
    let annotation = lc
        .pointer("/metadata/annotations")?
        .get(TYPE_ANNOTATION)?
        .as_str()?;
    let (path, name) = annotation.rsplit_once(':')?;
    Some((path.to_string(), name.to_string()))
}

/// What kcp's workspace admission does to a new Workspace: its type defaults to the parent
/// workspace type's `defaultChildWorkspaceType` and is resolved (its path filled in); the types
/// it extends and those of the parent must allow each other; the creator is recorded as owner;
/// the type's additional labels are added; the phase is `Scheduling`. Refusals are 403s.
pub fn schedule_workspace(state: &State, cluster: &str, ws: &mut Value) -> ApiResult<()> {
    let name = ws
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let refuse = |why: String| admission_forbidden("tenancy.kcp.io", "workspaces", &name, &why);
    // Only system:masters may place a workspace; kcp-admin may not.
    for (field, pointer) in [("spec.Cluster", "/spec/cluster"), ("spec.URL", "/spec/URL")] {
        if ws
            .pointer(pointer)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
        {
            return Err(refuse(format!(
                "{field} can only be set by system privileged users"
            )));
        }
    }
    let parent_path = state
        .clusters
        .get(cluster)
        .map(|c| c.path.clone())
        .unwrap_or_default();
    let parent_type_ref = type_of_cluster(state, cluster);
    let (mut ref_path, ref_name) = match type_reference(ws) {
        (_, n) if n.is_empty() => {
            let (path, parent_name) = parent_type_ref.clone().ok_or_else(|| {
                refuse(format!(
                    "annotation {TYPE_ANNOTATION} on LogicalCluster must be set"
                ))
            })?;
            let parent = types::get(state, &path, &parent_name).ok_or_else(|| {
                refuse(format!(
                    "parent type cannot be resolved: workspacetypes.tenancy.kcp.io \"{path}:{parent_name}\" not found"
                ))
            })?;
            let default = parent
                .spec
                .get("defaultChildWorkspaceType")
                .ok_or_else(|| {
                    refuse(format!(
                        "spec.defaultChildWorkspaceType of workspace type {} must be set",
                        parent.qualified()
                    ))
                })?;
            let text = |k: &str| {
                default
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            (text("path"), text("name"))
        }
        reference => reference,
    };
    let wt = types::resolve(state, &parent_path, &ref_path, &ref_name).map_err(refuse)?;
    if ref_path.is_empty() {
        ref_path = wt.path.clone();
    }
    ws["spec"]["type"] = json!({"name": ref_name, "path": ref_path});
    let child_aliases = types::aliases(state, &wt).map_err(refuse)?;
    if let Some((path, parent_name)) = parent_type_ref {
        let parent = types::get(state, &path, &parent_name).ok_or_else(|| {
            refuse(format!(
                "workspace type cannot be resolved: workspacetypes.tenancy.kcp.io \"{path}:{parent_name}\" not found"
            ))
        })?;
        let parent_aliases = types::aliases(state, &parent).map_err(refuse)?;
        let parent_type = format!("{path}:{parent_name}");
        let child_type = format!("{ref_path}:{ref_name}");
        if let Some(why) =
            types::placement_error(&parent_aliases, &child_aliases, &parent_type, &child_type)
        {
            return Err(refuse(why));
        }
    }
    let meta = ws
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[OWNER_ANNOTATION] = json!(owner_of_creator());
    if let Some(extra) = wt
        .spec
        .get("additionalWorkspaceLabels")
        .and_then(Value::as_object)
    {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            for (k, v) in extra {
                labels.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    ws["status"] = json!({"phase": "Scheduling"});
    Ok(())
}

/// Sets or removes a label.
fn set_label(obj: &mut Value, key: &str, value: Option<&str>) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match value {
        Some(v) => {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if !labels.is_object() {
                *labels = json!({});
            }
            labels[key] = json!(v);
        }
        None => {
            if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
                labels.remove(key);
            }
        }
    }
}

/// The initializers kcp's own controllers remove as soon as they see them: the universal
/// type's (its bootstrap) and the default APIBindings'.
fn is_kcps_own_initializer(initializer: &str) -> bool {
    initializer == types::APIBINDINGS_INITIALIZER
        || initializer == initializer_of(ROOT, "universal")
}

/// The phase, initializers and `WorkspaceInitialized` condition a workspace's status shows
/// for these remaining initializers.
fn initialization_status(status: &mut Value, initializers: &[String]) {
    let list: Vec<Value> = initializers.iter().map(|i| json!(i)).collect();
    let mut holder = json!({"status": status.clone()});
    if initializers.is_empty() {
        // An emptied list stays as its writer left it (kcp does not rewrite it).
        holder["status"]["phase"] = json!("Ready");
        conditions::set(&mut holder, Condition::ok(INITIALIZED));
    } else {
        holder["status"]["phase"] = json!("Initializing");
        holder["status"]["initializers"] = Value::Array(list);
        let why = format!("Initializers still exist: [{}]", initializers.join(" "));
        conditions::set(
            &mut holder,
            Condition::pending(INITIALIZED, "InitializerExists", &why),
        );
    }
    *status = holder["status"].take();
}

/// What kcp's scheduler and controllers do once a Workspace is stored, inside the request: a
/// logical cluster (on a shard, with a generated name) whose LogicalCluster carries the
/// initializers and terminators of the workspace's type and of every type it extends; kcp's
/// own initializers are done at once (a type extending `root:universal` gets its namespaces
/// then); the Workspace is scheduled (cluster, URL, shard, finalizer) and mirrors phase and
/// initializers.
pub fn create_logical_cluster(state: &mut State, parent: &str, ws: &Value) -> ApiResult<()> {
    if ws
        .pointer("/spec/cluster")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        return Ok(());
    }
    let placement = Placement::new(state, parent, ws)?;
    let status = store_logical_cluster(state, &placement, ws)?;
    system_apis::bind_defaults(state, &placement.cluster, &placement.aliases)?;
    system_apis::record_resource_bindings(state, &placement.cluster)?;
    if placement
        .initializers
        .contains(&initializer_of(ROOT, "universal"))
    {
        bootstrap_universal(state, &placement.cluster)?;
    }
    workspace_scheduled(state, &placement, ws, &status)
}

/// Where a new Workspace goes and what its type asks of it.
struct Placement {
    /// The Workspace's cluster and name.
    parent: String,
    name: String,
    /// The new logical cluster, its path and its shard.
    cluster: String,
    path: String,
    shard: usize,
    /// The Workspace's type (`root:org`) and every type it extends.
    type_path: String,
    aliases: Vec<types::Type>,
    /// The initializers of those types, and those left once kcp's own are done.
    initializers: Vec<String>,
    remaining: Vec<String>,
    terminators: Vec<String>,
    /// The Workspace's owner annotation, if it has one.
    owner: Option<String>,
}

impl Placement {
    /// Adds the logical cluster to the store and says what goes into it.
    fn new(state: &mut State, parent: &str, ws: &Value) -> ApiResult<Placement> {
        let name = ws
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let parent_path = state
            .clusters
            .get(parent)
            .map(|c| c.path.clone())
            .unwrap_or_default();
        let (type_path, type_name) = type_reference(ws);
        let aliases = types::get(state, &type_path, &type_name)
            .map(|wt| types::aliases(state, &wt))
            .transpose()
            .map_err(ApiError::internal)?
            .unwrap_or_default();
        let initializers = types::initializers(&aliases);
        let remaining = initializers
            .iter()
            .filter(|i| !is_kcps_own_initializer(i))
            .cloned()
            .collect();
        let cluster = random_cluster_name();
        let path = format!("{parent_path}:{name}");
        state.add_cluster(&cluster, &path);
        let shard = state
            .clusters
            .get(&cluster)
            .map(|c| c.shard)
            .unwrap_or_default();
        Ok(Placement {
            parent: parent.to_string(),
            name,
            cluster,
            path,
            shard,
            type_path: format!("{type_path}:{type_name}"),
            terminators: types::terminators(&aliases),
            aliases,
            initializers,
            remaining,
            owner: ws
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(OWNER_ANNOTATION))
                .and_then(Value::as_str)
                .map(String::from),
        })
    }

    fn is_ready(&self) -> bool {
        self.remaining.is_empty()
    }
}

/// The LogicalCluster as kcp's scheduler creates it, before any controller completes it.
fn logical_cluster_created(placement: &Placement, ws: &Value) -> Value {
    let mut created = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {
            "name": LOGICAL_CLUSTER_NAME,
            "uid": random_uid(),
            "creationTimestamp": now(),
            "generation": 1,
            "annotations": {TYPE_ANNOTATION: placement.type_path, PATH_ANNOTATION: placement.path},
        },
        "spec": {
            "directlyDeletable": false,
            "owner": {
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "resource": "workspaces",
                "name": placement.name,
                "cluster": placement.parent,
                "uid": ws.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
            },
        },
    });
    // kcp's Go type leaves an empty list out.
    for (key, list) in [
        ("initializers", &placement.initializers),
        ("terminators", &placement.terminators),
    ] {
        if !list.is_empty() {
            created["spec"][key] = json!(list);
        }
    }
    created
}

/// Stores the LogicalCluster as kcp's controllers leave it, with the managed fields of their
/// writes; answers its status (without the terminators), which the Workspace mirrors.
fn store_logical_cluster(state: &mut State, placement: &Placement, ws: &Value) -> ApiResult<Value> {
    let mut created = logical_cluster_created(placement, ws);
    let mut done = created.clone();
    let shard_url = state
        .shard_urls
        .get(placement.shard)
        .cloned()
        .unwrap_or_default();
    let mut status = json!({"URL": format!("{shard_url}/clusters/{}", placement.cluster)});
    initialization_status(&mut status, &placement.remaining);
    if let Some(owner) = &placement.owner {
        let owner = if placement.is_ready() {
            owner_when_ready(owner).unwrap_or_else(|| owner.clone())
        } else {
            owner.clone()
        };
        done["metadata"]["annotations"][OWNER_ANNOTATION] = json!(owner);
    }
    set_label(&mut done, PHASE_LABEL, status["phase"].as_str());
    done["status"] = status.clone();
    label_lifecycle(&mut done, INITIALIZER_LABEL_PREFIX, &placement.remaining);
    label_lifecycle(&mut done, termination::LABEL_PREFIX, &placement.terminators);
    controller_created(
        &mut created,
        &mut done,
        Some(json!({})),
        "core.kcp.io/v1alpha1",
    );
    // Stamped on every object of the cluster, never a field anybody manages; the finalizer
    // comes from kcp's admission.
    done["metadata"]["annotations"][CLUSTER_ANNOTATION] = json!(placement.cluster);
    crate::object_meta::add_finalizer(&mut done, LOGICAL_CLUSTER_FINALIZER);
    termination::attach(&mut done, &placement.terminators);
    if !placement.terminators.is_empty() {
        status["terminators"] = json!(placement.terminators);
    }
    let stored = state.encode_next(&mut done)?;
    state.put(
        &placement.cluster,
        &logical_clusters(),
        "",
        LOGICAL_CLUSTER_NAME,
        stored,
    )?;
    Ok(status)
}

/// The Workspace as kcp's scheduler leaves it: its cluster, URL and shard, kcp's finalizer,
/// `WorkspaceScheduled`, and the LogicalCluster's `status` mirrored.
fn workspace_scheduled(
    state: &mut State,
    placement: &Placement,
    ws: &Value,
    status: &Value,
) -> ApiResult<()> {
    let mut scheduled = ws.clone();
    scheduled["spec"]["cluster"] = json!(placement.cluster);
    scheduled["spec"]["URL"] = json!(format!(
        "{}/clusters/{}",
        state.shard_urls.first().map(String::as_str).unwrap_or(""),
        placement.path
    ));
    if let Some(a) = scheduled
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.insert(
            "internal.tenancy.kcp.io/cluster".into(),
            json!(placement.cluster),
        );
        a.insert(
            "internal.tenancy.kcp.io/shard".into(),
            json!(shard_hash(placement.shard)),
        );
    }
    crate::object_meta::add_finalizer(&mut scheduled, WORKSPACE_FINALIZER);
    conditions::set(&mut scheduled, Condition::ok(SCHEDULED));
    mirror(&mut scheduled, status);
    controller_write(
        state,
        &placement.parent,
        &workspaces(),
        ws,
        &mut scheduled,
        "tenancy.kcp.io/v1alpha1",
    )?;
    Ok(())
}

/// Gives an object kcp's controllers created (`created`, before its status, and `done`, how
/// they left it) the managed fields of those writes, on `done`. `status_default` is the status
/// the kind's schema gives an object that has none (it is there before the status is written).
fn controller_created(
    created: &mut Value,
    done: &mut Value,
    status_default: Option<Value>,
    api_version: &str,
) {
    let time = now();
    let main = FieldManager {
        manager: CONTROLLER_MANAGER,
        subresource: None,
        time: &time,
        api_version,
    };
    managed_fields::record_update(None, created, &main);
    let mut without_status = done.clone();
    if let Some(root) = without_status.as_object_mut() {
        root.remove("status");
    }
    managed_fields::record_update(Some(created), &mut without_status, &main);
    if let (Some(status), Some(root)) = (status_default, without_status.as_object_mut()) {
        root.insert("status".into(), status);
    }
    managed_fields::record_update(
        Some(&without_status),
        done,
        &FieldManager {
            subresource: Some("status"),
            ..main
        },
    );
}

/// Mirrors a logical cluster's phase, initializers and `WorkspaceInitialized` on its Workspace
/// (`status`: the LogicalCluster's), with the phase label and, once Ready, the owner annotation
/// cut down to the user name, as kcp's workspace controller does.
fn mirror(ws: &mut Value, status: &Value) {
    let phase = status.get("phase").and_then(Value::as_str);
    set_label(ws, PHASE_LABEL, phase);
    ws["status"]["phase"] = status.get("phase").cloned().unwrap_or(Value::Null);
    // kcp copies them through its Go types, where an empty list is left out.
    for key in ["initializers", "terminators"] {
        let list = status
            .get(key)
            .filter(|i| i.as_array().is_some_and(|a| !a.is_empty()));
        match (list, ws["status"].as_object_mut()) {
            (Some(i), _) => ws["status"][key] = i.clone(),
            (None, Some(s)) => {
                s.remove(key);
            }
            (None, None) => {}
        }
    }
    let initialized = status
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == INITIALIZED))
        .cloned();
    if let Some(c) = initialized {
        let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (reason, message, severity) = (text("reason"), text("message"), text("severity"));
        let condition = if c["status"] == "True" {
            Condition::ok(INITIALIZED)
        } else {
            Condition {
                type_: INITIALIZED,
                status: false,
                severity: &severity,
                reason: &reason,
                message: &message,
            }
        };
        conditions::set(ws, condition);
    }
    if phase == Some("Ready")
        && let Some(owner) = ws
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OWNER_ANNOTATION))
            .and_then(Value::as_str)
            .and_then(owner_when_ready)
    {
        ws["metadata"]["annotations"][OWNER_ANNOTATION] = json!(owner);
    }
}

/// After a LogicalCluster was written (say its last initializer removed through an
/// initializingworkspaces virtual workspace): kcp's controllers move it to Ready once no
/// initializer is left, and mirror it on its Workspace.
pub fn logical_cluster_changed(state: &mut State, cluster: &str, lc: &Value) -> ApiResult<()> {
    let remaining = initializers_of(lc);
    let mut next = lc.clone();
    let mut status = lc.get("status").cloned().unwrap_or_else(|| json!({}));
    let initializing = lc.pointer("/status/phase").and_then(Value::as_str) == Some("Initializing");
    if initializing {
        initialization_status(&mut status, &remaining);
        next["status"] = status.clone();
        set_label(&mut next, PHASE_LABEL, status["phase"].as_str());
        label_lifecycle(&mut next, INITIALIZER_LABEL_PREFIX, &remaining);
        if remaining.is_empty()
            && let Some(owner) = next
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(OWNER_ANNOTATION))
                .and_then(Value::as_str)
                .and_then(owner_when_ready)
        {
            next["metadata"]["annotations"][OWNER_ANNOTATION] = json!(owner);
        }
        if next != *lc {
            controller_write(
                state,
                cluster,
                &logical_clusters(),
                lc,
                &mut next,
                "core.kcp.io/v1alpha1",
            )?;
        }
    }
    let (Some(owner_cluster), Some(owner_name)) = (
        next.pointer("/spec/owner/cluster").and_then(Value::as_str),
        next.pointer("/spec/owner/name").and_then(Value::as_str),
    ) else {
        return Ok(());
    };
    let (owner_cluster, owner_name) = (owner_cluster.to_string(), owner_name.to_string());
    let Some(ws) = state.lookup(&owner_cluster, &workspaces(), "", &owner_name) else {
        return Ok(());
    };
    let ws = ws.value()?;
    let mut mirrored = ws.clone();
    mirror(&mut mirrored, &status);
    if mirrored != ws {
        controller_write(
            state,
            &owner_cluster,
            &workspaces(),
            &ws,
            &mut mirrored,
            "tenancy.kcp.io/v1alpha1",
        )?;
    }
    Ok(())
}

/// After a WorkspaceType was created: kcp's WorkspaceType controller publishes its virtual
/// workspace URLs and conditions in its status (a status written later is left as written).
pub fn workspace_type_created(state: &mut State, cluster: &str, wt: &Value) -> ApiResult<()> {
    let status = types::status(state, cluster, wt);
    if wt.get("status") == Some(&status) {
        return Ok(());
    }
    let mut next = wt.clone();
    next["status"] = status;
    controller_write(
        state,
        cluster,
        &workspace_types(),
        wt,
        &mut next,
        "tenancy.kcp.io/v1alpha1",
    )?;
    Ok(())
}

fn initializers_of(lc: &Value) -> Vec<String> {
    lifecycle_views::entries(lc, "initializers")
}

/// Whether `rt` is kcp's Workspace.
pub fn is_workspace(rt: &ResourceType) -> bool {
    rt.group == "tenancy.kcp.io" && rt.kind == "Workspace"
}

/// The kcp rules of an update: a Workspace stays where it is ([`workspace_updates::admit`]);
/// a LogicalCluster's initializers can only be removed, and through a lifecycle view only that
/// view's own entry can go ([`LifecycleView::check_write`]).
pub fn check_update(
    rt: &ResourceType,
    old: &Value,
    new: &Value,
    through: Option<&LifecycleView>,
) -> ApiResult<()> {
    if is_workspace(rt) {
        let name = new
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return workspace_updates::admit(old, new, name);
    }
    if rt.group != "core.kcp.io" || rt.kind != "LogicalCluster" {
        return Ok(());
    }
    let before = initializers_of(old);
    let added: Vec<String> = initializers_of(new)
        .into_iter()
        .filter(|i| !before.contains(i))
        .collect();
    if !added.is_empty() {
        return Err(ApiError::invalid(
            "core.kcp.io",
            "LogicalCluster",
            LOGICAL_CLUSTER_NAME,
            "status.initializers",
            &format!("Forbidden: initializers cannot be added, found {added:?}"),
        ));
    }
    through.map_or(Ok(()), |view| view.check_write(old, new))
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

/// Sets up the root workspace (of type `root:root`) and its builtin WorkspaceTypes
/// ([`types::builtin`]), as kcp's bootstrap leaves them.
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
        "metadata": {"name": LOGICAL_CLUSTER_NAME, "uid": random_uid(), "creationTimestamp": now(),
            "generation": 1, "resourceVersion": rv.to_string(),
            "annotations": {CLUSTER_ANNOTATION: ROOT, PATH_ANNOTATION: ROOT,
                TYPE_ANNOTATION: format!("{ROOT}:{ROOT}"),
                OWNER_ANNOTATION: json!({"username": "system:kcp-bootstrapper"}).to_string()}},
        "spec": {"directlyDeletable": false},
        "status": {"phase": "Ready", "URL": url},
    });
    state.put(
        ROOT,
        &logical_clusters(),
        "",
        LOGICAL_CLUSTER_NAME,
        Stored::encode(&root_lc, rv)?,
    )?;
    for (name, spec) in types::builtin() {
        let mut created = json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "WorkspaceType",
            "metadata": {"name": name, "uid": random_uid(), "creationTimestamp": now(),
                "generation": 1},
            "spec": spec,
        });
        let mut done = created.clone();
        done["status"] = types::status(state, ROOT, &created);
        controller_created(&mut created, &mut done, None, "tenancy.kcp.io/v1alpha1");
        done["metadata"]["annotations"] = json!({CLUSTER_ANNOTATION: ROOT, PATH_ANNOTATION: ROOT});
        let stored = state.encode_next(&mut done)?;
        state.put(ROOT, &workspace_types(), "", name, stored)?;
    }
    let shard_urls = state.shard_urls.clone();
    system_apis::bootstrap(state, &shard_urls)
}

/// `object`'s status replaced by `from`'s (removed when `from` has none).
fn take_status(object: &mut Value, from: &Value) {
    let Some(root) = object.as_object_mut() else {
        return;
    };
    match from.get("status") {
        Some(status) => {
            root.insert("status".into(), status.clone());
        }
        None => {
            root.remove("status");
        }
    }
}

/// What kcp's service account controller makes in every new namespace: its `default`
/// ServiceAccount (seen on kcp v0.30.0, with no managed fields). A Kubernetes cluster's comes
/// from kube-controller-manager, which the test bed runs with the garbage collector alone.
pub fn default_service_account(
    state: &mut State,
    cluster: &str,
    namespace: &Value,
) -> ApiResult<()> {
    let name = namespace
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let body = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": name}});
    crate::semantics::ensure_created(
        state,
        cluster,
        "serviceaccounts",
        Some(&name),
        body,
        CONTROLLER_MANAGER,
    )
}

/// What the universal type's bootstrap creates in a workspace whose type extends
/// `root:universal`, before it removes that initializer: the `default` and `kube-system`
/// namespaces, created once and then left to the user (conformance
/// kcp-views/an-initializer-sees-its-initializing-workspaces). A workspace of a type that
/// does not extend it gets none (kcp-workspaces/a-workspace-of-a-type-that-does-not-extend-universal-has-no-namespaces).
fn bootstrap_universal(state: &mut State, cluster: &str) -> ApiResult<()> {
    for namespace in ["default", "kube-system"] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace,
            "annotations": {"bootstrap.kcp.io/create-only": "true"}}});
        crate::semantics::ensure_created(
            state,
            cluster,
            "namespaces",
            None,
            body,
            CONTROLLER_MANAGER,
        )?;
    }
    Ok(())
}

/// The label kcp's LogicalCluster controller sets for each initializer (or terminator) in a
/// LogicalCluster's status (`initialization.InitializerToLabel`,
/// `termination.TerminatorToLabel`): the key is `prefix` and as much of the entry's SHA-224
/// (hex) as a label value may hold after it, the value is the whole digest. The lifecycle
/// views select by it.
pub fn lifecycle_label(prefix: &str, entry: &str) -> (String, String) {
    use sha2::{Digest, Sha224};
    const LABEL_VALUE_MAX: usize = 63;
    let hash = format!("{:x}", Sha224::digest(entry.as_bytes()));
    let key_hash = hash
        .get(..LABEL_VALUE_MAX.saturating_sub(prefix.len()))
        .unwrap_or(&hash);
    (format!("{prefix}{key_hash}"), hash)
}

/// The label prefix of an initializer ([`lifecycle_label`]).
pub const INITIALIZER_LABEL_PREFIX: &str = "initializer.internal.kcp.io/";

/// Makes a LogicalCluster's labels of `prefix` match `entries` (its initializers or
/// terminators): one [`lifecycle_label`] each, none for an entry that is gone.
fn label_lifecycle(lc: &mut Value, prefix: &str, entries: &[String]) {
    let wanted: Vec<(String, String)> =
        entries.iter().map(|e| lifecycle_label(prefix, e)).collect();
    if let Some(labels) = lc
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.retain(|k, _| !k.starts_with(prefix) || wanted.iter().any(|(w, _)| w == k));
    }
    for (key, value) in wanted {
        set_label(lc, &key, Some(&value));
    }
}
