//! FrontProxy: the public entry point of a kcp installation, and CacheServer.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LocalObjectReference, ResourceRequirements, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::*;

/// The desired state of a FrontProxy.
// Several printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operator.kcp.io",
    version = "v1alpha1",
    kind = "FrontProxy",
    plural = "frontproxies",
    singular = "frontproxy",
    namespaced,
    status = "FrontProxyStatus",
    derive = "PartialEq",
    doc = "FrontProxy runs a kcp-front-proxy in front of the shards of a RootShard.",
    printcolumn(
        name = "RootShard",
        type_ = "string",
        json_path = ".spec.rootShard.ref.name"
    ),
    printcolumn(
        name = "ExternalHostname",
        type_ = "string",
        json_path = ".spec.externalHostname"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!(has(self.externalHostname) && has(self.external) && has(self.external.hostname))",
    "message": "Cannot set both ExternalHostname (deprecated) and External.hostname. Use External.hostname only."
}]))]
pub struct FrontProxySpec {
    /// The RootShard this front-proxy serves (the reference is required).
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "has(self.ref) && self.ref.name != ''",
        "message": "rootShard.ref.name must name a RootShard"
    }]))]
    pub root_shard: RootShardConfig,
    /// How many replicas run; 2 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Resource requests and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Authentication settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "!has(self.oidc) || (has(self.serviceAccount) && self.serviceAccount.enabled)",
        "message": "OIDC requires ServiceAccount auth to be enabled."
    }]))]
    pub auth: Option<AuthSpec>,
    /// Path mappings appended to the two defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_path_mappings: Vec<PathMappingEntry>,
    /// The front-proxy image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// Deprecated: the external host name, optionally with `:port`; use `external`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub external_hostname: String,
    /// How the front-proxy is exposed; the RootShard's external address when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalConfig>,
    /// Customizations of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_template: Option<ServiceTemplate>,
    /// Customizations of the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_template: Option<DeploymentTemplate>,
    /// An optional PodDisruptionBudget for the Deployment (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
    /// Customizations of the generated certificates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub certificate_templates: CertificateTemplateMap,
    /// A Secret whose `tls.crt` validates the shards' serving certificates.
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
    /// Additional arguments of the front-proxy container.
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

/// One entry of the front-proxy's path mapping (JSON keys are snake_case, as kcp reads them).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct PathMappingEntry {
    /// The URL path prefix.
    pub path: String,
    /// The backend URL.
    pub backend: String,
    /// The CA file validating the backend.
    pub backend_server_ca: String,
    /// The client certificate file presented to the backend.
    pub proxy_client_cert: String,
    /// The client key file.
    pub proxy_client_key: String,
}

/// The observed state of a FrontProxy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrontProxyStatus {
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

/// The desired state of a CacheServer.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operator.kcp.io",
    version = "v1alpha1",
    kind = "CacheServer",
    plural = "cacheservers",
    singular = "cacheserver",
    namespaced,
    status = "CacheServerStatus",
    derive = "PartialEq",
    doc = "CacheServer runs a kcp cache server with its own PKI.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.replicas) || self.replicas <= 1 || has(self.etcd)",
    "message": "etcd must be specified when replicas > 1"
}]))]
pub struct CacheServerSpec {
    /// The DNS domain of cluster Services; `cluster.local` when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_domain: String,
    /// The cache-server image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// Replicas: at most 1 with the embedded etcd; 2 by default with an external etcd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Logging settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingSpec>,
    /// How the cache server's CA is obtained.
    pub certificates: Certificates,
    /// Customizations of the generated certificates (`root-ca`, `server`, `client`).
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
    /// An external etcd; the embedded etcd when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd: Option<EtcdConfig>,
    /// Additional arguments of the cache-server container.
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
    /// Resource requests and limits over the defaults (a kcp-rs addition; upstream has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

/// The observed state of a CacheServer (upstream's is always empty; kcp-rs fills it).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CacheServerStatus {
    /// `Provisioning`, `Running` or `Deleting`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions (`Available`, `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
