//! The shard workload (spec section 5.3): Deployment and Service `<s>-shard-kcp`, rendered
//! from a CompiledShard.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;

use crate::api::CompiledShard;
use crate::render::deployment::{self as d, PodParts};
use crate::render::names::{self, Component};
use crate::render::rootshard::{
    Mount, ca_path, cache_mounts, cert_path, kubeconfig_path, shard_base_args, shard_workload,
    virtual_workspace_args,
};
use crate::render::service::{https_port, workload_service};

/// The effective cache server of a shard: its own `cache.ref`, else the RootShard's.
pub fn effective_cache(cs: &CompiledShard) -> Option<&str> {
    cs.spec
        .shard
        .cache
        .as_ref()
        .and_then(|c| c.reference.as_ref())
        .or(cs.spec.root_shard.spec.cache.reference.as_ref())
        .map(|r| r.name.as_str())
        .filter(|n| !n.is_empty())
}

/// The Secret mounts of a shard's kcp container, in upstream's order: the root CA, three
/// kubeconfigs, the RootShard's CAs, the client CA, the shard's certificates, the merged CA
/// bundle and the cache server's. Its length is that list, one mount after another, kept in
/// one place so the order can be compared with upstream's at a glance.
fn shard_mounts(cs: &CompiledShard, name: &str, mounts_proxy: bool) -> Vec<Mount> {
    let rs = &cs.spec.root_shard;
    let shard = &cs.spec.shard.common;
    let root_ca = names::root_ca_secret_name(
        &rs.name,
        rs.spec
            .certificates
            .ca_secret_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    let mut mounts: Vec<Mount> = vec![("kcp-ca".into(), root_ca, ca_path("root"))];
    for cert in [
        "client",
        "logical-cluster-admin",
        "external-logical-cluster-admin",
    ] {
        mounts.push((
            format!("{cert}-kubeconfig"),
            format!("{name}-{cert}-kubeconfig"),
            kubeconfig_path(cert),
        ));
    }
    for ca in ["server", "service-account", "requestheader-client"] {
        mounts.push((
            format!("{ca}-ca"),
            names::root_shard_ca_name(&rs.name, ca),
            ca_path(ca),
        ));
    }
    let client_ca =
        if rs.spec.common.client_ca_bundle_ref.is_some() || shard.client_ca_bundle_ref.is_some() {
            format!("{name}-merged-client-ca")
        } else {
            names::root_shard_ca_name(&rs.name, "client")
        };
    mounts.push(("client-ca".into(), client_ca, ca_path("client")));
    let mut certs = vec![
        "server",
        "service-account",
        "client",
        "logical-cluster-admin",
        "external-logical-cluster-admin",
    ];
    if mounts_proxy {
        certs.push("mounts-proxy");
    }
    for cert in certs {
        mounts.push((
            format!("{cert}-cert"),
            format!("{name}-{cert}"),
            cert_path(cert),
        ));
    }
    if shard.ca_bundle_secret_ref.is_some() {
        mounts.push((
            "ca-bundle".into(),
            format!("{name}-merged-ca-bundle"),
            ca_path("ca-bundle"),
        ));
    }
    if let Some(cache) = effective_cache(cs) {
        mounts.extend(cache_mounts(cache));
    }
    mounts
}

/// The command-line flags of a shard's kcp container, in upstream's order. Its length is a
/// flat list of flags, one per line, kept in one place so it can be compared with upstream's
/// at a glance.
fn shard_args(cs: &CompiledShard, name: &str, ns: &str, mounts_proxy: bool) -> Vec<String> {
    let rs = &cs.spec.root_shard.spec;
    let common = &cs.spec.shard.common;
    let cache_kubeconfig = if effective_cache(cs).is_some() {
        "/etc/cache-server/kubeconfig".to_owned()
    } else {
        kubeconfig_path("client")
    };
    let mut args = shard_base_args();
    args.extend([
        format!("--shard-name={name}"),
        format!(
            "--shard-base-url={}",
            names::base_url(
                Component::Shard,
                name,
                ns,
                &common.cluster_domain,
                &common.shard_base_url
            )
        ),
        format!(
            "--shard-external-url=https://{}:{}",
            rs.external.hostname, rs.external.port
        ),
        format!(
            "--external-hostname={}",
            names::external_address(&rs.external)
        ),
        format!("--cache-kubeconfig={cache_kubeconfig}/kubeconfig"),
        format!(
            "--root-shard-kubeconfig-file={}/kubeconfig",
            kubeconfig_path("client")
        ),
        format!(
            "--logical-cluster-admin-kubeconfig={}/kubeconfig",
            kubeconfig_path("logical-cluster-admin")
        ),
        format!(
            "--external-logical-cluster-admin-kubeconfig={}/kubeconfig",
            kubeconfig_path("external-logical-cluster-admin")
        ),
        "--batteries-included=workspace-types".to_owned(),
        "--root-directory=".to_owned(),
        "--enable-leader-election=true".to_owned(),
        "--logging-format=json".to_owned(),
    ]);
    if mounts_proxy {
        args.push(format!(
            "--mount-proxy-client-cert-file={}/tls.crt",
            cert_path("mounts-proxy")
        ));
        args.push(format!(
            "--mount-proxy-client-key-file={}/tls.key",
            cert_path("mounts-proxy")
        ));
    }
    args.extend(d::logging_args(common.logging.as_ref()));
    args.extend(common.extra_args.iter().cloned());
    if let Some(vw) = &cs.spec.virtual_workspace {
        args.extend(virtual_workspace_args(
            &vw.spec.external.hostname,
            vw.spec.external.port,
        ));
    }
    args
}

/// Deployment `<s>-shard-kcp`, built like the root shard's with the shard's certificates,
/// the RootShard's CAs, three kubeconfig mounts and the version-gated mounts-proxy
/// certificate (`~0.31.6 || >=0.32.3`).
pub fn render_shard_deployment(cs: &CompiledShard) -> Deployment {
    let name = cs.metadata.name.as_deref().unwrap_or_default();
    let ns = cs.metadata.namespace.as_deref().unwrap_or_default();
    let common = &cs.spec.shard.common;
    let (_, _, version) = d::image_settings(common.image.as_ref());
    let mounts_proxy = d::supports_mount_proxy(version.as_ref());
    let mut parts = PodParts {
        args: shard_args(cs, name, ns, mounts_proxy),
        ..PodParts::default()
    };
    for (volume, secret, path) in shard_mounts(cs, name, mounts_proxy) {
        parts.secret(&volume, &secret, &path, true);
    }
    shard_workload(common.clone(), parts, Component::Shard, name, ns, |p| {
        d::apply_auth(
            p,
            common.auth.as_ref(),
            &cs.spec.root_shard.name,
            &cs.spec.shards,
        )
    })
}

/// Service `<s>-shard-kcp`: the root shard's shape (6443, and 6444 without an external
/// VirtualWorkspace).
pub fn render_shard_service(cs: &CompiledShard) -> Service {
    let name = cs.metadata.name.as_deref().unwrap_or_default();
    let ns = cs.metadata.namespace.as_deref().unwrap_or_default();
    let common = &cs.spec.shard.common;
    let mut ports = vec![https_port("https", 6443, 6443)];
    if common.kcp_virtual_workspace.is_none() {
        ports.push(https_port("https-virtual-workspaces", 6444, 6444));
    }
    workload_service(
        &Component::Shard.workload_name(name),
        ns,
        names::resource_labels(name, Component::Shard),
        ports,
        common.service_template.as_ref(),
    )
}
