//! The bed's one client contract, the playground's: a kubeconfig with context `kcp` (kcp's root
//! workspace, admin) and context `kube` (kube-apiserver, admin), plus one context per restricted
//! identity on each side (`kcp-as-<user>`, `kube-as-<user>`).

use base64::Engine as _;
use kube::config::Kubeconfig;
use secrecy::ExposeSecret as _;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::identities::Identities;

/// Where and as whom a client connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The server URL (for kcp, a workspace URL: `https://127.0.0.1:<port>/clusters/root`).
    pub url: String,
    /// The CA bundle (PEM) that signs the server's certificate.
    pub ca_pem: String,
    /// The bearer token.
    pub token: String,
}

impl Endpoint {
    /// The same server and CA with another token.
    pub fn with_token(&self, token: &str) -> Endpoint {
        Endpoint {
            token: token.to_string(),
            ..self.clone()
        }
    }

    /// The same identity at another URL of the same server.
    pub fn at(&self, url: String) -> Endpoint {
        Endpoint {
            url,
            ..self.clone()
        }
    }

    /// A kube client configuration for this endpoint: the server, its CA bundle as trust roots,
    /// the bearer token (nothing read from files, no exec plugins).
    pub fn config(&self) -> Result<kube::Config> {
        let what = || format!("a client configuration for {}", self.url);
        let uri = self
            .url
            .parse()
            .map_err(|e| Error::config(what(), format!("URL {}: {e}", self.url)))?;
        let roots: Vec<Vec<u8>> = pem::parse_many(&self.ca_pem)
            .map_err(|e| Error::config(what(), format!("CA bundle: {e}")))?
            .into_iter()
            .filter(|p| p.tag() == "CERTIFICATE")
            .map(pem::Pem::into_contents)
            .collect();
        if roots.is_empty() {
            return Err(Error::config(what(), "the CA bundle holds no certificate"));
        }
        let mut config = kube::Config::new(uri);
        config.root_cert = Some(roots);
        config.auth_info = serde_json::from_value(json!({"token": self.token}))
            .map_err(|e| Error::config(what(), e))?;
        Ok(config)
    }

    /// A kube client for this endpoint (call inside a tokio runtime).
    pub fn client(&self) -> Result<kube::Client> {
        kube::Client::try_from(self.config()?)
            .map_err(|e| Error::config(format!("a client for {}", self.url), e))
    }
}

/// Writes `<dir>/<name>.kubeconfig` with the one context `name` for `endpoint` (for a process a
/// test starts with `--kubeconfig`); returns its path.
pub fn write_file(
    dir: &std::path::Path,
    name: &str,
    endpoint: &Endpoint,
) -> Result<std::path::PathBuf> {
    let path = dir.join(format!("{name}.kubeconfig"));
    let document = kubeconfig(&[(name, endpoint)]);
    std::fs::write(&path, document.to_string())
        .map_err(|e| Error::io("test bed", format!("writing {}", path.display()), e))?;
    Ok(path)
}

/// A kubeconfig document (JSON, which every kubeconfig reader accepts) with one context, cluster
/// and user per named endpoint; the first is the current context.
pub fn kubeconfig(contexts: &[(&str, &Endpoint)]) -> Value {
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": contexts.first().map(|(name, _)| *name).unwrap_or_default(),
        "clusters": contexts.iter().map(|(name, e)| json!({
            "name": name,
            "cluster": {"server": e.url, "certificate-authority-data": encode(&e.ca_pem)},
        })).collect::<Vec<_>>(),
        "users": contexts.iter().map(|(name, e)| json!({
            "name": name,
            "user": {"token": e.token},
        })).collect::<Vec<_>>(),
        "contexts": contexts.iter().map(|(name, _)| json!({
            "name": name,
            "context": {"cluster": name, "user": name},
        })).collect::<Vec<_>>(),
    })
}

/// The playground contract for a kcp root endpoint and a kube endpoint (both admin), with the
/// restricted identities' contexts after them.
pub fn playground_kubeconfig(kcp: &Endpoint, kube: &Endpoint, identities: &Identities) -> Value {
    let mut named: Vec<(String, Endpoint)> = vec![
        ("kcp".to_string(), kcp.clone()),
        ("kube".to_string(), kube.clone()),
    ];
    for identity in &identities.users {
        named.push((
            format!("kcp-as-{}", identity.user),
            kcp.with_token(&identity.token),
        ));
        named.push((
            format!("kube-as-{}", identity.user),
            kube.with_token(&identity.token),
        ));
    }
    let borrowed: Vec<(&str, &Endpoint)> = named.iter().map(|(n, e)| (n.as_str(), e)).collect();
    kubeconfig(&borrowed)
}

/// The server, CA and token of the context `context` of a kubeconfig kcp wrote.
pub fn endpoint_of(kubeconfig: &Kubeconfig, context: &str) -> Result<Endpoint> {
    let what = || format!("context {context} of kcp's admin.kubeconfig");
    let named = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| Error::config(what(), "no such context"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == named.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| Error::config(what(), format!("no cluster {}", named.cluster)))?;
    let user = kubeconfig
        .auth_infos
        .iter()
        .find(|u| Some(&u.name) == named.user.as_ref())
        .and_then(|u| u.auth_info.as_ref())
        .ok_or_else(|| Error::config(what(), "no user"))?;
    let url = cluster
        .server
        .clone()
        .ok_or_else(|| Error::config(what(), "no server"))?;
    let ca_data = cluster
        .certificate_authority_data
        .as_deref()
        .ok_or_else(|| Error::config(what(), "no certificate-authority-data"))?;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(ca_data)
        .map_err(|e| Error::config(what(), format!("certificate-authority-data: {e}")))?;
    let token = user
        .token
        .as_ref()
        .map(|t| t.expose_secret().to_string())
        .ok_or_else(|| Error::config(what(), "no token"))?;
    Ok(Endpoint {
        url,
        ca_pem: String::from_utf8_lossy(&ca).into_owned(),
        token,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn endpoint(url: &str, token: &str) -> Endpoint {
        Endpoint {
            url: url.into(),
            ca_pem: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".into(),
            token: token.into(),
        }
    }

    #[test]
    fn the_playground_contract_has_kcp_current_and_kube_beside_it() {
        let ids = Identities::generate();
        let doc = playground_kubeconfig(
            &endpoint("https://127.0.0.1:1/clusters/root", "a"),
            &endpoint("https://127.0.0.1:2", "b"),
            &ids,
        );
        assert_eq!(doc["current-context"], "kcp");
        let names: Vec<&str> = doc["contexts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(&names[..2], ["kcp", "kube"]);
        assert!(names.contains(&"kcp-as-kcp-init-agent"));
        assert!(names.contains(&"kube-as-kcp-operator"));
    }

    #[test]
    fn an_endpoint_reads_back_from_the_document_it_wrote() {
        let e = endpoint("https://127.0.0.1:7/clusters/root", "tok");
        let kubeconfig: Kubeconfig = serde_json::from_value(kubeconfig(&[("root", &e)])).unwrap();
        assert_eq!(endpoint_of(&kubeconfig, "root").unwrap(), e);
    }
}
