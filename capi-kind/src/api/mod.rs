//! The two APIs capi-kind serves, and their CustomResourceDefinitions.
//!
//! - [`upstream::KINDCluster`]: upstream's `infrastructure.cluster-k8s.io/v1alpha1` kind, kept
//!   wire-compatible so upstream manifests and objects keep working.
//! - [`capi::KindCluster`]: a Cluster API InfraCluster in `infrastructure.cluster.x-k8s.io`.
//!
//! [`crds`] gives both CRDs (the CAPI one labelled with the contract versions it implements);
//! [`crds_yaml`] is what `capi-provider-kind crds` prints.

pub mod capi;
pub mod upstream;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub use capi::{KindCluster, KindClusterSpec, KindClusterStatus};
pub use upstream::{KINDCluster, KINDClusterSpec, KINDClusterStatus};

/// The CRD labels of the CAPI contract versions KindCluster implements: CAPI resolves
/// version-less references through them (the last `_`-separated value is used).
pub const CONTRACT_LABELS: [(&str, &str); 2] = [
    ("cluster.x-k8s.io/v1beta1", "v1alpha1"),
    ("cluster.x-k8s.io/v1beta2", "v1alpha1"),
];

/// Where provisioning of a kind cluster stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    /// Accepted, waiting for something (a CAPI owner, a free cluster name).
    Pending,
    /// `kind create cluster` is running.
    Provisioning,
    /// The kind cluster exists; its kubeconfig is being published.
    Provisioned,
    /// The cluster exists and its kubeconfig Secret is up to date.
    Ready,
    /// The object is being deleted: the cluster and Secrets are being removed.
    Deleting,
    /// Provisioning failed or was refused; see the failure message.
    Failed,
}

impl Phase {
    /// The phase's name as written in status.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Provisioning => "Provisioning",
            Phase::Provisioned => "Provisioned",
            Phase::Ready => "Ready",
            Phase::Deleting => "Deleting",
            Phase::Failed => "Failed",
        }
    }
}

/// The CustomResourceDefinitions: KINDCluster (upstream) then KindCluster (CAPI).
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut capi = KindCluster::crd();
    let labels = capi.metadata.labels.get_or_insert_with(Default::default);
    for (key, value) in CONTRACT_LABELS {
        labels.insert(key.to_string(), value.to_string());
    }
    vec![KINDCluster::crd(), capi]
}

/// [`crds`] as one YAML stream.
pub fn crds_yaml() -> Result<String> {
    serde_saphyr::to_string_multiple(&crds()).map_err(|err| Error::Serialization {
        context: "writing the CustomResourceDefinitions as YAML".to_owned(),
        message: err.to_string(),
    })
}

/// [`crds`] as `DynamicObject`s, for an `ObjectClient` or an `ApplyPlan`.
pub fn crd_objects() -> Result<Vec<kube::api::DynamicObject>> {
    crds()
        .iter()
        .map(|crd| {
            kcp_core::typed::to_dynamic(crd)
                .map_err(|source| Error::core("CustomResourceDefinition", "converting", source))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version_schema(crd: &CustomResourceDefinition) -> serde_json::Value {
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
        schema["openAPIV3Schema"].clone()
    }

    #[test]
    fn crds_yaml_matches_snapshot() {
        insta::assert_snapshot!(crds_yaml().unwrap());
    }

    #[test]
    fn the_upstream_crd_keeps_group_names_short_name_and_columns() {
        let crd = &crds()[0];
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("kindclusters.infrastructure.cluster-k8s.io")
        );
        assert_eq!(crd.spec.names.kind, "KINDCluster");
        assert_eq!(crd.spec.names.short_names, Some(vec!["kc".to_string()]));
        assert_eq!(crd.spec.scope, "Namespaced");
        let columns: Vec<_> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(
            &columns[..3],
            [
                ("KubernetesVersion", ".spec.kubernetesVersion"),
                ("ClusterName", ".spec.clusterName"),
                ("Ready", ".status.ready"),
            ]
        );
    }

    #[test]
    fn the_upstream_schema_requires_a_short_cluster_name_and_a_known_version() {
        let spec = version_schema(&crds()[0])["properties"]["spec"].clone();
        assert_eq!(spec["required"], serde_json::json!(["clusterName"]));
        assert_eq!(spec["properties"]["clusterName"]["maxLength"], 64);
        assert!(spec["properties"]["clusterName"].get("default").is_none());
        let version = &spec["properties"]["kubernetesVersion"];
        assert_eq!(version["default"], "1.21");
        let allowed = version["enum"].as_array().unwrap();
        assert_eq!(allowed.len(), 9);
        assert!(!allowed.contains(&serde_json::json!("1.13")));
    }

    #[test]
    fn the_capi_crd_carries_the_contract_labels_and_name() {
        let crd = &crds()[1];
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("kindclusters.infrastructure.cluster.x-k8s.io")
        );
        let labels = crd.metadata.labels.clone().unwrap();
        assert_eq!(labels["cluster.x-k8s.io/v1beta1"], "v1alpha1");
        assert_eq!(labels["cluster.x-k8s.io/v1beta2"], "v1alpha1");
        assert!(
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .unwrap()
                .status
                .is_some()
        );
    }

    #[test]
    fn new_objects_do_not_carry_the_crd_labels() {
        let obj = KindCluster::new("dev", KindClusterSpec::default());
        assert!(obj.metadata.labels.is_none());
    }

    #[test]
    fn kind_settings_are_immutable_by_cel_rules() {
        let spec = version_schema(&crds()[1])["properties"]["spec"].clone();
        for field in [
            "clusterName",
            "kubernetesVersion",
            "nodeImage",
            "workerNodes",
            "networking",
        ] {
            let rules = &spec["properties"][field]["x-kubernetes-validations"];
            assert_eq!(rules[0]["rule"], "self == oldSelf", "{field}");
        }
        assert_eq!(
            spec["x-kubernetes-validations"][0]["rule"],
            capi::IMMUTABLE_PRESENCE
        );
        let upstream = version_schema(&crds()[0])["properties"]["spec"].clone();
        assert_eq!(
            upstream["properties"]["clusterName"]["x-kubernetes-validations"][0]["rule"],
            "self == oldSelf"
        );
    }

    #[test]
    fn upstream_samples_deserialize() {
        let sample: KINDCluster = serde_saphyr::from_str(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata:\n  name: test-cluster-2\nspec:\n  clusterName: test-2\n  kubernetesVersion: \"1.20\"\n",
        )
        .unwrap();
        assert_eq!(sample.spec.kubernetes_version, "1.20");
        let defaulted: KINDCluster = serde_saphyr::from_str(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata:\n  name: test-cluster-1\nspec:\n  clusterName: test-1\n",
        )
        .unwrap();
        assert_eq!(defaulted.spec.kubernetes_version, "1.21");
        let nameless: KINDCluster = serde_saphyr::from_str(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata:\n  name: non-named-cluster\nspec: {}\n",
        )
        .unwrap();
        assert_eq!(
            nameless.spec.cluster_name, "",
            "read, to be refused by the reconciler"
        );
    }

    #[test]
    fn phases_serialize_by_name() {
        for phase in [
            Phase::Pending,
            Phase::Provisioning,
            Phase::Provisioned,
            Phase::Ready,
            Phase::Deleting,
            Phase::Failed,
        ] {
            assert_eq!(serde_json::to_value(phase).unwrap(), phase.as_str());
        }
    }
}
