//! capi-provider-kind: a Cluster API infrastructure provider that creates kind clusters for
//! KINDCluster (upstream) and KindCluster (CAPI) objects.
//!
//! Flags follow a kubebuilder provider (`--metrics-bind-address`, `--health-probe-bind-address`,
//! `--leader-elect`, plus kcp-manager's common flags); `capi-provider-kind crds` prints the
//! CRDs. The in-process provisioner (`--provisioner sim`) exists only in builds with the
//! `sim-provisioner` feature, so the default binary never links kcp-sim.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use capi_kind::provisioner::{KindCli, Provisioner};
use capi_kind::{ControllerConfig, run};
use clap::{Parser, Subcommand, ValueEnum};
use kcp_core::runtime::ControllerMetrics;
use kcp_manager::{CommonFlags, Defaults, Error, Manager, parse_flags, print_crds};

#[derive(Debug, Parser)]
#[command(
    name = "capi-provider-kind",
    version,
    about = "Creates kind clusters for KINDCluster and Cluster API KindCluster objects."
)]
struct Flags {
    #[command(flatten)]
    common: CommonFlags,
    /// Where kind clusters come from: the kind CLI, or in-process kcp-sim servers (only in
    /// builds with the `sim-provisioner` feature).
    #[arg(long, value_enum, default_value_t = ProvisionerKind::Kind)]
    provisioner: ProvisionerKind,
    /// The kind executable (a path, or a name looked up on PATH).
    #[arg(long, default_value = "kind")]
    kind_binary: String,
    /// kind clusters created at the same time.
    #[arg(long, default_value_t = 4)]
    max_concurrent_creates: usize,
    /// How long `kind create cluster` waits for the control plane (`--wait`), in seconds.
    #[arg(long, default_value_t = 300)]
    create_wait_seconds: u64,
    /// Watch only this namespace (all namespaces when empty).
    #[arg(long, default_value = "")]
    namespace: String,
    /// Serve only objects labelled cluster.x-k8s.io/watch-filter=<value> (all when empty).
    #[arg(long, default_value = "")]
    watch_filter: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProvisionerKind {
    /// The kind CLI (needs docker or podman).
    Kind,
    /// In-process kcp-sim servers (demos and tests).
    Sim,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the KINDCluster and KindCluster CRDs as YAML.
    Crds,
}

/// kubebuilder's defaults (probes :8081; the Lease in the pod's namespace) and upstream's
/// leader-election ID, except metrics on
/// 127.0.0.1:8080 rather than every interface (the Deployment says where it wants them).
fn defaults() -> Defaults {
    Defaults::new("capi-provider-kind")
        .metrics_address("127.0.0.1:8080")
        .health_address(":8081")
        .lease("capi-kind-system", "0515b1bd.cluster-k8s.io")
        .lease_in_pod_namespace()
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags: Flags = parse_flags(&defaults());
    if let Some(Command::Crds) = flags.command {
        return print_crds("capi-provider-kind", capi_kind::api::crds_yaml());
    }
    match provider(flags).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "capi-provider-kind failed");
            eprintln!("capi-provider-kind: {err}");
            ExitCode::FAILURE
        }
    }
}

fn provisioner(flags: &Flags) -> Result<Arc<dyn Provisioner>, Error> {
    match flags.provisioner {
        ProvisionerKind::Kind => Ok(Arc::new(KindCli::new(&flags.kind_binary))),
        #[cfg(feature = "sim-provisioner")]
        ProvisionerKind::Sim => Ok(Arc::new(capi_kind::provisioner::SimProvisioner::new())),
        #[cfg(not(feature = "sim-provisioner"))]
        ProvisionerKind::Sim => Err(Error::Flag {
            flag: "provisioner".into(),
            reason: "this build has no sim provisioner (build with --features sim-provisioner)"
                .into(),
        }),
    }
}

async fn provider(flags: Flags) -> Result<(), Error> {
    let provisioner = provisioner(&flags)?;
    let manager = Manager::new(&defaults(), flags.common.clone())?;
    let kube = manager.kube_config().await?;
    let client = kcp_core::rest_metrics::client(kube).map_err(Error::client)?;
    let mut config = ControllerConfig::new(client.clone(), provisioner);
    config.max_concurrent_creates = flags.max_concurrent_creates.max(1);
    config.settings.create_wait = Duration::from_secs(flags.create_wait_seconds);
    config.namespace = Some(flags.namespace).filter(|n| !n.is_empty());
    config.watch_filter = Some(flags.watch_filter).filter(|f| !f.is_empty());
    config.ready = manager.readiness().synced_flag();
    config.metrics = manager.with_registry(ControllerMetrics::register);
    manager
        .run(Some(client), |shutdown| async move {
            run(config, shutdown).await.map_err(Into::into)
        })
        .await
}
