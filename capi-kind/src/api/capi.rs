//! The Cluster API InfraCluster `KindCluster` (`infrastructure.cluster.x-k8s.io/v1alpha1`).
//!
//! It follows the CAPI infrastructure provider contract for InfraClusters in both shapes:
//! `spec.controlPlaneEndpoint` (filled by the provider once the cluster exists),
//! `status.ready` (v1beta1) and `status.initialization.provisioned` (v1beta2), Kubernetes
//! conditions (`Ready`, `ClusterProvisioned`, `KubeconfigReady`, `Paused`) and the deprecated
//! `failureReason`/`failureMessage`. The spec carries what users set most in a kind config:
//! node counts, the Kubernetes version or node image, networking, feature gates and extra port
//! mappings. Everything describing the kind cluster is immutable (CEL rules: kind cannot
//! change a running cluster); `controlPlaneEndpoint` is the provider's to write.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::Phase;

/// The finalizer of KindCluster (the name other CAPI kind providers use).
pub const FINALIZER: &str = "kindcluster.infrastructure.cluster.x-k8s.io";

/// A transition rule: the kind settings are as present (or absent) as they were at creation.
/// (The per-field `self == oldSelf` rules only run when both values exist.)
pub const IMMUTABLE_PRESENCE: &str = "[has(self.clusterName), has(self.kubernetesVersion), has(self.nodeImage), has(self.controlPlaneNodes), has(self.workerNodes), has(self.networking), has(self.featureGates), has(self.extraPortMappings)] == [has(oldSelf.clusterName), has(oldSelf.kubernetesVersion), has(oldSelf.nodeImage), has(oldSelf.controlPlaneNodes), has(oldSelf.workerNodes), has(oldSelf.networking), has(oldSelf.featureGates), has(oldSelf.extraPortMappings)]";

/// The desired state of a KindCluster.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1alpha1",
    kind = "KindCluster",
    plural = "kindclusters",
    singular = "kindcluster",
    category = "cluster-api",
    namespaced,
    status = "KindClusterStatus",
    derive = "PartialEq",
    doc = "KindCluster is a Cluster API InfraCluster backed by a kind cluster.",
    validation = Rule::new("!has(self.spec.kubernetesVersion) || !has(self.spec.nodeImage)").message("spec.kubernetesVersion and spec.nodeImage are mutually exclusive"),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        description = "The Cluster API Cluster this belongs to",
        json_path = ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
    ),
    printcolumn(
        name = "Kind Cluster",
        type_ = "string",
        description = "The kind cluster's name",
        json_path = ".status.clusterName"
    ),
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase"
    ),
    printcolumn(
        name = "Ready",
        type_ = "boolean",
        json_path = ".status.ready"
    ),
    printcolumn(
        name = "Endpoint",
        type_ = "string",
        json_path = ".spec.controlPlaneEndpoint.host",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(IMMUTABLE_PRESENCE).message("the kind settings (every field but controlPlaneEndpoint) cannot be added or removed after creation"))]
pub struct KindClusterSpec {
    /// The kind cluster's name; defaults to `<namespace>-<name>` of this object. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 50),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    #[x_kube(validation = Rule::new("self == oldSelf").message("clusterName is immutable"))]
    pub cluster_name: Option<String>,
    /// Where the workload cluster's API server listens; set by the provider once the cluster
    /// exists (and again if it had to be recreated on another port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,
    /// The Kubernetes version (`v1.31.0`), giving the node image `kindest/node:<version>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^v?[0-9]+\.[0-9]+\.[0-9]+.*$"))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("kubernetesVersion is immutable"))]
    pub kubernetes_version: Option<String>,
    /// A node image to use instead (`kindest/node:v1.31.0@sha256:...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("nodeImage is immutable"))]
    pub node_image: Option<String>,
    /// Control-plane nodes (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 7))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("controlPlaneNodes is immutable"))]
    pub control_plane_nodes: Option<u32>,
    /// Worker nodes (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 50))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("workerNodes is immutable"))]
    pub worker_nodes: Option<u32>,
    /// kind's `networking` section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("networking is immutable"))]
    pub networking: Option<Networking>,
    /// Kubernetes feature gates, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("featureGates is immutable"))]
    pub feature_gates: BTreeMap<String, bool>,
    /// Ports of the first control-plane node published on the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("extraPortMappings is immutable"))]
    pub extra_port_mappings: Vec<PortMapping>,
}

/// An API endpoint (CAPI's `APIEndpoint`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEndpoint {
    /// The host name or IP address.
    #[schemars(length(min = 1, max = 512))]
    pub host: String,
    /// The port.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

/// kind's cluster networking settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    /// `ipv4`, `ipv6` or `dual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<IpFamily>,
    /// The host address the API server is published on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server_address: Option<String>,
    /// The host port the API server is published on (random when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 65535))]
    pub api_server_port: Option<i32>,
    /// The pod CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_subnet: Option<String>,
    /// The service CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_subnet: Option<String>,
    /// Do not install kind's default CNI (kindnet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "disableDefaultCNI")]
    pub disable_default_cni: Option<bool>,
    /// `iptables`, `ipvs`, `nftables` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_proxy_mode: Option<KubeProxyMode>,
}

/// The IP family of a kind cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IpFamily {
    /// IPv4 only.
    Ipv4,
    /// IPv6 only.
    Ipv6,
    /// Dual stack.
    Dual,
}

/// kube-proxy's mode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KubeProxyMode {
    /// iptables.
    Iptables,
    /// IPVS.
    Ipvs,
    /// nftables.
    Nftables,
    /// No kube-proxy.
    None,
}

/// A container port published on the host.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortMapping {
    /// The port inside the node container.
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: i32,
    /// The port on the host (random when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 65535))]
    pub host_port: Option<i32>,
    /// The host address to listen on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_address: Option<String>,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<PortProtocol>,
}

/// The protocol of a port mapping.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum PortProtocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

/// The observed state of a KindCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KindClusterStatus {
    /// The infrastructure is ready (the v1beta1 contract).
    #[serde(default)]
    pub ready: bool,
    /// The v1beta2 contract's initialization status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
    /// Where provisioning stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The kind cluster this object owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// Conditions: `Ready`, `ClusterProvisioned`, `KubeconfigReady`, `Paused`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// A machine-readable reason for the last failure (deprecated in v1beta2; still copied by
    /// CAPI into `status.deprecated.v1beta1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// A human-readable message for the last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The v1beta2 contract's `status.initialization`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Initialization {
    /// The infrastructure has been provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<bool>,
}
