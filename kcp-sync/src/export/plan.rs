//! One export reconcile as a pure function: from the APIExport as read and the
//! PublishedResources to the merge patch to send, the report and what the Events say
//! ([`plan_export`]). The reconcile in [`crate::reconcile::export`] only reads, sends and
//! records.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::v1alpha1_claims::{V1ALPHA1_CLAIMS_ANNOTATION, v1alpha1_claims_annotation};
use super::{
    ADDED_CLAIMS_ANNOTATION, WantedClaim, claim_key, format_added_claims, merge_claims,
    merge_resources, parse_added_claims, prune_claims, record_added_claims, resource_schemas,
    schema_group_resource, wanted_claims,
};
use crate::api::{AGENT_NAME_ANNOTATION, PublishedResource};

/// What one export reconcile did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Whether the export exists.
    pub found: bool,
    /// Whether it was patched.
    pub changed: bool,
    /// Schemas added to the export.
    pub added_schemas: Vec<String>,
    /// Claims added (`group/resource`).
    pub added_claims: Vec<String>,
    /// Claims the agent had added and pruned, as no PublishedResource needs them any more.
    pub removed_claims: Vec<String>,
    /// Every claim of the export after the reconcile.
    pub claims: BTreeSet<WantedClaim>,
}

/// The merge patch kcp-sync sends to an APIExport.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ExportPatch {
    /// The resourceVersion precondition and the agent's annotations.
    pub metadata: PatchMetadata,
    /// The merged resources and claims.
    pub spec: PatchSpec,
}

/// The metadata of an [`ExportPatch`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PatchMetadata {
    /// The resourceVersion of the APIExport as read (the patch fails if it changed).
    pub resource_version: String,
    /// The agent-name annotation and, when there is one, [`ADDED_CLAIMS_ANNOTATION`].
    pub annotations: BTreeMap<String, String>,
}

/// The spec of an [`ExportPatch`]: both lists whole.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PatchSpec {
    /// `spec.resources`.
    pub resources: Vec<Value>,
    /// `spec.permissionClaims`.
    pub permission_claims: Vec<Value>,
}

/// What an export reconcile writes, reports and tells in Events.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportPlan {
    /// The reconcile's report.
    pub report: ExportReport,
    /// The patch to send; `None` when the export is up to date.
    pub patch: Option<ExportPatch>,
    /// The schemas the export had.
    pub old_schemas: BTreeSet<String>,
    /// The schemas it has after the patch.
    pub new_schemas: BTreeSet<String>,
    /// The claims added.
    pub added_claims: Vec<WantedClaim>,
    /// The claims pruned.
    pub removed_claims: Vec<WantedClaim>,
}

/// Merges `ready` (the schema names of PublishedResources that have one) and the claims of
/// `prs` into `export` (the APIExport as read), for agent `agent`. `all_schemas` are the
/// schema names of every PublishedResource (status or computed), whose resources are not
/// claimed. Only claims recorded in [`ADDED_CLAIMS_ANNOTATION`] are ever pruned. kcp's
/// v1alpha1 claims annotation is kept so the claims read `all: true` at v1alpha1, as after
/// upstream's v1alpha1 write (see [`super::v1alpha1_claims`]).
pub fn plan_export(
    export: &Value,
    agent: &str,
    prs: &[PublishedResource],
    ready: &BTreeSet<String>,
    all_schemas: &BTreeSet<String>,
) -> ExportPlan {
    let (old_resources, old_claims) = (
        spec_list(export, "resources"),
        spec_list(export, "permissionClaims"),
    );
    let old_schemas = resource_schemas(&old_resources);
    let own: BTreeSet<(String, String)> = old_schemas
        .iter()
        .chain(all_schemas)
        .map(|s| schema_group_resource(s))
        .collect();
    let resources = merge_resources(&old_resources, ready);
    let wanted = wanted_claims(prs, &own);
    let recorded_value = annotation(export, ADDED_CLAIMS_ANNOTATION);
    let recorded = parse_added_claims(recorded_value);
    let (claims, added) = merge_claims(&old_claims, &wanted);
    let (claims, removed) = prune_claims(claims, &wanted, &recorded);
    let record = record_added_claims(&recorded, &added, &wanted);
    let v1alpha1 =
        v1alpha1_claims_annotation(&claims, annotation(export, V1ALPHA1_CLAIMS_ANNOTATION));
    let mut annotations = agent_annotations(agent, &record, recorded_value.is_some());
    if let Some(v1alpha1) = v1alpha1 {
        annotations.insert(V1ALPHA1_CLAIMS_ANNOTATION.to_owned(), v1alpha1);
    }
    let annotated = annotations
        .iter()
        .all(|(k, v)| annotation(export, k) == Some(v.as_str()));
    let new_schemas = resource_schemas(&resources);
    let changed = resources != old_resources || claims != old_claims || !annotated;
    let report = ExportReport {
        found: true,
        changed,
        added_schemas: new_schemas.difference(&old_schemas).cloned().collect(),
        added_claims: added.iter().map(ToString::to_string).collect(),
        removed_claims: removed.iter().map(ToString::to_string).collect(),
        claims: claims.iter().map(claim_key).collect(),
    };
    let patch = changed.then(|| ExportPatch {
        metadata: PatchMetadata {
            resource_version: meta_string(export, "resourceVersion"),
            annotations,
        },
        spec: PatchSpec {
            resources,
            permission_claims: claims,
        },
    });
    ExportPlan {
        report,
        patch,
        old_schemas,
        new_schemas,
        added_claims: added,
        removed_claims: removed,
    }
}

/// The annotations the agent keeps on the export: its name, and the claims it added
/// (`record`) whenever there are any or the annotation was there (`was_recorded`).
fn agent_annotations(
    agent: &str,
    record: &BTreeSet<WantedClaim>,
    was_recorded: bool,
) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::from([(AGENT_NAME_ANNOTATION.to_owned(), agent.to_owned())]);
    if !record.is_empty() || was_recorded {
        annotations.insert(
            ADDED_CLAIMS_ANNOTATION.to_owned(),
            format_added_claims(record),
        );
    }
    annotations
}

/// `metadata.<field>` of the export, a string (empty when absent).
fn meta_string(export: &Value, field: &str) -> String {
    export
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `spec.<field>` of the export, a list (empty when absent).
fn spec_list(export: &Value, field: &str) -> Vec<Value> {
    export
        .pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Annotation `key` of the export.
fn annotation<'a>(export: &'a Value, key: &str) -> Option<&'a str> {
    export
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PublishedResourceSpec;
    use serde_json::json;

    const SCHEMA: &str = "v1abc.crontabs.example.corp";

    fn prs() -> Vec<PublishedResource> {
        vec![PublishedResource::new(
            "pr",
            PublishedResourceSpec::default(),
        )]
    }

    fn schemas() -> BTreeSet<String> {
        BTreeSet::from([SCHEMA.to_owned()])
    }

    fn events_claim() -> Value {
        json!({"resource": "events", "verbs": ["*"]})
    }

    #[test]
    fn a_new_schema_and_claim_are_patched_and_the_claim_recorded() {
        let export = json!({"metadata": {"name": "x", "resourceVersion": "7"}, "spec": {}});
        let plan = plan_export(&export, "agent", &prs(), &schemas(), &schemas());
        let patch = plan.patch.expect("a patch");
        assert_eq!(patch.metadata.resource_version, "7");
        assert_eq!(
            patch.metadata.annotations,
            BTreeMap::from([
                (AGENT_NAME_ANNOTATION.to_owned(), "agent".to_owned()),
                (
                    ADDED_CLAIMS_ANNOTATION.to_owned(),
                    r#"[{"resource":"events"}]"#.to_owned()
                ),
                (
                    V1ALPHA1_CLAIMS_ANNOTATION.to_owned(),
                    r#"[{"resource":"events","all":true}]"#.to_owned()
                ),
            ])
        );
        assert_eq!(
            patch.spec.resources,
            [
                json!({"name": "crontabs", "group": "example.corp", "schema": SCHEMA, "storage": {"crd": {}}})
            ]
        );
        assert_eq!(patch.spec.permission_claims, [events_claim()]);
        assert_eq!(
            plan.report,
            ExportReport {
                found: true,
                changed: true,
                added_schemas: vec![SCHEMA.to_owned()],
                added_claims: vec!["events".to_owned()],
                removed_claims: vec![],
                claims: BTreeSet::from([WantedClaim {
                    group: String::new(),
                    resource: "events".into(),
                    identity_hash: String::new(),
                }]),
            }
        );
        assert!(plan.old_schemas.is_empty());
        assert_eq!(plan.new_schemas, schemas());
    }

    #[test]
    fn an_export_that_already_holds_everything_is_not_patched() {
        let export = json!({
            "metadata": {"annotations": {
                AGENT_NAME_ANNOTATION: "agent",
                ADDED_CLAIMS_ANNOTATION: r#"[{"resource":"events"}]"#,
                V1ALPHA1_CLAIMS_ANNOTATION: r#"[{"resource":"events","all":true}]"#,
            }},
            "spec": {
                "resources": [{"name": "crontabs", "group": "example.corp", "schema": SCHEMA, "storage": {"crd": {}}}],
                "permissionClaims": [events_claim()],
            },
        });
        let plan = plan_export(&export, "agent", &prs(), &schemas(), &schemas());
        assert_eq!(plan.patch, None);
        assert!(!plan.report.changed);
        assert!(plan.report.added_schemas.is_empty());
    }

    #[test]
    fn a_recorded_claim_nobody_wants_is_pruned() {
        let export = json!({
            "metadata": {"annotations": {
                AGENT_NAME_ANNOTATION: "agent",
                ADDED_CLAIMS_ANNOTATION: r#"[{"resource":"events"},{"resource":"secrets"}]"#,
            }},
            "spec": {"permissionClaims": [
                events_claim(),
                {"resource": "secrets", "verbs": ["*"]},
            ]},
        });
        let none = BTreeSet::new();
        let plan = plan_export(&export, "agent", &prs(), &none, &none);
        let patch = plan.patch.expect("a patch");
        assert_eq!(patch.spec.permission_claims, [events_claim()]);
        assert_eq!(plan.report.removed_claims, ["secrets"]);
        assert_eq!(
            patch.metadata.annotations[ADDED_CLAIMS_ANNOTATION],
            r#"[{"resource":"events"}]"#
        );
    }
}
