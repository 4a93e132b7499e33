//! The `apiexport` controller's reconcile (upstream §3.2): merge the PublishedResources'
//! schemas and the claims they need into the APIExport, written as v1alpha2 with a
//! resourceVersion precondition. The agent never creates or deletes the APIExport (a
//! missing export is not an error) and never deletes a schema; it prunes only the claims it
//! added itself (see [`crate::export`]).

use std::collections::{BTreeMap, BTreeSet};

use kcp_core::kube::api::GroupVersionKind;
use kcp_core::runtime::{EventRecorder, EventType};
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use serde::Serialize;
use serde_json::Value;

use super::dynamic_json::get_json;
use crate::api::{AGENT_NAME_ANNOTATION, PublishedResource};
use crate::error::{Error, Result};
use crate::export::{
    ADDED_CLAIMS_ANNOTATION, claims_event, format_added_claims, merge_claims, merge_resources,
    parse_added_claims, prune_claims, record_added_claims, removed_claims_event, resource_schemas,
    schema_events, schema_group_resource, wanted_claims,
};

/// The GVK kcp-sync writes APIExports with.
pub fn export_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", "APIExport")
}

/// The merge patch kcp-sync sends to an APIExport.
#[derive(Serialize, Debug, PartialEq)]
struct ExportPatch {
    metadata: PatchMetadata,
    spec: PatchSpec,
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct PatchMetadata {
    resource_version: String,
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct PatchSpec {
    resources: Vec<Value>,
    permission_claims: Vec<Value>,
}

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
}

/// Merges `ready` (the schema names of PublishedResources that have one) and the claims of
/// `prs` into APIExport `name` in the export workspace (`kcp`). `all_schemas` are the schema
/// names of every PublishedResource (status or computed), whose resources are not claimed.
pub async fn reconcile_export(
    kcp: &dyn ObjectClient,
    recorder: Option<&EventRecorder>,
    agent: &str,
    name: &str,
    prs: &[PublishedResource],
    ready: &BTreeSet<String>,
    all_schemas: &BTreeSet<String>,
) -> Result<ExportReport> {
    // Instrumented, not entered (see `sync_object`).
    let span = tracing::info_span!("reconcile", kind = "APIExport", namespace = "", name);
    let step = export_step(kcp, recorder, agent, name, prs, ready, all_schemas);
    tracing::Instrument::instrument(step, span).await
}

/// [`reconcile_export`]'s step, inside its span.
async fn export_step(
    kcp: &dyn ObjectClient,
    recorder: Option<&EventRecorder>,
    agent: &str,
    name: &str,
    prs: &[PublishedResource],
    ready: &BTreeSet<String>,
    all_schemas: &BTreeSet<String>,
) -> Result<ExportReport> {
    let target = ObjectRef::cluster_scoped(export_gvk(), name);
    let Some(export) = get_json(kcp, &target).await? else {
        tracing::debug!("APIExport not found; nothing to do");
        return Ok(ExportReport::default());
    };
    let list = |field: &str| {
        export
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (old_resources, old_claims) = (list("resources"), list("permissionClaims"));
    let old_schemas = resource_schemas(&old_resources);
    let own: BTreeSet<(String, String)> = old_schemas
        .iter()
        .chain(all_schemas)
        .map(|s| schema_group_resource(s))
        .collect();
    let resources = merge_resources(&old_resources, ready);
    let annotation = |key: &str| {
        export
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    let wanted = wanted_claims(prs, &own);
    let recorded = parse_added_claims(annotation(ADDED_CLAIMS_ANNOTATION));
    let (claims, added) = merge_claims(&old_claims, &wanted);
    let (claims, removed) = prune_claims(claims, &wanted, &recorded);
    let record = record_added_claims(&recorded, &added, &wanted);
    let mut annotations = BTreeMap::from([(AGENT_NAME_ANNOTATION.to_owned(), agent.to_owned())]);
    if !record.is_empty() || annotation(ADDED_CLAIMS_ANNOTATION).is_some() {
        annotations.insert(
            ADDED_CLAIMS_ANNOTATION.to_owned(),
            format_added_claims(&record),
        );
    }
    let annotated = annotations
        .iter()
        .all(|(k, v)| annotation(k) == Some(v.as_str()));
    let new_schemas = resource_schemas(&resources);
    let report = ExportReport {
        found: true,
        changed: resources != old_resources || claims != old_claims || !annotated,
        added_schemas: new_schemas.difference(&old_schemas).cloned().collect(),
        added_claims: added.iter().map(ToString::to_string).collect(),
        removed_claims: removed.iter().map(ToString::to_string).collect(),
    };
    if !report.changed {
        return Ok(report);
    }
    let patch = ExportPatch {
        metadata: PatchMetadata {
            resource_version: export
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            annotations,
        },
        spec: PatchSpec {
            resources,
            permission_claims: claims,
        },
    };
    let body = serde_json::to_value(&patch).map_err(|e| Error::Serialization {
        context: format!("APIExport {name:?} patch"),
        message: e.to_string(),
    })?;
    let written = kcp
        .patch(
            &target,
            Subresource::Main,
            &ObjectPatch::Merge(body),
            &PatchOptions::default(),
        )
        .await
        .map_err(|e| Error::core(format!("updating APIExport {name:?}"), e))?;
    if let Some(recorder) = recorder {
        let changes = ExportChanges {
            old_schemas: &old_schemas,
            new_schemas: &new_schemas,
            added: &added,
            removed: &removed,
        };
        record_events(kcp, recorder, &written, &changes).await;
    }
    Ok(report)
}

/// What an export reconcile changed, for its Events.
struct ExportChanges<'a> {
    old_schemas: &'a BTreeSet<String>,
    new_schemas: &'a BTreeSet<String>,
    added: &'a [crate::export::WantedClaim],
    removed: &'a [crate::export::WantedClaim],
}

/// The Events upstream sends on the APIExport (plus `RemovingPermissionClaims`).
async fn record_events(
    kcp: &dyn ObjectClient,
    recorder: &EventRecorder,
    written: &kcp_core::kube::api::DynamicObject,
    changes: &ExportChanges<'_>,
) {
    let reference = object_reference(written);
    let mut events: Vec<(EventType, &str, String)> =
        schema_events(changes.old_schemas, changes.new_schemas)
            .into_iter()
            .map(|(normal, reason, msg)| {
                (
                    if normal {
                        EventType::Normal
                    } else {
                        EventType::Warning
                    },
                    reason,
                    msg,
                )
            })
            .collect();
    if let Some(msg) = claims_event(changes.added) {
        events.push((EventType::Normal, "AddingPermissionClaims", msg));
    }
    if let Some(msg) = removed_claims_event(changes.removed) {
        events.push((EventType::Normal, "RemovingPermissionClaims", msg));
    }
    for (kind, reason, message) in events {
        if let Err(e) = recorder
            .record(kcp, &reference, kind, reason, &message)
            .await
        {
            tracing::warn!(error = %e, reason, "recording an Event on the APIExport failed");
        }
    }
}

fn object_reference(
    obj: &kcp_core::kube::api::DynamicObject,
) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: obj.types.as_ref().map(|t| t.api_version.clone()),
        kind: obj.types.as_ref().map(|t| t.kind.clone()),
        name: obj.metadata.name.clone(),
        namespace: obj.metadata.namespace.clone(),
        uid: obj.metadata.uid.clone(),
        resource_version: obj.metadata.resource_version.clone(),
        field_path: None,
    }
}
