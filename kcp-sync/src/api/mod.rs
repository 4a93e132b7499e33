//! The `syncagent.kcp.io/v1alpha1` API: `PublishedResource`.
//!
//! A PublishedResource (cluster-scoped, on the service cluster) names a source type (usually
//! a CRD) and says how it is published into kcp (projection), which kcp objects are synced
//! (filter), how local copies are named (naming), how objects are rewritten on the way
//! (mutation) and which related objects travel with them (related).
//!
//! Group, version, kind, every spec field name and the CEL `x-kubernetes-validations` of
//! `RelatedResourceSpec` and `RelatedResourceWatch` are the wire contract of the upstream
//! api-syncagent (`sdk/apis/syncagent/v1alpha1`) and are kept exactly, so PublishedResources
//! written for the Go agent work unchanged.
//!
//! Differences from upstream, all additive: the status carries conditions (`SchemaReady`,
//! `Syncing`, `Ready`), `observedGeneration` and counts of synced, failing and pending
//! objects next to upstream's `resourceSchemaName`. Objects with upstream's status read back
//! with the additions empty.
//!
//! [`crds`] and [`crds_yaml`] give the CustomResourceDefinition to install.

mod spec;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kcp_core::kcp::Condition;
use kube::{CustomResource, CustomResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use spec::*;

use crate::error::{Error, Result};

/// The API group of PublishedResource.
pub const GROUP: &str = "syncagent.kcp.io";

/// The (only) API version of PublishedResource.
pub const VERSION: &str = "v1alpha1";

/// Label on APIResourceSchemas (and on local primary copies): which agent created them.
pub const AGENT_NAME_LABEL: &str = "syncagent.kcp.io/agent-name";

/// Annotation on APIResourceSchemas and the APIExport: which agent manages them.
pub const AGENT_NAME_ANNOTATION: &str = "syncagent.kcp.io/agent-name";

/// Annotation on APIResourceSchemas: the `metadata.generation` of the CRD they were made from.
pub const SOURCE_GENERATION_ANNOTATION: &str = "syncagent.kcp.io/source-generation";

/// Legacy naming placeholder: the kcp logical cluster name.
pub const PLACEHOLDER_REMOTE_CLUSTER_NAME: &str = "$remoteClusterName";
/// Legacy naming placeholder: the object's namespace in kcp.
pub const PLACEHOLDER_REMOTE_NAMESPACE: &str = "$remoteNamespace";
/// Legacy naming placeholder: the first 20 hex characters of SHA-1 of the kcp namespace.
pub const PLACEHOLDER_REMOTE_NAMESPACE_HASH: &str = "$remoteNamespaceHash";
/// Legacy naming placeholder: the object's name in kcp.
pub const PLACEHOLDER_REMOTE_NAME: &str = "$remoteName";
/// Legacy naming placeholder: the first 20 hex characters of SHA-1 of the kcp name.
pub const PLACEHOLDER_REMOTE_NAME_HASH: &str = "$remoteNameHash";

/// Condition type: the APIResourceSchema for the current spec and CRD exists in kcp.
pub const CONDITION_SCHEMA_READY: &str = "SchemaReady";

/// Condition type: a sync controller runs for this PublishedResource.
pub const CONDITION_SYNCING: &str = "Syncing";

/// Condition type: the schema is published and objects sync without failures.
pub const CONDITION_READY: &str = "Ready";

/// How an API type of the service cluster is exposed in kcp workspaces.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "syncagent.kcp.io",
    version = "v1alpha1",
    kind = "PublishedResource",
    plural = "publishedresources",
    singular = "publishedresource",
    status = "PublishedResourceStatus",
    derive = "PartialEq",
    doc = "PublishedResource describes how an API type (usually defined by a CRD) on the service cluster should be exposed in kcp workspaces."
)]
#[serde(rename_all = "camelCase")]
pub struct PublishedResourceSpec {
    /// The source type on the service cluster.
    pub resource: SourceResourceDescriptor,
    /// Restricts which kcp objects are handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<ResourceFilter>,
    /// How local namespaces and names are formed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<ResourceNaming>,
    /// Also resolve the workspace path of every object and record it on the local copy
    /// (needs a `logicalclusters` permission claim).
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_workspace_paths: bool,
    /// How the type's group, versions, kind, names and scope change in kcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<ResourceProjection>,
    /// Rewrite rules for objects in both directions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<ResourceMutationSpec>,
    /// Resources that belong to the synced object (credentials, configuration, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<Vec<RelatedResourceSpec>>,
    /// Whether objects are synced at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronization: Option<SynchronizationSpec>,
}

/// The observed state of a PublishedResource.
///
/// `resourceSchemaName` is upstream's only status field; the rest is a kcp-sync addition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishedResourceStatus {
    /// Name of the APIResourceSchema currently created for this PublishedResource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_schema_name: Option<String>,
    /// Conditions of types `SchemaReady`, `Syncing` and `Ready`; their messages carry the
    /// real error (kcp-side events stay generic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Counts of the kcp objects of this PublishedResource.
    #[serde(default, skip_serializing_if = "ObjectCounts::is_zero")]
    pub objects: ObjectCounts,
}

/// How many kcp objects of a PublishedResource are in which state.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectCounts {
    /// Objects whose last sync succeeded.
    #[serde(default)]
    pub synced: u32,
    /// Objects whose last sync failed.
    #[serde(default)]
    pub failing: u32,
    /// Objects seen but not yet synced.
    #[serde(default)]
    pub pending: u32,
}

impl ObjectCounts {
    /// Whether all counts are zero.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl PublishedResourceStatus {
    /// The condition of type `type_`, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

impl PublishedResource {
    /// Whether objects of this PublishedResource are synced (`spec.synchronization` absent
    /// or `enabled: true`).
    pub fn sync_enabled(&self) -> bool {
        self.spec.synchronization.as_ref().is_none_or(|s| s.enabled)
    }

    /// The related resources (empty when none are configured).
    pub fn related(&self) -> &[RelatedResourceSpec] {
        self.spec.related.as_deref().unwrap_or_default()
    }

    /// `metadata.name`, or the empty string for an unnamed object.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// The CustomResourceDefinitions kcp-sync installs on the service cluster (PublishedResource).
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![PublishedResource::crd()]
}

/// [`crds`] as one YAML stream, documents separated by `---` lines.
pub fn crds_yaml() -> Result<String> {
    serde_saphyr::to_string_multiple(&crds()).map_err(|err| Error::Serialization {
        context: "writing the CustomResourceDefinitions as YAML".to_owned(),
        message: err.to_string(),
    })
}

#[cfg(test)]
mod tests;
