//! Where kind clusters come from: the [`Provisioner`] trait and its implementations.
//!
//! - [`KindCli`]: the real `kind` command line (`kind create cluster`, `kind get clusters`,
//!   `kind get kubeconfig`, `kind delete cluster`).
//! - `SimProvisioner` (feature `sim`): every "kind cluster" is an in-process kcp-sim server, a
//!   real API server kubectl can talk to; for tests, examples and the playground.
//!
//! Ownership: every cluster is created with the owning object's UID as a marker
//! ([`crate::kind_config::OWNER_LABEL`] on its nodes); [`Provisioner::owner`] reads it back, so
//! a cluster of the same name that someone else created is never adopted or deleted.

mod kind_cli;
#[cfg(feature = "sim")]
mod sim;

pub use kind_cli::{
    KindCli, create_args, delete_args, kubeconfig_args, list_args, parse_cluster_list,
};
#[cfg(feature = "sim")]
pub use sim::SimProvisioner;

use std::time::Duration;

use async_trait::async_trait;

use crate::error::{Error, Result};

/// What to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    /// The kind cluster's name.
    pub name: String,
    /// The node image (`--image`; kind's default when `None`).
    pub image: Option<String>,
    /// The rendered kind config (`--config`), carrying the ownership marker.
    pub config: String,
    /// The UID of the owning object (the marker's value).
    pub owner_uid: String,
    /// How long to wait for the control plane (`--wait`).
    pub wait: Duration,
}

/// Where a workload cluster's API server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or IP.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// Creates, lists and deletes kind clusters, and exports their kubeconfigs.
#[async_trait]
pub trait Provisioner: Send + Sync + 'static {
    /// Creates the cluster and waits until its control plane answers.
    async fn create(&self, request: &CreateRequest) -> Result<()>;
    /// Deletes the cluster (a missing one is not an error).
    async fn delete(&self, name: &str) -> Result<()>;
    /// The names of the clusters that exist.
    async fn list(&self) -> Result<Vec<String>>;
    /// The ownership marker of an existing cluster: the UID it was created for, `None` when it
    /// carries no marker (created by someone else).
    async fn owner(&self, name: &str) -> Result<Option<String>>;
    /// Marks an existing cluster as created for `owner_uid` (labels its Nodes), so it is
    /// taken over: a cluster the Go provider created carries no marker.
    async fn mark_owner(&self, name: &str, owner_uid: &str) -> Result<()>;
    /// The cluster's admin kubeconfig, exported now.
    async fn kubeconfig(&self, name: &str) -> Result<String>;
    /// The cluster's API endpoint (from its kubeconfig by default).
    async fn endpoint(&self, name: &str) -> Result<Endpoint> {
        endpoint_of_kubeconfig(name, &self.kubeconfig(name).await?)
    }
}

/// The server of the current context of `kubeconfig` as host and port (the scheme's default
/// port when the URL has none).
pub fn endpoint_of_kubeconfig(cluster: &str, kubeconfig: &str) -> Result<Endpoint> {
    let bad = |reason: String| Error::Kubeconfig {
        cluster: cluster.to_string(),
        reason,
    };
    let config = kube::config::Kubeconfig::from_yaml(kubeconfig)
        .map_err(|e| bad(format!("not a kubeconfig: {e}")))?;
    let context_name = config.current_context.clone().unwrap_or_default();
    let cluster_name = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .or_else(|| config.clusters.first().map(|c| c.name.clone()))
        .ok_or_else(|| bad("it names no cluster".into()))?;
    let server = config
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .ok_or_else(|| bad(format!("cluster {cluster_name:?} has no server")))?;
    let uri: http::Uri = server
        .parse()
        .map_err(|e| bad(format!("server {server:?} is not a URL: {e}")))?;
    let host = uri
        .host()
        .ok_or_else(|| bad(format!("server {server:?} has no host")))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let default_port = if uri.scheme_str() == Some("http") {
        80
    } else {
        443
    };
    Ok(Endpoint {
        host,
        port: uri.port_u16().unwrap_or(default_port),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(server: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kind-dev\n  cluster:\n    server: {server}\ncontexts:\n- name: kind-dev\n  context:\n    cluster: kind-dev\n    user: kind-dev\ncurrent-context: kind-dev\nusers:\n- name: kind-dev\n  user: {{}}\n"
        )
    }

    #[test]
    fn the_endpoint_is_the_current_contexts_server() {
        let endpoint =
            endpoint_of_kubeconfig("dev", &kubeconfig("https://127.0.0.1:40123")).unwrap();
        assert_eq!(
            endpoint,
            Endpoint {
                host: "127.0.0.1".into(),
                port: 40123
            }
        );
    }

    #[test]
    fn an_ipv6_server_loses_its_brackets_and_a_missing_port_defaults() {
        let endpoint = endpoint_of_kubeconfig("dev", &kubeconfig("https://[::1]")).unwrap();
        assert_eq!(
            endpoint,
            Endpoint {
                host: "::1".into(),
                port: 443
            }
        );
    }

    #[test]
    fn garbage_is_a_kubeconfig_error_naming_the_cluster() {
        let err = endpoint_of_kubeconfig("dev", "clusters: 3")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("kubeconfig of kind cluster \"dev\""),
            "{err}"
        );
    }
}
