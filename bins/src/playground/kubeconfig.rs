//! The playground's kubeconfig: context `kcp` (the kcp server's root workspace, current) and
//! context `kube` (the plain Kubernetes server), built as kube's typed `Kubeconfig`.

use kcp_core::kube::config::{Context, Kubeconfig, NamedCluster, NamedContext};

/// The kubeconfig text (YAML, like every other tool's) for the two servers.
pub fn render(kcp_url: &str, kube_url: &str) -> String {
    let cluster = |name: &str, server: &str| NamedCluster {
        name: name.to_string(),
        cluster: Some(kcp_core::kube::config::Cluster {
            server: Some(server.to_string()),
            ..Default::default()
        }),
        other: Default::default(),
    };
    let context = |name: &str| NamedContext {
        name: name.to_string(),
        context: Some(Context {
            cluster: name.to_string(),
            ..Default::default()
        }),
        other: Default::default(),
    };
    let config = Kubeconfig {
        clusters: vec![cluster("kcp", kcp_url), cluster("kube", kube_url)],
        contexts: vec![context("kcp"), context("kube")],
        current_context: Some("kcp".into()),
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Default::default()
    };
    // A Kubeconfig of strings always serializes.
    serde_saphyr::to_string(&config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_kubeconfig_has_a_kcp_and_a_kube_context_and_kcp_is_current() {
        let text = render("http://127.0.0.1:1/clusters/root", "http://127.0.0.1:2");
        assert!(
            text.starts_with("apiVersion: v1\n") || text.contains("\ncurrent-context: kcp"),
            "{text}"
        );
        assert!(
            !text.trim_start().starts_with('{'),
            "YAML, not JSON: {text}"
        );
        let config = Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(config.current_context.as_deref(), Some("kcp"));
        let servers: Vec<(String, Option<String>)> = config
            .clusters
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.cluster.as_ref().and_then(|c| c.server.clone()),
                )
            })
            .collect();
        assert_eq!(
            servers,
            [
                (
                    "kcp".to_string(),
                    Some("http://127.0.0.1:1/clusters/root".to_string())
                ),
                ("kube".to_string(), Some("http://127.0.0.1:2".to_string()))
            ]
        );
        let contexts: Vec<&str> = config.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(contexts, ["kcp", "kube"]);
    }
}
