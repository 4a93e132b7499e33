//! The `capi-provider.agent-install.openshift.io` API: AgentCluster, AgentMachine and
//! AgentMachineTemplate, served at [`v1beta1`] (storage) and [`v1alpha1`] (deprecated,
//! identical schema), plus the wire-contract keys (finalizers, labels, annotations) that
//! objects written by the upstream Go provider carry.
//!
//! [`crds`] merges both versions of each kind into one CustomResourceDefinition labelled for
//! both CAPI contracts (`cluster.x-k8s.io/v1beta1: v1beta1`, `cluster.x-k8s.io/v1beta2:
//! v1beta1`); upstream labels point at the deprecated v1alpha1 and lack the v1beta2 label.

pub mod v1alpha1;
pub mod v1beta1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt as _;
use kube::api::DynamicObject;

pub use v1beta1::{
    AgentCluster, AgentClusterSpec, AgentClusterStatus, AgentMachine, AgentMachineSpec,
    AgentMachineStatus, AgentMachineTemplate, AgentMachineTemplateSpec, AgentReference,
    MachineAddress, MachineAddressType,
};

use crate::error::{Error, Result};

/// The API group of the three kinds.
pub const GROUP: &str = "capi-provider.agent-install.openshift.io";
/// The storage version.
pub const VERSION: &str = "v1beta1";

/// The AgentMachine finalizer.
pub const AGENT_MACHINE_FINALIZER: &str = "agentmachine.agent-install.openshift.io/deprovision";
/// The AgentCluster finalizer: upstream concatenates its parts without a dot; kept verbatim.
pub const AGENT_CLUSTER_FINALIZER: &str =
    "agentclustercapi-provider.agent-install.openshift.io/deprovision";
/// The Machine pre-terminate hook annotation (value: empty string).
pub const PRE_TERMINATE_HOOK: &str =
    "pre-terminate.delete.hook.machine.cluster.x-k8s.io/agentmachine";
/// Agent label: the name of the AgentMachine the Agent is bound to.
pub const AGENT_MACHINE_REF_LABEL: &str = "agentMachineRef";
/// Agent annotation: the namespace of the AgentMachine the Agent is bound to.
pub const AGENT_MACHINE_REF_NAMESPACE_ANNOTATION: &str = "agentMachineRefNamespace";
/// ClusterDeployment label: the name of the AgentCluster it belongs to.
pub const AGENT_CLUSTER_REF_LABEL: &str = "agentClusterRef";
/// The ACM backup label (value `"true"`).
pub const BACKUP_LABEL: &str = "cluster.open-cluster-management.io/backup";
/// Label on Secrets assisted-service watches (value `"true"`).
pub const WATCH_LABEL: &str = "agent-install.openshift.io/watch";
/// The data key of the ignition token Secret.
pub const TOKEN_KEY: &str = "ignition-token";
/// CAPI's contract keys, from kcp-core (the pause annotation: only the value `"true"` pauses,
/// as upstream's provider reads it; the externally-managed marker: such objects are never
/// touched; the Machine label naming the Cluster).
pub use kcp_core::capi::{CLUSTER_NAME_LABEL, MANAGED_BY_ANNOTATION, PAUSED_ANNOTATION};
/// When this provider started unbinding the Agent of an AgentMachine being deleted (RFC 3339):
/// the unbind timeout counts from here, not from the Machine's deletion (a drain takes its own
/// time). A kcp-rs addition.
pub const UNBIND_STARTED_ANNOTATION: &str =
    "capi-provider.agent-install.openshift.io/unbind-started";
/// CAPI's watch-filter label (`--watch-filter`).
pub const WATCH_FILTER_LABEL: &str = "cluster.x-k8s.io/watch-filter";
/// CRD label: the provider.
pub const PROVIDER_LABEL: &str = "cluster.x-k8s.io/provider";
/// CRD label: the versions served for the v1beta1 contract.
pub const CONTRACT_LABEL_V1BETA1: &str = "cluster.x-k8s.io/v1beta1";
/// CRD label: the versions served for the v1beta2 contract.
pub const CONTRACT_LABEL_V1BETA2: &str = "cluster.x-k8s.io/v1beta2";

/// The three CustomResourceDefinitions, each serving v1beta1 (storage) and v1alpha1
/// (deprecated).
pub fn crds() -> Result<Vec<CustomResourceDefinition>> {
    let pairs = [
        (v1beta1::AgentCluster::crd(), v1alpha1::AgentCluster::crd()),
        (v1beta1::AgentMachine::crd(), v1alpha1::AgentMachine::crd()),
        (
            v1beta1::AgentMachineTemplate::crd(),
            v1alpha1::AgentMachineTemplate::crd(),
        ),
    ];
    pairs
        .into_iter()
        .map(|(beta, alpha)| {
            let name = beta.metadata.name.clone().unwrap_or_default();
            // The schemas are identical by construction: v1alpha1 serves v1beta1's schema.
            let mut alpha = alpha;
            alpha.metadata.labels = beta.metadata.labels.clone();
            if let (Some(a), Some(b)) =
                (alpha.spec.versions.first_mut(), beta.spec.versions.first())
            {
                a.schema = b.schema.clone();
            }
            let mut merged =
                kube::core::crd::merge_crds(vec![alpha, beta], VERSION).map_err(|err| {
                    Error::Serialization {
                        context: format!("merging the versions of CustomResourceDefinition {name}"),
                        message: err.to_string(),
                    }
                })?;
            // v1alpha1 first, as upstream lists the versions.
            merged.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(merged)
        })
        .collect()
}

/// [`crds`] as one YAML stream.
pub fn crds_yaml() -> Result<String> {
    serde_saphyr::to_string_multiple(&crds()?).map_err(|err| Error::Serialization {
        context: "writing the CustomResourceDefinitions as YAML".to_owned(),
        message: err.to_string(),
    })
}

/// [`crds`] as `DynamicObject`s, for an `ObjectClient` or an apply plan.
pub fn crd_objects() -> Result<Vec<DynamicObject>> {
    crds()?
        .into_iter()
        .map(|crd| {
            serde_json::to_value(crd)
                .and_then(serde_json::from_value)
                .map_err(|err| Error::Serialization {
                    context: "converting a CustomResourceDefinition".to_owned(),
                    message: err.to_string(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_yaml_matches_snapshot() {
        insta::assert_snapshot!(crds_yaml().unwrap());
    }

    #[test]
    fn every_crd_serves_v1alpha1_deprecated_and_v1beta1_as_storage() {
        for crd in crds().unwrap() {
            let versions: Vec<_> = crd
                .spec
                .versions
                .iter()
                .map(|v| (v.name.as_str(), v.served, v.storage, v.deprecated))
                .collect();
            assert_eq!(
                versions,
                [
                    ("v1alpha1", true, false, Some(true)),
                    ("v1beta1", true, true, None)
                ],
                "{:?}",
                crd.metadata.name
            );
            let warning = crd.spec.versions[0].deprecation_warning.clone();
            assert_eq!(
                warning,
                Some(format!(
                    "v1alpha1 is a deprecated version for {}",
                    crd.spec.names.kind
                ))
            );
        }
    }

    #[test]
    fn both_versions_have_the_same_schema() {
        for crd in crds().unwrap() {
            let schema = |i: usize| serde_json::to_value(&crd.spec.versions[i].schema).unwrap();
            assert_eq!(schema(0), schema(1), "{:?}", crd.metadata.name);
        }
    }

    #[test]
    fn crds_carry_both_contract_labels_and_the_provider() {
        for crd in crds().unwrap() {
            let labels = crd.metadata.labels.unwrap();
            assert_eq!(labels[PROVIDER_LABEL], "agent");
            assert_eq!(labels[CONTRACT_LABEL_V1BETA1], "v1beta1");
            assert_eq!(labels[CONTRACT_LABEL_V1BETA2], "v1beta1");
        }
    }

    #[test]
    fn crd_names_are_plural_dot_group() {
        let names: Vec<_> = crds()
            .unwrap()
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "agentclusters.capi-provider.agent-install.openshift.io",
                "agentmachines.capi-provider.agent-install.openshift.io",
                "agentmachinetemplates.capi-provider.agent-install.openshift.io",
            ]
        );
    }

    #[test]
    fn the_template_has_upstream_short_name_and_category() {
        let crd = &crds().unwrap()[2];
        assert_eq!(crd.spec.names.short_names, Some(vec!["agentmt".to_owned()]));
        assert_eq!(
            crd.spec.names.categories,
            Some(vec!["cluster-api".to_owned()])
        );
    }

    #[test]
    fn an_upstream_agent_cluster_deserializes_and_keeps_its_shape() {
        let yaml = r#"{"apiVersion":"capi-provider.agent-install.openshift.io/v1beta1","kind":"AgentCluster",
            "metadata":{"name":"c","namespace":"n"},
            "spec":{"controlPlaneEndpoint":{"host":"api.example.com","port":6443},
                    "ignitionEndpoint":{"url":"https://ign:443/ignition","caCertificateReference":{"namespace":"n","name":"ca"}}},
            "status":{"ready":true,"clusterDeploymentReference":{"name":"c","namespace":"n"}}}"#;
        let cluster: AgentCluster = serde_json::from_str(yaml).unwrap();
        assert_eq!(cluster.spec.control_plane_endpoint.port, 6443);
        let back = serde_json::to_value(&cluster).unwrap();
        let original: serde_json::Value = serde_json::from_str(yaml).unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn an_empty_endpoint_serializes_as_an_empty_object() {
        let spec = serde_json::to_value(AgentClusterSpec::default()).unwrap();
        assert_eq!(spec, serde_json::json!({"controlPlaneEndpoint": {}}));
    }

    #[test]
    fn agent_machine_provider_id_uses_the_upstream_field_name() {
        let spec = AgentMachineSpec {
            provider_id: Some("agent://a".into()),
            agent_label_selector: None,
        };
        assert_eq!(
            serde_json::to_value(spec).unwrap(),
            serde_json::json!({"providerID": "agent://a"})
        );
    }
}
