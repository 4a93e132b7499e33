//! The front-proxy renderer (spec section 5.5), for a FrontProxy (from a CompiledFrontProxy)
//! and for a root shard's internal proxy `<rs>-proxy` (from a CompiledRootShard): path-mapping
//! ConfigMap, dynamic kubeconfig Secret, Deployment and Service.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Secret, Service};
use serde::Serialize;

use crate::api::{
    CompiledFrontProxy, CompiledRootShard, ExternalConfig, FrontProxySpec, ImageSpec,
    PathMappingEntry, RootShardSpec,
};
use crate::error::{Error, Result};
use crate::render::deployment::{self as d, PodParts, Workload};
use crate::render::kubeconfig::{KubeconfigFile, kubeconfig_secret};
use crate::render::names::{self, Component};
use crate::render::service::{https_port, workload_service};
use crate::render::{meta, pki};

const BASE: &str = "/etc/kcp-front-proxy";
const REQUEST_HEADER_CA: &str = "/etc/kcp/tls/ca/requestheader-client";
const CA_BUNDLE: &str = "/etc/kcp/tls/ca/ca-bundle";

/// What the front-proxy renderer works from.
#[derive(Debug, Clone, Copy)]
pub struct ProxyInput<'a> {
    /// The RootShard's name.
    pub root_shard: &'a str,
    /// The RootShard's spec.
    pub root_shard_spec: &'a RootShardSpec,
    /// The namespace.
    pub namespace: &'a str,
    /// The FrontProxy's name and spec; `None` for the internal proxy.
    pub front_proxy: Option<(&'a str, &'a FrontProxySpec)>,
    /// The names of all shards of the root shard.
    pub shards: &'a [String],
}

impl<'a> ProxyInput<'a> {
    /// The input of a FrontProxy.
    pub fn front_proxy(cfp: &'a CompiledFrontProxy) -> Self {
        ProxyInput {
            root_shard: &cfp.spec.root_shard.name,
            root_shard_spec: &cfp.spec.root_shard.spec,
            namespace: cfp.metadata.namespace.as_deref().unwrap_or_default(),
            front_proxy: Some((
                cfp.metadata.name.as_deref().unwrap_or_default(),
                &cfp.spec.front_proxy,
            )),
            shards: &cfp.spec.shards,
        }
    }

    /// The input of the internal proxy of a root shard.
    pub fn internal(crs: &'a CompiledRootShard) -> Self {
        ProxyInput {
            root_shard: crs.metadata.name.as_deref().unwrap_or_default(),
            root_shard_spec: &crs.spec.root_shard,
            namespace: crs.metadata.namespace.as_deref().unwrap_or_default(),
            front_proxy: None,
            shards: &crs.spec.shards,
        }
    }

    fn instance(&self) -> (&'a str, Component) {
        match self.front_proxy {
            Some((name, _)) => (name, Component::FrontProxy),
            None => (self.root_shard, Component::RootShardProxy),
        }
    }

    fn labels(&self) -> BTreeMap<String, String> {
        let (instance, component) = self.instance();
        names::resource_labels(instance, component)
    }

    /// `<fp>` or `<rs>-proxy`: the prefix of the ConfigMap and merged-bundle Secret names.
    pub fn object_prefix(&self) -> String {
        match self.front_proxy {
            Some((name, _)) => name.to_owned(),
            None => format!("{}-proxy", self.root_shard),
        }
    }

    /// `<rs>-<fp>` or `<rs>-proxy`: the prefix of certificates and the dynamic kubeconfig.
    pub fn cert_prefix(&self) -> String {
        pki::proxy_prefix(self.root_shard, self.front_proxy.map(|(n, _)| n))
    }

    fn ca_bundle_configured(&self) -> bool {
        match self.front_proxy {
            Some((_, fp)) => fp.ca_bundle_secret_ref.is_some(),
            None => self.root_shard_spec.common.ca_bundle_secret_ref.is_some(),
        }
    }

    fn root_shard_url(&self) -> String {
        let c = &self.root_shard_spec.common;
        names::base_url(
            Component::RootShard,
            self.root_shard,
            self.namespace,
            &c.cluster_domain,
            &c.shard_base_url,
        )
    }

    /// The image: the FrontProxy's, or for the internal proxy `proxy.image`, else the
    /// RootShard's (upstream ignores the RootShard image here, spec section 9 item 10).
    fn image(&self) -> Option<&'a ImageSpec> {
        match self.front_proxy {
            Some((_, fp)) => fp.image.as_ref(),
            None => self
                .root_shard_spec
                .proxy
                .as_ref()
                .and_then(|p| p.image.as_ref())
                .or(self.root_shard_spec.common.image.as_ref()),
        }
    }
}

/// A path-mapping entry with its keys in the order Go writes them (sorted).
#[derive(Serialize)]
struct SortedEntry<'a> {
    backend: &'a str,
    backend_server_ca: &'a str,
    path: &'a str,
    proxy_client_cert: &'a str,
    proxy_client_key: &'a str,
}

/// The path mappings: `/clusters/` and `/services/` to the root shard, then the FrontProxy's
/// `additionalPathMappings`.
pub fn path_mappings(input: &ProxyInput<'_>) -> Vec<PathMappingEntry> {
    let backend_ca = if input.ca_bundle_configured() {
        format!("{CA_BUNDLE}/tls.crt")
    } else {
        "/etc/kcp/tls/ca/tls.crt".to_owned()
    };
    let mut mappings: Vec<PathMappingEntry> = ["/clusters/", "/services/"]
        .iter()
        .map(|path| PathMappingEntry {
            path: (*path).to_owned(),
            backend: input.root_shard_url(),
            backend_server_ca: backend_ca.clone(),
            proxy_client_cert: format!("{BASE}/requestheader-client/tls.crt"),
            proxy_client_key: format!("{BASE}/requestheader-client/tls.key"),
        })
        .collect();
    if let Some((_, fp)) = input.front_proxy {
        mappings.extend(fp.additional_path_mappings.iter().cloned());
    }
    mappings
}

/// ConfigMap `<fp>-config` / `<rs>-proxy-config` with `path-mapping.yaml`.
pub fn render_proxy_config_map(input: &ProxyInput<'_>) -> Result<ConfigMap> {
    let mappings = path_mappings(input);
    let sorted: Vec<SortedEntry<'_>> = mappings
        .iter()
        .map(|m| SortedEntry {
            backend: &m.backend,
            backend_server_ca: &m.backend_server_ca,
            path: &m.path,
            proxy_client_cert: &m.proxy_client_cert,
            proxy_client_key: &m.proxy_client_key,
        })
        .collect();
    let yaml = serde_saphyr::to_string(&sorted).map_err(|err| Error::Serialization {
        context: format!("writing the path mapping of {}", input.object_prefix()),
        message: err.to_string(),
    })?;
    Ok(ConfigMap {
        metadata: meta(
            &format!("{}-config", input.object_prefix()),
            input.namespace,
            input.labels(),
        ),
        data: Some(BTreeMap::from([("path-mapping.yaml".to_owned(), yaml)])),
        ..ConfigMap::default()
    })
}

/// `<rs>-<fp>-dynamic-kubeconfig` / `<rs>-proxy-dynamic-kubeconfig`: the one Secret the
/// workload group writes itself.
pub fn proxy_dynamic_kubeconfig_name(input: &ProxyInput<'_>) -> String {
    format!("{}-dynamic-kubeconfig", input.cert_prefix())
}

/// Secret `<rs>-<fp>-dynamic-kubeconfig` / `<rs>-proxy-dynamic-kubeconfig`: cluster and context
/// `system:admin` (the root shard), user `admin` (the proxy's kubeconfig client certificate).
pub fn render_proxy_dynamic_kubeconfig_secret(input: &ProxyInput<'_>) -> Result<Secret> {
    let file = KubeconfigFile::with_files(
        "system:admin",
        &input.root_shard_url(),
        "/etc/kcp/tls/ca/tls.crt",
        "system:admin",
        "admin",
        &format!("{BASE}/kubeconfig-client-cert"),
    );
    kubeconfig_secret(
        &proxy_dynamic_kubeconfig_name(input),
        input.namespace,
        input.labels(),
        &file,
    )
}

fn proxy_args(input: &ProxyInput<'_>, mounts_proxy: bool) -> Vec<String> {
    let mut args: Vec<String> = [
        "--secure-port=6443",
        "--root-kubeconfig=/etc/kcp-front-proxy/kubeconfig/kubeconfig",
        "--shards-kubeconfig=/etc/kcp-front-proxy/kubeconfig/kubeconfig",
        "--tls-private-key-file=/etc/kcp-front-proxy/tls/tls.key",
        "--tls-cert-file=/etc/kcp-front-proxy/tls/tls.crt",
        "--mapping-file=/etc/kcp-front-proxy/config/path-mapping.yaml",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    args.push(format!("--client-ca-file={BASE}/client-ca/tls.crt"));
    if mounts_proxy {
        let cn = match input.front_proxy {
            Some(_) => names::FRONT_PROXY_COMMON_NAME,
            None => names::ROOT_SHARD_PROXY_COMMON_NAME,
        };
        args.extend([
            format!("--requestheader-client-ca-file={REQUEST_HEADER_CA}/tls.crt"),
            format!(
                "--requestheader-allowed-names={cn},{}",
                names::MOUNTS_PROXY_COMMON_NAME
            ),
            "--requestheader-username-headers=X-Remote-User".to_owned(),
            "--requestheader-group-headers=X-Remote-Group".to_owned(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".to_owned(),
        ]);
    }
    match input.front_proxy {
        None => {
            if let Some(proxy) = &input.root_shard_spec.proxy {
                args.extend(d::logging_args(proxy.logging.as_ref()));
                args.extend(proxy.extra_args.iter().cloned());
            }
        }
        Some((_, fp)) => {
            if let Some(auth) = &fp.auth {
                // Upstream's form, quotes included: kcp-front-proxy reads both flags as
                // string slices, which are CSV, so `"a,b"` is the list a, b (kcp
                // pkg/proxy/options/authentication.go); the same bytes roll no pod on takeover.
                if let Some(groups) = &auth.drop_groups {
                    args.push(format!(
                        "--authentication-drop-groups={}",
                        go_quoted(groups)
                    ));
                }
                if let Some(groups) = &auth.pass_on_groups {
                    args.push(format!(
                        "--authentication-pass-on-groups={}",
                        go_quoted(groups)
                    ));
                }
            }
            args.extend(d::logging_args(fp.logging.as_ref()));
            args.extend(fp.extra_args.iter().cloned());
        }
    }
    args
}

fn proxy_parts(input: &ProxyInput<'_>, mounts_proxy: bool) -> PodParts {
    let (volumes, mounts) = match (input.front_proxy, &input.root_shard_spec.proxy) {
        (Some((_, fp)), _) => (fp.extra_volumes.clone(), fp.extra_volume_mounts.clone()),
        (None, Some(p)) => (p.extra_volumes.clone(), p.extra_volume_mounts.clone()),
        (None, None) => (Vec::new(), Vec::new()),
    };
    let mut parts = PodParts {
        args: proxy_args(input, mounts_proxy),
        volumes,
        mounts,
    };
    let cert = input.cert_prefix();
    let mut secret =
        |name: &str, path: &str, read_only: bool| parts.secret(name, name, path, read_only);
    secret(
        &format!("{cert}-dynamic-kubeconfig"),
        &format!("{BASE}/kubeconfig"),
        false,
    );
    secret(
        &format!("{cert}-kubeconfig"),
        &format!("{BASE}/kubeconfig-client-cert"),
        true,
    );
    secret(&format!("{cert}-server"), &format!("{BASE}/tls"), true);
    secret(
        &format!("{cert}-requestheader"),
        &format!("{BASE}/requestheader-client"),
        true,
    );
    let root_ca = names::root_ca_secret_name(
        input.root_shard,
        input
            .root_shard_spec
            .certificates
            .ca_secret_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    secret(&root_ca, "/etc/kcp/tls/ca", true);
    if mounts_proxy {
        secret(
            &names::root_shard_ca_name(input.root_shard, "requestheader-client"),
            REQUEST_HEADER_CA,
            true,
        );
    }
    let prefix = input.object_prefix();
    if input.ca_bundle_configured() {
        secret(&format!("{prefix}-merged-ca-bundle"), CA_BUNDLE, true);
    }
    secret(
        &format!("{prefix}-merged-client-ca"),
        &format!("{BASE}/client-ca"),
        true,
    );
    let config = format!("{prefix}-config");
    parts.config_map(&config, &config, &format!("{BASE}/config"));
    parts
}

/// Deployment `<fp>-front-proxy` / `<rs>-proxy`: container `kcp-front-proxy` running
/// `/kcp-front-proxy`, readiness and liveness probes (15/10/10/3), the user's extra volumes
/// first, then the proxy's Secrets and ConfigMap; the FrontProxy's auth configuration last.
pub fn render_proxy_deployment(input: &ProxyInput<'_>) -> Deployment {
    let (image, pull_secrets, version) = d::image_settings(input.image());
    let mounts_proxy = d::supports_mount_proxy(version.as_ref());
    let mut parts = proxy_parts(input, mounts_proxy);
    let (replicas, resources, template) = match (input.front_proxy, &input.root_shard_spec.proxy) {
        (Some((_, fp)), _) => (
            fp.replicas,
            fp.resources.as_ref(),
            fp.deployment_template.as_ref(),
        ),
        (None, Some(p)) => (
            p.replicas,
            p.resources.as_ref(),
            p.deployment_template.as_ref(),
        ),
        (None, None) => (None, None, None),
    };
    let mut container = Container {
        name: "kcp-front-proxy".to_owned(),
        image: Some(image),
        command: Some(vec!["/kcp-front-proxy".to_owned()]),
        security_context: Some(d::security_context()),
        ports: Some(d::https_port()),
        readiness_probe: Some(d::probe("/readyz", 15, 10, 10, 3)),
        liveness_probe: Some(d::probe("/livez", 15, 10, 10, 3)),
        ..Container::default()
    };
    if let Some(r) = resources {
        let mut merged = k8s_openapi::api::core::v1::ResourceRequirements::default();
        d::merge_resources(&mut merged, Some(r));
        container.resources = Some(merged);
    }
    if let Some((_, fp)) = input.front_proxy {
        d::apply_auth(&mut parts, fp.auth.as_ref(), input.root_shard, input.shards);
    }
    let (instance, component) = input.instance();
    let workload = Workload {
        name: component.workload_name(instance),
        namespace: input.namespace.to_owned(),
        labels: input.labels(),
        replicas,
        image_pull_secrets: pull_secrets,
        template,
    };
    d::assemble(workload, container, parts)
}

/// The port of an external address's Service: `servicePort` when set (an Ingress, Gateway or
/// load balancer serves `port` in front of it, a kcp-rs addition), else `port`; `None` when
/// neither is positive.
fn external_service_port(external: &ExternalConfig) -> Option<i32> {
    external
        .service_port
        .filter(|p| *p > 0)
        .or(Some(external.port).filter(|p| *p > 0))
        .map(|p| i32::try_from(p).unwrap_or(6443))
}

/// The Service port of a FrontProxy: its `external.servicePort` or `external.port` if
/// positive; else the port of the deprecated `externalHostname` (6443 when absent or
/// unparsable); else the RootShard's `external.servicePort` or `external.port`; else 6443. The
/// internal proxy always uses 6443.
pub fn proxy_service_port(input: &ProxyInput<'_>) -> i32 {
    let Some((_, fp)) = input.front_proxy else {
        return 6443;
    };
    if let Some(port) = fp.external.as_ref().and_then(external_service_port) {
        return port;
    }
    if !fp.external_hostname.is_empty() {
        return fp
            .external_hostname
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse::<i32>().ok())
            .unwrap_or(6443);
    }
    external_service_port(&input.root_shard_spec.external).unwrap_or(6443)
}

/// Service `<fp>-front-proxy` / `<rs>-proxy`: one port `https` -> 6443.
pub fn render_proxy_service(input: &ProxyInput<'_>) -> Service {
    let template = match (input.front_proxy, &input.root_shard_spec.proxy) {
        (Some((_, fp)), _) => fp.service_template.as_ref(),
        (None, Some(p)) => p.service_template.as_ref(),
        (None, None) => None,
    };
    let (instance, component) = input.instance();
    workload_service(
        &component.workload_name(instance),
        input.namespace,
        input.labels(),
        vec![https_port("https", proxy_service_port(input), 6443)],
        template,
    )
}

/// The groups joined by commas and quoted as Go's `%q` quotes them.
fn go_quoted(groups: &[String]) -> String {
    kcp_core::go_quote::quote(&groups.join(","))
}
