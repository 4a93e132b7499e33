//! The cache server workload (spec section 5.6): Deployment and Service `<cs>-cache-server`,
//! rendered from a CompiledCacheServer.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, EmptyDirVolumeSource, Service, Volume};

use crate::api::CompiledCacheServer;
use crate::render::deployment::{self as d, PodParts, Workload};
use crate::render::names::{self, Component};
use crate::render::service::{https_port, workload_service};

const EMBEDDED_ETCD_PATH: &str = "/var/etcd";
const ETCD_CERT_PATH: &str = "/etc/cache-server/etcd";

fn cache_args(ccs: &CompiledCacheServer, client_ca: bool) -> Vec<String> {
    let spec = &ccs.spec.cache_server;
    let mut args = vec![
        "--tls-cert-file=/etc/cache-server/tls/server/tls.crt".to_owned(),
        "--tls-private-key-file=/etc/cache-server/tls/server/tls.key".to_owned(),
        "--root-directory=".to_owned(),
    ];
    if client_ca {
        args.push("--client-ca-file=/etc/cache-server/tls/ca/root/tls.crt".to_owned());
    }
    match &spec.etcd {
        None => args.push(format!("--embedded-etcd-directory={EMBEDDED_ETCD_PATH}")),
        Some(etcd) => {
            args.push(format!("--etcd-servers={}", etcd.endpoints.join(",")));
            if !etcd.prefix.is_empty() {
                args.push(format!("--etcd-prefix={}", etcd.prefix));
            }
            if etcd.tls_config.is_some() {
                args.extend([
                    format!("--etcd-cafile={ETCD_CERT_PATH}/ca.crt"),
                    format!("--etcd-certfile={ETCD_CERT_PATH}/tls.crt"),
                    format!("--etcd-keyfile={ETCD_CERT_PATH}/tls.key"),
                ]);
            }
        }
    }
    args.extend(d::logging_args(spec.logging.as_ref()));
    args.extend(spec.extra_args.iter().cloned());
    args
}

fn cache_parts(ccs: &CompiledCacheServer, name: &str, client_ca: bool) -> PodParts {
    let spec = &ccs.spec.cache_server;
    let mut parts = PodParts {
        args: cache_args(ccs, client_ca),
        ..PodParts::default()
    };
    if spec.etcd.is_none() {
        parts.volumes.push(Volume {
            name: "etcd-scratch".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
        parts
            .mounts
            .push(d::mount("etcd-scratch", EMBEDDED_ETCD_PATH, false));
    }
    d::apply_extra_volumes(&mut parts, &spec.extra_volumes, &spec.extra_volume_mounts);
    parts.secret(
        "serving-cert",
        &format!("{name}-server"),
        "/etc/cache-server/tls/server",
        true,
    );
    if client_ca {
        let ca = names::root_ca_secret_name(
            name,
            spec.certificates
                .ca_secret_ref
                .as_ref()
                .map(|r| r.name.as_str()),
        );
        parts.secret("client-ca", &ca, "/etc/cache-server/tls/ca/root", true);
    }
    if let Some(tls) = spec.etcd.as_ref().and_then(|e| e.tls_config.as_ref()) {
        parts.secret("etcd-cert", &tls.secret_ref.name, ETCD_CERT_PATH, true);
    }
    parts
}

/// The replicas of a cache server: with the embedded etcd at most 1 (the live value, clamped;
/// 1 on creation), with an external etcd `spec.replicas` or 2.
pub fn cache_server_replicas(ccs: &CompiledCacheServer, live: Option<i32>) -> i32 {
    match &ccs.spec.cache_server.etcd {
        None => live.unwrap_or(1).min(1),
        Some(_) => ccs.spec.cache_server.replicas.unwrap_or(2),
    }
}

/// Deployment `<cs>-cache-server`: container `cache-server` running `/cache-server`, requests
/// cpu 500m / memory 1Gi, limits cpu 1 / memory 2Gi (merged with `spec.resources`, a kcp-rs
/// addition), front-proxy-style probes, the embedded etcd's scratch volume or the external
/// etcd's flags, the serving certificate and (kcp `~0.29.2 || ~0.30.2 || >=0.31.0`) the root CA
/// for client authentication. The root CA reads `caSecretRef` when set.
pub fn render_cache_server_deployment(ccs: &CompiledCacheServer) -> Deployment {
    let name = ccs.metadata.name.as_deref().unwrap_or_default();
    let ns = ccs.metadata.namespace.as_deref().unwrap_or_default();
    let spec = &ccs.spec.cache_server;
    let (image, pull_secrets, version) = d::image_settings(spec.image.as_ref());
    let client_ca = d::supports_cache_client_ca(version.as_ref());
    let mut resources = d::resources(("500m", "1Gi"), ("1", "2Gi"));
    d::merge_resources(&mut resources, spec.resources.as_ref());
    let container = Container {
        name: "cache-server".to_owned(),
        image: Some(image),
        command: Some(vec!["/cache-server".to_owned()]),
        resources: Some(resources),
        security_context: Some(d::security_context()),
        ports: Some(d::https_port()),
        readiness_probe: Some(d::probe("/readyz", 15, 10, 10, 3)),
        liveness_probe: Some(d::probe("/livez", 15, 10, 10, 3)),
        ..Container::default()
    };
    let workload = Workload {
        name: Component::CacheServer.workload_name(name),
        namespace: ns.to_owned(),
        labels: names::resource_labels(name, Component::CacheServer),
        replicas: Some(cache_server_replicas(ccs, None)),
        image_pull_secrets: pull_secrets,
        template: spec.deployment_template.as_ref(),
    };
    d::assemble(workload, container, cache_parts(ccs, name, client_ca))
}

/// Service `<cs>-cache-server`: port `https` 6443.
pub fn render_cache_server_service(ccs: &CompiledCacheServer) -> Service {
    let name = ccs.metadata.name.as_deref().unwrap_or_default();
    let ns = ccs.metadata.namespace.as_deref().unwrap_or_default();
    workload_service(
        &Component::CacheServer.workload_name(name),
        ns,
        names::resource_labels(name, Component::CacheServer),
        vec![https_port("https", 6443, 6443)],
        ccs.spec.cache_server.service_template.as_ref(),
    )
}
