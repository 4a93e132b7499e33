//! RootShard and Shard: the kcp servers, and the spec they share ([`CommonShardSpec`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LocalObjectReference, ResourceRequirements, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::*;

/// The part of the spec RootShard and Shard share (inlined into both).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommonShardSpec {
    /// The DNS domain of cluster Services; `cluster.local` when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_domain: String,
    /// The URL the shard is reachable under; the in-cluster Service URL when unset.
    #[serde(
        rename = "shardBaseURL",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub shard_base_url: String,
    /// The etcd cluster of this shard.
    pub etcd: EtcdConfig,
    /// The kcp image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// How many replicas run; 2 when unset (an existing value is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Resource requests and limits, merged per key over the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Audit settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditSpec>,
    /// Authorization settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<AuthorizationSpec>,
    /// Authentication settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthSpec>,
    /// A standalone VirtualWorkspace serving kcp's virtual workspaces instead of the shard.
    #[serde(
        rename = "kcpVirtualWorkspace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kcp_virtual_workspace: Option<LocalObjectReference>,
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
    /// A Secret whose `tls.crt` is used as CA in the external-logical-cluster-admin kubeconfig.
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
    /// Additional arguments of the kcp container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Additional pod volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub extra_volumes: Vec<Volume>,
    /// Additional mounts of the kcp container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub extra_volume_mounts: Vec<VolumeMount>,
    /// Logging settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingSpec>,
}

/// The desired state of a RootShard.
// Several printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operator.kcp.io",
    version = "v1alpha1",
    kind = "RootShard",
    plural = "rootshards",
    singular = "rootshard",
    namespaced,
    status = "RootShardStatus",
    derive = "PartialEq",
    doc = "RootShard runs the root shard of a kcp installation, its PKI and its internal proxy.",
    printcolumn(
        name = "Hostname",
        type_ = "string",
        json_path = ".spec.external.hostname"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RootShardSpec {
    /// The settings shared with Shard.
    #[serde(flatten)]
    pub common: CommonShardSpec,
    /// How the installation is reached from outside.
    pub external: ExternalConfig,
    /// The cache server.
    pub cache: RootShardCacheConfig,
    /// The internal front-proxy the operator uses to reach all shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<RootShardProxySpec>,
    /// How the root CA is obtained.
    pub certificates: Certificates,
}

/// The internal proxy of a RootShard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootShardProxySpec {
    /// The proxy image; the RootShard's image when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// How many replicas run; 2 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Resource requests and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Customizations of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_template: Option<ServiceTemplate>,
    /// Customizations of the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_template: Option<DeploymentTemplate>,
    /// An optional PodDisruptionBudget for the Deployment (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
    /// Customizations of the proxy's certificates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub certificate_templates: CertificateTemplateMap,
    /// Additional arguments of the proxy container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Additional pod volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub extra_volumes: Vec<Volume>,
    /// Additional container mounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub extra_volume_mounts: Vec<VolumeMount>,
    /// Logging settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingSpec>,
}

/// The cache server of a RootShard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootShardCacheConfig {
    /// Deprecated and ignored: the embedded cache is used unless `ref` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedded: Option<EmbeddedCacheConfiguration>,
    /// A CacheServer in the same namespace; the embedded cache when unset.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<LocalObjectReference>,
}

/// Deprecated embedded cache settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedCacheConfiguration {
    /// Whether the embedded cache is enabled.
    pub enabled: bool,
}

/// The observed state of a RootShard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootShardStatus {
    /// `Provisioning`, `Running` or `Deleting`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// The generation this status describes (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions (`Available`, `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The Shards registered with this root shard, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub shards: Vec<ShardReference>,
}

/// A Shard registered with a root shard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShardReference {
    /// The Shard's name.
    pub name: String,
}

/// The desired state of a Shard.
// Several printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operator.kcp.io",
    version = "v1alpha1",
    kind = "Shard",
    plural = "shards",
    singular = "shard",
    namespaced,
    status = "ShardStatus",
    derive = "PartialEq",
    doc = "Shard runs an additional kcp shard registered with a RootShard.",
    printcolumn(
        name = "RootShard",
        type_ = "string",
        json_path = ".spec.rootShard.ref.name"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ShardSpec {
    /// The settings shared with RootShard.
    #[serde(flatten)]
    pub common: CommonShardSpec,
    /// The RootShard this shard belongs to (the reference is required).
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "has(self.ref) && self.ref.name != ''",
        "message": "rootShard.ref.name must name a RootShard"
    }]))]
    pub root_shard: RootShardConfig,
    /// An external cache server for this shard; the RootShard's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<ShardCacheConfig>,
}

/// The cache server of a Shard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShardCacheConfig {
    /// A CacheServer in the same namespace.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<LocalObjectReference>,
}

/// The observed state of a Shard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShardStatus {
    /// `Provisioning`, `Running` or `Deleting`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// The generation this status describes (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions (`Available`, `RootShard`, `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
