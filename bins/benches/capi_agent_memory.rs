//! Resident memory of an idle `capi-provider-agent` process (target: <= 25 MiB).
//!
//! Starts kcp-sim in-process with the provider's and the foreign CRDs and the playground's
//! hosted cluster, three Agents and two Machines with their AgentMachines; runs the release
//! binary against it, waits until both AgentMachines were reconciled and the process has idled
//! for two seconds, then prints `idle capi-provider-agent RSS` from `/proc/<pid>/status`.
//! Criterion times the process from start to `/readyz` answering 200.

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use capi_agent::api::AgentMachine;
use criterion::{Criterion, criterion_group, criterion_main};
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_sim::{Config, Server};
use support::{bench_start_to_ready, free_port, ready, rss_mib};

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-agent");
const WORLD: [&str; 4] = [
    include_str!("../../examples/playground/agent/00-foreign-crds.yaml"),
    include_str!("../../examples/playground/agent/01-cluster.yaml"),
    include_str!("../../examples/playground/agent/02-agents.yaml"),
    include_str!("../../examples/playground/agent/03-machines.yaml"),
];

static PRINTED: AtomicBool = AtomicBool::new(false);

async fn world(sim: &Server) {
    let admin = sim.object_client("");
    let mut objects = capi_agent::api::crd_objects().unwrap_or_else(|e| panic!("{e}"));
    for (i, yaml) in WORLD.iter().enumerate() {
        objects
            .extend(parse_manifests(&format!("world-{i}"), yaml).unwrap_or_else(|e| panic!("{e}")));
    }
    for object in objects {
        admin
            .create(&object)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

async fn machines_reconciled(client: &dyn ObjectClient) -> bool {
    let machines: Vec<AgentMachine> = client
        .list_typed(Some("clusters-demo"), &Default::default())
        .await
        .unwrap_or_default();
    machines.len() == 2 && machines.iter().all(|m| m.status.is_some())
}

async fn run_provider_once() -> Duration {
    let sim = Server::start(Config::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    world(&sim).await;
    let kubeconfig = std::env::temp_dir().join(format!(
        "capi-agent-memory-{}.kubeconfig",
        std::process::id()
    ));
    sim.write_kubeconfig(&kubeconfig, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let port = free_port();
    let start = Instant::now();
    let mut child = Command::new(PROVIDER)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--metrics-bind-address", "0"])
        .args(["--health-probe-bind-address", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    while !ready(port) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = start.elapsed();
    if !PRINTED.swap(true, Ordering::SeqCst) {
        let admin = sim.object_client("");
        while !machines_reconciled(&admin).await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        eprintln!(
            "idle capi-provider-agent RSS: {:.1} MiB (2 AgentMachines, 3 Agents, then idling)",
            rss_mib(child.id())
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(kubeconfig);
    sim.shutdown().await;
    took
}

fn capi_agent_memory(c: &mut Criterion) {
    bench_start_to_ready(c, "capi_provider_agent_process", run_provider_once);
}

criterion_group!(benches, capi_agent_memory);
criterion_main!(benches);
