//! The objects of other projects the provider reads and writes, typed with only the fields it
//! uses: Agent (`agent-install.openshift.io/v1beta1`), ClusterDeployment (`hive.openshift.io/v1`),
//! AgentClusterInstall (`extensions.hive.openshift.io/v1beta1`), CAPI Cluster and Machine (read
//! at v1beta1 or v1beta2, whichever the owner reference names) and the HostedControlPlane-shaped
//! control plane.
//!
//! These types are for reading. The provider never replaces a foreign object it did not create:
//! it writes with merge patches of only the fields it owns (see [`crate::binding`]), so every
//! field these types do not declare is kept untouched on the server.

use std::collections::BTreeMap;

use kube::CustomResource;
use kube::api::GroupVersionKind;
use serde::{Deserialize, Serialize};

/// CAPI's core API group.
pub const CAPI_GROUP: &str = "cluster.x-k8s.io";
/// The CAPI core versions the provider reads, newest first.
pub const CAPI_VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];

/// The GVK of a CAPI core kind at `version`.
pub fn capi_gvk(version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(CAPI_GROUP, version, kind)
}

/// An Agent's spec: approval, the host name, and the binding the provider writes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "agent-install.openshift.io",
    version = "v1beta1",
    kind = "Agent",
    namespaced,
    status = "AgentStatus",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// Whether an admin approved the host.
    #[serde(default)]
    pub approved: bool,
    /// The requested host name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hostname: String,
    /// The ClusterDeployment the Agent is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_deployment_name: Option<ClusterReference>,
    /// The machine config pool (the last segment of the ignition URL).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub machine_config_pool: String,
    /// The Secret with the ignition token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint_token_reference: Option<SecretReference>,
    /// Extra HTTP headers for the ignition request.
    #[serde(default, rename = "ignitionEndpointHTTPHeaders")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ignition_endpoint_http_headers: BTreeMap<String, String>,
}

/// A namespace/name reference to a ClusterDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterReference {
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
}

/// A namespace/name reference to a Secret.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretReference {
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
}

/// What assisted-service reports about a host.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// Conditions in openshift's conditions/v1 shape.
    #[serde(default)]
    pub conditions: Vec<AgentCondition>,
    /// The hardware inventory.
    #[serde(default)]
    pub inventory: Inventory,
    /// The host state machine.
    #[serde(default)]
    pub debug_info: DebugInfo,
}

/// An Agent condition (openshift conditions/v1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AgentCondition {
    /// The condition type (`Bound`, `Connected`, `Validated`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default)]
    pub reason: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

/// The host inventory fields the provider uses.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// The host name the host reports.
    #[serde(default)]
    pub hostname: String,
    /// Network interfaces.
    #[serde(default)]
    pub interfaces: Vec<Interface>,
    /// Memory.
    #[serde(default)]
    pub memory: Memory,
    /// CPU.
    #[serde(default)]
    pub cpu: Cpu,
    /// Disks.
    #[serde(default)]
    pub disks: Vec<Disk>,
}

/// A network interface.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    /// Whether a cable is connected.
    #[serde(default)]
    pub has_carrier: bool,
    /// IPv4 addresses in CIDR form (`1.2.3.4/24`).
    #[serde(default, rename = "ipV4Addresses")]
    pub ipv4_addresses: Vec<String>,
}

/// Memory inventory.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    /// Installed bytes.
    #[serde(default)]
    pub physical_bytes: i64,
}

/// CPU inventory.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    /// Number of CPUs.
    #[serde(default)]
    pub count: i64,
}

/// A disk.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    /// Size in bytes.
    #[serde(default)]
    pub size_bytes: i64,
}

/// The host state machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugInfo {
    /// The state string (`known-unbound`, `installing`, ...).
    #[serde(default)]
    pub state: String,
}

impl Agent {
    /// The condition of `type_`, if reported.
    pub fn condition(&self, type_: &str) -> Option<&AgentCondition> {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
    }

    /// Whether the condition of `type_` is reported with `status` (a missing one never is).
    pub fn condition_is(&self, type_: &str, status: &str) -> bool {
        self.condition(type_).is_some_and(|c| c.status == status)
    }

    /// The host state (`status.debugInfo.state`), empty when unreported.
    pub fn state(&self) -> &str {
        self.status
            .as_ref()
            .map(|s| s.debug_info.state.as_str())
            .unwrap_or_default()
    }

    /// The label value of `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    }

    /// The annotation value of `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    }
}

/// Host states that end the unbind wait: the host is back in discovery (or will need a human).
pub const UNBOUND_STATES: [&str; 7] = [
    "discovering-unbound",
    "known-unbound",
    "disconnected-unbound",
    "insufficient-unbound",
    "disabled-unbound",
    "unbinding-pending-user-action",
    "error",
];

/// A Hive ClusterDeployment, as the provider creates it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "hive.openshift.io",
    version = "v1",
    kind = "ClusterDeployment",
    namespaced,
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeploymentSpec {
    /// The cluster's name (the control plane's name).
    pub cluster_name: String,
    /// The base DNS domain.
    pub base_domain: String,
    /// Always `true`: the cluster exists already (HyperShift runs its control plane).
    pub installed: bool,
    /// The platform: `agentBareMetal: {}`.
    pub platform: Platform,
    /// The pull secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    /// The AgentClusterInstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_install_ref: Option<ClusterInstallRef>,
    /// IDs and the admin credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_metadata: Option<ClusterMetadata>,
}

/// A ClusterDeployment's platform.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Platform {
    /// Agent-based bare metal (always `{}` here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_bare_metal: Option<BTreeMap<String, String>>,
}

/// A reference to an object in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalObjectReference {
    /// Name.
    pub name: String,
}

/// The ClusterDeployment's reference to its install object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterInstallRef {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
}

/// A ClusterDeployment's cluster metadata.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMetadata {
    /// The cluster ID (the CAPI Cluster's UID).
    #[serde(rename = "clusterID")]
    pub cluster_id: String,
    /// The infra ID (the CAPI Cluster's UID).
    #[serde(rename = "infraID")]
    pub infra_id: String,
    /// The admin kubeconfig Secret.
    pub admin_kubeconfig_secret_ref: LocalObjectReference,
    /// The kubeadmin password Secret, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_password_secret_ref: Option<LocalObjectReference>,
}

/// An AgentClusterInstall, as the provider creates it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "extensions.hive.openshift.io",
    version = "v1beta1",
    kind = "AgentClusterInstall",
    namespaced,
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterInstallSpec {
    /// The ClusterDeployment it installs.
    pub cluster_deployment_ref: LocalObjectReference,
    /// How many control-plane agents (always 3, as upstream).
    pub provision_requirements: ProvisionRequirements,
    /// Networking (user-managed).
    pub networking: Networking,
    /// The ignition endpoint, when the AgentCluster names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint: Option<AciIgnitionEndpoint>,
}

/// Provision requirements of an AgentClusterInstall.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionRequirements {
    /// Control-plane agents.
    pub control_plane_agents: i32,
}

/// Networking of an AgentClusterInstall.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    /// Whether the user manages the network (always, as upstream).
    pub user_managed_networking: bool,
}

/// An AgentClusterInstall's ignition endpoint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AciIgnitionEndpoint {
    /// The URL without its path.
    pub url: String,
    /// The CA Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate_reference: Option<crate::api::v1beta1::CaCertificateReference>,
}

/// A CAPI object reference, in either core version's shape (v1beta1: `apiVersion`; v1beta2:
/// `apiGroup`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ContractRef {
    /// v1beta1: `group/version`.
    #[serde(default)]
    pub api_version: String,
    /// v1beta2: the group.
    #[serde(default)]
    pub api_group: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Namespace (v1beta1 only).
    #[serde(default)]
    pub namespace: String,
}

impl ContractRef {
    /// The API group, from `apiGroup` or the group part of `apiVersion`.
    pub fn group(&self) -> &str {
        if !self.api_group.is_empty() {
            return &self.api_group;
        }
        self.api_version
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default()
    }
}

/// A CAPI Cluster (the fields used; v1beta1 and v1beta2 agree on them).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Cluster",
    namespaced,
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Whether reconciliation of the cluster is paused.
    #[serde(default)]
    pub paused: Option<bool>,
    /// The control plane object.
    #[serde(default)]
    pub control_plane_ref: Option<ContractRef>,
    /// The infrastructure object (the AgentCluster).
    #[serde(default)]
    pub infrastructure_ref: Option<ContractRef>,
}

/// A CAPI condition, in either shape (metav1 in v1beta2, CAPI's own in v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct CapiCondition {
    /// Type.
    #[serde(rename = "type")]
    pub type_: String,
    /// Status.
    pub status: String,
    /// Reason.
    #[serde(default)]
    pub reason: String,
}

/// A CAPI Machine (the fields used).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Machine",
    namespaced,
    status = "MachineStatus",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// The bootstrap data.
    #[serde(default)]
    pub bootstrap: Bootstrap,
    /// The failure domain the Machine should land in.
    #[serde(default)]
    pub failure_domain: Option<String>,
}

/// A Machine's bootstrap section.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// The Secret with the bootstrap data (key `value`).
    #[serde(default)]
    pub data_secret_name: Option<String>,
}

/// A Machine's status (the fields used).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MachineStatus {
    /// Conditions (v1beta2: metav1 conditions; v1beta1: CAPI conditions).
    #[serde(default)]
    pub conditions: Vec<CapiCondition>,
    /// v1beta2's deprecated section with the v1beta1 conditions.
    #[serde(default)]
    pub deprecated: Option<Deprecated>,
}

/// `status.deprecated` of a v1beta2 object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Deprecated {
    /// The v1beta1 view.
    #[serde(default)]
    pub v1beta1: Option<DeprecatedV1Beta1>,
}

/// `status.deprecated.v1beta1`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct DeprecatedV1Beta1 {
    /// The v1beta1 conditions.
    #[serde(default)]
    pub conditions: Vec<CapiCondition>,
}

/// The fields of a HostedControlPlane-shaped control plane the ClusterDeployment needs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ControlPlane {
    /// Spec.
    #[serde(default)]
    pub spec: ControlPlaneSpec,
    /// Status.
    #[serde(default)]
    pub status: ControlPlaneStatus,
}

/// The control plane's spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneSpec {
    /// DNS settings.
    #[serde(default)]
    pub dns: Dns,
    /// The pull secret.
    #[serde(default)]
    pub pull_secret: Option<LocalObjectReference>,
}

/// DNS settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Dns {
    /// The base domain.
    #[serde(default)]
    pub base_domain: String,
}

/// The control plane's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneStatus {
    /// The admin kubeconfig Secret.
    #[serde(default)]
    pub kube_config: Option<SecretKeyRef>,
    /// The kubeadmin password Secret.
    #[serde(default)]
    pub kubeadmin_password: Option<LocalObjectReference>,
}

/// A reference to a Secret (and key).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretKeyRef {
    /// The Secret's name.
    #[serde(default)]
    pub name: String,
    /// The key.
    #[serde(default)]
    pub key: String,
}
