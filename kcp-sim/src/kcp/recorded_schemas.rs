//! The schemas kcp v0.30.0 serves its own kinds with (`*.kcp.io`): recorded from a real kcp
//! of the test bed's pin into `data/kcp-schemas.json` by `data/record-kcp-schemas.sh` (which
//! says how to record them again), one entry per kind as an APIResourceSchema's spec: group,
//! names, scope and versions with their `openAPIV3Schema`, subresources and printer columns.
//! kcp keeps some of them as CRDs of its `system:system-crds` logical cluster and the rest as
//! APIResourceSchemas of `root`'s exports; both are recorded as kcp serves them.
//!
//! kcp-sim's OpenAPI documents describe kcp's kinds by these schemas, so `kubectl explain`
//! of a kcp kind reads kcp's own descriptions; `root`'s APIResourceSchemas of kcp's exports
//! are these; and every write of a kcp kind is pruned, defaulted and validated by them
//! ([`crd_schemas`], used by [`super::admit_own_kind`]), as kube-apiserver admits a custom
//! resource: an unknown field is dropped with a warning or refused under strict field
//! validation, a value the schema forbids is kube's `422`. APIExports, APIBindings and
//! APIResourceSchemas are validated by kcp-sim's own rules in kcp's admission order
//! (`crate::apiexport::spec_schemas`, `crate::apiexport::schema`).

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::schema::field::FieldError;
use crate::schema::structural::Node;
use crate::schema::{CrdSchemas, compile_resource_schema};

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

/// kcp's schemas of its kind `kind` of `group`, compiled once for the life of the process:
/// what prunes, defaults and validates a write of that kind, as kube-apiserver admits a
/// custom resource (kcp serves its own kinds as CRDs and bound APIResourceSchemas).
pub fn crd_schemas(group: &str, kind: &str) -> Option<&'static CrdSchemas> {
    static COMPILED: OnceLock<Vec<(String, String, CrdSchemas)>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        recorded()
            .iter()
            .filter_map(|spec| {
                let group = spec.get("group")?.as_str()?;
                let kind = spec.pointer("/names/kind")?.as_str()?;
                let schemas = compile_resource_schema(&json!({ "spec": spec })).ok()?;
                Some((group.to_owned(), kind.to_owned(), schemas))
            })
            .collect()
    });
    compiled
        .iter()
        .find(|(g, k, _)| g == group && k == kind)
        .map(|(_, _, schemas)| schemas)
}

/// The structural schema of `kind` of `group` at `version`.
fn node(group: &str, version: &str, kind: &str) -> Option<&'static Node> {
    crd_schemas(group, kind)?
        .versions
        .get(version)
        .map(Arc::as_ref)
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
    fn a_workspaces_unknown_fields_are_pruned_and_its_defaults_set() {
        let schemas = crd_schemas("tenancy.kcp.io", "Workspace").unwrap();
        let mut ws = serde_json::json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace", "metadata": {"name": "a"}, "spec": {"extra": 1}});
        let pruned =
            crate::schema::prune_and_default_reporting(schemas, &mut ws, crate::schema::Part::Main);
        assert_eq!(pruned, ["spec.extra"]);
        assert_eq!(ws["spec"], serde_json::json!({}));
        assert_eq!(ws["status"]["phase"], "Scheduling");
    }

    fn workspace(spec: Value) -> Value {
        serde_json::json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "a"}, "spec": spec})
    }

    #[test]
    fn a_workspace_type_path_set_where_there_was_none_breaks_one_rule() {
        let old = workspace(serde_json::json!({"type": {"name": "a"}}));
        let new = workspace(serde_json::json!({"type": {"name": "a", "path": "root"}}));
        let found: Vec<String> = errors("tenancy.kcp.io", "Workspace", &new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            ["spec.type: Invalid value: \"object\": path is immutable"]
        );
    }

    #[test]
    fn a_workspace_cluster_set_for_the_first_time_is_no_transition() {
        let old = workspace(serde_json::json!({"type": {"name": "a"}}));
        let new = workspace(serde_json::json!({"type": {"name": "a"}, "cluster": "c"}));
        assert!(errors("tenancy.kcp.io", "Workspace", &new, Some(&old)).is_empty());
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
