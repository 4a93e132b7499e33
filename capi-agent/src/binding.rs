//! The writes to an Agent, as pure functions returning typed merge patches.
//!
//! Binding sets exactly the keys of spec section 1.4 (label `agentMachineRef`, annotation
//! `agentMachineRefNamespace`, `spec.clusterDeploymentName`, `spec.machineConfigPool`,
//! `spec.ignitionEndpointTokenReference`, `spec.ignitionEndpointHTTPHeaders`); unbinding removes
//! all of them. Every other field of the Agent (role, disk, installer args, ignition overrides,
//! node labels, approval, fields this crate does not know) is untouched on the server, because a
//! merge patch only names what it changes.
//!
//! Claims carry the Agent's `metadata.resourceVersion` as a precondition, so two AgentMachines
//! racing for one Agent cannot both win: the second patch gets a 409 Conflict.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::api::{
    AGENT_MACHINE_REF_LABEL, AGENT_MACHINE_REF_NAMESPACE_ANNOTATION, MachineAddress,
    MachineAddressType,
};
use crate::foreign::{Agent, ClusterReference, SecretReference};

/// A merge patch of an Agent: only the fields the provider owns.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct AgentPatch {
    /// Metadata changes (and the resourceVersion precondition).
    pub metadata: MetadataPatch,
    /// Spec changes; absent when nothing in the spec changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<AgentSpecPatch>,
}

/// Metadata part of a merge patch; `None` values delete the key.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MetadataPatch {
    /// The resourceVersion the patch was computed from: a precondition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Labels to set (`Some`) or delete (`None`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotations to set (`Some`) or delete (`None`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Option<String>>,
}

/// Spec part of an Agent merge patch: `None` leaves a field, `Some(None)` clears it.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::option_option)]
pub struct AgentSpecPatch {
    /// `spec.clusterDeploymentName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_deployment_name: Option<Option<ClusterReference>>,
    /// `spec.machineConfigPool`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_config_pool: Option<Option<String>>,
    /// `spec.ignitionEndpointTokenReference`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint_token_reference: Option<Option<SecretReference>>,
    /// `spec.ignitionEndpointHTTPHeaders`: keys to set, or `None` per key to delete.
    #[serde(
        rename = "ignitionEndpointHTTPHeaders",
        skip_serializing_if = "Option::is_none"
    )]
    pub ignition_endpoint_http_headers: Option<Option<BTreeMap<String, Option<String>>>>,
}

/// What an AgentMachine's bootstrap data asks of its Agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnitionSettings {
    /// `spec.machineConfigPool`.
    pub machine_config_pool: String,
    /// `spec.ignitionEndpointTokenReference`.
    pub token_ref: Option<SecretReference>,
    /// `spec.ignitionEndpointHTTPHeaders`.
    pub headers: BTreeMap<String, String>,
}

/// Everything a binding writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The AgentMachine's name (label `agentMachineRef`).
    pub machine_name: String,
    /// The AgentMachine's namespace (annotation `agentMachineRefNamespace`).
    pub machine_namespace: String,
    /// The AgentCluster's ClusterDeployment.
    pub cluster_deployment: ClusterReference,
    /// The ignition settings from the bootstrap data.
    pub ignition: IgnitionSettings,
}

/// The patch that claims `agent` for `binding`, conditional on the Agent's resourceVersion.
pub fn bind_patch(agent: &Agent, binding: &Binding) -> AgentPatch {
    let mut patch = AgentPatch {
        metadata: MetadataPatch {
            resource_version: agent.metadata.resource_version.clone(),
            ..MetadataPatch::default()
        },
        spec: Some(AgentSpecPatch {
            cluster_deployment_name: Some(Some(binding.cluster_deployment.clone())),
            ..ignition_patch(agent, &binding.ignition)
        }),
    };
    patch.metadata.labels.insert(
        AGENT_MACHINE_REF_LABEL.to_owned(),
        Some(binding.machine_name.clone()),
    );
    patch.metadata.annotations.insert(
        AGENT_MACHINE_REF_NAMESPACE_ANNOTATION.to_owned(),
        Some(binding.machine_namespace.clone()),
    );
    patch
}

fn ignition_patch(agent: &Agent, wanted: &IgnitionSettings) -> AgentSpecPatch {
    // Keys on the Agent that the new headers lack are deleted (a merge patch merges maps).
    let mut headers: BTreeMap<String, Option<String>> = agent
        .spec
        .ignition_endpoint_http_headers
        .keys()
        .map(|k| (k.clone(), None))
        .collect();
    headers.extend(
        wanted
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone()))),
    );
    AgentSpecPatch {
        cluster_deployment_name: None,
        machine_config_pool: Some(
            Some(wanted.machine_config_pool.clone()).filter(|p| !p.is_empty()),
        ),
        ignition_endpoint_token_reference: Some(wanted.token_ref.clone()),
        ignition_endpoint_http_headers: Some(Some(headers).filter(|h| !h.is_empty())),
    }
}

/// The patch that releases `agent`: every key of the binding removed or cleared.
pub fn unbind_patch(agent: &Agent) -> AgentPatch {
    let mut patch = AgentPatch {
        metadata: MetadataPatch {
            resource_version: agent.metadata.resource_version.clone(),
            ..MetadataPatch::default()
        },
        spec: Some(AgentSpecPatch {
            cluster_deployment_name: Some(None),
            machine_config_pool: Some(None),
            ignition_endpoint_token_reference: Some(None),
            ignition_endpoint_http_headers: Some(None),
        }),
    };
    patch
        .metadata
        .labels
        .insert(AGENT_MACHINE_REF_LABEL.to_owned(), None);
    patch
        .metadata
        .annotations
        .insert(AGENT_MACHINE_REF_NAMESPACE_ANNOTATION.to_owned(), None);
    patch
}

/// Whether `agent` still carries any part of a binding (upstream's unbind test: the label or a
/// ClusterDeployment).
pub fn is_bound(agent: &Agent) -> bool {
    agent.label(AGENT_MACHINE_REF_LABEL).is_some() || agent.spec.cluster_deployment_name.is_some()
}

/// The patch that brings a bound Agent's ignition settings in line with the bootstrap data
/// (token rotation, a new data Secret), or `None` when they already agree. Empty wanted fields
/// are not enforced, as upstream.
pub fn sync_patch(agent: &Agent, wanted: &IgnitionSettings) -> Option<AgentPatch> {
    let spec = &agent.spec;
    let pool_ok = wanted.machine_config_pool.is_empty()
        || spec.machine_config_pool == wanted.machine_config_pool;
    let token_ok =
        wanted.token_ref.is_none() || spec.ignition_endpoint_token_reference == wanted.token_ref;
    let headers_ok =
        wanted.headers.is_empty() || spec.ignition_endpoint_http_headers == wanted.headers;
    if pool_ok && token_ok && headers_ok {
        return None;
    }
    Some(AgentPatch {
        metadata: MetadataPatch {
            resource_version: agent.metadata.resource_version.clone(),
            ..MetadataPatch::default()
        },
        spec: Some(ignition_patch(agent, wanted)),
    })
}

/// The patch that restores the `agentMachineRef` label of a bound Agent, or `None` when it is
/// there (upstream's OCPBUGS-24922 repair).
pub fn label_patch(
    agent: &Agent,
    machine_name: &str,
    machine_namespace: &str,
) -> Option<AgentPatch> {
    let labelled = agent.label(AGENT_MACHINE_REF_LABEL) == Some(machine_name)
        && agent.annotation(AGENT_MACHINE_REF_NAMESPACE_ANNOTATION) == Some(machine_namespace);
    if labelled {
        return None;
    }
    let mut patch = AgentPatch::default();
    patch.metadata.labels.insert(
        AGENT_MACHINE_REF_LABEL.to_owned(),
        Some(machine_name.to_owned()),
    );
    patch.metadata.annotations.insert(
        AGENT_MACHINE_REF_NAMESPACE_ANNOTATION.to_owned(),
        Some(machine_namespace.to_owned()),
    );
    Some(patch)
}

/// Whether `agent` is bound to the AgentMachine `namespace/name`: the label holds the name and
/// the annotation the namespace (upstream's recovery checks only the name).
pub fn bound_to(agent: &Agent, namespace: &str, name: &str) -> bool {
    agent.label(AGENT_MACHINE_REF_LABEL) == Some(name)
        && agent
            .annotation(AGENT_MACHINE_REF_NAMESPACE_ANNOTATION)
            .is_none_or(|ns| ns == namespace)
}

/// `agent://<Agent name>`.
pub fn provider_id(agent_name: &str) -> String {
    format!("agent://{agent_name}")
}

/// The addresses of a bound host: every IPv4 address (without prefix length) of an interface
/// with carrier as `ExternalIP`, then one `InternalDNS` entry with the host name
/// (`spec.hostname`, else the inventory's).
pub fn addresses(agent: &Agent) -> Vec<MachineAddress> {
    let mut out = Vec::new();
    let inventory = agent.status.as_ref().map(|s| &s.inventory);
    for interface in inventory.iter().flat_map(|i| &i.interfaces) {
        if !interface.has_carrier {
            continue;
        }
        for cidr in &interface.ipv4_addresses {
            let ip = cidr.split_once('/').map_or(cidr.as_str(), |(ip, _)| ip);
            out.push(MachineAddress {
                type_: MachineAddressType::ExternalIp,
                address: ip.to_owned(),
            });
        }
    }
    let hostname = Some(agent.spec.hostname.as_str())
        .filter(|h| !h.is_empty())
        .or_else(|| inventory.map(|i| i.hostname.as_str()))
        .unwrap_or_default();
    out.push(MachineAddress {
        type_: MachineAddressType::InternalDns,
        address: hostname.to_owned(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::{AgentSpec, AgentStatus, Interface, Inventory};

    fn agent() -> Agent {
        let mut a = Agent::new(
            "host-1",
            AgentSpec {
                approved: true,
                hostname: String::new(),
                ..AgentSpec::default()
            },
        );
        a.metadata.namespace = Some("agents".into());
        a.metadata.resource_version = Some("42".into());
        a
    }

    fn binding() -> Binding {
        Binding {
            machine_name: "m1".into(),
            machine_namespace: "hcp".into(),
            cluster_deployment: ClusterReference {
                namespace: "hcp".into(),
                name: "cd".into(),
            },
            ignition: IgnitionSettings {
                machine_config_pool: "worker-pool".into(),
                token_ref: Some(SecretReference {
                    namespace: "hcp".into(),
                    name: "agent-user-data".into(),
                }),
                headers: [("X-Extra".to_string(), "1".to_string())].into(),
            },
        }
    }

    #[test]
    fn bind_patch_matches_snapshot() {
        insta::assert_json_snapshot!(bind_patch(&agent(), &binding()));
    }

    #[test]
    fn unbind_patch_matches_snapshot() {
        insta::assert_json_snapshot!(unbind_patch(&agent()));
    }

    #[test]
    fn the_claim_carries_the_agents_resource_version() {
        assert_eq!(
            bind_patch(&agent(), &binding())
                .metadata
                .resource_version
                .as_deref(),
            Some("42")
        );
    }

    #[test]
    fn binding_deletes_stale_header_keys() {
        let mut a = agent();
        a.spec
            .ignition_endpoint_http_headers
            .insert("Old".into(), "x".into());
        let value = serde_json::to_value(bind_patch(&a, &binding())).unwrap();
        assert_eq!(
            value["spec"]["ignitionEndpointHTTPHeaders"],
            serde_json::json!({"Old": null, "X-Extra": "1"})
        );
    }

    #[test]
    fn applying_bind_then_unbind_restores_the_agent() {
        let mut before = serde_json::to_value(agent()).unwrap();
        before["spec"]["role"] = "worker".into();
        before["spec"]["nodeLabels"] = serde_json::json!({"a": "b"});
        let mut value = before.clone();
        let bind = serde_json::to_value(bind_patch(&agent(), &binding())).unwrap();
        json_merge(&mut value, &bind);
        assert_eq!(value["metadata"]["labels"][AGENT_MACHINE_REF_LABEL], "m1");
        let bound: Agent = serde_json::from_value(value.clone()).unwrap();
        json_merge(
            &mut value,
            &serde_json::to_value(unbind_patch(&bound)).unwrap(),
        );
        // Empty label and annotation maps stay behind as `{}` after their last key is deleted.
        value["metadata"]
            .as_object_mut()
            .unwrap()
            .retain(|_, v| v != &serde_json::json!({}));
        assert_eq!(value, before);
    }

    fn json_merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
        if let Some(p) = patch.as_object() {
            if !target.is_object() {
                *target = serde_json::json!({});
            }
            let t = target.as_object_mut().unwrap();
            for (k, v) in p {
                if k == "resourceVersion" {
                    continue;
                }
                if v.is_null() {
                    t.remove(k);
                } else {
                    json_merge(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
                }
            }
        } else {
            *target = patch.clone();
        }
    }

    #[test]
    fn sync_is_a_no_op_when_the_agent_already_agrees() {
        let mut a = agent();
        let wanted = binding().ignition;
        a.spec.machine_config_pool = wanted.machine_config_pool.clone();
        a.spec.ignition_endpoint_token_reference = wanted.token_ref.clone();
        a.spec.ignition_endpoint_http_headers = wanted.headers.clone();
        assert_eq!(sync_patch(&a, &wanted), None);
    }

    #[test]
    fn sync_follows_a_new_token_secret() {
        let mut a = agent();
        let mut wanted = binding().ignition;
        a.spec.machine_config_pool = wanted.machine_config_pool.clone();
        a.spec.ignition_endpoint_http_headers = wanted.headers.clone();
        a.spec.ignition_endpoint_token_reference = wanted.token_ref.clone();
        wanted.token_ref = Some(SecretReference {
            namespace: "hcp".into(),
            name: "agent-user-data-2".into(),
        });
        let patch = sync_patch(&a, &wanted).unwrap();
        let spec = patch.spec.unwrap();
        assert_eq!(
            spec.ignition_endpoint_token_reference,
            Some(wanted.token_ref)
        );
        assert_eq!(spec.cluster_deployment_name, None);
    }

    #[test]
    fn bound_to_checks_the_namespace_annotation() {
        let mut a = agent();
        let patch = label_patch(&a, "m1", "hcp").unwrap();
        a.metadata.labels = Some(
            patch
                .metadata
                .labels
                .into_iter()
                .map(|(k, v)| (k, v.unwrap()))
                .collect(),
        );
        a.metadata.annotations = Some(
            [(
                AGENT_MACHINE_REF_NAMESPACE_ANNOTATION.to_string(),
                "other".to_string(),
            )]
            .into(),
        );
        assert!(!bound_to(&a, "hcp", "m1"));
        assert!(bound_to(&a, "other", "m1"));
    }

    #[test]
    fn addresses_are_carrier_ipv4_without_prefix_then_the_hostname() {
        let mut a = agent();
        a.status = Some(AgentStatus {
            inventory: Inventory {
                hostname: "inv-host".into(),
                interfaces: vec![
                    Interface {
                        has_carrier: true,
                        ipv4_addresses: vec!["1.2.3.4/24".into(), "2.3.4.5/24".into()],
                    },
                    Interface {
                        has_carrier: false,
                        ipv4_addresses: vec!["9.9.9.9/8".into()],
                    },
                    Interface {
                        has_carrier: true,
                        ipv4_addresses: vec!["3.4.5.6/16".into()],
                    },
                ],
                ..Inventory::default()
            },
            ..AgentStatus::default()
        });
        insta::assert_json_snapshot!(addresses(&a));
        a.spec.hostname = "spec-host".into();
        assert_eq!(addresses(&a).last().unwrap().address, "spec-host");
    }

    #[test]
    fn provider_id_is_agent_scheme_and_name() {
        assert_eq!(provider_id("e5f1-uuid"), "agent://e5f1-uuid");
    }
}
