//! kcp's own APIs as kcp publishes them through its export machinery: in `root`, the
//! APIResourceSchemas and APIExports `tenancy.kcp.io` and `topology.kcp.io`, each bound in
//! `root` by a binding of the export's name; in every new workspace whose type (or a type it
//! extends) lists `defaultAPIBindings`, a binding `<export>-<suffix>` per entry, as kcp's
//! APIBinding initializer makes them; and the LogicalCluster's
//! `internal.apis.kcp.io/resource-bindings` annotation, kcp's record of which binding or CRD
//! serves each resource (seen on kcp v0.30.0: written when a binding binds or goes, so a CRD
//! shows there from the next binding on).
//!
//! kcp-sim serves these kinds in every workspace itself ([`crate::resource::builtin_types`]),
//! so a binding to one of these exports counts them as bound without serving them a second
//! time, and its removal leaves them served. The schemas carry kcp v0.30.0's names, groups,
//! kinds and scope, with an open object schema (kcp's full OpenAPI schemas are not copied).
//! kcp's `shards.core.kcp.io` and `cache.kcp.io` exports are not modelled.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::{CONTROLLER_MANAGER, ROOT, logical_clusters, types::Type};
use crate::apiexport::{self, GROUP, str_at};
use crate::resource::GroupResource;
use crate::semantics::{self, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;
use kcp_core::kcp::LOGICAL_CLUSTER_NAME;

/// The LogicalCluster annotation recording, per `<resource>.<group>`, the binding serving it.
pub const RESOURCE_BINDINGS_ANNOTATION: &str = "internal.apis.kcp.io/resource-bindings";

/// kcp's exports of its own APIs in `root` (kcp v0.30.0): the export, and per resource its
/// schema's name.
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
];

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

/// The APIResourceSchema kcp publishes for one of its own resources, from the kind kcp-sim
/// serves.
fn schema_of(state: &State, group: &str, resource: &str, name: &str) -> ApiResult<Value> {
    let gr = GroupResource::new(group, resource);
    let Some(rt) = state.clusters.get(ROOT).and_then(|c| c.registry.get(&gr)) else {
        return Err(ApiError::internal(format!(
            "{resource}.{group} is not served in root"
        )));
    };
    let mut names = json!({"kind": rt.kind, "listKind": format!("{}List", rt.kind),
        "plural": rt.plural, "singular": rt.singular, "categories": rt.categories});
    if !rt.short_names.is_empty() {
        names["shortNames"] = json!(rt.short_names);
    }
    let mut version = json!({"name": rt.versions.first().cloned().unwrap_or_default(),
        "served": true, "storage": true,
        "schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    if rt.status {
        version["subresources"] = json!({"status": {}});
    }
    Ok(json!({
        "apiVersion": format!("{GROUP}/v1alpha1"),
        "kind": "APIResourceSchema",
        "metadata": {"name": name},
        "spec": {"group": group, "names": names,
            "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [version]},
    }))
}

/// What kcp's bootstrap leaves in `root`: the schemas and exports of its own APIs, and a
/// binding to each.
pub fn bootstrap(state: &mut State) -> ApiResult<()> {
    for (export, resources) in SYSTEM_EXPORTS {
        for (resource, schema) in *resources {
            let body = schema_of(state, export, resource, schema)?;
            create(state, ROOT, "apiresourceschemas", body)?;
        }
        let entries: Vec<Value> = resources
            .iter()
            .map(|(resource, schema)| {
                json!({"group": export, "name": resource, "schema": schema,
                    "storage": {"crd": {}}})
            })
            .collect();
        let body = json!({"apiVersion": format!("{GROUP}/v1alpha2"), "kind": "APIExport",
            "metadata": {"name": export}, "spec": {"resources": entries}});
        create(state, ROOT, "apiexports", body)?;
        create(state, ROOT, "apibindings", binding(export, export))?;
    }
    Ok(())
}

fn binding(name: &str, export: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1alpha2"), "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": ROOT, "name": export}}}})
}

/// The name kcp gives the default binding of `export` in logical cluster `cluster`: the
/// export's name and a five-character suffix fixed for the cluster and the export.
fn default_binding_name(cluster: &str, path: &str, export: &str) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let digest = Sha256::digest(format!("{cluster}:{path}:{export}").as_bytes());
    let suffix: String = digest
        .iter()
        .take(5)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    format!("{export}-{suffix}")
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
    serde_json::to_string(&locks).unwrap_or_default()
}

/// Brings the LogicalCluster's record of bound resources up to date; called when a binding is
/// reconciled or removed, the moments kcp writes it.
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
    if current == Some(value.as_str()) || (current.is_none() && value == "{}") {
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
