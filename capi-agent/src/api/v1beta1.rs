//! `capi-provider.agent-install.openshift.io/v1beta1`, the storage version: AgentCluster,
//! AgentMachine and AgentMachineTemplate with upstream's field names and JSON shapes.
//!
//! Additions over upstream, all optional and additive: `status.initialization.provisioned` on
//! AgentCluster and AgentMachine (the v1beta2 contract's readiness field, set together with
//! `status.ready`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of an AgentCluster: where the hosted control plane answers, and where
/// the installer fetches ignition.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "capi-provider.agent-install.openshift.io",
    version = "v1beta1",
    kind = "AgentCluster",
    plural = "agentclusters",
    singular = "agentcluster",
    namespaced,
    status = "AgentClusterStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "AgentCluster is the Schema for the agentclusters API.",
    label("cluster.x-k8s.io/provider", "agent"),
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    label("cluster.x-k8s.io/v1beta2", "v1beta1")
)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterSpec {
    /// Where the installer fetches ignition from, and the CA that signs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint: Option<IgnitionEndpoint>,
    /// The endpoint of the control plane (set by HyperShift); always serialized, possibly `{}`.
    #[serde(default)]
    pub control_plane_endpoint: ApiEndpoint,
}

/// A host and port (CAPI's `APIEndpoint`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ApiEndpoint {
    /// The hostname or IP address of the endpoint.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 512))]
    pub host: String,
    /// The port of the endpoint.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

fn is_zero(port: &i32) -> bool {
    *port == 0
}

impl ApiEndpoint {
    /// Whether the endpoint is usable: a host and a port.
    pub fn is_valid(&self) -> bool {
        !self.host.is_empty() && self.port != 0
    }
}

/// The ignition endpoint of a cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnitionEndpoint {
    /// The URL of the ignition server (the path is dropped when copied to the
    /// AgentClusterInstall).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// The Secret holding the CA certificate of the ignition server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate_reference: Option<CaCertificateReference>,
}

/// A Secret holding a CA certificate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct CaCertificateReference {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub name: String,
}

/// A reference to the ClusterDeployment of an AgentCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterDeploymentReference {
    /// Name of the ClusterDeployment.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Namespace of the ClusterDeployment.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// The observed state of an AgentCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterStatus {
    /// The v1beta1 contract's readiness: the ClusterDeployment and the AgentClusterInstall exist
    /// and the control-plane endpoint is known.
    #[serde(default)]
    pub ready: bool,
    /// The ClusterDeployment created for (or adopted by) this AgentCluster.
    #[serde(default, rename = "clusterDeploymentReference")]
    pub cluster_deployment_ref: ClusterDeploymentReference,
    /// Conditions: `ClusterDeploymentReady`, `AgentClusterInstallReady`,
    /// `ControlPlaneEndpointReady`, `Paused` and the summary `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Failure domains (the v1beta2 list shape; not set by this provider).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_domains: Vec<FailureDomain>,
    /// The v1beta2 contract's readiness (a kcp-rs addition; mirrors `ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
}

/// The v1beta2 contract's `status.initialization`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Initialization {
    /// Whether the infrastructure is provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<bool>,
}

/// A failure domain (CAPI v1beta2 shape).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomain {
    /// Name of the failure domain.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// Whether control-plane machines may use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<bool>,
    /// Free-form attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<std::collections::BTreeMap<String, String>>,
}

/// The desired state of an AgentMachine: which Agents it may bind.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "capi-provider.agent-install.openshift.io",
    version = "v1beta1",
    kind = "AgentMachine",
    plural = "agentmachines",
    singular = "agentmachine",
    namespaced,
    status = "AgentMachineStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "AgentMachine is the Schema for the agentmachines API.",
    label("cluster.x-k8s.io/provider", "agent"),
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    label("cluster.x-k8s.io/v1beta2", "v1beta1")
)]
#[serde(rename_all = "camelCase")]
pub struct AgentMachineSpec {
    /// Which Agents may be bound; absent means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_label_selector: Option<LabelSelector>,
    /// `agent://<Agent name>`, set when an Agent is bound.
    #[serde(
        default,
        rename = "providerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
}

/// A reference to the Agent bound to an AgentMachine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AgentReference {
    /// Namespace of the Agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the Agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// An address of a machine (CAPI's `MachineAddress`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct MachineAddress {
    /// `Hostname`, `ExternalIP`, `InternalIP`, `ExternalDNS` or `InternalDNS`.
    #[serde(rename = "type")]
    pub type_: MachineAddressType,
    /// The address.
    pub address: String,
}

/// The type of a [`MachineAddress`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum MachineAddressType {
    /// A host name.
    Hostname,
    /// An externally reachable IP.
    #[serde(rename = "ExternalIP")]
    ExternalIp,
    /// A cluster-internal IP.
    #[serde(rename = "InternalIP")]
    InternalIp,
    /// An external DNS name.
    #[serde(rename = "ExternalDNS")]
    ExternalDns,
    /// An internal DNS name (the node name).
    #[serde(rename = "InternalDNS")]
    InternalDns,
}

/// The observed state of an AgentMachine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentMachineStatus {
    /// The v1beta1 contract's readiness: the bound Agent is installed.
    #[serde(default)]
    pub ready: bool,
    /// The bound Agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_ref: Option<AgentReference>,
    /// The addresses of the bound host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// A terminal problem (v1beta1 contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// A human-readable terminal problem (v1beta1 contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Conditions: `AgentReserved`, `AgentSpecSynced`, `AgentValidated`,
    /// `AgentRequirementsMet`, `Installed`, `Ready`, and kcp-rs's `Paused`, `BootstrapDataReady`
    /// and `Deleting`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The v1beta2 contract's readiness (a kcp-rs addition; mirrors `ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
}

/// An AgentMachineTemplate's spec: the AgentMachine every Machine of a MachineDeployment gets.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "capi-provider.agent-install.openshift.io",
    version = "v1beta1",
    kind = "AgentMachineTemplate",
    plural = "agentmachinetemplates",
    singular = "agentmachinetemplate",
    shortname = "agentmt",
    category = "cluster-api",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    doc = "AgentMachineTemplate is the Schema for the agentmachinetemplates API.",
    label("cluster.x-k8s.io/provider", "agent"),
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    label("cluster.x-k8s.io/v1beta2", "v1beta1")
)]
pub struct AgentMachineTemplateSpec {
    /// The template.
    pub template: AgentMachineTemplateResource,
}

/// The template of an AgentMachineTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AgentMachineTemplateResource {
    /// The spec of the AgentMachines made from the template.
    pub spec: AgentMachineSpec,
}
