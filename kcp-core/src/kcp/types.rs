//! Typed kcp resources: the parts of kcp's `core`, `tenancy` and `apis` groups that controllers
//! read and write.
//!
//! Field and wire names are kcp's own (`URL`, `defaultAPIBindings`, `identityHash`, ...).
//! Every field kcp may leave out is an `Option` that is skipped when `None`, so an absent field
//! stays absent when an object is written back. Fields this crate does not know are dropped on
//! deserialization: to change an object written by a newer kcp, send a patch rather than a
//! full replace of a typed object.
//!
//! These types are for clients. kcp serves these kinds itself, so their `crd()` is not meant to
//! be installed.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionNames;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A status condition as kcp writes it (kcp's conditions carry an optional `severity`).
///
/// Tolerant of missing fields: `type` and `status` default to empty strings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type, e.g. `Ready`, `InitialBindingCompleted`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// `Error`, `Warning` or `Info` (kcp only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// Machine-readable reason of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// RFC 3339 time of the last status change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl Condition {
    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Finds the condition of a type in an optional condition list.
pub fn find_condition<'a>(
    conditions: Option<&'a [Condition]>,
    type_: &str,
) -> Option<&'a Condition> {
    conditions?.iter().find(|c| c.type_ == type_)
}

// ---------------------------------------------------------------------------------------------
// core.kcp.io/v1alpha1 LogicalCluster

/// The desired state of a logical cluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "core.kcp.io",
    version = "v1alpha1",
    kind = "LogicalCluster",
    plural = "logicalclusters",
    status = "LogicalClusterStatus",
    derive = "PartialEq",
    doc = "The singleton object (always named `cluster`) that describes a logical cluster."
)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterSpec {
    /// The object that owns this logical cluster (usually its Workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<LogicalClusterOwner>,
    /// Whether the LogicalCluster may be deleted directly, without deleting its owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directly_deletable: Option<bool>,
    /// The initializers set when the cluster was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Vec<String>>,
    /// The terminators set when the cluster was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminators: Option<Vec<String>>,
}

/// The owner of a logical cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterOwner {
    /// API version of the owner, e.g. `tenancy.kcp.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Resource (plural) of the owner, e.g. `workspaces`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Name of the owner.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Logical cluster name of the owner.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// UID of the owner.
    #[serde(rename = "uid", default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The observed state of a logical cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterStatus {
    /// The URL under which the logical cluster is served.
    #[serde(rename = "URL", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `Scheduling`, `Initializing`, `Ready`, `Unavailable`, `Inactive` (newer kcp also
    /// `Terminating`, `Deleting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The initializers that have not finished yet; each removes its own entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Vec<String>>,
    /// The terminators that have not finished yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminators: Option<Vec<String>>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

// ---------------------------------------------------------------------------------------------
// tenancy.kcp.io/v1alpha1 Workspace and WorkspaceType

/// A reference to a WorkspaceType: its name and the workspace path it lives in.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeReference {
    /// Name of the WorkspaceType.
    #[serde(default)]
    pub name: String,
    /// Workspace path of the WorkspaceType; when absent kcp looks in the parent workspaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The desired state of a workspace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "tenancy.kcp.io",
    version = "v1alpha1",
    kind = "Workspace",
    plural = "workspaces",
    status = "WorkspaceStatus",
    derive = "PartialEq",
    doc = "A workspace: a named child of a workspace, backed by a logical cluster."
)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSpec {
    /// The type of the workspace.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<WorkspaceTypeReference>,
    /// The name of the logical cluster backing this workspace (set by kcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The URL under which the workspace is served (set by kcp).
    #[serde(rename = "URL", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where the workspace is scheduled (a shard selector), kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Value>,
}

/// The observed state of a workspace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
    /// The phase, as on the LogicalCluster (`Scheduling`, `Initializing`, `Ready`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// A copy of the LogicalCluster's pending initializers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Vec<String>>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// The desired state of a workspace type.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "tenancy.kcp.io",
    version = "v1alpha1",
    kind = "WorkspaceType",
    plural = "workspacetypes",
    status = "WorkspaceTypeStatus",
    derive = "PartialEq",
    doc = "A type of workspace: its initializers, terminators, allowed parents and children."
)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeSpec {
    /// Whether workspaces of this type get this type's initializer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer: Option<bool>,
    /// Whether workspaces of this type get this type's terminator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminator: Option<bool>,
    /// Types this type extends (and inherits initializers from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend: Option<WorkspaceTypeExtension>,
    /// The type given to child workspaces that do not name one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_child_workspace_type: Option<WorkspaceTypeReference>,
    /// Which types children may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_allowed_children: Option<WorkspaceTypeSelector>,
    /// Which types parents may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_allowed_parents: Option<WorkspaceTypeSelector>,
    /// APIExports bound in every new workspace of this type.
    #[serde(
        rename = "defaultAPIBindings",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub default_api_bindings: Option<Vec<APIExportReference>>,
}

/// The types a WorkspaceType extends.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeExtension {
    /// The extended types.
    #[serde(default)]
    pub with: Vec<WorkspaceTypeReference>,
}

/// A restriction on workspace types.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeSelector {
    /// When true, no type is allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none: Option<bool>,
    /// The allowed types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<WorkspaceTypeReference>>,
}

/// A reference to an APIExport by workspace path and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIExportReference {
    /// Workspace path of the APIExport; the local workspace when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Name of the APIExport.
    #[serde(default)]
    pub export: String,
}

/// The observed state of a workspace type.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeStatus {
    /// The virtual workspace URLs (initializingworkspaces and terminatingworkspaces, one per
    /// shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_workspaces: Option<Vec<VirtualWorkspace>>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A virtual workspace URL published in a status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualWorkspace {
    /// The URL.
    #[serde(default)]
    pub url: String,
    /// `initializing` or `terminating` (newer kcp only).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// apis.kcp.io/v1alpha1 APIExport, APIExportEndpointSlice, APIResourceSchema, APIBinding

/// The desired state of an APIExport.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIExport",
    plural = "apiexports",
    status = "APIExportStatus",
    derive = "PartialEq",
    doc = "An API offered for binding into other workspaces."
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportSpec {
    /// Names of the APIResourceSchemas exported (in the APIExport's workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_resource_schemas: Option<Vec<String>>,
    /// Other resources the export's provider wants access to in consumer workspaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<PermissionClaim>>,
    /// The secret that defines the export's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
}

/// A claim on a resource in consumer workspaces.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaim {
    /// API group of the claimed resource (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// Resource (plural) claimed.
    #[serde(default)]
    pub resource: String,
    /// Identity hash of the export that provides the resource, for non-builtin resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_hash: Option<String>,
    /// Whether all objects are claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<bool>,
    /// Selectors of the claimed objects, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_selector: Option<Vec<Value>>,
}

/// The identity of an APIExport.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// The secret holding the identity key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A reference to a secret.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The observed state of an APIExport.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIExportStatus {
    /// The hash of the identity key; claims on this export's resources carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_hash: Option<String>,
    /// Virtual workspace URLs (deprecated in kcp: use APIExportEndpointSlice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_workspaces: Option<Vec<VirtualWorkspace>>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A reference to an APIExport by name and optional workspace path.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportBindingReference {
    /// Workspace path of the APIExport; the local workspace when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Name of the APIExport.
    #[serde(default)]
    pub name: String,
}

/// The desired state of an APIExportEndpointSlice.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIExportEndpointSlice",
    plural = "apiexportendpointslices",
    status = "APIExportEndpointSliceStatus",
    derive = "PartialEq",
    doc = "The virtual workspace URLs (one per shard or partition) that serve an APIExport."
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpointSliceSpec {
    /// The APIExport whose endpoints are listed.
    #[serde(default)]
    pub export: ExportBindingReference,
    /// Name of a Partition restricting the shards listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
}

/// The observed state of an APIExportEndpointSlice.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpointSliceStatus {
    /// The endpoints: one apiexport virtual workspace URL per shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<APIExportEndpoint>>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// One endpoint of an APIExportEndpointSlice.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpoint {
    /// The virtual workspace URL, e.g. `https://shard:6443/services/apiexport/root/my-export`.
    #[serde(default)]
    pub url: String,
}

/// The desired state of an APIResourceSchema (immutable once created).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIResourceSchema",
    plural = "apiresourceschemas",
    derive = "PartialEq",
    doc = "An immutable snapshot of a resource's schema, exported by APIExports."
)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceSchemaSpec {
    /// API group of the resource.
    #[serde(default)]
    pub group: String,
    /// Resource names (plural, singular, kind, list kind, ...).
    #[serde(default)]
    #[schemars(with = "Value")]
    pub names: CustomResourceDefinitionNames,
    /// `Cluster` or `Namespaced`.
    #[serde(default)]
    pub scope: String,
    /// The versions of the resource.
    #[serde(default)]
    pub versions: Vec<APIResourceVersion>,
    /// Conversion settings between versions, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<Value>,
}

/// One version of an APIResourceSchema (like a CRD version).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceVersion {
    /// Version name, e.g. `v1alpha1`.
    #[serde(default)]
    pub name: String,
    /// Whether the version is served.
    #[serde(default)]
    pub served: bool,
    /// Whether this is the storage version.
    #[serde(default)]
    pub storage: bool,
    /// Whether the version is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
    /// Warning returned to clients of a deprecated version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The OpenAPI v3 schema, kept as JSON.
    #[serde(default)]
    pub schema: Value,
    /// Subresources (`status`, `scale`), kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresources: Option<Value>,
    /// Extra printer columns, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_printer_columns: Option<Vec<Value>>,
}

/// The desired state of an APIBinding.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIBinding",
    plural = "apibindings",
    status = "APIBindingStatus",
    derive = "PartialEq",
    doc = "Binds an APIExport into a workspace, making its resources available there."
)]
#[serde(rename_all = "camelCase")]
pub struct APIBindingSpec {
    /// The APIExport to bind.
    #[serde(default)]
    pub reference: BindingReference,
    /// The export's permission claims, accepted or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<AcceptablePermissionClaim>>,
}

/// What an APIBinding binds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingReference {
    /// The APIExport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<ExportBindingReference>,
}

/// A permission claim with the consumer's answer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptablePermissionClaim {
    /// The claim.
    #[serde(flatten)]
    pub claim: PermissionClaim,
    /// `Accepted` or `Rejected`.
    #[serde(default)]
    pub state: String,
}

/// The observed state of an APIBinding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIBindingStatus {
    /// `Binding` or `Bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The resources the binding made available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_resources: Option<Vec<BoundAPIResource>>,
    /// Logical cluster name of the bound APIExport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_export_cluster_name: Option<String>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

impl APIBindingStatus {
    /// Whether the phase is `Bound`.
    pub fn is_bound(&self) -> bool {
        self.phase.as_deref() == Some("Bound")
    }
}

/// A resource made available by an APIBinding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoundAPIResource {
    /// API group.
    #[serde(default)]
    pub group: String,
    /// Resource (plural).
    #[serde(default)]
    pub resource: String,
    /// The schema the resource is served with.
    #[serde(default)]
    pub schema: BoundAPIResourceSchema,
    /// Versions objects have been stored in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_versions: Option<Vec<String>>,
}

/// The APIResourceSchema behind a bound resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoundAPIResourceSchema {
    /// Name of the APIResourceSchema.
    #[serde(default)]
    pub name: String,
    /// UID of the APIResourceSchema.
    #[serde(rename = "UID", default)]
    pub uid: String,
    /// Identity hash of the export.
    #[serde(default)]
    pub identity_hash: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use serde_json::json;

    #[test]
    fn kinds_are_served_under_kcp_groups_and_plurals() {
        let resources = [
            (
                LogicalCluster::api_version(&()),
                LogicalCluster::plural(&()),
            ),
            (Workspace::api_version(&()), Workspace::plural(&())),
            (WorkspaceType::api_version(&()), WorkspaceType::plural(&())),
            (APIExport::api_version(&()), APIExport::plural(&())),
            (
                APIExportEndpointSlice::api_version(&()),
                APIExportEndpointSlice::plural(&()),
            ),
            (
                APIResourceSchema::api_version(&()),
                APIResourceSchema::plural(&()),
            ),
            (APIBinding::api_version(&()), APIBinding::plural(&())),
        ];
        let resources: Vec<String> = resources.iter().map(|(v, p)| format!("{v} {p}")).collect();
        assert_eq!(
            resources,
            [
                "core.kcp.io/v1alpha1 logicalclusters",
                "tenancy.kcp.io/v1alpha1 workspaces",
                "tenancy.kcp.io/v1alpha1 workspacetypes",
                "apis.kcp.io/v1alpha1 apiexports",
                "apis.kcp.io/v1alpha1 apiexportendpointslices",
                "apis.kcp.io/v1alpha1 apiresourceschemas",
                "apis.kcp.io/v1alpha1 apibindings",
            ]
        );
    }

    #[test]
    fn logical_cluster_round_trips_with_upstream_field_names() {
        let wire = json!({
            "apiVersion": "core.kcp.io/v1alpha1",
            "kind": "LogicalCluster",
            "metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": "2x9", "kcp.io/path": "root:a"}},
            "spec": {
                "owner": {"apiVersion": "tenancy.kcp.io/v1alpha1", "resource": "workspaces",
                          "name": "a", "cluster": "root", "uid": "u-1"},
                "directlyDeletable": true,
                "initializers": ["root:my-type", "system:apibindings"]
            },
            "status": {
                "URL": "https://shard/clusters/2x9",
                "phase": "Initializing",
                "initializers": ["root:my-type"],
                "conditions": [{"type": "WorkspaceInitialized", "status": "False",
                                "severity": "Info", "lastTransitionTime": "2025-01-01T00:00:00Z"}]
            }
        });
        let lc: LogicalCluster = serde_json::from_value(wire.clone()).unwrap();
        let status = lc.status.as_ref().unwrap();
        assert_eq!(status.url.as_deref(), Some("https://shard/clusters/2x9"));
        assert_eq!(
            status.initializers.as_deref(),
            Some(&["root:my-type".to_string()][..])
        );
        assert_eq!(serde_json::to_value(&lc).unwrap(), wire);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let wire = json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "a"},
            "spec": {"type": {"name": "universal"}}
        });
        let ws: Workspace = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&ws).unwrap(), wire);
    }

    #[test]
    fn conditions_without_reason_or_severity_are_accepted() {
        let c: Condition =
            serde_json::from_value(json!({"type": "Ready", "status": "True"})).unwrap();
        assert!(c.is_true());
        let list = [c];
        assert!(find_condition(Some(&list), "Ready").is_some());
        assert!(find_condition(None, "Ready").is_none());
    }

    #[test]
    fn workspace_type_uses_acronym_field_names_on_the_wire() {
        let spec = WorkspaceTypeSpec {
            initializer: Some(true),
            default_api_bindings: Some(vec![APIExportReference {
                path: Some("root".into()),
                export: "tenancy.kcp.io".into(),
            }]),
            ..WorkspaceTypeSpec::default()
        };
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            json!({"initializer": true, "defaultAPIBindings": [{"path": "root", "export": "tenancy.kcp.io"}]})
        );
    }

    #[test]
    fn api_binding_status_reads_bound_resources() {
        let status: APIBindingStatus = serde_json::from_value(json!({
            "phase": "Bound",
            "apiExportClusterName": "1abc",
            "boundResources": [{"group": "example.io", "resource": "widgets",
                "schema": {"name": "v1.widgets.example.io", "UID": "u", "identityHash": "h"},
                "storageVersions": ["v1"]}]
        }))
        .unwrap();
        assert!(status.is_bound());
        let bound = &status.bound_resources.unwrap()[0];
        assert_eq!(bound.schema.uid, "u");
        assert_eq!(bound.schema.identity_hash, "h");
    }

    #[test]
    fn accepted_permission_claims_flatten_the_claim() {
        let claim: AcceptablePermissionClaim = serde_json::from_value(json!({
            "group": "", "resource": "configmaps", "all": true, "state": "Accepted"
        }))
        .unwrap();
        assert_eq!(claim.claim.resource, "configmaps");
        assert_eq!(claim.state, "Accepted");
    }

    #[test]
    fn api_resource_schema_reads_crd_style_names_and_versions() {
        let schema: APIResourceSchema = serde_json::from_value(json!({
            "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
            "metadata": {"name": "v1.widgets.example.io"},
            "spec": {"group": "example.io", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"type": "object"}, "subresources": {"status": {}}}]}
        }))
        .unwrap();
        assert_eq!(schema.spec.names.kind, "Widget");
        assert_eq!(schema.spec.versions[0].name, "v1");
    }
}
