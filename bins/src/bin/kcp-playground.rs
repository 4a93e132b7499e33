//! kcp-playground: two API servers (`kcp` and `kube`), every kcp-rs system running against
//! them, their examples converging: kcp-sim servers by default, on a machine with nothing else
//! installed; with `--backend real`, a real kcp and kube-apiserver built from their Go modules.
//!
//! It writes `kcp-playground.kubeconfig` (contexts `kcp`, current, and `kube`), starts each
//! system's section ([`kcp_bins::playground`]), prints a live table until everything
//! converged, then what was created, and keeps serving for kubectl until Ctrl-C
//! (`--exit-when-ready` for scripts, `--only init,...` to pick systems).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use kcp_bins::playground::{self, Backend, Playground, PlaygroundError};

/// `--backend`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendFlag {
    /// kcp-sim servers, in-process (seconds, nothing installed).
    Sim,
    /// kcp and kube-apiserver + etcd built from their Go modules by kcp-testbed (Go 1.26 and
    /// the Go module proxy; minutes on a first build, cached afterwards).
    Real,
}

#[derive(Debug, Parser)]
#[command(
    name = "kcp-playground",
    version,
    about = "kcp and kube (kcp-sim, or real servers) + the kcp-rs systems + their examples, converging."
)]
struct Flags {
    /// Which servers: kcp-sim (default) or the real kcp and kube-apiserver.
    #[arg(long, value_enum, default_value = "sim")]
    backend: BackendFlag,
    /// Where to write the kubeconfig for kubectl (contexts `kcp` and `kube`).
    #[arg(long, default_value = "kcp-playground.kubeconfig")]
    kubeconfig: PathBuf,
    /// Exit 0 once everything converged (for scripts), instead of serving until Ctrl-C.
    #[arg(long)]
    exit_when_ready: bool,
    /// Give up (exit 1) if not everything converged after this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout_seconds: u64,
    /// Run only these systems (comma separated), e.g. `--only init`.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Debug logging of the controllers and the simulators.
    #[arg(long)]
    log_debug: bool,
}

#[tokio::main]
async fn main() {
    let flags = Flags::parse();
    // Quiet by default: the status table is the interface.
    let level = if flags.log_debug { "debug" } else { "warn" };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level)),
        )
        .with_writer(std::io::stderr)
        .try_init();
    if let Err(err) = serve(flags).await {
        eprintln!("kcp-playground: {err}");
        std::process::exit(1);
    }
}

async fn serve(flags: Flags) -> Result<(), PlaygroundError> {
    let mut sections = playground::select(&flags.only)?;
    let backend = match flags.backend {
        BackendFlag::Sim => Backend::Sim,
        BackendFlag::Real => Backend::Real,
    };
    let pg = Playground::start(backend, &flags.kubeconfig).await?;
    let kind = match backend {
        Backend::Sim => "kcp-sim",
        Backend::Real => "real",
    };
    println!("{kind} kcp  serving on {}", pg.kcp.url());
    println!("{kind} kube serving on {}", pg.kube.url());
    if backend == Backend::Real {
        println!(
            "no kubelet runs next to the real kube-apiserver: the playground marks Deployments \
             and StatefulSets available itself"
        );
    }
    println!(
        "kubeconfig written to {} (contexts kcp, kube)",
        flags.kubeconfig.display()
    );
    let timeout = Duration::from_secs(flags.timeout_seconds);
    let result = playground::converge(&pg, &mut sections, timeout).await;
    if result.is_ok() && !flags.exit_when_ready {
        println!("\nserving until Ctrl-C");
        kcp_manager::shutdown_signal().await;
    }
    for section in sections.iter_mut() {
        section.stop().await;
    }
    pg.shutdown().await;
    result
}
