//! The virtual workspace server workload (spec section 5.7): Deployment and Service
//! `<vw>-virtual-workspace`, rendered from a CompiledVirtualWorkspace.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, LocalObjectReference, Service, Volume, VolumeMount};

use crate::api::{CompiledVirtualWorkspace, VirtualWorkspaceSpec};
use crate::render::deployment::{self as d, PodParts, Workload};
use crate::render::names::{self, Component};
use crate::render::rootshard::{
    ca_path, cache_mounts, cert_path, default_shard_resources, kubeconfig_path,
};
use crate::render::service::{https_port, workload_service};

/// The entrypoint of kcp's own virtual-workspaces server.
pub const DEFAULT_COMMAND: &str = "/virtual-workspaces";

/// The effective cache: the target Shard's `cache.ref`, else the RootShard's.
pub fn effective_cache(cvw: &CompiledVirtualWorkspace) -> Option<&str> {
    cvw.spec
        .shard
        .as_ref()
        .and_then(|s| s.spec.cache.as_ref())
        .and_then(|c| c.reference.as_ref())
        .or(cvw.spec.root_shard.spec.cache.reference.as_ref())
        .map(|r| r.name.as_str())
        .filter(|n| !n.is_empty())
}

fn vw_args(cvw: &CompiledVirtualWorkspace) -> Vec<String> {
    let spec = &cvw.spec.virtual_workspace;
    let kubeconfig = if spec.kubeconfig_secret_ref.is_some() {
        "/etc/kcp/server-kubeconfig".to_owned()
    } else {
        kubeconfig_path("logical-cluster-admin")
    };
    let mut args = vec![
        format!("--client-ca-file={}/tls.crt", ca_path("client")),
        format!("--tls-private-key-file={}/tls.key", cert_path("server")),
        format!("--tls-cert-file={}/tls.crt", cert_path("server")),
        "--bind-address=0.0.0.0".to_owned(),
        "--secure-port=6443".to_owned(),
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
        format!("--kubeconfig={kubeconfig}/kubeconfig"),
        "--shard-external-url=https://127.0.0.1:6443".to_owned(),
    ];
    if effective_cache(cvw).is_some() {
        args.push("--cache-kubeconfig=/etc/cache-server/kubeconfig/kubeconfig".to_owned());
    }
    args.extend(d::logging_args(spec.logging.as_ref()));
    args.extend(spec.extra_args.iter().cloned());
    args
}

/// Mounts shared by every container, and the admin fallback credentials.
fn shared_and_admin(cvw: &CompiledVirtualWorkspace, name: &str) -> (PodParts, PodParts) {
    let rs = &cvw.spec.root_shard;
    let spec = &cvw.spec.virtual_workspace;
    let mut shared = PodParts::default();
    let root_ca = names::root_ca_secret_name(
        &rs.name,
        rs.spec
            .certificates
            .ca_secret_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    shared.secret("kcp-ca", &root_ca, &ca_path("root"), true);
    for ca in ["server", "requestheader-client"] {
        shared.secret(
            &format!("{ca}-ca"),
            &names::root_shard_ca_name(&rs.name, ca),
            &ca_path(ca),
            true,
        );
    }
    let client_ca =
        if rs.spec.common.client_ca_bundle_ref.is_some() || spec.client_ca_bundle_ref.is_some() {
            format!("{name}-merged-client-ca")
        } else {
            names::root_shard_ca_name(&rs.name, "client")
        };
    shared.secret("client-ca", &client_ca, &ca_path("client"), true);
    shared.secret(
        "server-cert",
        &format!("{name}-server"),
        &cert_path("server"),
        true,
    );
    if let Some(cache) = effective_cache(cvw) {
        for (volume, secret, path) in cache_mounts(cache) {
            shared.secret(&volume, &secret, &path, true);
        }
    }
    let target = cvw
        .spec
        .shard
        .as_ref()
        .map_or(rs.name.as_str(), |s| s.name.as_str());
    let mut admin = PodParts::default();
    admin.secret(
        "logical-cluster-admin-kubeconfig",
        &format!("{target}-logical-cluster-admin-kubeconfig"),
        &kubeconfig_path("logical-cluster-admin"),
        true,
    );
    admin.secret(
        "client-cert",
        &format!("{name}-client"),
        &cert_path("logical-cluster-admin"),
        true,
    );
    (shared, admin)
}

/// The mounts of one container: the shared ones, then its own kubeconfig Secret (or the admin
/// fallback), then its extra mounts; new volumes are appended to `volumes`.
fn container_mounts(
    shared: &PodParts,
    admin: &PodParts,
    own: Option<(&LocalObjectReference, String, &str)>,
    extra: &[VolumeMount],
    volumes: &mut Vec<Volume>,
) -> Vec<VolumeMount> {
    let mut mounts = shared.mounts.clone();
    match own {
        None => mounts.extend(admin.mounts.iter().cloned()),
        Some((secret, volume, path)) => {
            volumes.push(d::secret_volume(&volume, &secret.name));
            mounts.push(d::mount(&volume, path, true));
        }
    }
    mounts.extend_from_slice(extra);
    mounts
}

/// The init containers of `spec`: each inherits the shared mounts (and, without a kubeconfig
/// Secret of its own, the admin fallback) and `image` unless it names one. Its own kubeconfig
/// volume and image pull secrets are appended to `volumes` and `pull_secrets`, then, after
/// every init container, the volumes they declare.
fn init_containers(
    spec: &VirtualWorkspaceSpec,
    image: &str,
    shared: &PodParts,
    admin: &PodParts,
    pull_secrets: &mut Vec<LocalObjectReference>,
    volumes: &mut Vec<Volume>,
) -> Vec<Container> {
    let mut init_containers = Vec::new();
    let mut init_volumes = Vec::new();
    for init in &spec.init_containers {
        let init_image = match &init.image {
            Some(i) => {
                let (img, secrets, _) = d::image_settings(Some(i));
                pull_secrets.extend(secrets);
                img
            }
            None => image.to_owned(),
        };
        init_volumes.extend(init.volumes.iter().cloned());
        let own = init.kubeconfig_secret_ref.as_ref().map(|r| {
            (
                r,
                format!("init-{}-kubeconfig", init.name),
                "/etc/kcp/init-kubeconfig",
            )
        });
        let mut resources = default_shard_resources();
        d::merge_resources(&mut resources, init.resources.as_ref());
        init_containers.push(Container {
            name: init.name.clone(),
            image: Some(init_image),
            command: (!init.command.is_empty()).then(|| init.command.clone()),
            args: (!init.args.is_empty()).then(|| init.args.clone()),
            volume_mounts: Some(container_mounts(
                shared,
                admin,
                own,
                &init.volume_mounts,
                volumes,
            )),
            resources: Some(resources),
            ..Container::default()
        });
    }
    volumes.extend(init_volumes);
    init_containers
}

/// The server container `kcp`: `spec.command` or [`DEFAULT_COMMAND`], with the shards'
/// container defaults; a custom command keeps upstream's probe-less container.
fn server_container(spec: &VirtualWorkspaceSpec, image: String) -> Container {
    let custom = !spec.command.is_empty();
    let mut resources = default_shard_resources();
    d::merge_resources(&mut resources, spec.resources.as_ref());
    let mut container = Container {
        name: "kcp".to_owned(),
        image: Some(image),
        command: Some(if custom {
            spec.command.clone()
        } else {
            vec![DEFAULT_COMMAND.to_owned()]
        }),
        resources: Some(resources),
        ..Container::default()
    };
    d::apply_shard_container_defaults(&mut container);
    if custom {
        container.startup_probe = None;
        container.readiness_probe = None;
        container.liveness_probe = None;
    }
    container
}

/// Deployment `<vw>-virtual-workspace`: the server container `kcp` (`spec.command` or
/// `/virtual-workspaces`), init containers with inherited mounts, volumes de-duplicated by
/// name (first wins). Unlike upstream (spec section 9 item 10), kcp's own server gets the
/// shards' probes; a custom `command` keeps upstream's probe-less container.
pub fn render_virtual_workspace_deployment(cvw: &CompiledVirtualWorkspace) -> Deployment {
    let name = cvw.metadata.name.as_deref().unwrap_or_default();
    let ns = cvw.metadata.namespace.as_deref().unwrap_or_default();
    let spec = &cvw.spec.virtual_workspace;
    let (image, mut pull_secrets, _) = d::image_settings(spec.image.as_ref());
    let (shared, admin) = shared_and_admin(cvw, name);
    let mut volumes = spec.extra_volumes.clone();
    volumes.extend(shared.volumes.iter().cloned());
    volumes.extend(admin.volumes.iter().cloned());
    let own = spec.kubeconfig_secret_ref.as_ref().map(|r| {
        (
            r,
            "server-kubeconfig".to_owned(),
            "/etc/kcp/server-kubeconfig",
        )
    });
    let server_mounts = container_mounts(
        &shared,
        &admin,
        own,
        &spec.extra_volume_mounts,
        &mut volumes,
    );
    let init_containers = init_containers(
        spec,
        &image,
        &shared,
        &admin,
        &mut pull_secrets,
        &mut volumes,
    );
    let mut seen = std::collections::BTreeSet::new();
    volumes.retain(|v| seen.insert(v.name.clone()));
    let container = server_container(spec, image);
    let parts = PodParts {
        args: vw_args(cvw),
        volumes,
        mounts: server_mounts,
    };
    let workload = Workload {
        name: Component::VirtualWorkspace.workload_name(name),
        namespace: ns.to_owned(),
        labels: names::resource_labels(name, Component::VirtualWorkspace),
        replicas: spec.replicas,
        image_pull_secrets: pull_secrets,
        template: spec.deployment_template.as_ref(),
    };
    let mut deployment = d::assemble(workload, container, parts);
    if let Some(pod) = deployment
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
    {
        pod.init_containers = (!init_containers.is_empty()).then_some(init_containers);
    }
    deployment
}

/// Service `<vw>-virtual-workspace`: port `https` 6443.
pub fn render_virtual_workspace_service(cvw: &CompiledVirtualWorkspace) -> Service {
    let name = cvw.metadata.name.as_deref().unwrap_or_default();
    let ns = cvw.metadata.namespace.as_deref().unwrap_or_default();
    workload_service(
        &Component::VirtualWorkspace.workload_name(name),
        ns,
        names::resource_labels(name, Component::VirtualWorkspace),
        vec![https_port("https", 6443, 6443)],
        cvw.spec.virtual_workspace.service_template.as_ref(),
    )
}
