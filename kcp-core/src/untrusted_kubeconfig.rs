//! Clients from kubeconfigs that someone other than the operator wrote.
//!
//! A kubeconfig is a program as much as a file: `users[].exec` and `auth-provider` run commands,
//! `tokenFile`, `client-certificate`, `client-key` and `certificate-authority` read files (a
//! pod's ServiceAccount token among them), and `insecure-skip-tls-verify` or `proxy-url` hand the
//! connection to someone else. kube honours all of them. So a controller that reads a kubeconfig
//! from a Secret a tenant can write (capi-agent's workload kubeconfigs, for one) must not pass it
//! to kube as is. This module is the one place that turns such a kubeconfig into a
//! [`kube::Config`]: it takes the current context's cluster and user, accepts only what is
//! inline (the server, its CA, a token, a client certificate and key, a username and password),
//! refuses everything else with an error that names the field, and builds the configuration
//! from a fresh kubeconfig holding only what it accepted.
//!
//! ```
//! # async fn example() -> Result<(), kcp_core::Error> {
//! let text = r#"
//! apiVersion: v1
//! kind: Config
//! current-context: c
//! clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
//! users: [{name: u, user: {exec: {command: touch, args: [/tmp/pwned], apiVersion: client.authentication.k8s.io/v1}}}]
//! contexts: [{name: c, context: {cluster: c, user: u}}]
//! "#;
//! let refused = kcp_core::untrusted_kubeconfig::config("Secret ns/kubeconfig", text).await;
//! assert!(refused.unwrap_err().to_string().contains("users[u].user.exec"));
//! # Ok(())
//! # }
//! ```

use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster,
    NamedContext,
};

use crate::error::{Error, Result};

/// A refusal: the field's path in the kubeconfig and why.
type Refusal = (String, &'static str);

const COMMAND: &str = "runs a command in the controller's process; only inline credentials are accepted from a kubeconfig in a Secret";
const FILE: &str = "reads a file of the controller's host (a ServiceAccount token, say); only inline data is accepted from a kubeconfig in a Secret";
const INSECURE: &str =
    "turns off TLS verification; give the server's CA as certificate-authority-data instead";
const PROXY: &str =
    "sends the connection through another host; not accepted from a kubeconfig in a Secret";

/// The client configuration `text` describes, accepting only inline fields. `origin` names where
/// the kubeconfig came from (`Secret ns/name key value`) and begins every error.
pub async fn config(origin: &str, text: &str) -> Result<kube::Config> {
    let invalid = |field: String, reason: String| Error::InvalidObject {
        object: origin.to_string(),
        field,
        reason,
    };
    let parsed = Kubeconfig::from_yaml(text)
        .map_err(|e| invalid("(document)".into(), without_values(&e.to_string())))?;
    let inline = inline_only(&parsed).map_err(|(field, reason)| invalid(field, reason.into()))?;
    kube::Config::from_custom_kubeconfig(inline, &KubeConfigOptions::default())
        .await
        .map_err(|e| invalid("(context)".into(), without_values(&e.to_string())))
}

/// A kubeconfig with only the current context, its cluster and its user, and of those only
/// what is inline; or the first field that is not.
pub fn inline_only(kubeconfig: &Kubeconfig) -> std::result::Result<Kubeconfig, Refusal> {
    let (context_name, context) = current_context(kubeconfig)?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            (
                format!("contexts[{context_name}].context.cluster"),
                "names no cluster of this kubeconfig",
            )
        })?;
    let cluster = inline_cluster(&context.cluster, cluster)?;
    let user = match context.user.as_deref() {
        None => AuthInfo::default(),
        Some(name) => {
            let user = kubeconfig
                .auth_infos
                .iter()
                .find(|u| u.name == name)
                .and_then(|u| u.auth_info.as_ref())
                .ok_or_else(|| {
                    (
                        format!("contexts[{context_name}].context.user"),
                        "names no user of this kubeconfig",
                    )
                })?;
            inline_user(name, user)?
        }
    };
    Ok(single_context(context, cluster, user))
}

fn current_context(kubeconfig: &Kubeconfig) -> std::result::Result<(String, Context), Refusal> {
    let named = match kubeconfig.current_context.as_deref() {
        Some(name) if !name.is_empty() => kubeconfig.contexts.iter().find(|c| c.name == name),
        _ => kubeconfig.contexts.first(),
    };
    named
        .and_then(|c| Some((c.name.clone(), c.context.clone()?)))
        .ok_or_else(|| ("current-context".to_string(), "names no context"))
}

fn inline_cluster(name: &str, cluster: &Cluster) -> std::result::Result<Cluster, Refusal> {
    let field = |key: &str| format!("clusters[{name}].cluster.{key}");
    if cluster.insecure_skip_tls_verify == Some(true) {
        return Err((field("insecure-skip-tls-verify"), INSECURE));
    }
    if cluster.certificate_authority.is_some() {
        return Err((field("certificate-authority"), FILE));
    }
    if cluster.proxy_url.is_some() {
        return Err((field("proxy-url"), PROXY));
    }
    Ok(Cluster {
        server: cluster.server.clone(),
        certificate_authority_data: cluster.certificate_authority_data.clone(),
        tls_server_name: cluster.tls_server_name.clone(),
        disable_compression: cluster.disable_compression,
        ..Cluster::default()
    })
}

fn inline_user(name: &str, user: &AuthInfo) -> std::result::Result<AuthInfo, Refusal> {
    let field = |key: &str| format!("users[{name}].user.{key}");
    let refused = [
        (user.exec.is_some(), "exec", COMMAND),
        (user.auth_provider.is_some(), "auth-provider", COMMAND),
        (user.token_file.is_some(), "tokenFile", FILE),
        (
            user.client_certificate.is_some(),
            "client-certificate",
            FILE,
        ),
        (user.client_key.is_some(), "client-key", FILE),
    ];
    if let Some((_, key, reason)) = refused.iter().find(|(set, _, _)| *set) {
        return Err((field(key), reason));
    }
    Ok(AuthInfo {
        username: user.username.clone(),
        password: user.password.clone(),
        token: user.token.clone(),
        client_certificate_data: user.client_certificate_data.clone(),
        client_key_data: user.client_key_data.clone(),
        ..AuthInfo::default()
    })
}

fn single_context(context: Context, cluster: Cluster, user: AuthInfo) -> Kubeconfig {
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: "cluster".into(),
            cluster: Some(cluster),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "user".into(),
            auth_info: Some(user),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: "context".into(),
            context: Some(Context {
                cluster: "cluster".into(),
                user: Some("user".into()),
                namespace: context.namespace,
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some("context".into()),
        ..Kubeconfig::default()
    }
}

/// `message` with every quoted string replaced by `"…"`: parser messages may quote a value
/// (`invalid type: string "…"`), and a kubeconfig's values include credentials.
fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for c in message.chars() {
        match (c, quoted) {
            ('"', false) => {
                out.push_str("\"…");
                quoted = true;
            }
            ('"', true) => {
                out.push('"');
                quoted = false;
            }
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(cluster: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:6443\", {cluster}}}}}]\n\
             users: [{{name: u, user: {{{user}}}}}]\n\
             contexts: [{{name: c, context: {{cluster: c, user: u}}}}]\n"
        )
    }

    async fn refusal(cluster: &str, user: &str) -> String {
        config("Secret ns/kc", &kubeconfig(cluster, user))
            .await
            .unwrap_err()
            .to_string()
    }

    #[tokio::test]
    async fn an_exec_plugin_is_refused_and_never_run() {
        let marker = std::env::temp_dir().join(format!("exec-ran-{}", fastrand::u64(..)));
        let user = format!(
            "exec: {{apiVersion: client.authentication.k8s.io/v1, command: touch, args: [\"{}\"]}}",
            marker.display()
        );
        let message = refusal("", &user).await;
        assert!(message.contains("users[u].user.exec"), "{message}");
        assert!(message.contains("Secret ns/kc"), "{message}");
        assert!(!marker.exists(), "the command ran");
    }

    #[tokio::test]
    async fn an_auth_provider_is_refused() {
        let message = refusal(
            "",
            "auth-provider: {name: gcp, config: {cmd-path: /bin/sh}}",
        )
        .await;
        assert!(message.contains("users[u].user.auth-provider"), "{message}");
    }

    #[tokio::test]
    async fn a_token_file_is_refused() {
        let message = refusal(
            "",
            "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
        )
        .await;
        assert!(message.contains("users[u].user.tokenFile"), "{message}");
    }

    #[tokio::test]
    async fn client_certificate_and_key_files_are_refused() {
        let cert = refusal("", "client-certificate: /etc/ssl/cert.pem").await;
        assert!(cert.contains("users[u].user.client-certificate"), "{cert}");
        let key = refusal("", "client-key: /etc/ssl/key.pem").await;
        assert!(key.contains("users[u].user.client-key"), "{key}");
    }

    #[tokio::test]
    async fn a_ca_file_insecure_tls_and_a_proxy_are_refused() {
        let ca = refusal("certificate-authority: /etc/ssl/ca.pem", "token: t").await;
        assert!(
            ca.contains("clusters[c].cluster.certificate-authority"),
            "{ca}"
        );
        let insecure = refusal("insecure-skip-tls-verify: true", "token: t").await;
        assert!(
            insecure.contains("clusters[c].cluster.insecure-skip-tls-verify"),
            "{insecure}"
        );
        let proxy = refusal("proxy-url: \"http://10.0.0.1:3128\"", "token: t").await;
        assert!(proxy.contains("clusters[c].cluster.proxy-url"), "{proxy}");
    }

    #[tokio::test]
    async fn an_inline_token_kubeconfig_is_accepted() {
        let config = config("Secret ns/kc", &kubeconfig("", "token: abc"))
            .await
            .unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:6443/");
    }

    #[test]
    fn only_the_current_context_is_kept_whatever_the_others_hold() {
        let text = "apiVersion: v1\nkind: Config\ncurrent-context: good\n\
            clusters: [{name: a, cluster: {server: \"https://a\"}}, {name: b, cluster: {server: \"https://b\", insecure-skip-tls-verify: true}}]\n\
            users: [{name: ok, user: {token: t}}, {name: bad, user: {tokenFile: /etc/passwd}}]\n\
            contexts: [{name: good, context: {cluster: a, user: ok}}, {name: evil, context: {cluster: b, user: bad}}]\n";
        let kept = inline_only(&Kubeconfig::from_yaml(text).unwrap()).unwrap();
        assert_eq!(kept.clusters.len(), 1);
        assert_eq!(
            kept.clusters[0].cluster.as_ref().unwrap().server.as_deref(),
            Some("https://a")
        );
        assert_eq!(kept.auth_infos.len(), 1);
    }

    #[tokio::test]
    async fn a_parse_error_does_not_repeat_the_values_it_read() {
        let text = "apiVersion: v1\nclusters: \"s3cr3t-token\"\n";
        let message = config("Secret ns/kc", text).await.unwrap_err().to_string();
        assert!(!message.contains("s3cr3t"), "{message}");
        assert!(message.contains("Secret ns/kc"), "{message}");
    }
}
