//! How the operator reaches the kcp it runs (upstream's `Addresser`): the root shard, a shard
//! or the root shard's internal proxy, in one workspace. The default, [`InCluster`], uses the
//! in-cluster Service URLs and the operator's client certificate (`<rs>-kcp-operator`);
//! embedders and tests plug in their own (a port-forward, an Ingress, a kcp-sim).

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::{KubeObjectClient, ObjectClient, ObjectClientExt as _};

use crate::api::RootShard;
use crate::error::{Error, Result};
use crate::render::names::{self, Component};

/// A kcp endpoint of an installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// The root shard itself.
    RootShard,
    /// A shard, by name (its base URL honours `shardBaseURL`).
    Shard(&'a str, &'a str),
    /// The root shard's internal front-proxy (routes to every shard).
    RootShardProxy,
}

/// Gives clients to kcp endpoints of an installation.
#[async_trait]
pub trait Addresser: Send + Sync {
    /// A client for `workspace` (a path like `root:team-a`) at `endpoint` of the installation
    /// of `root_shard`; `management` reads the operator's Secrets.
    async fn client(
        &self,
        management: &dyn ObjectClient,
        root_shard: &RootShard,
        endpoint: Endpoint<'_>,
        workspace: &str,
    ) -> Result<Arc<dyn ObjectClient>>;
}

/// In-cluster Service URLs (`https://<svc>.<ns>.svc.<domain>:6443`, or `shardBaseURL`) and the
/// `<rs>-kcp-operator` client certificate.
#[derive(Debug, Clone, Copy, Default)]
pub struct InCluster;

/// The base URL of an endpoint, as [`InCluster`] reaches it.
pub fn in_cluster_url(rs: &RootShard, endpoint: Endpoint<'_>) -> String {
    let name = rs.metadata.name.as_deref().unwrap_or_default();
    let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
    let c = &rs.spec.common;
    match endpoint {
        Endpoint::RootShard => names::base_url(
            Component::RootShard,
            name,
            ns,
            &c.cluster_domain,
            &c.shard_base_url,
        ),
        Endpoint::Shard(shard, base_url) => {
            names::base_url(Component::Shard, shard, ns, &c.cluster_domain, base_url)
        }
        Endpoint::RootShardProxy => {
            names::base_url(Component::RootShardProxy, name, ns, &c.cluster_domain, "")
        }
    }
}

#[async_trait]
impl Addresser for InCluster {
    async fn client(
        &self,
        management: &dyn ObjectClient,
        rs: &RootShard,
        endpoint: Endpoint<'_>,
        workspace: &str,
    ) -> Result<Arc<dyn ObjectClient>> {
        let name = rs.metadata.name.as_deref().unwrap_or_default();
        let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
        let secret_name = format!("{name}-kcp-operator");
        let secret: Option<Secret> =
            management
                .get_typed(Some(ns), &secret_name)
                .await
                .map_err(crate::reconcile::core(format!(
                    "reading Secret {ns}/{secret_name}"
                )))?;
        let data = secret.and_then(|s| s.data).unwrap_or_default();
        let key = |k: &str| {
            data.get(k)
                .map(|b| kcp_core::k8s_openapi::ByteString(b.0.clone()))
                .ok_or_else(|| Error::MissingSecretKey {
                    object: format!("RootShard {ns}/{name}"),
                    secret: format!("{ns}/{secret_name}"),
                    key: k.to_owned(),
                })
        };
        let (ca, cert, private) = (key("ca.crt")?, key("tls.crt")?, key("tls.key")?);
        let server = format!("{}/clusters/{workspace}", in_cluster_url(rs, endpoint));
        let file = serde_json::json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "kcp",
            "clusters": [{"name": "kcp", "cluster": {"server": server, "certificate-authority-data": ca}}],
            "users": [{"name": "operator", "user": {"client-certificate-data": cert, "client-key-data": private}}],
            "contexts": [{"name": "kcp", "context": {"cluster": "kcp", "user": "operator"}}],
        });
        let invalid = |reason: String| Error::InvalidField {
            object: format!("RootShard {ns}/{name}"),
            field: format!("Secret {secret_name}"),
            reason,
        };
        let kubeconfig: kube::config::Kubeconfig =
            serde_json::from_value(file).map_err(|e| invalid(e.to_string()))?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| invalid(e.to_string()))?;
        let client = kube::Client::try_from(config).map_err(|e| invalid(e.to_string()))?;
        Ok(Arc::new(KubeObjectClient::new(client)))
    }
}
