//! Object names, labels, in-cluster hosts and URLs (spec section 3): a wire contract.

use std::collections::BTreeMap;

use crate::api::ExternalConfig;

/// `app.kubernetes.io/managed-by`.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// `app.kubernetes.io/name`.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// `app.kubernetes.io/instance`.
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
/// `app.kubernetes.io/component`.
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";

/// Identity label of objects belonging to a RootShard.
pub const ROOT_SHARD_LABEL: &str = "operator.kcp.io/rootshard";
/// Identity label of objects belonging to a Shard.
pub const SHARD_LABEL: &str = "operator.kcp.io/shard";
/// Identity label of objects belonging to a FrontProxy.
pub const FRONT_PROXY_LABEL: &str = "operator.kcp.io/front-proxy";
/// Identity label of objects belonging to a Kubeconfig.
pub const KUBECONFIG_LABEL: &str = "operator.kcp.io/kubeconfig";
/// Identity label of objects belonging to a CacheServer.
pub const CACHE_SERVER_LABEL: &str = "operator.kcp.io/cache-server";
/// Identity label of objects belonging to a VirtualWorkspace.
pub const VIRTUAL_WORKSPACE_LABEL: &str = "operator.kcp.io/virtual-workspace";

/// CN of the front-proxy's client certificates.
pub const FRONT_PROXY_COMMON_NAME: &str = "kcp-front-proxy";
/// CN of the internal proxy's client certificates.
pub const ROOT_SHARD_PROXY_COMMON_NAME: &str = "kcp-root-shard-proxy";
/// CN of the shards' mounts-proxy client certificate.
pub const MOUNTS_PROXY_COMMON_NAME: &str = "kcp-mounts-proxy";
/// The user name of the operator's own client certificate.
pub const OPERATOR_USERNAME: &str = "system:kcp-operator";

/// The cluster domain when none is configured.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// The workload component of a Deployment, Service and their pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// A root shard (`<rs>-kcp`).
    RootShard,
    /// The internal proxy of a root shard (`<rs>-proxy`).
    RootShardProxy,
    /// A shard (`<s>-shard-kcp`).
    Shard,
    /// A front-proxy (`<fp>-front-proxy`).
    FrontProxy,
    /// A cache server (`<cs>-cache-server`).
    CacheServer,
    /// A virtual workspace server (`<vw>-virtual-workspace`).
    VirtualWorkspace,
}

impl Component {
    /// The `app.kubernetes.io/component` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Component::RootShard => "rootshard",
            Component::RootShardProxy => "rootshard-proxy",
            Component::Shard => "shard",
            Component::FrontProxy => "front-proxy",
            Component::CacheServer => "cache-server",
            Component::VirtualWorkspace => "virtual-workspace",
        }
    }

    /// The name of the Deployment and Service of the object `instance`.
    pub fn workload_name(self, instance: &str) -> String {
        let suffix = match self {
            Component::RootShard => "kcp",
            Component::RootShardProxy => "proxy",
            Component::Shard => "shard-kcp",
            Component::FrontProxy => "front-proxy",
            Component::CacheServer => "cache-server",
            Component::VirtualWorkspace => "virtual-workspace",
        };
        format!("{instance}-{suffix}")
    }
}

/// The workload labels of `instance`: managed-by, name, instance, component.
pub fn resource_labels(instance: &str, component: Component) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_MANAGED_BY.to_owned(), "kcp-operator".to_owned()),
        (LABEL_NAME.to_owned(), "kcp".to_owned()),
        (LABEL_INSTANCE.to_owned(), instance.to_owned()),
        (LABEL_COMPONENT.to_owned(), component.as_str().to_owned()),
    ])
}

/// `cluster_domain`, or `cluster.local` when empty.
pub fn cluster_domain(cluster_domain: &str) -> &str {
    if cluster_domain.is_empty() {
        DEFAULT_CLUSTER_DOMAIN
    } else {
        cluster_domain
    }
}

/// `<workload>.<ns>.svc.<domain>` of the object `instance`.
pub fn service_host(component: Component, instance: &str, namespace: &str, domain: &str) -> String {
    format!(
        "{}.{namespace}.svc.{}",
        component.workload_name(instance),
        cluster_domain(domain)
    )
}

/// `https://<host>:6443`, or `shard_base_url` when set.
pub fn base_url(
    component: Component,
    instance: &str,
    namespace: &str,
    domain: &str,
    shard_base_url: &str,
) -> String {
    if shard_base_url.is_empty() {
        format!(
            "https://{}:6443",
            service_host(component, instance, namespace, domain)
        )
    } else {
        shard_base_url.to_owned()
    }
}

/// The name of a root shard CA (Certificate, Secret and Issuer): `<rs>-ca` for the root CA
/// (`ca` = `root`), `<rs>-<ca>-ca` for the intermediates.
pub fn root_shard_ca_name(root_shard: &str, ca: &str) -> String {
    if ca == "root" {
        format!("{root_shard}-ca")
    } else {
        format!("{root_shard}-{ca}-ca")
    }
}

/// The Secret holding the root CA of a RootShard or CacheServer: the `caSecretRef` when set
/// (upstream mounts `<name>-ca` regardless, spec section 9 item 1), else `<name>-ca`.
pub fn root_ca_secret_name(owner: &str, ca_secret_ref: Option<&str>) -> String {
    match ca_secret_ref {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => format!("{owner}-ca"),
    }
}

/// The value of kcp's `--external-hostname` for an external address: the host alone when the
/// port is kcp's own (6443, or unset), as upstream; `host:port` otherwise, since kcp completes
/// a port-less value with its serving port 6443, which is wrong behind an Ingress or Gateway
/// on another port (upstream kcp-operator#124).
pub fn external_address(external: &ExternalConfig) -> String {
    match external.port {
        0 | 6443 => external.hostname.clone(),
        port => format!("{}:{port}", external.hostname),
    }
}

/// The host of a URL (`https://host:port/path` -> `host`); empty when there is none.
pub fn url_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if let Some(inner) = authority.strip_prefix('[') {
        return inner.split(']').next().unwrap_or_default();
    }
    authority.split(':').next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_follow_the_upstream_suffixes() {
        assert_eq!(Component::RootShard.workload_name("root"), "root-kcp");
        assert_eq!(
            Component::RootShardProxy.workload_name("root"),
            "root-proxy"
        );
        assert_eq!(Component::Shard.workload_name("alpha"), "alpha-shard-kcp");
        assert_eq!(
            Component::FrontProxy.workload_name("edge"),
            "edge-front-proxy"
        );
        assert_eq!(Component::CacheServer.workload_name("c"), "c-cache-server");
        assert_eq!(
            Component::VirtualWorkspace.workload_name("v"),
            "v-virtual-workspace"
        );
    }

    #[test]
    fn base_url_prefers_the_shard_base_url() {
        assert_eq!(
            base_url(Component::Shard, "a", "kcp", "", ""),
            "https://a-shard-kcp.kcp.svc.cluster.local:6443"
        );
        assert_eq!(
            base_url(Component::Shard, "a", "kcp", "example.org", ""),
            "https://a-shard-kcp.kcp.svc.example.org:6443"
        );
        assert_eq!(
            base_url(Component::Shard, "a", "kcp", "", "https://x:1"),
            "https://x:1"
        );
    }

    #[test]
    fn url_host_extracts_the_host_name() {
        assert_eq!(
            url_host("https://shard.example.com:6443/x"),
            "shard.example.com"
        );
        assert_eq!(url_host("https://u@h"), "h");
        assert_eq!(url_host("https://[::1]:6443"), "::1");
        assert_eq!(url_host(""), "");
    }

    #[test]
    fn root_ca_secret_name_uses_ca_secret_ref_when_set() {
        assert_eq!(root_ca_secret_name("root", None), "root-ca");
        assert_eq!(root_ca_secret_name("root", Some("mine")), "mine");
    }

    #[test]
    fn ca_names_follow_upstream() {
        assert_eq!(root_shard_ca_name("r", "root"), "r-ca");
        assert_eq!(
            root_shard_ca_name("r", "requestheader-client"),
            "r-requestheader-client-ca"
        );
    }
}
