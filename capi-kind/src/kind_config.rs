//! The kind cluster configuration (`kind.x-k8s.io/v1alpha4` `Cluster`) as typed structs, and
//! its rendering to the YAML `kind create cluster --config` reads.
//!
//! Every node carries the ownership marker label [`OWNER_LABEL`] (the owning object's UID), so
//! the provider can tell its clusters from clusters someone else created with the same name.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::api::capi::{IpFamily, KubeProxyMode, PortProtocol};
use crate::error::{Error, Result};

/// The node label marking a kind cluster as created by this provider for one object (value:
/// the object's UID).
pub const OWNER_LABEL: &str = "capi-provider-kind.kcp-rs.io/owner-uid";

/// A kind cluster configuration.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KindConfig {
    /// Always `Cluster`.
    pub kind: &'static str,
    /// Always `kind.x-k8s.io/v1alpha4`.
    pub api_version: &'static str,
    /// The cluster name (`--name` takes precedence; kept equal).
    pub name: String,
    /// Feature gates, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Networking settings.
    #[serde(skip_serializing_if = "KindNetworking::is_empty")]
    pub networking: KindNetworking,
    /// The nodes, control planes first.
    pub nodes: Vec<KindNode>,
}

/// kind's `networking` section.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KindNetworking {
    /// `ipv4`, `ipv6`, `dual`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<IpFamily>,
    /// Host address of the API server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_address: Option<String>,
    /// Host port of the API server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_port: Option<i32>,
    /// Pod CIDR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_subnet: Option<String>,
    /// Service CIDR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_subnet: Option<String>,
    /// Skip kindnet.
    #[serde(rename = "disableDefaultCNI", skip_serializing_if = "Option::is_none")]
    pub disable_default_cni: Option<bool>,
    /// kube-proxy mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_proxy_mode: Option<KubeProxyMode>,
}

impl KindNetworking {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A kind node.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KindNode {
    /// `control-plane` or `worker`.
    pub role: NodeRole,
    /// The node image (kind's default when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Kubernetes labels of the node (the ownership marker among them).
    pub labels: BTreeMap<String, String>,
    /// Ports published on the host.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_port_mappings: Vec<KindPortMapping>,
}

/// The role of a kind node.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRole {
    /// Runs the control plane.
    ControlPlane,
    /// Runs workloads only.
    Worker,
}

/// A published port.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KindPortMapping {
    /// Port in the node container.
    pub container_port: i32,
    /// Port on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i32>,
    /// Host address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_address: Option<String>,
    /// Protocol.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<PortProtocol>,
}

impl KindConfig {
    /// A configuration for `name` with `control_planes` and `workers` nodes of `image`, every
    /// node marked as owned by `owner_uid`, no other settings.
    pub fn new(
        name: &str,
        image: Option<&str>,
        control_planes: u32,
        workers: u32,
        owner_uid: &str,
    ) -> Self {
        let node = |role| KindNode {
            role,
            image: image.map(str::to_string),
            labels: BTreeMap::from([(OWNER_LABEL.to_string(), owner_uid.to_string())]),
            extra_port_mappings: Vec::new(),
        };
        let nodes = (0..control_planes.max(1))
            .map(|_| node(NodeRole::ControlPlane))
            .chain((0..workers).map(|_| node(NodeRole::Worker)))
            .collect();
        KindConfig {
            kind: "Cluster",
            api_version: "kind.x-k8s.io/v1alpha4",
            name: name.to_string(),
            feature_gates: BTreeMap::new(),
            networking: KindNetworking::default(),
            nodes,
        }
    }
}

/// Renders `config` as the YAML document `kind create cluster --config` reads.
pub fn render_kind_config(config: &KindConfig) -> Result<String> {
    serde_saphyr::to_string(config).map_err(|err| Error::Serialization {
        context: format!("the kind config of cluster {:?}", config.name),
        message: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_config_has_one_marked_control_plane() {
        let config = KindConfig::new("dev", Some("kindest/node:v1.21.1"), 1, 0, "uid-1");
        insta::assert_snapshot!(render_kind_config(&config).unwrap());
    }

    #[test]
    fn a_full_config_renders_every_section() {
        let mut config = KindConfig::new("full", Some("kindest/node:v1.31.0"), 3, 2, "uid-2");
        config
            .feature_gates
            .insert("InPlacePodVerticalScaling".into(), true);
        config.networking = KindNetworking {
            ip_family: Some(IpFamily::Dual),
            api_server_address: Some("127.0.0.1".into()),
            api_server_port: Some(6443),
            pod_subnet: Some("10.244.0.0/16".into()),
            service_subnet: Some("10.96.0.0/12".into()),
            disable_default_cni: Some(true),
            kube_proxy_mode: Some(KubeProxyMode::Ipvs),
        };
        config.nodes[0].extra_port_mappings.push(KindPortMapping {
            container_port: 80,
            host_port: Some(8080),
            listen_address: Some("0.0.0.0".into()),
            protocol: Some(PortProtocol::Tcp),
        });
        insta::assert_snapshot!(render_kind_config(&config).unwrap());
    }

    #[test]
    fn zero_control_planes_still_gives_one() {
        let config = KindConfig::new("dev", None, 0, 1, "u");
        assert_eq!(config.nodes[0].role, NodeRole::ControlPlane);
        assert_eq!(config.nodes.len(), 2);
    }
}
