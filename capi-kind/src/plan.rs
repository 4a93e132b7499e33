//! What an object asks for, validated: the kind cluster's name, node image and configuration.
//!
//! Pure functions of the object; bad input is an [`Error::InvalidSpec`] naming the object, the
//! field and the reason (the API server enforces most of it through the CRD schema, but objects
//! written before the CRD, or on servers without validation, still get a clear answer).

use kube::ResourceExt as _;

use crate::api::upstream::KubernetesVersion;
use crate::api::{KINDCluster, KindCluster};
use crate::error::{Error, Result};
use crate::kind_config::{KindConfig, KindNetworking, KindPortMapping};

/// The longest kind cluster name accepted (upstream's CRD limit).
pub const MAX_CLUSTER_NAME: usize = 64;

/// The most control-plane nodes a KindCluster may ask for (the CRD schema's maximum).
pub const MAX_CONTROL_PLANE_NODES: u32 = 7;

/// The most worker nodes a KindCluster may ask for (the CRD schema's maximum).
pub const MAX_WORKER_NODES: u32 = 50;

/// Everything needed to create (or recognise) one kind cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterPlan {
    /// `Kind namespace/name` of the object, for messages.
    pub object: String,
    /// The kind cluster's name.
    pub cluster_name: String,
    /// The node image (kind's default when `None`).
    pub image: Option<String>,
    /// The kind configuration (nodes marked with the owner's UID).
    pub config: KindConfig,
    /// The UID of the owning object (the ownership marker's value).
    pub owner_uid: String,
}

/// `Kind namespace/name`.
pub fn describe(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind} {namespace}/{name}")
}

fn invalid(object: &str, field: &str, reason: impl Into<String>) -> Error {
    Error::InvalidSpec {
        object: object.to_string(),
        field: field.to_string(),
        reason: reason.into(),
    }
}

/// Checks a kind cluster name: 1 to 64 characters of `a-z`, `0-9`, `.` and `-` (kind's own
/// rule), starting and ending with a letter or digit.
pub fn validate_cluster_name(object: &str, field: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(invalid(object, field, "must not be empty"));
    }
    if name.len() > MAX_CLUSTER_NAME {
        return Err(invalid(
            object,
            field,
            format!(
                "{} characters, at most {MAX_CLUSTER_NAME} allowed",
                name.len()
            ),
        ));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !name.chars().all(allowed) || !edge(name.chars().next()) || !edge(name.chars().last()) {
        return Err(invalid(
            object,
            field,
            format!(
                "{name:?} is not a valid kind cluster name (lower-case letters, digits, '.' and '-')"
            ),
        ));
    }
    Ok(())
}

fn owner_uid(object: &str, uid: Option<&String>) -> Result<String> {
    uid.filter(|u| !u.is_empty()).cloned().ok_or_else(|| {
        invalid(
            object,
            "metadata.uid",
            "the object must be read from the server",
        )
    })
}

/// The plan of an upstream KINDCluster: `spec.clusterName`, the image of
/// `spec.kubernetesVersion`, one control-plane node.
pub fn plan_upstream(obj: &KINDCluster) -> Result<ClusterPlan> {
    let object = describe(
        "KINDCluster",
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
    );
    let name = obj.spec.cluster_name.clone();
    validate_cluster_name(&object, "spec.clusterName", &name)?;
    let uid = owner_uid(&object, obj.metadata.uid.as_ref())?;
    let version = KubernetesVersion::parse(&obj.spec.kubernetes_version).ok_or_else(|| {
        let known: Vec<&str> = KubernetesVersion::ALL.iter().map(|v| v.as_str()).collect();
        invalid(
            &object,
            "spec.kubernetesVersion",
            format!(
                "{:?} is not one of {}",
                obj.spec.kubernetes_version,
                known.join(", ")
            ),
        )
    })?;
    let image = version.node_image();
    Ok(ClusterPlan {
        config: KindConfig::new(&name, Some(image), 1, 0, &uid),
        object,
        cluster_name: name,
        image: Some(image.to_string()),
        owner_uid: uid,
    })
}

/// The kind cluster name of a KindCluster: `spec.clusterName`, or `<namespace>-<name>`.
pub fn kind_cluster_name(obj: &KindCluster) -> String {
    obj.spec
        .cluster_name
        .clone()
        .unwrap_or_else(|| format!("{}-{}", obj.namespace().unwrap_or_default(), obj.name_any()))
}

/// The node image of a KindCluster: `spec.nodeImage`, `kindest/node:<spec.kubernetesVersion>`
/// (a `v` added when missing), or kind's default.
pub fn kind_cluster_image(object: &str, obj: &KindCluster) -> Result<Option<String>> {
    match (&obj.spec.node_image, &obj.spec.kubernetes_version) {
        (Some(_), Some(_)) => Err(invalid(
            object,
            "spec.nodeImage",
            "spec.kubernetesVersion and spec.nodeImage are mutually exclusive",
        )),
        (Some(image), None) => Ok(Some(image.clone())),
        (None, Some(version)) => {
            let bare = version.strip_prefix('v').unwrap_or(version);
            let parts: Vec<&str> = bare.split('.').collect();
            let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            if parts.len() != 3 || !parts.iter().all(numeric) {
                return Err(invalid(
                    object,
                    "spec.kubernetesVersion",
                    format!(
                        "{version:?} has no kindest/node image (kind tags them vMAJOR.MINOR.PATCH); set spec.nodeImage for another image"
                    ),
                ));
            }
            Ok(Some(format!("kindest/node:v{bare}")))
        }
        (None, None) => Ok(None),
    }
}

/// The plan of a CAPI KindCluster.
pub fn plan_capi(obj: &KindCluster) -> Result<ClusterPlan> {
    let object = describe(
        "KindCluster",
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
    );
    let name = kind_cluster_name(obj);
    let field = if obj.spec.cluster_name.is_some() {
        "spec.clusterName"
    } else {
        "metadata.name"
    };
    validate_cluster_name(&object, field, &name)?;
    let uid = owner_uid(&object, obj.metadata.uid.as_ref())?;
    let image = kind_cluster_image(&object, obj)?;
    let spec = &obj.spec;
    validate_kind_settings(&object, spec)?;
    let mut config = KindConfig::new(
        &name,
        image.as_deref(),
        spec.control_plane_nodes.unwrap_or(1),
        spec.worker_nodes.unwrap_or(0),
        &uid,
    );
    config.feature_gates = spec.feature_gates.clone();
    if let Some(n) = &spec.networking {
        config.networking = KindNetworking {
            ip_family: n.ip_family,
            api_server_address: n.api_server_address.clone(),
            api_server_port: n.api_server_port,
            pod_subnet: n.pod_subnet.clone(),
            service_subnet: n.service_subnet.clone(),
            disable_default_cni: n.disable_default_cni,
            kube_proxy_mode: n.kube_proxy_mode,
        };
    }
    if let Some(first) = config.nodes.first_mut() {
        first.extra_port_mappings = spec
            .extra_port_mappings
            .iter()
            .map(|p| KindPortMapping {
                container_port: p.container_port,
                host_port: p.host_port,
                listen_address: p.listen_address.clone(),
                protocol: p.protocol,
            })
            .collect();
    }
    Ok(ClusterPlan {
        object,
        cluster_name: name,
        image,
        config,
        owner_uid: uid,
    })
}

/// Checks what kind itself would refuse in the kind config, so that the refusal comes before
/// `kind create` and names the field: node counts within the CRD's bounds, subnets are CIDRs (two, comma-separated, for a dual-stack
/// cluster), addresses are IP addresses, feature gate names are identifiers.
pub fn validate_kind_settings(object: &str, spec: &crate::api::KindClusterSpec) -> Result<()> {
    // Node counts first: an object the API server did not validate could otherwise ask for
    // billions of nodes (found by the kind_config fuzz target).
    validate_node_counts(object, spec)?;
    if let Some(networking) = &spec.networking {
        validate_networking(object, networking)?;
    }
    for (i, mapping) in spec.extra_port_mappings.iter().enumerate() {
        if let Some(address) = &mapping.listen_address
            && address.parse::<std::net::IpAddr>().is_err()
        {
            let field = format!("spec.extraPortMappings[{i}].listenAddress");
            let reason = format!("{address:?} is not an IP address");
            return Err(invalid(object, &field, reason));
        }
    }
    for gate in spec.feature_gates.keys() {
        let identifier = gate.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && gate.chars().all(|c| c.is_ascii_alphanumeric());
        if !identifier {
            let field = format!("spec.featureGates[{gate:?}]");
            let reason = "not a feature gate name (letters and digits)";
            return Err(invalid(object, &field, reason));
        }
    }
    Ok(())
}

/// Node counts within the CRD's bounds.
fn validate_node_counts(object: &str, spec: &crate::api::KindClusterSpec) -> Result<()> {
    let counts = [
        (
            "spec.controlPlaneNodes",
            spec.control_plane_nodes,
            MAX_CONTROL_PLANE_NODES,
        ),
        ("spec.workerNodes", spec.worker_nodes, MAX_WORKER_NODES),
    ];
    for (field, count, max) in counts {
        if let Some(count) = count
            && count > max
        {
            let reason = format!("{count} nodes, at most {max} allowed");
            return Err(invalid(object, field, reason));
        }
    }
    Ok(())
}

/// Subnets are CIDRs (two, comma-separated, for a dual-stack cluster) and the API server
/// address is an IP address.
fn validate_networking(object: &str, n: &crate::api::capi::Networking) -> Result<()> {
    let subnets = [
        ("spec.networking.podSubnet", &n.pod_subnet),
        ("spec.networking.serviceSubnet", &n.service_subnet),
    ];
    for (field, subnet) in subnets {
        if let Some(subnet) = subnet
            && !subnet.split(',').all(|s| is_cidr(s.trim()))
        {
            let reason = format!("{subnet:?} is not a CIDR (such as 10.244.0.0/16)");
            return Err(invalid(object, field, reason));
        }
    }
    if let Some(address) = &n.api_server_address
        && address.parse::<std::net::IpAddr>().is_err()
    {
        let reason = format!("{address:?} is not an IP address");
        return Err(invalid(object, "spec.networking.apiServerAddress", reason));
    }
    Ok(())
}

/// `address/prefix` with an IPv4 or IPv6 address and a prefix length that fits it.
fn is_cidr(s: &str) -> bool {
    let Some((address, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => prefix <= 32,
        Ok(std::net::IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::capi::{Networking, PortMapping};
    use crate::api::{KINDClusterSpec, KindClusterSpec};

    fn upstream(name: &str, version: KubernetesVersion) -> KINDCluster {
        let mut obj = KINDCluster::new(
            "test-cluster-1",
            KINDClusterSpec {
                cluster_name: name.into(),
                kubernetes_version: version.as_str().into(),
            },
        );
        obj.metadata.namespace = Some("default".into());
        obj.metadata.uid = Some("uid-1".into());
        obj
    }

    fn capi(spec: KindClusterSpec) -> KindCluster {
        let mut obj = KindCluster::new("dev", spec);
        obj.metadata.namespace = Some("team-a".into());
        obj.metadata.uid = Some("uid-2".into());
        obj
    }

    #[test]
    fn upstream_versions_map_to_upstream_node_images() {
        let plan = plan_upstream(&upstream("test-2", KubernetesVersion::V1_20)).unwrap();
        assert_eq!(plan.image.as_deref(), Some("kindest/node:v1.20.7"));
        assert_eq!(plan.cluster_name, "test-2");
        assert_eq!(plan.owner_uid, "uid-1");
    }

    #[test]
    fn an_empty_cluster_name_is_refused_naming_the_field() {
        let err = plan_upstream(&upstream("", KubernetesVersion::V1_21)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "KINDCluster default/test-cluster-1: spec.clusterName: must not be empty"
        );
    }

    #[test]
    fn a_65_character_cluster_name_is_refused() {
        let err = plan_upstream(&upstream(&"a".repeat(65), KubernetesVersion::V1_21)).unwrap_err();
        assert!(
            err.to_string().contains("65 characters, at most 64"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_upstream_version_is_refused_listing_the_known_ones() {
        let mut obj = upstream("test", KubernetesVersion::V1_21);
        obj.spec.kubernetes_version = "1.13".into();
        let err = plan_upstream(&obj).unwrap_err().to_string();
        assert!(
            err.ends_with("spec.kubernetesVersion: \"1.13\" is not one of 1.22, 1.21, 1.20, 1.19, 1.18, 1.17, 1.16, 1.15, 1.14"),
            "{err}"
        );
    }

    #[test]
    fn upper_case_names_are_not_kind_names() {
        assert!(validate_cluster_name("o", "f", "Dev").is_err());
        assert!(validate_cluster_name("o", "f", "-dev").is_err());
        assert!(validate_cluster_name("o", "f", "dev.1-a").is_ok());
    }

    #[test]
    fn a_kind_cluster_defaults_its_name_to_namespace_and_name() {
        let plan = plan_capi(&capi(KindClusterSpec::default())).unwrap();
        assert_eq!(plan.cluster_name, "team-a-dev");
        assert_eq!(plan.image, None);
    }

    #[test]
    fn a_kubernetes_version_selects_the_kindest_node_image() {
        let spec = KindClusterSpec {
            kubernetes_version: Some("1.31.0".into()),
            ..KindClusterSpec::default()
        };
        assert_eq!(
            plan_capi(&capi(spec)).unwrap().image.as_deref(),
            Some("kindest/node:v1.31.0")
        );
    }

    #[test]
    fn version_and_image_together_are_refused() {
        let spec = KindClusterSpec {
            kubernetes_version: Some("v1.31.0".into()),
            node_image: Some("my/node:1".into()),
            ..KindClusterSpec::default()
        };
        let err = plan_capi(&capi(spec)).unwrap_err().to_string();
        assert!(
            err.contains(
                "spec.nodeImage: spec.kubernetesVersion and spec.nodeImage are mutually exclusive"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_kubernetes_version_kind_publishes_no_image_for_is_refused_naming_the_field() {
        for version in ["1.31.0-rc.1", "v1.31", "1.31.0+build", "latest"] {
            let spec = KindClusterSpec {
                kubernetes_version: Some(version.into()),
                ..KindClusterSpec::default()
            };
            let err = plan_capi(&capi(spec)).unwrap_err().to_string();
            assert!(
                err.starts_with("KindCluster team-a/dev: spec.kubernetesVersion: ")
                    && err.contains("has no kindest/node image"),
                "{err}"
            );
        }
    }

    #[test]
    fn kind_settings_kind_would_refuse_are_refused_naming_the_field() {
        let cases = [
            (
                r#"{"networking": {"podSubnet": "10.1.0.0/33"}}"#,
                "spec.networking.podSubnet",
            ),
            (
                r#"{"networking": {"serviceSubnet": "services"}}"#,
                "spec.networking.serviceSubnet",
            ),
            (
                r#"{"networking": {"apiServerAddress": "localhost"}}"#,
                "spec.networking.apiServerAddress",
            ),
            (
                r#"{"extraPortMappings": [{"containerPort": 80, "listenAddress": "any"}]}"#,
                "spec.extraPortMappings[0].listenAddress",
            ),
            (
                r#"{"featureGates": {"not a gate": true}}"#,
                "spec.featureGates[\"not a gate\"]",
            ),
        ];
        for (spec, field) in cases {
            let spec: KindClusterSpec = serde_json::from_str(spec).unwrap();
            let err = plan_capi(&capi(spec)).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("KindCluster team-a/dev: {field}: ")),
                "{err}"
            );
        }
        let dual = r#"{"networking": {"podSubnet": "10.1.0.0/16,fd00:10:1::/56"}}"#;
        assert!(plan_capi(&capi(serde_json::from_str(dual).unwrap())).is_ok());
    }

    #[test]
    fn kind_settings_reach_the_kind_config() {
        let spec = KindClusterSpec {
            cluster_name: Some("custom".into()),
            control_plane_nodes: Some(1),
            worker_nodes: Some(2),
            networking: Some(Networking {
                pod_subnet: Some("10.1.0.0/16".into()),
                ..Networking::default()
            }),
            extra_port_mappings: vec![PortMapping {
                container_port: 443,
                host_port: Some(8443),
                ..PortMapping::default()
            }],
            feature_gates: [("Foo".to_string(), true)].into(),
            ..KindClusterSpec::default()
        };
        let plan = plan_capi(&capi(spec)).unwrap();
        assert_eq!(plan.config.nodes.len(), 3);
        assert_eq!(
            plan.config.nodes[0].extra_port_mappings[0].host_port,
            Some(8443)
        );
        assert!(plan.config.nodes[1].extra_port_mappings.is_empty());
        assert_eq!(
            plan.config.networking.pod_subnet.as_deref(),
            Some("10.1.0.0/16")
        );
        assert_eq!(plan.config.feature_gates.get("Foo"), Some(&true));
    }

    #[test]
    fn an_object_not_read_from_the_server_has_no_owner_uid() {
        let mut obj = capi(KindClusterSpec::default());
        obj.metadata.uid = None;
        let err = plan_capi(&obj).unwrap_err().to_string();
        assert!(err.contains("metadata.uid"), "{err}");
    }

    /// Found by the `kind_config` fuzz target: 1,719,171,192 control-plane nodes made the
    /// planner allocate a node list of 128 GiB.
    #[test]
    fn node_counts_above_the_schema_maximum_are_refused_before_any_node_is_planned() {
        let err = plan_capi(&capi(KindClusterSpec {
            control_plane_nodes: Some(1_719_171_192),
            ..KindClusterSpec::default()
        }))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "KindCluster team-a/dev: spec.controlPlaneNodes: 1719171192 nodes, at most 7 allowed"
        );
        let err = plan_capi(&capi(KindClusterSpec {
            worker_nodes: Some(u32::MAX),
            ..KindClusterSpec::default()
        }))
        .unwrap_err();
        assert!(err.to_string().contains("spec.workerNodes"), "{err}");
        let plan = plan_capi(&capi(KindClusterSpec {
            control_plane_nodes: Some(MAX_CONTROL_PLANE_NODES),
            worker_nodes: Some(MAX_WORKER_NODES),
            ..KindClusterSpec::default()
        }))
        .unwrap();
        assert_eq!(plan.config.nodes.len(), 57);
    }
}
