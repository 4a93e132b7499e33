//! The root shard workload (spec section 5.2): Deployment and Service `<rs>-kcp`, rendered
//! from a CompiledRootShard.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Service};

use crate::api::CompiledRootShard;
use crate::render::deployment::{self as d, PodParts, Workload};
use crate::render::names::{self, Component};
use crate::render::service::{https_port, workload_service};

/// The Secret mounts shared by root shard and shard: `(volume, secret, path)`.
pub(crate) type Mount = (String, String, String);

/// Requests cpu 1 / memory 1Gi, limits cpu 2 / memory 2Gi.
pub fn default_shard_resources() -> k8s_openapi::api::core::v1::ResourceRequirements {
    d::resources(("1", "1Gi"), ("2", "2Gi"))
}

pub(crate) fn ca_path(ca: &str) -> String {
    format!("/etc/kcp/tls/ca/{ca}")
}

pub(crate) fn cert_path(cert: &str) -> String {
    format!("/etc/kcp/tls/{cert}")
}

pub(crate) fn kubeconfig_path(cert: &str) -> String {
    format!("/etc/kcp/{cert}-kubeconfig")
}

/// The CA / request-header / TLS / ServiceAccount / shard-client argument block of every shard.
pub(crate) fn shard_base_args() -> Vec<String> {
    vec![
        format!("--root-ca-file={}/tls.crt", ca_path("root")),
        format!("--client-ca-file={}/tls.crt", ca_path("client")),
        format!(
            "--requestheader-client-ca-file={}/tls.crt",
            ca_path("requestheader-client")
        ),
        format!(
            "--requestheader-allowed-names={},{}",
            names::FRONT_PROXY_COMMON_NAME,
            names::ROOT_SHARD_PROXY_COMMON_NAME
        ),
        "--requestheader-username-headers=X-Remote-User".to_owned(),
        "--requestheader-group-headers=X-Remote-Group".to_owned(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".to_owned(),
        format!("--tls-private-key-file={}/tls.key", cert_path("server")),
        format!("--tls-cert-file={}/tls.crt", cert_path("server")),
        format!(
            "--service-account-key-file={}/tls.crt",
            cert_path("service-account")
        ),
        format!(
            "--service-account-private-key-file={}/tls.key",
            cert_path("service-account")
        ),
        "--service-account-lookup=false".to_owned(),
        format!("--shard-client-key-file={}/tls.key", cert_path("client")),
        format!("--shard-client-cert-file={}/tls.crt", cert_path("client")),
    ]
}

/// The three cache server mounts of a shard with cache `cache`.
pub(crate) fn cache_mounts(cache: &str) -> Vec<Mount> {
    vec![
        (
            "cache-server-kubeconfig".into(),
            format!("{cache}-kubeconfig"),
            "/etc/cache-server/kubeconfig".into(),
        ),
        (
            "cache-server-ca".into(),
            format!("{cache}-ca"),
            "/etc/cache-server/tls/ca/root".into(),
        ),
        (
            "cache-server-client-cert".into(),
            format!("{cache}-client-certificate"),
            "/etc/cache-server/tls/client-certificate".into(),
        ),
    ]
}

/// The arguments switching a shard to an external kcp VirtualWorkspace.
pub(crate) fn virtual_workspace_args(host: &str, port: u32) -> Vec<String> {
    vec![
        "--run-virtual-workspaces=false".to_owned(),
        format!("--shard-virtual-workspace-url=https://{host}:{port}"),
        format!(
            "--shard-virtual-workspace-ca-file={}/tls.crt",
            ca_path("server")
        ),
    ]
}

fn root_shard_mounts(crs: &CompiledRootShard, name: &str) -> Vec<Mount> {
    let spec = &crs.spec.root_shard;
    let root_ca = names::root_ca_secret_name(
        name,
        spec.certificates
            .ca_secret_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    let mut mounts: Vec<Mount> = vec![("kcp-ca".into(), root_ca, ca_path("root"))];
    for cert in ["logical-cluster-admin", "external-logical-cluster-admin"] {
        mounts.push((
            format!("{cert}-kubeconfig"),
            format!("{name}-{cert}-kubeconfig"),
            kubeconfig_path(cert),
        ));
    }
    for ca in ["server", "service-account", "requestheader-client"] {
        mounts.push((
            format!("{ca}-ca"),
            names::root_shard_ca_name(name, ca),
            ca_path(ca),
        ));
    }
    let client_ca = if spec.common.client_ca_bundle_ref.is_some() {
        format!("{name}-merged-client-ca")
    } else {
        names::root_shard_ca_name(name, "client")
    };
    mounts.push(("client-ca".into(), client_ca, ca_path("client")));
    for cert in [
        "server",
        "service-account",
        "client",
        "logical-cluster-admin",
        "external-logical-cluster-admin",
    ] {
        mounts.push((
            format!("{cert}-cert"),
            format!("{name}-{cert}"),
            cert_path(cert),
        ));
    }
    if spec.common.ca_bundle_secret_ref.is_some() {
        mounts.push((
            "ca-bundle".into(),
            format!("{name}-merged-ca-bundle"),
            ca_path("ca-bundle"),
        ));
    }
    if let Some(cache) = &spec.cache.reference {
        mounts.extend(cache_mounts(&cache.name));
    }
    mounts
}

fn root_shard_args(crs: &CompiledRootShard, name: &str, ns: &str) -> Vec<String> {
    let spec = &crs.spec.root_shard;
    let common = &spec.common;
    let mut args = shard_base_args();
    args.extend([
        format!(
            "--shard-base-url={}",
            names::base_url(
                Component::RootShard,
                name,
                ns,
                &common.cluster_domain,
                &common.shard_base_url
            )
        ),
        format!(
            "--shard-external-url=https://{}:{}",
            spec.external.hostname, spec.external.port
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
    args.extend(d::logging_args(common.logging.as_ref()));
    args.extend(common.extra_args.iter().cloned());
    if spec.cache.reference.is_some() {
        args.push("--cache-kubeconfig=/etc/cache-server/kubeconfig/kubeconfig".to_owned());
    }
    if let Some(vw) = &crs.spec.virtual_workspace {
        args.extend(virtual_workspace_args(
            &vw.spec.external.hostname,
            vw.spec.external.port,
        ));
    }
    args
}

/// Deployment `<rs>-kcp`: one container `kcp` running `/kcp start` with the root shard's
/// arguments, mounts, probes, security context, resources, etcd/audit/authorization/auth
/// configuration and deploymentTemplate.
///
/// The root CA volume `kcp-ca` reads `certificates.caSecretRef` when set (upstream always reads
/// `<rs>-ca`, spec section 9 item 1).
pub fn render_root_shard_deployment(crs: &CompiledRootShard) -> Deployment {
    let name = crs.metadata.name.as_deref().unwrap_or_default();
    let ns = crs.metadata.namespace.as_deref().unwrap_or_default();
    let common = &crs.spec.root_shard.common;
    let mut parts = PodParts {
        args: root_shard_args(crs, name, ns),
        ..PodParts::default()
    };
    for (volume, secret, path) in root_shard_mounts(crs, name) {
        parts.secret(&volume, &secret, &path, true);
    }
    shard_workload(
        crs.spec.root_shard.common.clone(),
        parts,
        Component::RootShard,
        name,
        ns,
        |p| d::apply_auth(p, common.auth.as_ref(), name, &crs.spec.shards),
    )
}

/// The part shared by root shard and shard Deployments: container, common shard config
/// (resources, replicas, image, etcd, audit, authorization, extra volumes), then auth.
pub(crate) fn shard_workload(
    common: crate::api::CommonShardSpec,
    mut parts: PodParts,
    component: Component,
    name: &str,
    ns: &str,
    auth: impl FnOnce(&mut PodParts),
) -> Deployment {
    let (image, pull_secrets, _) = d::image_settings(common.image.as_ref());
    let mut resources = default_shard_resources();
    d::merge_resources(&mut resources, common.resources.as_ref());
    let mut container = Container {
        name: "kcp".to_owned(),
        image: Some(image),
        command: Some(vec!["/kcp".to_owned(), "start".to_owned()]),
        resources: Some(resources),
        ..Container::default()
    };
    d::apply_shard_container_defaults(&mut container);
    d::apply_etcd(&mut parts, &common.etcd);
    d::apply_audit(&mut parts, common.audit.as_ref());
    d::apply_authorization(&mut parts, common.authorization.as_ref());
    d::apply_extra_volumes(
        &mut parts,
        &common.extra_volumes,
        &common.extra_volume_mounts,
    );
    auth(&mut parts);
    let workload = Workload {
        name: component.workload_name(name),
        namespace: ns.to_owned(),
        labels: names::resource_labels(name, component),
        replicas: common.replicas,
        image_pull_secrets: pull_secrets,
        template: common.deployment_template.as_ref(),
    };
    d::assemble(workload, container, parts)
}

/// Service `<rs>-kcp`: port `https` 6443, plus `https-virtual-workspaces` 6444 when the root
/// shard serves its own virtual workspaces.
pub fn render_root_shard_service(crs: &CompiledRootShard) -> Service {
    let name = crs.metadata.name.as_deref().unwrap_or_default();
    let ns = crs.metadata.namespace.as_deref().unwrap_or_default();
    let common = &crs.spec.root_shard.common;
    let mut ports = vec![https_port("https", 6443, 6443)];
    if common.kcp_virtual_workspace.is_none() {
        ports.push(https_port("https-virtual-workspaces", 6444, 6444));
    }
    workload_service(
        &Component::RootShard.workload_name(name),
        ns,
        names::resource_labels(name, Component::RootShard),
        ports,
        common.service_template.as_ref(),
    )
}
