//! Desired state of the objects the provider creates, one pure function per object:
//! [`render_cluster_deployment`], [`render_agent_cluster_install`] and
//! [`render_token_secret`], plus [`normalize_ignition_url`] (the AgentClusterInstall's
//! ignition URL).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::api::v1beta1::IgnitionEndpoint;
use crate::api::{AGENT_CLUSTER_REF_LABEL, AgentCluster, BACKUP_LABEL, TOKEN_KEY, WATCH_LABEL};
use crate::error::{Error, Result};
use crate::foreign::{
    AciIgnitionEndpoint, AgentClusterInstall, AgentClusterInstallSpec, ClusterDeployment,
    ClusterDeploymentSpec, ClusterInstallRef, ClusterMetadata, ControlPlane, LocalObjectReference,
    Networking, Platform, ProvisionRequirements,
};

/// The control-plane agents every AgentClusterInstall asks for (upstream's constant).
pub const CONTROL_PLANE_AGENTS: i32 = 3;

/// A plain (non-controller) owner reference to a typed object read from the server.
pub fn owner_reference<K: kube::Resource<DynamicType = ()>>(owner: &K) -> Result<OwnerReference> {
    let meta = owner.meta();
    let object = format!("{} {}", K::kind(&()), key(meta));
    let uid = meta.uid.clone().filter(|u| !u.is_empty()).ok_or_else(|| {
        Error::invalid(
            &object,
            "metadata.uid",
            "the owner must be read from the server",
        )
    })?;
    Ok(OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid,
        controller: None,
        block_owner_deletion: None,
    })
}

/// `namespace/name` of an object.
pub fn key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// The ClusterDeployment of `agent_cluster`: same name and namespace, owned by it, labelled
/// `agentClusterRef`, installed, on the agent bare-metal platform, pointing at the
/// AgentClusterInstall of the same name. `cluster_uid` is the CAPI Cluster's UID (upstream
/// takes the UID of the first owner reference, whatever its kind).
// One struct literal of the ClusterDeployment's fields: its length is earned.
pub fn render_cluster_deployment(
    agent_cluster: &AgentCluster,
    cluster_uid: &str,
    control_plane_name: &str,
    control_plane: &ControlPlane,
) -> Result<ClusterDeployment> {
    let object = format!("AgentCluster {}", key(&agent_cluster.metadata));
    let name = agent_cluster.metadata.name.clone().unwrap_or_default();
    let cp = format!("control plane {control_plane_name}");
    let kubeconfig = control_plane
        .status
        .kube_config
        .as_ref()
        .map(|k| k.name.clone())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::Waiting {
            object: object.clone(),
            what: format!("status.kubeConfig.name of the {cp}"),
        })?;
    let pull_secret = control_plane
        .spec
        .pull_secret
        .clone()
        .filter(|p| !p.name.is_empty())
        .ok_or_else(|| Error::invalid(&cp, "spec.pullSecret.name", "is required"))?;
    if control_plane.spec.dns.base_domain.is_empty() {
        return Err(Error::invalid(&cp, "spec.dns.baseDomain", "is required"));
    }
    let mut cd = ClusterDeployment::new(
        &name,
        ClusterDeploymentSpec {
            cluster_name: control_plane_name.to_owned(),
            base_domain: control_plane.spec.dns.base_domain.clone(),
            installed: true,
            platform: Platform {
                agent_bare_metal: Some(BTreeMap::new()),
            },
            pull_secret_ref: Some(pull_secret),
            cluster_install_ref: Some(ClusterInstallRef {
                group: "extensions.hive.openshift.io".into(),
                version: "v1beta1".into(),
                kind: "AgentClusterInstall".into(),
                name: name.clone(),
            }),
            cluster_metadata: Some(ClusterMetadata {
                cluster_id: cluster_uid.to_owned(),
                infra_id: cluster_uid.to_owned(),
                admin_kubeconfig_secret_ref: LocalObjectReference { name: kubeconfig },
                admin_password_secret_ref: control_plane
                    .status
                    .kubeadmin_password
                    .clone()
                    .filter(|p| !p.name.is_empty()),
            }),
        },
    );
    cd.metadata.namespace = agent_cluster.metadata.namespace.clone();
    cd.metadata.labels = Some([(AGENT_CLUSTER_REF_LABEL.to_owned(), name)].into());
    cd.metadata.owner_references = Some(vec![owner_reference(agent_cluster)?]);
    Ok(cd)
}

/// The AgentClusterInstall named `name` (the ClusterDeployment's name): 3 control-plane
/// agents, user-managed networking, and the AgentCluster's ignition endpoint (URL without
/// path, CA reference) when it has a URL.
pub fn render_agent_cluster_install(
    agent_cluster: &AgentCluster,
    name: &str,
) -> AgentClusterInstall {
    let ignition_endpoint = agent_cluster
        .spec
        .ignition_endpoint
        .as_ref()
        .filter(|e| !e.url.is_empty())
        .map(|e: &IgnitionEndpoint| AciIgnitionEndpoint {
            url: normalize_ignition_url(&e.url),
            ca_certificate_reference: e.ca_certificate_reference.clone(),
        });
    let mut aci = AgentClusterInstall::new(
        name,
        AgentClusterInstallSpec {
            cluster_deployment_ref: LocalObjectReference {
                name: name.to_owned(),
            },
            provision_requirements: ProvisionRequirements {
                control_plane_agents: CONTROL_PLANE_AGENTS,
            },
            networking: Networking {
                user_managed_networking: true,
            },
            ignition_endpoint,
        },
    );
    aci.metadata.namespace = agent_cluster.metadata.namespace.clone();
    aci
}

/// The ignition URL for an AgentClusterInstall: an unbracketed IPv6 host is bracketed and the
/// path dropped (assisted-service appends `/<machineConfigPool>`). Input without a scheme is
/// returned as it is.
pub fn normalize_ignition_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    if scheme.is_empty() {
        return url.to_owned();
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let suffix = tail.find(['?', '#']).map_or("", |i| &tail[i..]);
    let authority = if authority.matches(':').count() > 1 && !authority.starts_with('[') {
        match authority.rsplit_once(':') {
            Some((host, port)) => format!("[{host}]:{port}"),
            None => authority.to_owned(),
        }
    } else {
        authority.to_owned()
    };
    format!("{scheme}://{authority}{suffix}")
}

/// The name of the ignition token Secret for bootstrap data Secret `data_secret`.
pub fn token_secret_name(data_secret: &str) -> String {
    format!("agent-{data_secret}")
}

/// The ignition token Secret `agent-<dataSecretName>` next to the bootstrap data Secret
/// `data_secret`: key `ignition-token`, labels `agent-install.openshift.io/watch` and the backup
/// label, and an owner reference to the bootstrap data Secret, so it is garbage-collected with
/// the data it was cut from (upstream never deletes it). The name is upstream's, so the Secret is
/// shared by every Machine of a pool, as upstream shares it; owning it by the data Secret (not by
/// each AgentMachine) keeps one writer per token and no owner list to contend on.
pub fn render_token_secret(data_secret: &Secret, token: &str) -> Result<Secret> {
    let data_secret_name = data_secret.metadata.name.clone().unwrap_or_default();
    let owner = owner_reference(data_secret)?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(token_secret_name(&data_secret_name)),
            namespace: data_secret.metadata.namespace.clone(),
            labels: Some(
                [
                    (WATCH_LABEL.to_owned(), "true".to_owned()),
                    (BACKUP_LABEL.to_owned(), "true".to_owned()),
                ]
                .into(),
            ),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some([(TOKEN_KEY.to_owned(), ByteString(token.as_bytes().to_vec()))].into()),
        ..Secret::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::AgentClusterSpec;
    use crate::api::v1beta1::{CaCertificateReference, IgnitionEndpoint};
    use crate::foreign::{ControlPlaneSpec, ControlPlaneStatus, Dns, SecretKeyRef};

    fn agent_cluster() -> AgentCluster {
        let mut ac = AgentCluster::new("hc", AgentClusterSpec::default());
        ac.metadata.namespace = Some("clusters-hc".into());
        ac.metadata.uid = Some("ac-uid".into());
        ac
    }

    fn control_plane(kubeadmin: bool) -> ControlPlane {
        ControlPlane {
            spec: ControlPlaneSpec {
                dns: Dns {
                    base_domain: "example.com".into(),
                },
                pull_secret: Some(LocalObjectReference {
                    name: "pull-secret".into(),
                }),
            },
            status: ControlPlaneStatus {
                kube_config: Some(SecretKeyRef {
                    name: "admin-kubeconfig".into(),
                    key: "kubeconfig".into(),
                }),
                kubeadmin_password: kubeadmin.then(|| LocalObjectReference {
                    name: "kubeadmin-password".into(),
                }),
            },
        }
    }

    #[test]
    fn render_cluster_deployment_matches_snapshot() {
        let cd =
            render_cluster_deployment(&agent_cluster(), "cluster-uid", "hc", &control_plane(true))
                .unwrap();
        insta::assert_yaml_snapshot!(cd);
    }

    #[test]
    fn the_admin_password_is_referenced_only_when_known() {
        let cd =
            render_cluster_deployment(&agent_cluster(), "u", "hc", &control_plane(false)).unwrap();
        assert_eq!(
            cd.spec.cluster_metadata.unwrap().admin_password_secret_ref,
            None
        );
    }

    #[test]
    fn a_control_plane_without_kubeconfig_is_waited_for() {
        let mut cp = control_plane(true);
        cp.status.kube_config = None;
        let err = render_cluster_deployment(&agent_cluster(), "u", "hc", &cp).unwrap_err();
        assert!(matches!(err, Error::Waiting { .. }), "{err}");
    }

    #[test]
    fn a_control_plane_without_pull_secret_is_invalid_naming_the_field() {
        let mut cp = control_plane(true);
        cp.spec.pull_secret = None;
        let err = render_cluster_deployment(&agent_cluster(), "u", "hc", &cp).unwrap_err();
        assert_eq!(
            err.to_string(),
            "control plane hc: field spec.pullSecret.name: is required"
        );
    }

    #[test]
    fn render_agent_cluster_install_matches_snapshot() {
        let mut ac = agent_cluster();
        ac.spec.ignition_endpoint = Some(IgnitionEndpoint {
            url: "https://fd2e:6f44:5dd8:c956::14:31187/ignition".into(),
            ca_certificate_reference: Some(CaCertificateReference {
                namespace: "clusters-hc".into(),
                name: "ignition-ca".into(),
            }),
        });
        insta::assert_yaml_snapshot!(render_agent_cluster_install(&ac, "hc"));
    }

    #[test]
    fn an_agent_cluster_install_without_ignition_url_has_no_endpoint() {
        let aci = render_agent_cluster_install(&agent_cluster(), "hc");
        assert_eq!(aci.spec.ignition_endpoint, None);
        assert!(aci.spec.networking.user_managed_networking);
    }

    #[test]
    fn ignition_urls_normalize_as_upstream() {
        let cases = [
            (
                "https://fd2e:6f44:5dd8:c956::14:31187/ignition",
                "https://[fd2e:6f44:5dd8:c956::14]:31187",
            ),
            ("https://1.2.3.4:555/ignition", "https://1.2.3.4:555"),
            (
                "https://[fd2e::14]:31187/ignition",
                "https://[fd2e::14]:31187",
            ),
            (
                "https://ignition.example.com/ignition?x=1",
                "https://ignition.example.com?x=1",
            ),
            (
                "https://ignition.example.com",
                "https://ignition.example.com",
            ),
            ("no-scheme/ignition", "no-scheme/ignition"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_ignition_url(input), want, "{input}");
        }
    }

    fn data_secret() -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("user-data-pool".into()),
                namespace: Some("clusters-hc".into()),
                uid: Some("data-uid".into()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    #[test]
    fn render_token_secret_matches_snapshot() {
        insta::assert_yaml_snapshot!(render_token_secret(&data_secret(), "s3cr3t").unwrap());
    }

    #[test]
    fn the_token_secret_is_owned_by_the_bootstrap_data_secret() {
        let secret = render_token_secret(&data_secret(), "t").unwrap();
        let owners = secret.metadata.owner_references.unwrap();
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].uid.as_str()),
            ("Secret", "data-uid")
        );
    }
}
