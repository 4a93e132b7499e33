//! kcp-operator: runs kcp installations (RootShard, Shard, FrontProxy, CacheServer,
//! Kubeconfig) on Kubernetes.
//!
//! Flags follow the upstream operator (`--metrics-bind-address`, `--health-probe-bind-address`,
//! `--leader-elect` with the Lease `239f9f9a.operator.kcp.io`, `--enabled-controller-groups`)
//! plus kcp-manager's common flags; `kcp-operator crds` prints the CRDs.

/// The process allocator: mimalloc, built without transparent huge pages. glibc's malloc was
/// a third of the operator's CPU at 100 installations; mimalloc converges them in about 60% of
/// the time for about 4 MiB more idle RSS (docs/benchmarks.md). Only this binary is measured
/// both ways, so only it switches.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kcp_manager::{CommonFlags, Defaults, Error, Manager, parse_flags, print_crds};
use std::sync::Arc;

use kcp_operator::addresser::InCluster;
use kcp_operator::controller::{parse_groups, run_with};
use kcp_operator::metrics::Metrics;
use kcp_operator::pki::Pki;

#[derive(Debug, Parser)]
#[command(
    name = "kcp-operator",
    version,
    about = "Runs kcp installations on Kubernetes."
)]
struct Flags {
    #[command(flatten)]
    common: CommonFlags,
    /// Controller groups to run: config (sources -> PKI, Secrets, Compiled*), workload
    /// (Compiled* -> Deployments, Services, ConfigMaps).
    #[arg(long, default_value = "config,workload")]
    enabled_controller_groups: String,
    /// Accepted for compatibility; this version has no feature gates (as upstream).
    #[arg(long, default_value = "")]
    feature_gates: String,
    /// Accepted for compatibility.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    enable_http2: bool,
    /// Who issues the operator's cert-manager Certificates: `cert-manager` (installed in the
    /// cluster) or `builtin` (the operator signs them itself; ECDSA P-256 keys).
    #[arg(long, default_value = "cert-manager")]
    pki: String,
    /// With `--pki=builtin`: the namespace of ClusterIssuers' CA Secrets (as cert-manager's flag).
    #[arg(long, default_value = "cert-manager")]
    cluster_resource_namespace: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the operator.kcp.io and deploy.operator.kcp.io CRDs as YAML.
    Crds,
}

/// Upstream's defaults: metrics off (`0`) and secure when on, health on `:8081`, Lease
/// `239f9f9a.operator.kcp.io`.
fn defaults() -> Defaults {
    Defaults::new("kcp-operator")
        .metrics_address("0")
        .metrics_secure(true)
        .health_address(":8081")
        .lease("kcp-operator-system", "239f9f9a.operator.kcp.io")
        .lease_in_pod_namespace()
}

/// One worker thread whatever the node's core count: the operator waits on the API server far
/// more than it computes, and each worker costs resident memory (idle, the example installation with `--pki builtin`: 25.1-25.4 MiB
/// with two workers, 24.2-24.6 MiB with one; the example Ready in 0.21-0.26 s either way); the
/// default, one per core, grows with the node.
#[tokio::main(worker_threads = 1)]
async fn main() -> ExitCode {
    let flags: Flags = parse_flags(&defaults());
    if let Some(Command::Crds) = flags.command {
        return print_crds("kcp-operator", kcp_operator::api::crds_yaml());
    }
    match operator(flags).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "kcp-operator failed");
            eprintln!("kcp-operator: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn operator(flags: Flags) -> Result<(), Error> {
    let groups = parse_groups(&flags.enabled_controller_groups).map_err(|e| Error::Flag {
        flag: "enabled-controller-groups".into(),
        reason: e.to_string(),
    })?;
    let pki =
        Pki::parse(&flags.pki, &flags.cluster_resource_namespace).map_err(|e| Error::Flag {
            flag: "pki".into(),
            reason: e.to_string(),
        })?;
    if !flags.feature_gates.is_empty() {
        tracing::warn!(feature_gates = %flags.feature_gates, "kcp-operator has no feature gates; ignoring");
    }
    let manager = Manager::new(&defaults(), flags.common)?;
    let kube = manager.kube_config().await?;
    let client = kcp_core::rest_metrics::client(kube).map_err(Error::client)?;
    let ready = manager.readiness().synced_flag();
    let metrics = manager.with_registry(Metrics::register);
    manager
        .run(Some(client.clone()), |shutdown| async move {
            // Ready once every controller's cache synced, leader or not.
            run_with(
                client,
                &groups,
                &pki,
                Arc::new(InCluster),
                metrics,
                ready,
                shutdown,
            )
            .await;
            Ok(())
        })
        .await
}
