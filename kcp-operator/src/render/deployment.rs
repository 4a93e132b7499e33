//! The Deployment pieces every workload shares (spec sections 5.2 and 5.8): images and version
//! gates, Secret mounts, probes, the security context, resources, and the etcd, audit,
//! authorization, authentication, extra-volume and deploymentTemplate mutations.
//!
//! Renderers collect arguments, volumes and mounts in a [`PodParts`] in upstream's order, then
//! [`assemble`] builds the Deployment around one container.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapVolumeSource, Container, ContainerPort, HTTPGetAction,
    LocalObjectReference, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile,
    SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::{
    AuditSpec, AuditWebhookSpec, AuthSpec, AuthenticationWebhookSpec, AuthorizationSpec,
    DeploymentTemplate, EtcdConfig, IMAGE_REPOSITORY, IMAGE_TAG, ImageSpec, LoggingSpec,
    OidcConfiguration, PodSpecTemplate, TokenAuthFileSpec,
};
use crate::render::{duration, merge_maps};

/// The image reference, pull secrets and parsed version of an image spec (defaults
/// `ghcr.io/kcp-dev/kcp:v0.32.3`). The version is `None` when the tag is not a version, which
/// the version gates treat as "newest".
pub fn image_settings(
    spec: Option<&ImageSpec>,
) -> (String, Vec<LocalObjectReference>, Option<semver::Version>) {
    let repository = spec
        .map(|s| s.repository.as_str())
        .filter(|r| !r.is_empty())
        .unwrap_or(IMAGE_REPOSITORY);
    let tag = spec
        .map(|s| s.tag.as_str())
        .filter(|t| !t.is_empty())
        .unwrap_or(IMAGE_TAG);
    let pull_secrets = spec
        .map(|s| s.image_pull_secrets.clone())
        .unwrap_or_default();
    (
        format!("{repository}:{tag}"),
        pull_secrets,
        parse_version(tag),
    )
}

/// A lenient semver parse as Masterminds/semver does it: a leading `v`, and missing minor or
/// patch components, are accepted.
pub fn parse_version(tag: &str) -> Option<semver::Version> {
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let (core, rest) = match tag.find(['-', '+']) {
        Some(i) => tag.split_at(i),
        None => (tag, ""),
    };
    let parts = core.split('.').count();
    let padded = match parts {
        1 => format!("{core}.0.0{rest}"),
        2 => format!("{core}.0{rest}"),
        _ => format!("{core}{rest}"),
    };
    semver::Version::parse(&padded).ok()
}

fn satisfies(version: Option<&semver::Version>, requirements: &[&str]) -> bool {
    let Some(version) = version else { return true };
    let mut release = version.clone();
    release.pre = semver::Prerelease::EMPTY;
    requirements
        .iter()
        .any(|r| semver::VersionReq::parse(r).is_ok_and(|req| req.matches(&release)))
}

/// Whether kcp supports the mounts-proxy and front-proxy request-header flags:
/// `~0.31.6 || >=0.32.3` (or an unparsable tag).
pub fn supports_mount_proxy(version: Option<&semver::Version>) -> bool {
    satisfies(version, &["~0.31.6", ">=0.32.3"])
}

/// Whether the cache server takes `--client-ca-file`: `~0.29.2 || ~0.30.2 || >=0.31.0`.
pub fn supports_cache_client_ca(version: Option<&semver::Version>) -> bool {
    satisfies(version, &["~0.29.2", "~0.30.2", ">=0.31.0"])
}

/// `-v=<level>` for a non-zero level.
pub fn logging_args(logging: Option<&LoggingSpec>) -> Vec<String> {
    match logging {
        Some(l) if l.level != 0 => vec![format!("-v={}", l.level)],
        _ => Vec::new(),
    }
}

/// Arguments, volumes and container mounts collected in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodParts {
    /// Container arguments.
    pub args: Vec<String>,
    /// Pod volumes.
    pub volumes: Vec<Volume>,
    /// Mounts of the main container.
    pub mounts: Vec<VolumeMount>,
}

impl PodParts {
    /// Mounts Secret `secret` as volume `volume` at `path`.
    pub fn secret(&mut self, volume: &str, secret: &str, path: &str, read_only: bool) {
        self.volumes.push(secret_volume(volume, secret));
        self.mounts.push(mount(volume, path, read_only));
    }

    /// Mounts ConfigMap `config_map` as volume `volume` at `path`, read-only.
    pub fn config_map(&mut self, volume: &str, config_map: &str, path: &str) {
        self.volumes.push(Volume {
            name: volume.to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map.to_owned(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        });
        self.mounts.push(mount(volume, path, true));
    }

    /// Appends arguments.
    pub fn args<I: IntoIterator<Item = String>>(&mut self, args: I) {
        self.args.extend(args);
    }
}

/// A Secret volume.
pub fn secret_volume(volume: &str, secret: &str) -> Volume {
    Volume {
        name: volume.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// A volume mount.
pub fn mount(volume: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        // `false` is Go's zero value and never stored by the API server: leave it out.
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

/// The container security context of every workload: RuntimeDefault seccomp, read-only root
/// file system, no privilege escalation, all capabilities dropped.
pub fn security_context() -> SecurityContext {
    SecurityContext {
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            ..SeccompProfile::default()
        }),
        read_only_root_filesystem: Some(true),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            ..Capabilities::default()
        }),
        ..SecurityContext::default()
    }
}

/// An HTTPS GET probe on port `https`.
pub fn probe(path: &str, initial: i32, period: i32, timeout: i32, failure: i32) -> Probe {
    Probe {
        failure_threshold: Some(failure),
        initial_delay_seconds: Some(initial),
        period_seconds: Some(period),
        success_threshold: Some(1),
        timeout_seconds: Some(timeout),
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("https".to_owned()),
            scheme: Some("HTTPS".to_owned()),
            ..HTTPGetAction::default()
        }),
        ..Probe::default()
    }
}

/// The port `https` 6443/TCP.
pub fn https_port() -> Vec<ContainerPort> {
    vec![ContainerPort {
        name: Some("https".to_owned()),
        container_port: 6443,
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    }]
}

/// The shard container's port, security context and probes (startup `/readyz` 10/5/10/60,
/// readiness `/readyz` 10/10/10/6, liveness `/livez` 10/10/10/6).
pub fn apply_shard_container_defaults(container: &mut Container) {
    container.ports = Some(https_port());
    container.security_context = Some(security_context());
    container.startup_probe = Some(probe("/readyz", 10, 5, 10, 60));
    container.readiness_probe = Some(probe("/readyz", 10, 10, 10, 6));
    container.liveness_probe = Some(probe("/livez", 10, 10, 10, 6));
}

/// Requests and limits from `(cpu, memory)` pairs.
pub fn resources(requests: (&str, &str), limits: (&str, &str)) -> ResourceRequirements {
    let list = |(cpu, mem): (&str, &str)| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(mem.to_owned())),
        ])
    };
    ResourceRequirements {
        requests: Some(list(requests)),
        limits: Some(list(limits)),
        ..ResourceRequirements::default()
    }
}

/// Merges `overrides` into `base` per resource name (spec.resources wins per key).
pub fn merge_resources(base: &mut ResourceRequirements, overrides: Option<&ResourceRequirements>) {
    let Some(o) = overrides else { return };
    if let Some(limits) = &o.limits {
        base.limits
            .get_or_insert_with(BTreeMap::new)
            .extend(limits.clone());
    }
    if let Some(requests) = &o.requests {
        base.requests
            .get_or_insert_with(BTreeMap::new)
            .extend(requests.clone());
    }
}

/// etcd flags, and the client certificate volume `etcd-client-cert` at `/etc/etcd/tls`.
pub fn apply_etcd(parts: &mut PodParts, etcd: &EtcdConfig) {
    parts
        .args
        .push(format!("--etcd-servers={}", etcd.endpoints.join(",")));
    if !etcd.prefix.is_empty() {
        parts.args.push(format!("--etcd-prefix={}", etcd.prefix));
    }
    if let Some(tls) = &etcd.tls_config {
        let path = "/etc/etcd/tls";
        parts.secret("etcd-client-cert", &tls.secret_ref.name, path, true);
        parts.args.extend([
            format!("--etcd-certfile={path}/tls.crt"),
            format!("--etcd-keyfile={path}/tls.key"),
            format!("--etcd-cafile={path}/ca.crt"),
        ]);
    }
}

/// Audit policy and webhook flags and volumes.
pub fn apply_audit(parts: &mut PodParts, audit: Option<&AuditSpec>) {
    let Some(audit) = audit else { return };
    if let Some(cm) = audit.policy.as_ref().and_then(|p| p.config_map.as_ref()) {
        let path = "/etc/kcp/audit/policy";
        parts.config_map("audit-policy", &cm.name, path);
        parts
            .args
            .push(format!("--audit-policy-file={path}/{}", cm.key));
    }
    let Some(w) = &audit.webhook else { return };
    let mut args = audit_webhook_flags(w);
    if !w.config_secret_name.is_empty() {
        let path = "/etc/kcp/audit/webhook";
        args.push(format!("--audit-webhook-config-file={path}/kubeconfig"));
        parts.secret("audit-webhook-config", &w.config_secret_name, path, true);
    }
    parts.args.extend(args);
}

/// The `--audit-webhook-*` flags of the fields that are set, in upstream's order (a flat
/// list of one `if` per field: its length is the number of fields).
fn audit_webhook_flags(w: &AuditWebhookSpec) -> Vec<String> {
    let flag = |name: &str, value: String| format!("--audit-webhook-{name}={value}");
    let mut args = Vec::new();
    let ints = [
        ("batch-buffer-size", w.batch_buffer_size),
        ("batch-max-size", w.batch_max_size),
    ];
    args.extend(
        ints.iter()
            .filter(|(_, v)| *v != 0)
            .map(|(n, v)| flag(n, v.to_string())),
    );
    if let Some(d) = &w.batch_max_wait {
        args.push(flag("batch-max-wait", duration::normalize(d)));
    }
    if w.batch_throttle_burst != 0 {
        args.push(flag(
            "batch-throttle-burst",
            w.batch_throttle_burst.to_string(),
        ));
    }
    if w.batch_throttle_enable {
        args.push("--audit-webhook-batch-throttle-enable".to_owned());
    }
    if !w.batch_throttle_qps.is_empty() {
        args.push(flag("batch-throttle-qps", w.batch_throttle_qps.clone()));
    }
    if let Some(d) = &w.initial_backoff {
        args.push(flag("initial-backoff", duration::normalize(d)));
    }
    if !w.mode.is_empty() {
        args.push(flag("mode", w.mode.clone()));
    }
    if w.truncate_enabled {
        args.push("--audit-webhook-truncate-enabled".to_owned());
    }
    if w.truncate_max_batch_size != 0 {
        args.push(flag(
            "truncate-max-batch-size",
            w.truncate_max_batch_size.to_string(),
        ));
    }
    if w.truncate_max_event_size != 0 {
        // sic: kcp's flag is plural.
        args.push(flag(
            "truncate-max-event-sizes",
            w.truncate_max_event_size.to_string(),
        ));
    }
    if !w.version.is_empty() {
        args.push(flag("version", w.version.clone()));
    }
    args
}

/// Authorization webhook flags and volume.
pub fn apply_authorization(parts: &mut PodParts, authz: Option<&AuthorizationSpec>) {
    let Some(w) = authz.and_then(|a| a.webhook.as_ref()) else {
        return;
    };
    if !w.allow_paths.is_empty() {
        parts.args.push(format!(
            "--authorization-always-allow-paths={}",
            w.allow_paths.join(",")
        ));
    }
    if let Some(d) = &w.cache_authorized_ttl {
        parts.args.push(format!(
            "--authorization-webhook-cache-authorized-ttl={}",
            duration::normalize(d)
        ));
    }
    if let Some(d) = &w.cache_unauthorized_ttl {
        parts.args.push(format!(
            "--authorization-webhook-cache-unauthorized-ttl={}",
            duration::normalize(d)
        ));
    }
    if !w.version.is_empty() {
        parts
            .args
            .push(format!("--authorization-webhook-version={}", w.version));
    }
    if !w.config_secret_name.is_empty() {
        let path = "/etc/kcp/authorization/webhook";
        parts.args.push(format!(
            "--authorization-webhook-config-file={path}/kubeconfig"
        ));
        parts.secret(
            "authorization-webhook-config",
            &w.config_secret_name,
            path,
            true,
        );
    }
}

/// The user's extra volumes and mounts, appended.
pub fn apply_extra_volumes(parts: &mut PodParts, volumes: &[Volume], mounts: &[VolumeMount]) {
    parts.volumes.extend_from_slice(volumes);
    parts.mounts.extend_from_slice(mounts);
}

/// The key of the OIDC CA file when `caFileRef.key` is empty (spec section 9 item 7: upstream
/// documents this default but does not apply it).
pub const DEFAULT_OIDC_CA_KEY: &str = "ca.crt";

/// Authentication flags and volumes: OIDC, webhook, token file, ServiceAccount keys of the
/// root shard and every shard.
pub fn apply_auth(
    parts: &mut PodParts,
    auth: Option<&AuthSpec>,
    root_shard: &str,
    shards: &[String],
) {
    let Some(auth) = auth else { return };
    if let Some(oidc) = &auth.oidc {
        apply_oidc(parts, oidc);
    }
    if let Some(webhook) = &auth.webhook {
        apply_auth_webhook(parts, webhook);
    }
    if let Some(token_file) = &auth.token_auth_file {
        apply_token_auth_file(parts, token_file);
    }
    if auth.service_accounts_enabled() {
        apply_service_account_keys(parts, root_shard, shards);
    }
}

/// The `--oidc-*` flags that are set, and the OIDC CA file's Secret.
fn apply_oidc(parts: &mut PodParts, oidc: &OidcConfiguration) {
    let flags = [
        ("issuer-url", &oidc.issuer_url),
        ("client-id", &oidc.client_id),
        ("groups-claim", &oidc.groups_claim),
        ("username-claim", &oidc.username_claim),
        ("username-prefix", &oidc.username_prefix),
        ("groups-prefix", &oidc.groups_prefix),
    ];
    let mut args: Vec<String> = flags
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| format!("--oidc-{n}={v}"))
        .collect();
    if let Some(ca) = &oidc.ca_file_ref {
        let key = if ca.key.is_empty() {
            DEFAULT_OIDC_CA_KEY
        } else {
            &ca.key
        };
        args.push(format!("--oidc-ca-file=/etc/kcp/tls/oidc/{key}"));
        parts.secret("oidc-ca-file", &ca.name, "/etc/kcp/tls/oidc", true);
    }
    parts.args.extend(args);
}

/// The `--authentication-token-webhook-*` flags that are set, and the webhook's kubeconfig
/// Secret.
fn apply_auth_webhook(parts: &mut PodParts, w: &AuthenticationWebhookSpec) {
    if let Some(d) = &w.cache_authentication_ttl {
        parts.args.push(format!(
            "--authentication-token-webhook-cache-ttl={}",
            duration::normalize(d)
        ));
    }
    if !w.version.is_empty() {
        parts.args.push(format!(
            "--authentication-token-webhook-version={}",
            w.version
        ));
    }
    if !w.config_secret_name.is_empty() {
        let path = "/etc/kcp/authentication/webhook";
        parts.args.push(format!(
            "--authentication-token-webhook-config-file={path}/kubeconfig"
        ));
        parts.secret(
            "authentication-webhook-config",
            &w.config_secret_name,
            path,
            true,
        );
    }
}

/// `--token-auth-file` and its Secret (key `token.csv` unless named).
fn apply_token_auth_file(parts: &mut PodParts, t: &TokenAuthFileSpec) {
    let path = "/etc/kcp/authentication/token";
    let key = if t.key.is_empty() {
        "token.csv"
    } else {
        &t.key
    };
    parts.args.push(format!("--token-auth-file={path}/{key}"));
    parts.secret("token-auth-file", &t.secret_name, path, true);
}

/// The ServiceAccount key Secrets of the root shard and every shard, and their
/// `--service-account-key-file` flags.
fn apply_service_account_keys(parts: &mut PodParts, root_shard: &str, shards: &[String]) {
    let names: Vec<&str> = std::iter::once(root_shard)
        .chain(shards.iter().map(String::as_str))
        .collect();
    for name in &names {
        let secret = format!("{name}-service-account");
        parts.secret(
            &secret,
            &secret,
            &format!("/etc/kcp/tls/{name}/service-account"),
            true,
        );
    }
    parts.args.push("--service-account-lookup=false".to_owned());
    parts.args.extend(
        names.iter().map(|n| {
            format!("--service-account-key-file=/etc/kcp/tls/{n}/service-account/tls.crt")
        }),
    );
}

/// Everything [`assemble`] needs besides the container.
#[derive(Debug, Clone, Default)]
pub struct Workload<'a> {
    /// Deployment name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// The workload labels (Deployment, selector, pod template).
    pub labels: BTreeMap<String, String>,
    /// Replicas: `spec.replicas`, else 2.
    pub replicas: Option<i32>,
    /// Pull secrets from the image spec.
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// The user's deploymentTemplate.
    pub template: Option<&'a DeploymentTemplate>,
}

/// The Deployment: labels and selector, one container (with `parts`' args and mounts), the
/// pod volumes, pull secrets, then the deploymentTemplate merged in.
pub fn assemble(workload: Workload<'_>, mut container: Container, parts: PodParts) -> Deployment {
    container.args = Some(parts.args);
    container.volume_mounts = Some(parts.mounts);
    let mut deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(workload.name),
            namespace: Some(workload.namespace),
            labels: Some(workload.labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(workload.replicas.unwrap_or(2)),
            selector: LabelSelector {
                match_labels: Some(workload.labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(workload.labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    volumes: Some(parts.volumes),
                    image_pull_secrets: (!workload.image_pull_secrets.is_empty())
                        .then_some(workload.image_pull_secrets),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    };
    if let Some(t) = workload.template {
        apply_deployment_template(&mut deployment, t);
    }
    deployment
}

/// Merges a deploymentTemplate into a Deployment: labels and annotations merged (the
/// operator's keys win); pod fields merged into, not replacing, the operator's pod spec (spec
/// section 9 item 6: upstream assigns them wholesale, clearing e.g. the image pull secrets).
pub fn apply_deployment_template(deployment: &mut Deployment, template: &DeploymentTemplate) {
    if let Some(m) = &template.metadata {
        let meta = &mut deployment.metadata;
        meta.annotations = merge_maps(meta.annotations.take(), &m.annotations);
        meta.labels = merge_maps(meta.labels.take(), &m.labels);
    }
    let Some(pod_template) = template.spec.as_ref().and_then(|s| s.template.as_ref()) else {
        return;
    };
    let Some(spec) = deployment.spec.as_mut() else {
        return;
    };
    if let Some(m) = &pod_template.metadata {
        let meta = spec
            .template
            .metadata
            .get_or_insert_with(ObjectMeta::default);
        meta.annotations = merge_maps(meta.annotations.take(), &m.annotations);
        meta.labels = merge_maps(meta.labels.take(), &m.labels);
    }
    if let (Some(pod), Some(t)) = (spec.template.spec.as_mut(), &pod_template.spec) {
        merge_pod_spec(pod, t);
    }
}

fn merge_pod_spec(pod: &mut PodSpec, t: &PodSpecTemplate) {
    if !t.node_selector.is_empty() {
        pod.node_selector
            .get_or_insert_with(BTreeMap::new)
            .extend(t.node_selector.clone());
    }
    if t.affinity.is_some() {
        pod.affinity.clone_from(&t.affinity);
    }
    append_unique(&mut pod.tolerations, &t.tolerations, |a, b| a == b);
    append_unique(&mut pod.host_aliases, &t.host_aliases, |a, b| a.ip == b.ip);
    append_unique(
        &mut pod.image_pull_secrets,
        &t.image_pull_secrets,
        |a, b| a.name == b.name,
    );
    append_unique(
        &mut pod.topology_spread_constraints,
        &t.topology_spread_constraints,
        |a, b| a.topology_key == b.topology_key && a.when_unsatisfiable == b.when_unsatisfiable,
    );
}

fn append_unique<T: Clone>(
    target: &mut Option<Vec<T>>,
    extra: &[T],
    same: impl Fn(&T, &T) -> bool,
) {
    if extra.is_empty() {
        return;
    }
    let list = target.get_or_insert_with(Vec::new);
    for item in extra {
        if !list.iter().any(|existing| same(existing, item)) {
            list.push(item.clone());
        }
    }
}
