//! The `apiresourceschema` controller's reconcile (upstream §3.1): find the source CRD (or,
//! for a builtin kind, synthesise one from discovery and OpenAPI v3), project it, ensure the APIResourceSchema in kcp (created once, never updated or deleted;
//! only wrong agent labels and annotations are repaired), and record its name and the
//! `SchemaReady` condition in the PublishedResource's status.

use std::collections::BTreeMap;

use kcp_core::kcp::types::APIResourceSchema;
use kcp_core::runtime::{ConditionUpdate, StatusWrite};
use kcp_core::typed::{object_ref_for, to_dynamic};
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt as _, ObjectPatch, PatchOptions};
use serde_json::Value;

use super::discovery::{ApiDocuments, discover, openapi_models};
use super::dynamic_json::to_json;
use super::published_status::{self, StatusChange};
use crate::api::{
    AGENT_NAME_ANNOTATION, AGENT_NAME_LABEL, CONDITION_SCHEMA_READY, PublishedResource,
};
use crate::error::{Error, Result};
use crate::schema::builtin::synthesize_crd;
use crate::schema::{
    crd_gvk, prepare_source_crd, project_crd, render_api_resource_schema, schema_name,
};

/// A PublishedResource's source CRD and its projection.
#[derive(Debug, Clone, PartialEq)]
pub struct Projected {
    /// The source CRD as read (for the local GVK and scope).
    pub source: Value,
    /// The projected CRD (what kcp serves).
    pub projected: Value,
    /// The APIResourceSchema name.
    pub schema_name: String,
}

/// Finds the CRD of `pr.spec.resource` (by group and kind) on the service cluster; for a
/// builtin kind (no CRD), synthesises one from discovery and OpenAPI v3 through `docs`.
pub async fn find_source_crd(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    pr: &PublishedResource,
) -> Result<Value> {
    let (group, kind) = (&pr.spec.resource.api_group, &pr.spec.resource.kind);
    let list = service
        .list(&crd_gvk(), None, &ListOptions::default())
        .await
        .map_err(|e| Error::core("listing CustomResourceDefinitions", e))?;
    for crd in &list.items {
        let value = to_json(crd)?;
        let same_group = value.pointer("/spec/group").and_then(Value::as_str) == Some(group);
        let same_kind = value.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind);
        if same_group && same_kind {
            return Ok(value);
        }
    }
    let not_served = |why: &str| Error::InvalidSpec {
        published_resource: pr.name().to_owned(),
        field: "spec.resource".into(),
        reason: format!("kind {kind:?} in group {group:?} {why}"),
    };
    let Some(docs) = docs else {
        return Err(not_served(
            "has no CustomResourceDefinition on the service cluster, and builtin kinds need \
             discovery, which this agent was started without",
        ));
    };
    let discovered = discover(docs, group, kind).await?.ok_or_else(|| {
        not_served(
            "is neither a CustomResourceDefinition nor served by the service cluster (discovery)",
        )
    })?;
    let models = openapi_models(docs, &discovered).await?;
    synthesize_crd(&discovered, &models).map_err(|reason| Error::InvalidCrd {
        crd: discovered.crd_name(),
        field: "spec.versions".into(),
        reason,
    })
}

/// The source CRD of `pr`, prepared and projected, with the schema name.
pub async fn project(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    pr: &PublishedResource,
) -> Result<Projected> {
    let source = find_source_crd(service, docs, pr).await?;
    let projected = project_crd(pr, &prepare_source_crd(&source))?;
    let schema_name = schema_name(&projected);
    Ok(Projected {
        source,
        projected,
        schema_name,
    })
}

/// Ensures the APIResourceSchema of `pr` in the export's workspace (`kcp`) and returns the
/// projection. Never updates a schema's spec; repairs its agent label and annotation.
pub async fn ensure_schema(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    kcp: &dyn ObjectClient,
    agent: &str,
    pr: &PublishedResource,
) -> Result<Projected> {
    let projected = project(service, docs, pr).await?;
    let name = &projected.schema_name;
    let existing: Option<APIResourceSchema> = kcp
        .get_typed(None, name)
        .await
        .map_err(|e| Error::core(format!("reading APIResourceSchema {name:?}"), e))?;
    match existing {
        None => {
            let generation = projected
                .source
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or_default();
            let schema = render_api_resource_schema(&projected.projected, name, agent, generation)?;
            let obj = to_dynamic(&schema)
                .map_err(|e| Error::core(format!("encoding APIResourceSchema {name:?}"), e))?;
            match kcp.create(&obj).await {
                Ok(_) => {}
                Err(e) if e.is_already_exists() => {}
                Err(e) => {
                    return Err(Error::core(
                        format!("creating APIResourceSchema {name:?}"),
                        e,
                    ));
                }
            }
        }
        Some(schema) => repair_agent_metadata(kcp, agent, &schema).await?,
    }
    Ok(projected)
}

async fn repair_agent_metadata(
    kcp: &dyn ObjectClient,
    agent: &str,
    schema: &APIResourceSchema,
) -> Result<()> {
    let label = schema
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(AGENT_NAME_LABEL));
    let annotation = schema
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(AGENT_NAME_ANNOTATION));
    if label.map(String::as_str) == Some(agent) && annotation.map(String::as_str) == Some(agent) {
        return Ok(());
    }
    let name = schema.metadata.name.clone().unwrap_or_default();
    let entry = BTreeMap::from([(AGENT_NAME_LABEL.to_owned(), agent.to_owned())]);
    let patch = serde_json::to_value(kcp_core::kube::api::ObjectMeta {
        labels: Some(entry.clone()),
        annotations: Some(entry),
        ..Default::default()
    })
    .map_err(|e| Error::Serialization {
        context: "metadata patch".into(),
        message: e.to_string(),
    })?;
    kcp.patch(
        &object_ref_for::<APIResourceSchema>(None, &name),
        kcp_core::Subresource::Main,
        &ObjectPatch::Merge(serde_json::json!({ "metadata": patch })),
        &PatchOptions::default(),
    )
    .await
    .map_err(|e| Error::core(format!("repairing APIResourceSchema {name:?}"), e))?;
    Ok(())
}

/// One reconcile of `pr`: ensure the schema and record the result (name and `SchemaReady`)
/// in its status. The error, if any, is returned after the status says so.
pub async fn reconcile_schema(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    kcp: &dyn ObjectClient,
    agent: &str,
    pr: &PublishedResource,
) -> Result<Option<Projected>> {
    // Instrumented, not entered (see `sync_object`).
    let span = tracing::info_span!(
        "reconcile",
        kind = "PublishedResource",
        namespace = "",
        name = pr.name()
    );
    tracing::Instrument::instrument(schema_step(service, docs, kcp, agent, pr), span).await
}

/// [`reconcile_schema`]'s step, inside its span.
async fn schema_step(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    kcp: &dyn ObjectClient,
    agent: &str,
    pr: &PublishedResource,
) -> Result<Option<Projected>> {
    let result = ensure_schema(service, docs, kcp, agent, pr).await;
    let generation = pr.metadata.generation;
    let update = match &result {
        Ok(p) => ConditionUpdate::new(CONDITION_SCHEMA_READY, true, "SchemaCreated")
            .message(format!("APIResourceSchema {} exists", p.schema_name)),
        Err(e) => {
            ConditionUpdate::new(CONDITION_SCHEMA_READY, false, e.reason()).message(e.to_string())
        }
    }
    .generation(generation);
    let change = StatusChange::Schema {
        condition: update,
        schema_name: result.as_ref().ok().map(|p| p.schema_name.clone()),
        generation,
    };
    let projected = match result {
        Ok(projected) => projected,
        Err(e) => {
            // The schema's error is the one returned; a failed status write is logged.
            published_status::write_or_warn(service, pr.name(), &change).await;
            return Err(e);
        }
    };
    match published_status::write(service, pr.name(), &change).await? {
        StatusWrite::Gone => Ok(None),
        _ => Ok(Some(projected)),
    }
}
