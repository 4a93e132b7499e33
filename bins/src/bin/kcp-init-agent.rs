//! kcp-init-agent: initializes new kcp workspaces from InitTargets and InitTemplates.
//!
//! Flags follow the upstream init-agent; `kcp-init-agent crds` prints the CRDs.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use clap::{Parser, Subcommand};
use http::StatusCode;
use kcp_bins::{
    Endpoint, LeaderElection, LogFormat, init_logging, listen_address, load_kube_config,
    serve_http, shutdown_signal,
};
use kcp_init::{AgentConfig, run};
use tokio::sync::watch;

#[derive(Debug, Parser)]
#[command(
    name = "kcp-init-agent",
    version,
    about = "Initializes new kcp workspaces of a WorkspaceType from InitTargets and InitTemplates."
)]
struct Flags {
    /// Kubeconfig for kcp (default: $KUBECONFIG, in-cluster, ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<String>,
    /// Workspace path (root:foo) or logical cluster name holding the InitTargets and InitTemplates.
    #[arg(long)]
    config_workspace: Option<String>,
    /// Label selector choosing the InitTargets this agent serves.
    #[arg(long, default_value = "")]
    init_target_selector: String,
    /// Run only while holding a Lease in the config workspace.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    enable_leader_election: bool,
    /// Namespace of the leader-election Lease (in the config workspace).
    #[arg(long, default_value = "default")]
    leader_election_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "kcp-init-agent")]
    leader_election_id: String,
    /// Prometheus /metrics listener (host:port, "0" disables).
    #[arg(long, default_value = "127.0.0.1:8085")]
    metrics_address: String,
    /// /healthz and /readyz listener (host:port, empty or "0" disables).
    #[arg(long, default_value = "")]
    health_address: String,
    /// Debug logging.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    log_debug: bool,
    /// Log format: json or console (case-insensitive).
    #[arg(long, default_value = "json")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the InitTarget and InitTemplate CRDs as YAML.
    Crds,
}

#[tokio::main]
async fn main() {
    let flags = Flags::parse();
    if let Some(Command::Crds) = flags.command {
        match kcp_init::api::crds_yaml() {
            Ok(yaml) => print!("{yaml}"),
            Err(err) => {
                eprintln!("kcp-init-agent: {err}");
                std::process::exit(1);
            }
        }
        return;
    }
    init_logging(flags.log_format, flags.log_debug);
    if let Err(err) = agent(flags).await {
        tracing::error!(error = %err, "kcp-init-agent failed");
        eprintln!("kcp-init-agent: {err}");
        std::process::exit(1);
    }
}

async fn agent(flags: Flags) -> Result<(), Box<dyn std::error::Error>> {
    let Some(config_workspace) = flags.config_workspace.clone().filter(|w| !w.is_empty()) else {
        return Err("--config-workspace is required".into());
    };
    if !flags.init_target_selector.is_empty() {
        kcp_sim::selector::LabelSelector::parse(&flags.init_target_selector)
            .map_err(|e| format!("invalid --init-target-selector: {e}"))?;
    }
    let kube = load_kube_config(flags.kubeconfig.as_deref()).await?;
    let mut config = AgentConfig::new(kube.clone(), config_workspace.clone());
    if !flags.init_target_selector.is_empty() {
        config.selector = Some(flags.init_target_selector.clone());
    }
    let (stop_tx, stop_rx) = watch::channel(false);

    let metrics = config.metrics.clone();
    if let Some(addr) = listen_address("metrics-address", &flags.metrics_address)? {
        let render: Endpoint = Arc::new(move || (StatusCode::OK, metrics.render()));
        let bound = serve_http(addr, vec![("/metrics", render)], stop_rx.clone()).await?;
        tracing::info!(address = %bound, "serving metrics");
    }
    if let Some(addr) = listen_address("health-address", &flags.health_address)? {
        let ready = config.ready.clone();
        let healthz: Endpoint = Arc::new(|| (StatusCode::OK, "ok\n".into()));
        let readyz: Endpoint = Arc::new(move || {
            if ready.load(Ordering::SeqCst) {
                (StatusCode::OK, "ok\n".into())
            } else {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "watches not synced\n".into(),
                )
            }
        });
        let bound = serve_http(
            addr,
            vec![("/healthz", healthz), ("/readyz", readyz)],
            stop_rx.clone(),
        )
        .await?;
        tracing::info!(address = %bound, "serving health checks");
    }

    let mut lost = None;
    if flags.enable_leader_election {
        let mut lease_config = kube.clone();
        let base =
            kcp_core::kcp::urls::strip_cluster_suffix(&kube.cluster_url.to_string()).to_string();
        lease_config.cluster_url = format!("{base}/clusters/{config_workspace}").parse()?;
        let client = kube::Client::try_from(lease_config)?;
        let election =
            LeaderElection::new(&flags.leader_election_namespace, &flags.leader_election_id);
        tracing::info!(lease = %election.name, namespace = %election.namespace, "waiting for leadership");
        let acquired = tokio::select! {
            acquired = election.acquire(client) => acquired?,
            _ = shutdown_signal() => return Ok(()),
        };
        lost = Some(acquired);
    }
    let leadership_lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lost_flag = leadership_lost.clone();
    let shutdown = async move {
        match lost {
            Some(mut lost) => {
                tokio::select! {
                    _ = shutdown_signal() => {}
                    _ = lost.wait_for(|l| *l) => {
                        tracing::error!("leadership lost; stopping");
                        lost_flag.store(true, Ordering::SeqCst);
                    }
                }
            }
            None => shutdown_signal().await,
        }
    };
    let result = run(config, shutdown).await;
    let _ = stop_tx.send(true);
    result?;
    if leadership_lost.load(Ordering::SeqCst) {
        // Exit non-zero so the orchestrator restarts the process as a candidate again.
        return Err("lost the leader-election lease".into());
    }
    Ok(())
}
