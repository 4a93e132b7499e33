//! capi-provider-agent: the Cluster API infrastructure provider for Agents.
//!
//! Flags follow upstream cluster-api-provider-agent (`--metrics-bind-address`,
//! `--health-probe-bind-address`, `--leader-elect`, `--namespace`, `--agent-namespace`), plus
//! CAPI's `--watch-filter` and kcp-manager's common flags. `capi-provider-agent crds` prints the
//! CRDs; `capi-provider-agent components` prints clusterctl's infrastructure-components.yaml.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use capi_agent::context::ProviderConfig;
use capi_agent::controller::{Options, run};
use capi_agent::metrics::Metrics;
use clap::{Parser, Subcommand};
use kcp_manager::{CommonFlags, Defaults, Error, Manager, parse_flags, print_crds};

#[derive(Debug, Parser)]
#[command(
    name = "capi-provider-agent",
    version,
    about = "Cluster API infrastructure provider for Agents."
)]
struct Flags {
    #[command(flatten)]
    common: CommonFlags,
    /// Watch only this namespace (AgentClusters, AgentMachines, Machines, Secrets, ...).
    #[arg(long, env = "WATCH_NAMESPACE", default_value = "")]
    namespace: String,
    /// Read Agents only from this namespace.
    #[arg(long, env = "AGENTS_NAMESPACE", default_value = "")]
    agent_namespace: String,
    /// Reconcile only objects labelled cluster.x-k8s.io/watch-filter=<value>.
    #[arg(long, default_value = "")]
    watch_filter: String,
    /// How long deletion waits for an unbound Agent to return to discovery, in seconds.
    #[arg(long, default_value_t = 900)]
    unbind_timeout: u64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the AgentCluster, AgentMachine and AgentMachineTemplate CRDs as YAML.
    Crds,
    /// Print clusterctl's infrastructure-components.yaml.
    Components,
}

/// Upstream's defaults (probes on :8081, Lease 7605f49b.agent-install.openshift.io), except metrics
/// on 127.0.0.1:8080 rather than every interface: the Deployment opens them explicitly
/// (`--metrics-bind-address=:8080`); the kubelet must reach the probes, which say only ok.
fn defaults() -> Defaults {
    Defaults::new("capi-provider-agent")
        .metrics_address("127.0.0.1:8080")
        .health_address(":8081")
        .lease(
            "cluster-api-provider-agent",
            "7605f49b.agent-install.openshift.io",
        )
        .lease_in_pod_namespace()
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags: Flags = parse_flags(&defaults());
    match flags.command {
        Some(Command::Crds) => {
            return print_crds("capi-provider-agent", capi_agent::api::crds_yaml());
        }
        Some(Command::Components) => {
            return print_crds("capi-provider-agent", capi_agent::deploy::components_yaml());
        }
        None => {}
    }
    match provider(flags).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "capi-provider-agent failed");
            eprintln!("capi-provider-agent: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn provider(flags: Flags) -> Result<(), Error> {
    let non_empty = |s: String| Some(s).filter(|s| !s.is_empty());
    let manager = Manager::new(&defaults(), flags.common)?;
    let client =
        kcp_core::rest_metrics::client(manager.kube_config().await?).map_err(Error::client)?;
    let mut options = Options::new(client.clone());
    options.config = ProviderConfig {
        namespace: non_empty(flags.namespace),
        agent_namespace: non_empty(flags.agent_namespace),
        unbind_timeout: Duration::from_secs(flags.unbind_timeout),
        ..ProviderConfig::default()
    };
    options.watch_filter = non_empty(flags.watch_filter);
    options.metrics = Arc::new(manager.with_registry(Metrics::register));
    options.ready = Some(manager.readiness().synced_flag());
    manager
        .run(Some(client), |shutdown| async move {
            run(options, shutdown).await.map_err(Into::into)
        })
        .await
}
