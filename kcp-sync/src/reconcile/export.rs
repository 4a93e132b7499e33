//! The `apiexport` controller's reconcile (upstream §3.2): merge the PublishedResources'
//! schemas and the claims they need into the APIExport, written as v1alpha2 with a
//! resourceVersion precondition. The agent never creates or deletes the APIExport (a
//! missing export is not an error) and never deletes a schema; it prunes only the claims it
//! added itself (see [`crate::export`]).

use std::collections::BTreeSet;

use kcp_core::kube::Resource as _;
use kcp_core::kube::api::{ApiResource, GroupVersionKind};
use kcp_core::runtime::{EventRecorder, EventType};
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};

use super::dynamic_json::get_json;
use crate::api::PublishedResource;
use crate::error::{Error, Result};
pub use crate::export::ExportReport;
use crate::export::{ExportPlan, claims_event, plan_export, removed_claims_event, schema_events};

/// The GVK kcp-sync writes APIExports with.
pub fn export_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", "APIExport")
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

/// [`reconcile_export`]'s step, inside its span: read, [`plan_export`], send, record.
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
    let plan = plan_export(&export, agent, prs, ready, all_schemas);
    let Some(patch) = &plan.patch else {
        return Ok(plan.report);
    };
    let body = serde_json::to_value(patch).map_err(|e| Error::Serialization {
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
        record_events(kcp, recorder, &written, &plan).await;
    }
    Ok(plan.report)
}

/// The Events upstream sends on the APIExport (plus `RemovingPermissionClaims`).
async fn record_events(
    kcp: &dyn ObjectClient,
    recorder: &EventRecorder,
    written: &kcp_core::kube::api::DynamicObject,
    plan: &ExportPlan,
) {
    let reference = written.object_ref(&ApiResource::from_gvk(&export_gvk()));
    let mut events: Vec<(EventType, &str, String)> =
        schema_events(&plan.old_schemas, &plan.new_schemas)
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
    if let Some(msg) = claims_event(&plan.added_claims) {
        events.push((EventType::Normal, "AddingPermissionClaims", msg));
    }
    if let Some(msg) = removed_claims_event(&plan.removed_claims) {
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
