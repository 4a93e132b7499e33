//! kcp-api-syncagent: publishes service-cluster CRDs into a kcp APIExport and syncs objects.
//!
//! Flags follow the upstream api-syncagent (plus kcp-manager's common flags);
//! `kcp-api-syncagent crds` prints the PublishedResource CRD.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::{Parser, Subcommand};
use kcp_core::KubeObjectClient;
use kcp_core::cluster::{ApiExportConsumers, ClusterClients, ClusterProvider};
use kcp_core::retry::Backoff;
use kcp_core::selector::LabelSelector;
use kcp_manager::{CommonFlags, Defaults, Error, Manager, parse_flags, print_crds};
use kcp_sync::controller::{Agent, ControllerName, Metrics, run};
use kcp_sync::reconcile::sync::SyncConfig;
use kcp_sync::startup::{ExportRef, KcpTarget, resolve};

#[derive(Debug, Parser)]
#[command(
    name = "kcp-api-syncagent",
    version,
    about = "Publishes service-cluster CRDs into a kcp APIExport and syncs their objects."
)]
struct Flags {
    #[command(flatten)]
    common: CommonFlags,
    /// Kubeconfig of kcp; its server must point at a workspace (/clusters/<name>).
    #[arg(long)]
    kcp_kubeconfig: Option<String>,
    /// Name of the APIExportEndpointSlice (in the kcp kubeconfig's workspace).
    #[arg(long)]
    apiexportendpointslice_ref: Option<String>,
    /// Name of the APIExport (in the kcp kubeconfig's workspace); its default endpoint slice is followed.
    #[arg(long)]
    apiexport_ref: Option<String>,
    /// Namespace for the leader-election Lease and the object-state Secrets.
    #[arg(long, global = true)]
    namespace: Option<String>,
    /// Agent name (a DNS-1035 label); default `<ref>-syncagent`.
    #[arg(long)]
    agent_name: Option<String>,
    /// Label selector limiting the PublishedResources this agent handles.
    #[arg(long, default_value = "", global = true)]
    published_resource_selector: String,
    /// Replaces the server of the service-cluster kubeconfig.
    #[arg(long, default_value = "")]
    kubeconfig_host_override: String,
    /// Replaces the CA of the service-cluster kubeconfig (a PEM file).
    #[arg(long, default_value = "")]
    kubeconfig_ca_file_override: String,
    /// Controllers not to run: apiexport, apiresourceschema, sync.
    #[arg(long, value_delimiter = ',')]
    disabled_controllers: Vec<String>,
    /// Use the finalizer syncagent.kcp.io/cleanup-<agent> instead of the shared upstream one.
    #[arg(long, default_value_t = false)]
    per_agent_finalizer: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the PublishedResource CRD as YAML.
    Crds,
    /// Print the service-cluster ClusterRole (and its binding to the agent's ServiceAccount in
    /// --namespace) for the kinds the PublishedResources on the cluster publish and relate,
    /// read with --kubeconfig and --published-resource-selector.
    Rbac,
}

/// A finalizer's name part is at most 63 characters; `cleanup-` takes 8 of them.
const MAX_AGENT_NAME_FOR_FINALIZER: usize = 55;

/// Upstream's metrics default; the Lease is `syncagent.<agent>` in `--namespace` (set below).
fn defaults() -> Defaults {
    Defaults::new("kcp-api-syncagent").metrics_address("127.0.0.1:8085")
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags: Flags = parse_flags(&defaults());
    if let Some(Command::Crds) = flags.command {
        return print_crds("kcp-api-syncagent", kcp_sync::api::crds_yaml());
    }
    let rbac = matches!(flags.command, Some(Command::Rbac));
    let result = if rbac {
        print_service_rbac(flags).await
    } else {
        agent(flags).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "kcp-api-syncagent failed");
            eprintln!("kcp-api-syncagent: {err}");
            ExitCode::FAILURE
        }
    }
}

fn flag_error(flag: &str, reason: impl Into<String>) -> Error {
    Error::Flag {
        flag: flag.into(),
        reason: reason.into(),
    }
}

/// The validated flags every agent needs.
struct Settings {
    source: ExportRef,
    namespace: String,
    agent: String,
    disabled: BTreeSet<ControllerName>,
}

/// Validates the agent flags, collecting every error (as upstream reports them together).
fn settings(flags: &Flags) -> Result<Settings, Error> {
    let mut errors: Vec<(&str, String)> = Vec::new();
    let source = match (&flags.apiexportendpointslice_ref, &flags.apiexport_ref) {
        (Some(s), None) if !s.is_empty() => Some(ExportRef::EndpointSlice(s.clone())),
        (None, Some(e)) if !e.is_empty() => Some(ExportRef::Export(e.clone())),
        _ => {
            errors.push((
                "apiexportendpointslice-ref",
                "exactly one of it and --apiexport-ref is required".to_owned(),
            ));
            None
        }
    };
    if flags
        .kcp_kubeconfig
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        errors.push(("kcp-kubeconfig", "is required".into()));
    }
    let namespace = flags.namespace.clone().unwrap_or_default();
    if namespace.is_empty() {
        errors.push(("namespace", "is required".into()));
    }
    let reference = match &source {
        Some(ExportRef::EndpointSlice(n) | ExportRef::Export(n)) => n.clone(),
        None => String::new(),
    };
    // An empty --agent-name means the default, as upstream's "can be left blank".
    let agent = flags
        .agent_name
        .clone()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("{reference}-syncagent"));
    if !is_dns1035_label(&agent) {
        errors.push(("agent-name", format!("{agent:?} is not a DNS-1035 label")));
    } else if flags.per_agent_finalizer && agent.len() > MAX_AGENT_NAME_FOR_FINALIZER {
        errors.push((
            "agent-name",
            format!(
                "{agent:?} is too long for --per-agent-finalizer: the finalizer \
                 syncagent.kcp.io/cleanup-<agent-name> allows at most \
                 {MAX_AGENT_NAME_FOR_FINALIZER} characters of it"
            ),
        ));
    }
    if let Err(e) = LabelSelector::parse(&flags.published_resource_selector) {
        errors.push(("published-resource-selector", e.to_string()));
    }
    let mut disabled = BTreeSet::new();
    for name in flags.disabled_controllers.iter().filter(|n| !n.is_empty()) {
        match name.parse::<ControllerName>() {
            Ok(c) => {
                disabled.insert(c);
            }
            Err(e) => errors.push(("disabled-controllers", e)),
        }
    }
    match source {
        Some(source) if errors.is_empty() => Ok(Settings {
            source,
            namespace,
            agent,
            disabled,
        }),
        _ => {
            let flags: Vec<&str> = errors.iter().map(|(f, _)| *f).collect();
            let reasons: Vec<String> = errors.iter().map(|(f, r)| format!("--{f}: {r}")).collect();
            Err(flag_error(&flags.join(", --"), reasons.join("; ")))
        }
    }
}

fn is_dns1035_label(s: &str) -> bool {
    s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The service-cluster configuration with the host and CA overrides applied.
async fn service_config(manager: &Manager, flags: &Flags) -> Result<kube::Config, Error> {
    let mut config = manager.kube_config().await?;
    if !flags.kubeconfig_host_override.is_empty() {
        config.cluster_url = flags
            .kubeconfig_host_override
            .parse()
            .map_err(|e| flag_error("kubeconfig-host-override", format!("{e}")))?;
    }
    if !flags.kubeconfig_ca_file_override.is_empty() {
        let pem = std::fs::read(&flags.kubeconfig_ca_file_override)
            .map_err(|e| flag_error("kubeconfig-ca-file-override", e.to_string()))?;
        config.root_cert = Some(pem_certificates(&pem));
    }
    Ok(config)
}

/// The DER certificates of a PEM bundle.
fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    let text = String::from_utf8_lossy(pem);
    text.split("-----BEGIN CERTIFICATE-----")
        .skip(1)
        .filter_map(|block| block.split("-----END CERTIFICATE-----").next())
        .filter_map(|b64| {
            let clean: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD.decode(clean).ok()
        })
        .collect()
}

/// The `rbac` subcommand: the PublishedResources' kinds as a ClusterRole and binding, as YAML.
async fn print_service_rbac(flags: Flags) -> Result<(), Error> {
    use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
    use kcp_core::ObjectClientExt as _;

    let namespace = flags.namespace.clone().filter(|n| !n.is_empty());
    let namespace = namespace.ok_or_else(|| flag_error("namespace", "is required"))?;
    let selector = flags.published_resource_selector.clone();
    let manager = Manager::new(&defaults(), flags.common.clone())?;
    let client = kcp_core::rest_metrics::client(service_config(&manager, &flags).await?)
        .map_err(Error::client)?;
    let service = KubeObjectClient::new(client.clone());
    let options = kcp_core::ListOptions::labels(selector);
    let prs: Vec<kcp_sync::api::PublishedResource> = service
        .list_typed(None, &options)
        .await
        .map_err(|e| Error::Component(format!("listing PublishedResources: {e}").into()))?;
    let name = "kcp-api-syncagent:published";
    let role = kcp_sync::service_rbac::service_role(&service, Some(&client), &prs, name)
        .await
        .map_err(|e| Error::Component(Box::new(e)))?;
    let binding = ClusterRoleBinding {
        metadata: kcp_core::kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: name.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "kcp-api-syncagent".into(),
            namespace: Some(namespace),
            ..Default::default()
        }]),
    };
    let yaml = |what: &str, text: Result<String, serde_saphyr::ser::Error>| {
        text.map_err(|e| Error::Component(format!("encoding the {what}: {e}").into()))
    };
    let role = yaml("ClusterRole", serde_saphyr::to_string(&role))?;
    let binding = yaml("ClusterRoleBinding", serde_saphyr::to_string(&binding))?;
    use std::io::Write as _;
    std::io::stdout()
        .lock()
        .write_all(format!("{role}---\n{binding}").as_bytes())
        .map_err(|e| Error::Component(format!("writing to stdout: {e}").into()))
}

fn provider(target: &KcpTarget) -> Arc<dyn ClusterProvider> {
    let clients = Arc::new(ClusterClients::new(target.export_config.clone()));
    // With --apiexport-ref the export's default endpoint slice (same name, kcp creates it) is
    // followed.
    let (ExportRef::EndpointSlice(name) | ExportRef::Export(name)) = &target.source;
    Arc::new(ApiExportConsumers::from_endpoint_slice(
        clients,
        target.source_client.clone(),
        name.clone(),
    ))
}

async fn agent(flags: Flags) -> Result<(), Error> {
    let s = settings(&flags)?;
    let mut common = flags.common.clone();
    // Upstream's Lease: `syncagent.<agent>` in --namespace, unless the common flags say otherwise.
    let d = defaults();
    if common.leader_election_namespace == d.lease_namespace
        && common.leader_election_id == d.lease_name
    {
        common.leader_election_namespace.clone_from(&s.namespace);
        common.leader_election_id = format!("syncagent.{}", s.agent);
    }
    let manager = Manager::new(&defaults(), common)?;
    let service_config = service_config(&manager, &flags).await?;
    let service = kcp_core::rest_metrics::client(service_config).map_err(Error::client)?;
    let kcp_config =
        kcp_manager::lifecycle::load_kube_config(flags.kcp_kubeconfig.as_deref()).await?;
    let metrics = manager.with_registry(Metrics::register);
    let ready = manager.readiness().synced_flag();
    manager
        .run(Some(service.clone()), |mut shutdown| async move {
            // Served (not ready) while it waits for the export to appear.
            let target = tokio::select! {
                target = resolve(kcp_config, s.source.clone(), Backoff::default()) => target?,
                () = &mut shutdown => return Ok(()),
            };
            let config = agent_config(&flags, &s, service, target, metrics, ready)?;
            run(config, shutdown).await.map_err(Into::into)
        })
        .await
}

/// The agent's configuration once its APIExport is found.
fn agent_config(
    flags: &Flags,
    s: &Settings,
    service: kube::Client,
    target: KcpTarget,
    metrics: Metrics,
    ready: Arc<AtomicBool>,
) -> Result<Agent, Error> {
    let kcp =
        kcp_core::rest_metrics::client(target.export_config.clone()).map_err(Error::client)?;
    let mut sync = SyncConfig::new(s.agent.clone(), s.namespace.clone());
    if flags.per_agent_finalizer {
        sync = sync.with_agent_finalizer();
    }
    Ok(Agent {
        sync,
        export_name: target.export_name.clone(),
        selector: flags.published_resource_selector.clone(),
        disabled: s.disabled.clone(),
        service: Arc::new(KubeObjectClient::new(service.clone())),
        service_kube: Some(service),
        kcp: Arc::new(KubeObjectClient::new(kcp.clone())),
        kcp_kube: Some(kcp),
        provider: provider(&target),
        resync: Duration::from_secs(300),
        workers: 4,
        metrics,
        ready,
        status_interval: Duration::from_secs(5),
    })
}
