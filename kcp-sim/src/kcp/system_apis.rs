//! kcp's own APIs as kcp publishes them through its export machinery: in `root`, the
//! APIResourceSchemas of kcp's kinds and the APIExports `tenancy.kcp.io`, `topology.kcp.io`,
//! `cache.kcp.io` and `shards.core.kcp.io`, each but `cache.kcp.io` bound in `root` by a
//! binding of the export's name (so `root` alone serves Shards, one per shard of the simulated
//! kcp, through its binding); in every new workspace whose type (or a type it
//! extends) lists `defaultAPIBindings`, a binding `<export>-<suffix>` per entry, as kcp's
//! APIBinding initializer makes them; and the LogicalCluster's
//! `internal.apis.kcp.io/resource-bindings` annotation, kcp's record of which binding or CRD
//! serves each resource (seen on kcp v0.30.0: written when a binding binds or goes, so a CRD
//! shows there from the next binding on).
//!
//! kcp-sim serves these kinds in every workspace itself ([`crate::resource::builtin_types`]),
//! so a binding to one of these exports counts them as bound without serving them a second
//! time, and its removal leaves them served. The schemas are kcp v0.30.0's, recorded from a
//! real kcp ([`super::recorded_schemas`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha224};

use super::{CONTROLLER_MANAGER, ROOT, logical_clusters, types::Type};
use crate::apiexport::{self, GROUP, str_at};
use crate::resource::GroupResource;
use crate::semantics::{self, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;
use kcp_core::kcp::LOGICAL_CLUSTER_NAME;

/// The LogicalCluster annotation recording, per `<resource>.<group>`, the binding serving it.
pub const RESOURCE_BINDINGS_ANNOTATION: &str = "internal.apis.kcp.io/resource-bindings";

/// kcp's exports in `root` of its own APIs that kcp-sim serves in every workspace itself (kcp
/// v0.30.0): the export, and per resource its schema's name.
const SYSTEM_EXPORTS: &[(&str, &[(&str, &str)])] = &[
    (
        "tenancy.kcp.io",
        &[
            (
                "workspaceauthenticationconfigurations",
                "v250827-717cfea84.workspaceauthenticationconfigurations.tenancy.kcp.io",
            ),
            ("workspaces", "v251015-1d163d0e5.workspaces.tenancy.kcp.io"),
            (
                "workspacetypes",
                "v251204-7c13b4e0a.workspacetypes.tenancy.kcp.io",
            ),
        ],
    ),
    (
        "topology.kcp.io",
        &[
            ("partitions", "v240903-d6797056a.partitions.topology.kcp.io"),
            (
                "partitionsets",
                "v240903-d6797056a.partitionsets.topology.kcp.io",
            ),
        ],
    ),
    (
        "cache.kcp.io",
        &[
            (
                "cachedresourceendpointslices",
                "v251120-d8e87a979.cachedresourceendpointslices.cache.kcp.io",
            ),
            (
                "cachedresources",
                "v250920-de0c8484d.cachedresources.cache.kcp.io",
            ),
        ],
    ),
];

/// The system exports kcp binds in `root` itself: all but `cache.kcp.io`.
fn bound_in_root(export: &str) -> bool {
    export != "cache.kcp.io"
}

/// Schemas in `root` of kinds kcp-sim serves, that no export lists.
const UNEXPORTED_SCHEMAS: &[(&str, &str, &str)] = &[(
    "core.kcp.io",
    "logicalclusters",
    "v251016-6e24e0d49.logicalclusters.core.kcp.io",
)];

/// The export of Shards, which kcp-sim serves through its binding in `root`, and the schema
/// it lists.
const SHARDS_EXPORT: &str = "shards.core.kcp.io";
const SHARDS_SCHEMA: &str = "v240903-d6797056a.shards.core.kcp.io";

/// The schema in `root` of CachedObjects, a kind of kcp's cache server that no export lists.
const CACHED_OBJECTS_SCHEMA: (&str, &str, &str) = (
    "cache.kcp.io",
    "cachedobjects",
    "v250523-2b8c1d3c5.cachedobjects.cache.kcp.io",
);

/// Whether `export` (in logical cluster `cluster`) is one of kcp's exports of its own APIs.
pub fn is_system_export(cluster: &str, export: &str) -> bool {
    cluster == ROOT && SYSTEM_EXPORTS.iter().any(|(name, _)| *name == export)
}

/// Whether a binding refers to one of kcp's exports of its own APIs.
pub fn binds_system_export(binding: &Value) -> bool {
    str_at(binding, "/spec/reference/export/path") == ROOT
        && is_system_export(ROOT, str_at(binding, "/spec/reference/export/name"))
}

fn options() -> WriteOptions {
    WriteOptions {
        default_manager: CONTROLLER_MANAGER.into(),
        ..WriteOptions::default()
    }
}

/// Creates an object of the export machinery in `cluster` through the write path, as one of
/// kcp's controllers.
fn create(state: &mut State, cluster: &str, resource: &str, body: Value) -> ApiResult<()> {
    let gr = GroupResource::new(GROUP, resource);
    let Some(rt) = state.served_type(cluster, &gr) else {
        return Err(ApiError::internal(format!(
            "{resource}.{GROUP} is not served in logical cluster {cluster}"
        )));
    };
    let version = body["apiVersion"]
        .as_str()
        .and_then(|v| v.split('/').nth(1))
        .unwrap_or("v1alpha1")
        .to_string();
    semantics::create(state, cluster, &rt, &version, None, body, &options())?;
    Ok(())
}

/// The APIResourceSchema `name` kcp publishes for one of its own resources, as kcp v0.30.0
/// serves it ([`super::recorded_schemas`]).
fn schema_of(group: &str, resource: &str, name: &str) -> ApiResult<Value> {
    let Some(spec) = super::recorded_schemas::spec_of_resource(group, resource) else {
        return Err(ApiError::internal(format!(
            "no schema of kcp's {resource}.{group} is recorded"
        )));
    };
    Ok(json!({
        "apiVersion": format!("{GROUP}/v1alpha1"),
        "kind": "APIResourceSchema",
        "metadata": {"name": name},
        "spec": spec,
    }))
}

/// What kcp's bootstrap leaves in `root`: the schemas and exports of its own APIs, a binding
/// to each but `cache.kcp.io`, and a Shard per shard (`shard_urls`, the first named `root`).
pub fn bootstrap(state: &mut State, shard_urls: &[String]) -> ApiResult<()> {
    for (export, resources) in SYSTEM_EXPORTS {
        for (resource, schema) in *resources {
            let body = schema_of(export, resource, schema)?;
            create(state, ROOT, "apiresourceschemas", body)?;
        }
        create(
            state,
            ROOT,
            "apiexports",
            export_of(export, export, resources),
        )?;
        if bound_in_root(export) {
            create(state, ROOT, "apibindings", binding(export, export))?;
        }
    }
    for (group, resource, schema) in UNEXPORTED_SCHEMAS.iter().chain([&CACHED_OBJECTS_SCHEMA]) {
        let body = schema_of(group, resource, schema)?;
        create(state, ROOT, "apiresourceschemas", body)?;
    }
    let shards = schema_of("core.kcp.io", "shards", SHARDS_SCHEMA)?;
    create(state, ROOT, "apiresourceschemas", shards)?;
    let export = export_of(SHARDS_EXPORT, "core.kcp.io", &[("shards", SHARDS_SCHEMA)]);
    create(state, ROOT, "apiexports", export)?;
    create(
        state,
        ROOT,
        "apibindings",
        binding(SHARDS_EXPORT, SHARDS_EXPORT),
    )?;
    for (index, url) in shard_urls.iter().enumerate() {
        create_shard(state, &super::shard_name(index), url)?;
    }
    Ok(())
}

/// An APIExport of `resources` (resource, schema) of `group`.
fn export_of(export: &str, group: &str, resources: &[(&str, &str)]) -> Value {
    let entries: Vec<Value> = resources
        .iter()
        .map(|(resource, schema)| {
            json!({"group": group, "name": resource, "schema": schema, "storage": {"crd": {}}})
        })
        .collect();
    json!({"apiVersion": format!("{GROUP}/v1alpha2"), "kind": "APIExport",
        "metadata": {"name": export}, "spec": {"resources": entries}})
}

/// The Shard kcp registers for one of its shards: its name as a label, and its URLs.
fn create_shard(state: &mut State, name: &str, url: &str) -> ApiResult<()> {
    let gr = GroupResource::new("core.kcp.io", "shards");
    let Some(rt) = state.served_type(ROOT, &gr) else {
        return Err(ApiError::internal(
            "shards.core.kcp.io is not served in root after its binding",
        ));
    };
    let body = json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "Shard",
        "metadata": {"name": name, "labels": {"name": name},
            "annotations": {kcp_core::kcp::CLUSTER_ANNOTATION: ROOT}},
        "spec": {"baseURL": url, "externalURL": url, "virtualWorkspaceURL": url}});
    semantics::create(state, ROOT, &rt, "v1alpha1", None, body, &options())?;
    Ok(())
}

fn binding(name: &str, export: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1alpha2"), "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": ROOT, "name": export}}}})
}

/// kcp's name of the binding its APIBinding initializer makes for a type's default export
/// (`GenerateAPIBindingName`): the export's name, cut to 247 characters, a dash, and the first
/// five base-62 digits, lowercased, of the SHA-224 of `<cluster>|<export path>|<export>`.
/// `kcp-testbed/tests/real_peers.rs` holds it to a real kcp's.
pub fn default_binding_name(cluster: &str, path: &str, export: &str) -> String {
    const MAX_PREFIX: usize = 253 - 1 - 5;
    let prefix: String = export.chars().take(MAX_PREFIX).collect();
    let digest = Sha224::digest(format!("{cluster}|{path}|{export}").as_bytes());
    let digits = crate::apiexport::labels::base62(&digest);
    let hash: String = digits.chars().take(5).collect();
    format!("{prefix}-{}", hash.to_lowercase())
}

/// What kcp's APIBinding initializer does in a new workspace of a type with these aliases:
/// a binding for each distinct entry of their `defaultAPIBindings`.
pub fn bind_defaults(state: &mut State, cluster: &str, aliases: &[Type]) -> ApiResult<()> {
    let mut wanted: Vec<(String, String)> = Vec::new();
    for alias in aliases {
        let entries = alias
            .spec
            .pointer("/defaultAPIBindings")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for entry in entries {
            let reference = (
                str_at(&entry, "/path").to_string(),
                str_at(&entry, "/export").to_string(),
            );
            if !reference.1.is_empty() && !wanted.contains(&reference) {
                wanted.push(reference);
            }
        }
    }
    for (path, export) in wanted {
        let mut body = binding(&default_binding_name(cluster, &path, &export), &export);
        body["spec"]["reference"]["export"]["path"] = json!(path);
        create(state, cluster, "apibindings", body)?;
    }
    Ok(())
}

/// The `internal.apis.kcp.io/resource-bindings` value for `cluster`, keyed
/// `<resource>.<group>` in key order: each bound resource of each binding (`{"n": <binding>}`)
/// and each CRD's resource (`{"c": true}`), as kcp's binding controller records them.
fn resource_bindings(state: &State, cluster: &str) -> String {
    serde_json::to_string(&resource_locks(state, cluster)).unwrap_or_default()
}

/// The locks of [`resource_bindings`], keyed `<resource>.<group>`.
pub fn resource_locks(state: &State, cluster: &str) -> BTreeMap<String, Value> {
    let mut locks = BTreeMap::new();
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    for crd in apiexport::objects_of(state, cluster, &crds) {
        locks.insert(
            str_at(&crd, "/metadata/name").to_string(),
            json!({"c": true}),
        );
    }
    for binding in apiexport::objects_of(state, cluster, &apiexport::bindings()) {
        let name = str_at(&binding, "/metadata/name").to_string();
        let bound = binding
            .pointer("/status/boundResources")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for entry in bound {
            let key = format!(
                "{}.{}",
                str_at(&entry, "/resource"),
                str_at(&entry, "/group")
            );
            locks.insert(key, json!({"n": name}));
        }
    }
    locks
}

/// Brings the LogicalCluster's record of bound resources up to date; called when a binding is
/// reconciled or removed and when the LogicalCluster is new, the moments kcp writes it (its
/// cleanup controller records `{}` for a cluster that binds nothing).
pub fn record_resource_bindings(state: &mut State, cluster: &str) -> ApiResult<()> {
    let Some(stored) = state.lookup(cluster, &logical_clusters(), "", LOGICAL_CLUSTER_NAME) else {
        return Ok(());
    };
    let old = stored.value()?;
    let value = resource_bindings(state, cluster);
    let current = old
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RESOURCE_BINDINGS_ANNOTATION))
        .and_then(Value::as_str);
    if current == Some(value.as_str()) {
        return Ok(());
    }
    let mut new = old.clone();
    new["metadata"]["annotations"][RESOURCE_BINDINGS_ANNOTATION] = json!(value);
    super::controller_write(
        state,
        cluster,
        &logical_clusters(),
        &old,
        &mut new,
        "core.kcp.io/v1alpha1",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_binding_is_named_after_its_export_with_a_suffix_fixed_per_cluster() {
        let one = default_binding_name("abc", ROOT, "tenancy.kcp.io");
        assert!(one.starts_with("tenancy.kcp.io-"), "{one}");
        assert_eq!(one.len(), "tenancy.kcp.io-".len() + 5);
        assert_eq!(one, default_binding_name("abc", ROOT, "tenancy.kcp.io"));
        assert_ne!(one, default_binding_name("abd", ROOT, "tenancy.kcp.io"));
    }

    #[test]
    fn only_roots_exports_of_kcps_own_apis_are_system_exports() {
        assert!(is_system_export(ROOT, "tenancy.kcp.io"));
        assert!(is_system_export(ROOT, "topology.kcp.io"));
        assert!(!is_system_export("abc", "tenancy.kcp.io"));
        assert!(!is_system_export(ROOT, "example.com"));
    }
}
