//! VirtualWorkspace: a standalone virtual-workspaces server for a RootShard or Shard.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LocalObjectReference, ResourceRequirements, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::*;

/// The desired state of a VirtualWorkspace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operator.kcp.io",
    version = "v1alpha1",
    kind = "VirtualWorkspace",
    plural = "virtualworkspaces",
    singular = "virtualworkspace",
    namespaced,
    status = "VirtualWorkspaceStatus",
    derive = "PartialEq",
    doc = "VirtualWorkspace runs a virtual workspace server for a RootShard or a Shard."
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualWorkspaceSpec {
    /// The shard this server belongs to.
    pub target: VirtualWorkspaceTarget,
    /// How the server is reached.
    pub external: ExternalConfig,
    /// The server image; kcp's own virtual-workspaces server when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// The server entrypoint; `/virtual-workspaces` when unset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Containers run in order before the server starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub init_containers: Vec<VirtualWorkspaceInitContainer>,
    /// How many replicas run; 2 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Resource requests and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Customizations of the generated certificates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub certificate_templates: CertificateTemplateMap,
    /// Customizations of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_template: Option<ServiceTemplate>,
    /// Customizations of the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_template: Option<DeploymentTemplate>,
    /// An optional PodDisruptionBudget for the Deployment (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
    /// A Secret whose `tls.crt` is an extra CA bundle.
    #[serde(
        rename = "caBundleSecretRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ca_bundle_secret_ref: Option<LocalObjectReference>,
    /// A Secret whose `tls.crt` holds additional trusted client CAs.
    #[serde(
        rename = "clientCABundleRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_ca_bundle_ref: Option<LocalObjectReference>,
    /// A Secret with a `kubeconfig` for the server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<LocalObjectReference>,
    /// Additional arguments of the server container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Additional pod volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub extra_volumes: Vec<Volume>,
    /// Additional mounts of the server container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub extra_volume_mounts: Vec<VolumeMount>,
    /// Logging settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingSpec>,
    /// The DNS domain of cluster Services; `cluster.local` when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_domain: String,
}

/// A container run before the virtual workspace server.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualWorkspaceInitContainer {
    /// The container name, unique within the VirtualWorkspace.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The image; the server's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// The entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A Secret with a `kubeconfig` mounted at `/etc/kcp/init-kubeconfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<LocalObjectReference>,
    /// Resource requests and limits; the server's defaults when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Volumes added to the pod for this container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub volumes: Vec<Volume>,
    /// Mounts of this container only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub volume_mounts: Vec<VolumeMount>,
}

/// The shard a virtual workspace server belongs to (exactly one reference).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "(has(self.rootShardRef) && !has(self.shardRef)) || (!has(self.rootShardRef) && has(self.shardRef))",
    "message": "Must specify exactly one of rootShardRef or shardRef"
}]))]
pub struct VirtualWorkspaceTarget {
    /// The root shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_shard_ref: Option<LocalObjectReference>,
    /// A shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_ref: Option<LocalObjectReference>,
}

/// The observed state of a VirtualWorkspace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualWorkspaceStatus {
    /// `Provisioning`, `Running` or `Deleting` (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// The generation this status describes (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions (`ReferenceValid`, `Available`, `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
