//! Resident memory of an idle `kcp-init-agent` process (target: <= 25 MiB).
//!
//! Starts kcp-sim in-process, installs the playground (WorkspaceType, InitTemplate, InitTarget,
//! three workspaces), runs the release `kcp-init-agent` binary against it until the workspaces
//! are Ready and it has idled for two seconds, then prints `idle agent RSS` from
//! `/proc/<pid>/status`. Criterion times the agent from process start to `/readyz` answering 200.

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use kcp_core::parse_manifests;
use kcp_sim::{Config, Server};
use support::{apply, bench_start_to_ready, ready, rss_mib};

const AGENT: &str = env!("CARGO_BIN_EXE_kcp-init-agent");
const SETUP: [&str; 3] = [
    include_str!("../../examples/playground/01-workspace-type.yaml"),
    include_str!("../../examples/playground/02-init.yaml"),
    include_str!("../../examples/playground/03-workspaces.yaml"),
];

static PRINTED: AtomicBool = AtomicBool::new(false);

async fn run_agent_once() -> Duration {
    let sim = Server::start(Config::kcp())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let root = sim.object_client("root");
    let crds = kcp_init::api::crd_objects().unwrap_or_else(|e| panic!("{e}"));
    apply(&root, crds).await;
    for doc in SETUP {
        apply(
            &root,
            parse_manifests("setup.yaml", doc).unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
    }
    let kubeconfig =
        std::env::temp_dir().join(format!("agent-memory-{}.kubeconfig", std::process::id()));
    sim.write_kubeconfig(&kubeconfig, &["root"])
        .unwrap_or_else(|e| panic!("{e}"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let mut child = Command::new(AGENT)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--config-workspace", "root", "--metrics-address", "0"])
        .args(["--health-address", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    while !ready(port) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = start.elapsed();
    if !PRINTED.swap(true, Ordering::SeqCst) {
        // Let it initialize the workspaces, then idle.
        tokio::time::sleep(Duration::from_secs(3)).await;
        eprintln!(
            "idle agent RSS: {:.1} MiB (after initializing 3 workspaces and idling)",
            rss_mib(child.id())
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(kubeconfig);
    sim.shutdown().await;
    took
}

fn agent_memory(c: &mut Criterion) {
    bench_start_to_ready(c, "kcp_init_agent_process", run_agent_once);
}

criterion_group!(benches, agent_memory);
criterion_main!(benches);
