//! kcp-init-agent: initializes new kcp workspaces from InitTargets and InitTemplates.
//!
//! Flags follow the upstream init-agent (plus kcp-manager's common flags);
//! `kcp-init-agent crds` prints the CRDs.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use kcp_core::kcp::urls::strip_cluster_suffix;
use kcp_core::selector::LabelSelector;
use kcp_init::{AgentConfig, Metrics, run};
use kcp_manager::{CommonFlags, Defaults, Error, Manager, parse_flags, print_crds};

#[derive(Debug, Parser)]
#[command(
    name = "kcp-init-agent",
    version,
    about = "Initializes new kcp workspaces of a WorkspaceType from InitTargets and InitTemplates."
)]
struct Flags {
    #[command(flatten)]
    common: CommonFlags,
    /// Workspace path (root:foo) or logical cluster name holding the InitTargets and InitTemplates.
    #[arg(long)]
    config_workspace: Option<String>,
    /// Label selector choosing the InitTargets this agent serves.
    #[arg(long, default_value = "")]
    init_target_selector: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the InitTarget and InitTemplate CRDs as YAML.
    Crds,
}

/// Upstream's metrics default (127.0.0.1:8085). Upstream hard-codes the Lease `TODO` in
/// `le-ns-todo`, which the API server refuses ("TODO" is not a valid object name), so upstream's
/// leader election never works and there is no Lease to share: ours defaults to
/// `default/kcp-init-agent` in the config workspace and is configurable.
fn defaults() -> Defaults {
    Defaults::new("kcp-init-agent")
        .metrics_address("127.0.0.1:8085")
        .lease("default", "kcp-init-agent")
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags: Flags = parse_flags(&defaults());
    if let Some(Command::Crds) = flags.command {
        return print_crds("kcp-init-agent", kcp_init::api::crds_yaml());
    }
    match agent(flags).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "kcp-init-agent failed");
            eprintln!("kcp-init-agent: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn agent(flags: Flags) -> Result<(), Error> {
    let flag_error = |flag: &str, reason: String| Error::Flag {
        flag: flag.into(),
        reason,
    };
    let workspace = flags.config_workspace.clone().filter(|w| !w.is_empty());
    let workspace =
        workspace.ok_or_else(|| flag_error("config-workspace", "is required".into()))?;
    LabelSelector::parse(&flags.init_target_selector)
        .map_err(|e| flag_error("init-target-selector", e.to_string()))?;
    let manager = Manager::new(&defaults(), flags.common)?;
    let kube = manager.kube_config().await?;
    let mut config = AgentConfig::new(kube.clone(), workspace.clone());
    config.selector = Some(flags.init_target_selector).filter(|s| !s.is_empty());
    config.metrics = Arc::new(manager.with_registry(Metrics::register));
    config.ready = manager.readiness().synced_flag();
    // The Lease lives in the config workspace, as upstream keeps it.
    let mut lease_config = kube;
    let base = strip_cluster_suffix(&lease_config.cluster_url.to_string()).to_string();
    lease_config.cluster_url = format!("{base}/clusters/{workspace}")
        .parse()
        .map_err(Error::client)?;
    let lease_client = kcp_core::rest_metrics::client(lease_config).map_err(Error::client)?;
    manager
        .run(Some(lease_client), |shutdown| async move {
            run(config, shutdown).await.map_err(Into::into)
        })
        .await
}
