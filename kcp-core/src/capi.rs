//! Cluster API contract keys and small helpers shared by the CAPI infrastructure providers.
//!
//! The keys are CAPI's wire contract (see the provider contract in the CAPI book): the pause
//! annotation, the cluster-name label, the externally-managed annotation, the kubeconfig Secret
//! naming and type. [`cluster_owner`] finds the owning `Cluster` reference an InfraCluster or
//! InfraMachine waits for, and [`ClusterView`] reads the few `Cluster` fields a provider needs
//! (from `v1beta1` or `v1beta2`, which agree on them).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::Deserialize;

/// The API group of the CAPI core kinds.
pub const GROUP: &str = "cluster.x-k8s.io";

/// Annotation pausing reconciliation of an object (value exactly `"true"`).
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

/// Label naming the CAPI Cluster an object belongs to.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// Annotation marking infrastructure managed by something else (never touch it).
pub const MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/managed-by";

/// The `type` of the Secrets CAPI reads (kubeconfig, CA, ...).
pub const SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

/// The data key of the kubeconfig in a `<cluster>-kubeconfig` Secret.
pub const KUBECONFIG_KEY: &str = "value";

/// The name of the kubeconfig Secret of CAPI Cluster `cluster`.
pub fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// Whether `meta` carries the pause annotation with value `"true"`.
pub fn has_paused_annotation(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(PAUSED_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// Whether `meta` carries the externally-managed annotation.
pub fn is_externally_managed(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MANAGED_BY_ANNOTATION))
}

/// The owner reference to a CAPI `Cluster` (any version of `cluster.x-k8s.io`), if any.
pub fn cluster_owner(meta: &ObjectMeta) -> Option<&OwnerReference> {
    owner_of_kind(meta, "Cluster")
}

/// The first owner reference to a CAPI core `kind` (`Cluster`, `Machine`, ...; any version of
/// `cluster.x-k8s.io`, as Cluster API's `util.GetOwnerMachine` compares the group only).
pub fn owner_of_kind<'a>(meta: &'a ObjectMeta, kind: &str) -> Option<&'a OwnerReference> {
    meta.owner_references.as_ref()?.iter().find(|r| {
        r.kind == kind
            && r.api_version
                .split_once('/')
                .is_some_and(|(group, _)| group == GROUP)
    })
}

/// The fields of a CAPI `Cluster` a provider reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ClusterView {
    /// `spec`.
    #[serde(default)]
    pub spec: ClusterViewSpec,
}

/// The `spec` fields of [`ClusterView`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterViewSpec {
    /// `spec.paused`: reconciliation of the Cluster and its objects is paused.
    #[serde(default)]
    pub paused: Option<bool>,
}

impl ClusterView {
    /// Whether the Cluster is paused (`spec.paused: true`).
    pub fn paused(&self) -> bool {
        self.spec.paused == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn owner(api_version: &str, kind: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "c".into(),
            uid: "u".into(),
            ..OwnerReference::default()
        }
    }

    #[test]
    fn a_cluster_owner_of_either_contract_version_is_found() {
        for version in ["cluster.x-k8s.io/v1beta1", "cluster.x-k8s.io/v1beta2"] {
            let meta = ObjectMeta {
                owner_references: Some(vec![
                    owner("apps/v1", "Cluster"),
                    owner(version, "Cluster"),
                ]),
                ..ObjectMeta::default()
            };
            assert_eq!(
                cluster_owner(&meta).map(|r| r.api_version.as_str()),
                Some(version)
            );
        }
        assert!(cluster_owner(&ObjectMeta::default()).is_none());
    }

    #[test]
    fn only_the_value_true_pauses() {
        let with = |v: &str| ObjectMeta {
            annotations: Some(BTreeMap::from([(
                PAUSED_ANNOTATION.to_string(),
                v.to_string(),
            )])),
            ..ObjectMeta::default()
        };
        assert!(has_paused_annotation(&with("true")));
        assert!(!has_paused_annotation(&with("True")));
        assert!(!has_paused_annotation(&ObjectMeta::default()));
    }

    #[test]
    fn a_cluster_view_reads_spec_paused() {
        let view: ClusterView =
            serde_json::from_value(serde_json::json!({"spec": {"paused": true, "topology": {}}}))
                .unwrap();
        assert!(view.paused());
        assert!(!ClusterView::default().paused());
        assert_eq!(kubeconfig_secret_name("dev"), "dev-kubeconfig");
    }
}
