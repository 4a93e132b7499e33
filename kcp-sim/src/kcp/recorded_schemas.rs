//! The schemas kcp v0.30.0 serves its own kinds with (`*.kcp.io`): recorded from a real kcp
//! of the test bed's pin into `data/kcp-schemas.json` by `data/record-kcp-schemas.sh` (which
//! says how to record them again), one entry per kind as an APIResourceSchema's spec: group,
//! names, scope and versions with their `openAPIV3Schema`, subresources and printer columns.
//! kcp keeps some of them as CRDs of its `system:system-crds` logical cluster and the rest as
//! APIResourceSchemas of `root`'s exports; both are recorded as kcp serves them.
//!
//! kcp-sim's OpenAPI documents describe kcp's kinds by these schemas, so `kubectl explain`
//! of a kcp kind reads kcp's own descriptions; `root`'s APIResourceSchemas of kcp's exports
//! are these; and a WorkspaceType is validated by its schema ([`refuse_invalid`]). Other kcp
//! kinds are still checked by kcp-sim's own rules (`crate::apiexport::spec_schemas` for
//! APIExports and APIBindings), not yet pruned or validated by these schemas.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use crate::schema::field::{FieldError, refuse_if_invalid};
use crate::schema::structural::{self, Node};
use crate::status::ApiResult;

/// Every recorded kind's spec, parsed once (empty if the file did not parse, which the
/// module's test rules out).
fn recorded() -> &'static [Value] {
    static SPECS: OnceLock<Vec<Value>> = OnceLock::new();
    SPECS.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/kcp-schemas.json")).unwrap_or_default()
    })
}

/// The recorded spec of kcp's kind `kind` of `group`.
pub fn spec(group: &str, kind: &str) -> Option<&'static Value> {
    recorded().iter().find(|spec| {
        spec.get("group").and_then(Value::as_str) == Some(group)
            && spec.pointer("/names/kind").and_then(Value::as_str) == Some(kind)
    })
}

/// The recorded spec of kcp's resource `resource` (plural) of `group`.
pub fn spec_of_resource(group: &str, resource: &str) -> Option<&'static Value> {
    recorded().iter().find(|spec| {
        spec.get("group").and_then(Value::as_str) == Some(group)
            && spec.pointer("/names/plural").and_then(Value::as_str) == Some(resource)
    })
}

/// The `openAPIV3Schema` kcp serves `kind` of `group` at `version` with.
pub fn schema(group: &str, version: &str, kind: &str) -> Option<&'static Value> {
    spec(group, kind)?
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
        .get("schema")
}

/// The structural schema of `kind` of `group` at `version`, parsed once.
fn node(group: &str, version: &str, kind: &str) -> Option<&'static Node> {
    type Cache = Mutex<HashMap<(String, String, String), Option<&'static Node>>>;
    static NODES: OnceLock<Cache> = OnceLock::new();
    let key = (group.to_owned(), version.to_owned(), kind.to_owned());
    let mut nodes = NODES.get_or_init(Cache::default).lock().ok()?;
    *nodes.entry(key).or_insert_with(|| {
        let parsed = structural::parse(schema(group, version, kind)?, "openAPIV3Schema").ok()?;
        // Parsed once per kind and version for the life of the process.
        Some(&*Box::leak(Box::new(parsed)))
    })
}

/// What kcp's schema of `kind` finds in an object being written (`old` on update): its
/// types, patterns, enums, required fields and rules, in kube's order.
pub fn errors(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.rsplit_once('/'))
        .map_or("", |(_, v)| v);
    match node(group, version, kind) {
        Some(node) => crate::schema::validation_errors(node, obj, old),
        None => Vec::new(),
    }
}

/// The `422` of kcp's schema validation of an object of `kind`, if it finds anything.
pub fn refuse_invalid(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    refuse_if_invalid(group, kind, obj, &errors(group, kind, obj, old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kcp_kind_kcp_sim_serves_has_a_recorded_schema() {
        let kinds = [
            ("apis.kcp.io", "v1alpha1", "APIBinding"),
            ("apis.kcp.io", "v1alpha2", "APIBinding"),
            ("apis.kcp.io", "v1alpha1", "APIExport"),
            ("apis.kcp.io", "v1alpha2", "APIExport"),
            ("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
            ("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
            ("apis.kcp.io", "v1alpha1", "APIConversion"),
            ("core.kcp.io", "v1alpha1", "LogicalCluster"),
            ("core.kcp.io", "v1alpha1", "Shard"),
            ("tenancy.kcp.io", "v1alpha1", "Workspace"),
            ("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
            (
                "tenancy.kcp.io",
                "v1alpha1",
                "WorkspaceAuthenticationConfiguration",
            ),
            ("topology.kcp.io", "v1alpha1", "Partition"),
            ("topology.kcp.io", "v1alpha1", "PartitionSet"),
            ("cache.kcp.io", "v1alpha1", "CachedResource"),
            ("cache.kcp.io", "v1alpha1", "CachedResourceEndpointSlice"),
        ];
        for (group, version, kind) in kinds {
            let schema = schema(group, version, kind);
            assert_eq!(
                schema.and_then(|s| s.get("type")),
                Some(&Value::from("object")),
                "{group}/{version} {kind}"
            );
        }
    }

    #[test]
    fn every_recorded_schema_is_structural() {
        for spec in recorded() {
            let group = spec["group"].as_str().unwrap();
            let kind = spec["names"]["kind"].as_str().unwrap();
            for version in spec["versions"].as_array().unwrap() {
                let version = version["name"].as_str().unwrap();
                assert!(
                    node(group, version, kind).is_some(),
                    "{group}/{version} {kind}"
                );
            }
        }
    }

    #[test]
    fn a_workspace_type_naming_a_child_type_kcp_would_not_is_refused() {
        let wt = serde_json::json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "WorkspaceType", "metadata": {"name": "bad"},
            "spec": {"limitAllowedChildren": {"types": [{"name": "X"}]}}});
        let found: Vec<String> = errors("tenancy.kcp.io", "WorkspaceType", &wt, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("spec.limitAllowedChildren.types[0].name: Invalid value: \"X\""),
            "{found:?}"
        );
    }

    #[test]
    fn a_workspaces_type_is_described_as_kcp_describes_it() {
        let schema = schema("tenancy.kcp.io", "v1alpha1", "Workspace").unwrap();
        let name = schema
            .pointer("/properties/spec/properties/type/properties/name/type")
            .and_then(Value::as_str);
        assert_eq!(name, Some("string"));
    }
}
