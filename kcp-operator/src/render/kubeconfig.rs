//! Kubeconfig files: the ones kcp servers read from mounted Secrets (paths to mounted
//! certificates), and the self-contained one a `Kubeconfig` object produces (embedded data).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use serde::{Deserialize, Serialize};

use crate::api::{CacheServer, Kubeconfig, RootShard, Shard};
use crate::error::{Error, Result};
use crate::render::names::{self, Component};
use crate::render::{meta, name_ns};

/// The key every kubeconfig Secret stores its file under.
pub const KUBECONFIG_KEY: &str = "kubeconfig";

/// A kubeconfig file (`clientcmd/api/v1` `Config`), the fields kcp-operator writes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct KubeconfigFile {
    /// Always `v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Always `Config`.
    pub kind: String,
    /// Named clusters.
    pub clusters: Vec<NamedCluster>,
    /// Named contexts.
    pub contexts: Vec<NamedContext>,
    /// The current context.
    pub current_context: String,
    /// Preferences (always empty).
    pub preferences: BTreeMap<String, String>,
    /// Named users.
    pub users: Vec<NamedUser>,
}

/// A named cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedCluster {
    /// Its name.
    pub name: String,
    /// The cluster.
    pub cluster: Cluster,
}

/// A cluster: server URL and CA (a file path or embedded base64 data).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// A CA file path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    /// Embedded CA PEM (base64 in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<ByteString>,
    /// The server URL.
    pub server: String,
}

/// A named context.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedContext {
    /// Its name.
    pub name: String,
    /// The context.
    pub context: Context,
}

/// A context: cluster and user.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The cluster's name.
    pub cluster: String,
    /// The user's name.
    pub user: String,
}

/// A named user.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedUser {
    /// Its name.
    pub name: String,
    /// The credentials.
    pub user: User,
}

/// Client certificate credentials (file paths or embedded data).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct User {
    /// A certificate file path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    /// Embedded certificate PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<ByteString>,
    /// A key file path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// Embedded key PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<ByteString>,
}

impl KubeconfigFile {
    /// A kubeconfig with one cluster, one user reading certificate files, and one context.
    pub fn with_files(
        cluster: &str,
        server: &str,
        ca: &str,
        context: &str,
        user: &str,
        cert_dir: &str,
    ) -> Self {
        KubeconfigFile {
            api_version: "v1".to_owned(),
            kind: "Config".to_owned(),
            clusters: vec![NamedCluster {
                name: cluster.to_owned(),
                cluster: Cluster {
                    certificate_authority: Some(ca.to_owned()),
                    certificate_authority_data: None,
                    server: server.to_owned(),
                },
            }],
            contexts: vec![NamedContext {
                name: context.to_owned(),
                context: Context {
                    cluster: cluster.to_owned(),
                    user: user.to_owned(),
                },
            }],
            current_context: context.to_owned(),
            preferences: BTreeMap::new(),
            users: vec![NamedUser {
                name: user.to_owned(),
                user: User {
                    client_certificate: Some(format!("{cert_dir}/tls.crt")),
                    client_key: Some(format!("{cert_dir}/tls.key")),
                    ..User::default()
                },
            }],
        }
    }

    /// The file as YAML.
    pub fn to_yaml(&self) -> Result<String> {
        serde_saphyr::to_string(self).map_err(|err| Error::Serialization {
            context: "writing a kubeconfig".to_owned(),
            message: err.to_string(),
        })
    }
}

/// A Secret holding `file` under `kubeconfig`.
pub fn kubeconfig_secret(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    file: &KubeconfigFile,
) -> Result<Secret> {
    Ok(Secret {
        metadata: meta(name, namespace, labels),
        data: Some(BTreeMap::from([(
            KUBECONFIG_KEY.to_owned(),
            ByteString(file.to_yaml()?.into_bytes()),
        )])),
        ..Secret::default()
    })
}

fn label(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The server of an external-logical-cluster-admin kubeconfig:
/// `https://<privateHostname>:<privatePort|port>`, else `https://<hostname>:<port>`.
pub fn external_admin_server(rs: &RootShard) -> String {
    let ext = &rs.spec.external;
    if ext.private_hostname.is_empty() {
        format!("https://{}:{}", ext.hostname, ext.port)
    } else {
        format!(
            "https://{}:{}",
            ext.private_hostname,
            ext.private_port.unwrap_or(ext.port)
        )
    }
}

/// The CA path of the server CA inside kcp pods.
pub const SERVER_CA_FILE: &str = "/etc/kcp/tls/ca/server/tls.crt";
/// The CA path of the merged CA bundle inside kcp pods.
pub const CA_BUNDLE_FILE: &str = "/etc/kcp/tls/ca/ca-bundle/tls.crt";

/// The admin kubeconfigs a root shard or shard reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminKubeconfig {
    /// `<owner>-logical-cluster-admin-kubeconfig`: the shard itself, as logical-cluster admin.
    LogicalClusterAdmin,
    /// `<owner>-external-logical-cluster-admin-kubeconfig`: the front door, as admin.
    ExternalLogicalClusterAdmin,
}

impl AdminKubeconfig {
    /// The certificate kind.
    pub fn kind(self) -> &'static str {
        match self {
            AdminKubeconfig::LogicalClusterAdmin => "logical-cluster-admin",
            AdminKubeconfig::ExternalLogicalClusterAdmin => "external-logical-cluster-admin",
        }
    }
}

/// Secret `<rs>-<kind>-kubeconfig` (cluster `root-shard`, context `shard-base`, user `shard`).
pub fn render_root_shard_kubeconfig_secret(
    rs: &RootShard,
    which: AdminKubeconfig,
) -> Result<Secret> {
    let (name, ns) = name_ns(&rs.metadata);
    let (server, ca) = match which {
        AdminKubeconfig::LogicalClusterAdmin => (
            names::base_url(
                Component::RootShard,
                name,
                ns,
                &rs.spec.common.cluster_domain,
                &rs.spec.common.shard_base_url,
            ),
            SERVER_CA_FILE,
        ),
        AdminKubeconfig::ExternalLogicalClusterAdmin => (
            external_admin_server(rs),
            if rs.spec.common.ca_bundle_secret_ref.is_some() {
                CA_BUNDLE_FILE
            } else {
                SERVER_CA_FILE
            },
        ),
    };
    let file = KubeconfigFile::with_files(
        "root-shard",
        &server,
        ca,
        "shard-base",
        "shard",
        &format!("/etc/kcp/tls/{}", which.kind()),
    );
    kubeconfig_secret(
        &format!("{name}-{}-kubeconfig", which.kind()),
        ns,
        label(&[(names::ROOT_SHARD_LABEL, name)]),
        &file,
    )
}

/// The kubeconfigs a shard reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardKubeconfig {
    /// `<s>-client-kubeconfig`: the root shard, as `shard-<s>`.
    Client,
    /// `<s>-logical-cluster-admin-kubeconfig`.
    LogicalClusterAdmin,
    /// `<s>-external-logical-cluster-admin-kubeconfig`.
    ExternalLogicalClusterAdmin,
}

/// The names and server of one of a shard's kubeconfigs.
struct ShardKubeconfigLayout {
    /// The certificate kind, in the Secret's and the mounted certificate's names.
    kind: &'static str,
    cluster: &'static str,
    context: &'static str,
    user: &'static str,
    server: String,
    /// The CA file the cluster entry points at.
    ca: &'static str,
}

/// The layout of kubeconfig `which` of `shard`.
fn shard_kubeconfig_layout(
    shard: &Shard,
    rs: &RootShard,
    which: ShardKubeconfig,
) -> ShardKubeconfigLayout {
    let (name, ns) = name_ns(&shard.metadata);
    let rs_name = name_ns(&rs.metadata).0;
    let common = &shard.spec.common;
    match which {
        ShardKubeconfig::Client => ShardKubeconfigLayout {
            kind: "client",
            cluster: "root-shard",
            context: "shard-base",
            user: "shard",
            server: names::base_url(
                Component::RootShard,
                rs_name,
                ns,
                &rs.spec.common.cluster_domain,
                &rs.spec.common.shard_base_url,
            ),
            ca: SERVER_CA_FILE,
        },
        ShardKubeconfig::LogicalClusterAdmin => ShardKubeconfigLayout {
            kind: "logical-cluster-admin",
            cluster: "logical-cluster:admin",
            context: "logical-cluster",
            user: "logical-cluster-admin",
            server: names::base_url(
                Component::Shard,
                name,
                ns,
                &common.cluster_domain,
                &common.shard_base_url,
            ),
            ca: SERVER_CA_FILE,
        },
        ShardKubeconfig::ExternalLogicalClusterAdmin => ShardKubeconfigLayout {
            kind: "external-logical-cluster-admin",
            cluster: "external-logical-cluster:admin",
            context: "external-logical-cluster",
            user: "external-logical-cluster-admin",
            server: external_admin_server(rs),
            ca: if common.ca_bundle_secret_ref.is_some() {
                CA_BUNDLE_FILE
            } else {
                SERVER_CA_FILE
            },
        },
    }
}

/// A kubeconfig Secret of a shard (labels rootshard and shard).
pub fn render_shard_kubeconfig_secret(
    shard: &Shard,
    rs: &RootShard,
    which: ShardKubeconfig,
) -> Result<Secret> {
    let (name, ns) = name_ns(&shard.metadata);
    let rs_name = name_ns(&rs.metadata).0;
    let ShardKubeconfigLayout {
        kind,
        cluster,
        context,
        user,
        server,
        ca,
    } = shard_kubeconfig_layout(shard, rs, which);
    let file = KubeconfigFile::with_files(
        cluster,
        &server,
        ca,
        context,
        user,
        &format!("/etc/kcp/tls/{kind}"),
    );
    kubeconfig_secret(
        &format!("{name}-{kind}-kubeconfig"),
        ns,
        label(&[
            (names::ROOT_SHARD_LABEL, rs_name),
            (names::SHARD_LABEL, name),
        ]),
        &file,
    )
}

/// Secret `<cs>-kubeconfig`: cluster, context and user `cache`, the cache server's Service URL.
pub fn render_cache_server_kubeconfig_secret(cs: &CacheServer) -> Result<Secret> {
    let (name, ns) = name_ns(&cs.metadata);
    let server = names::base_url(
        Component::CacheServer,
        name,
        ns,
        &cs.spec.cluster_domain,
        "",
    );
    let file = KubeconfigFile::with_files(
        "cache",
        &server,
        "/etc/cache-server/tls/ca/root/tls.crt",
        "cache",
        "cache",
        "/etc/cache-server/tls/client-certificate",
    );
    kubeconfig_secret(
        &format!("{name}-kubeconfig"),
        ns,
        label(&[(names::CACHE_SERVER_LABEL, name)]),
        &file,
    )
}

/// The material of a Kubeconfig object's Secret, read from the certificate Secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedCredentials {
    /// The base URL of the target (no `/clusters/...` suffix).
    pub base_url: String,
    /// The CA bundle (server CA, plus the FrontProxy's CA bundle for FrontProxy targets).
    pub ca: Vec<u8>,
    /// The client certificate PEM.
    pub certificate: Vec<u8>,
    /// The client key PEM.
    pub key: Vec<u8>,
    /// Whether the target is a FrontProxy (no `shard-base` context then).
    pub front_proxy: bool,
}

/// The Secret `spec.secretRef.name` of a Kubeconfig: a self-contained kubeconfig for the user
/// `spec.username`, with clusters `default` (`<base>/clusters/<targetWorkspace>`) and `base`,
/// contexts `default`, `base` (and `shard-base` for shard targets), current context `default`.
pub fn render_kubeconfig_secret(kc: &Kubeconfig, creds: &EmbeddedCredentials) -> Result<Secret> {
    let (name, ns) = name_ns(&kc.metadata);
    let cluster = |name: &str, server: String| NamedCluster {
        name: name.to_owned(),
        cluster: Cluster {
            certificate_authority: None,
            certificate_authority_data: Some(ByteString(creds.ca.clone())),
            server,
        },
    };
    let user = kc.spec.username.clone();
    let context = |name: &str, cluster: &str| NamedContext {
        name: name.to_owned(),
        context: Context {
            cluster: cluster.to_owned(),
            user: user.clone(),
        },
    };
    let mut contexts = vec![context("base", "base"), context("default", "default")];
    if !creds.front_proxy {
        contexts.push(context("shard-base", "base"));
    }
    let file = KubeconfigFile {
        api_version: "v1".to_owned(),
        kind: "Config".to_owned(),
        clusters: vec![
            cluster("base", creds.base_url.clone()),
            cluster(
                "default",
                format!("{}/clusters/{}", creds.base_url, kc.target_workspace()),
            ),
        ],
        contexts,
        current_context: "default".to_owned(),
        preferences: BTreeMap::new(),
        users: vec![NamedUser {
            name: user.clone(),
            user: User {
                client_certificate_data: Some(ByteString(creds.certificate.clone())),
                client_key_data: Some(ByteString(creds.key.clone())),
                ..User::default()
            },
        }],
    };
    kubeconfig_secret(
        &kc.spec.secret_ref.name,
        ns,
        label(&[(names::KUBECONFIG_LABEL, name)]),
        &file,
    )
}
