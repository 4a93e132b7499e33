//! The kubeconfig Secrets, rendered from the object and the kubeconfig the provisioner exports
//! (never from a file in `/tmp`).
//!
//! - [`render_upstream_kubeconfig_secret`]: upstream's `<clusterName>-config`, data key
//!   `config`, in the KINDCluster's namespace. Upstream sets no owner; ours is controlled by
//!   the KINDCluster so it is garbage-collected even if the finalizer is removed by hand.
//! - [`render_capi_kubeconfig_secret`]: CAPI's `<cluster>-kubeconfig`, data key `value`, type
//!   `cluster.x-k8s.io/secret`, labelled `cluster.x-k8s.io/cluster-name`, controlled by the
//!   KindCluster.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kcp_core::capi;
use kube::{Resource, ResourceExt as _};

use crate::api::{KINDCluster, KindCluster};
use crate::error::{Error, Result};

/// The data key of upstream's kubeconfig Secret.
pub const UPSTREAM_KUBECONFIG_KEY: &str = "config";

/// The name of upstream's kubeconfig Secret for kind cluster `cluster_name`.
pub fn upstream_secret_name(cluster_name: &str) -> String {
    format!("{cluster_name}-config")
}

fn owner_of<K: Resource<DynamicType = ()>>(obj: &K, object: &str) -> Result<OwnerReference> {
    obj.controller_owner_ref(&())
        .filter(|r| !r.uid.is_empty())
        .ok_or_else(|| Error::InvalidSpec {
            object: object.to_string(),
            field: "metadata.uid".into(),
            reason: "an owner must be read from the server before it can own a Secret".into(),
        })
}

/// Upstream's kubeconfig Secret of a KINDCluster.
pub fn render_upstream_kubeconfig_secret(obj: &KINDCluster, kubeconfig: &str) -> Result<Secret> {
    let object = format!(
        "KINDCluster {}/{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    );
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(upstream_secret_name(&obj.spec.cluster_name)),
            namespace: obj.namespace(),
            owner_references: Some(vec![owner_of(obj, &object)?]),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            UPSTREAM_KUBECONFIG_KEY.to_string(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    })
}

/// CAPI's kubeconfig Secret of a KindCluster owned by CAPI Cluster `cluster`.
pub fn render_capi_kubeconfig_secret(
    obj: &KindCluster,
    cluster: &str,
    kubeconfig: &str,
) -> Result<Secret> {
    let object = format!(
        "KindCluster {}/{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    );
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(capi::kubeconfig_secret_name(cluster)),
            namespace: obj.namespace(),
            labels: Some(BTreeMap::from([(
                capi::CLUSTER_NAME_LABEL.to_string(),
                cluster.to_string(),
            )])),
            owner_references: Some(vec![owner_of(obj, &object)?]),
            ..ObjectMeta::default()
        },
        type_: Some(capi::SECRET_TYPE.into()),
        data: Some(BTreeMap::from([(
            capi::KUBECONFIG_KEY.to_string(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{KINDClusterSpec, KindClusterSpec};

    const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: kind-dev\n  cluster:\n    server: https://127.0.0.1:40123\n";

    #[test]
    fn the_upstream_secret_is_named_after_the_cluster_with_key_config() {
        let mut obj = KINDCluster::new(
            "test-cluster-1",
            KINDClusterSpec {
                cluster_name: "test-1".into(),
                kubernetes_version: "1.21".into(),
            },
        );
        obj.metadata.namespace = Some("default".into());
        obj.metadata.uid = Some("uid-1".into());
        insta::assert_yaml_snapshot!(render_upstream_kubeconfig_secret(&obj, KUBECONFIG).unwrap());
    }

    #[test]
    fn the_capi_secret_is_named_after_the_capi_cluster_with_key_value() {
        let mut obj = KindCluster::new("dev", KindClusterSpec::default());
        obj.metadata.namespace = Some("team-a".into());
        obj.metadata.uid = Some("uid-2".into());
        insta::assert_yaml_snapshot!(
            render_capi_kubeconfig_secret(&obj, "dev-cluster", KUBECONFIG).unwrap()
        );
    }

    #[test]
    fn an_owner_without_uid_cannot_own_a_secret() {
        let obj = KindCluster::new("dev", KindClusterSpec::default());
        let err = render_capi_kubeconfig_secret(&obj, "c", KUBECONFIG).unwrap_err();
        assert!(err.to_string().contains("metadata.uid"), "{err}");
    }
}
