//! Resident memory of the `kcp-api-syncagent` process (targets: idle <= 25 MiB, with 10,000
//! synced objects <= 100 MiB).
//!
//! Starts a service cluster and a kcp (kcp-sim, in this process), publishes a CRD, binds it in
//! `KCP_SYNC_MEMORY_WORKSPACES` (default 100) consumer workspaces, runs the release
//! `kcp-api-syncagent` binary, prints its RSS once ready and idle, creates 100 objects per
//! workspace, waits for every local copy, and prints its RSS again. Criterion times the
//! process from start to `/readyz` answering 200.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use kcp_core::ListOptions;
use kcp_core::ObjectClient;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_sim::{Config, PLAIN_CLUSTER, Server, SimClient};
use serde_json::{Value, json};
use support::{Running, THING_CRD, free_port, ready, rss_mib};

const AGENT: &str = env!("CARGO_BIN_EXE_kcp-api-syncagent");

async fn create(client: &dyn ObjectClient, value: Value) {
    let obj: DynamicObject = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
    client.create(&obj).await.unwrap_or_else(|e| panic!("{e}"));
}

/// Both servers, the published CRD, `workspaces` bound consumers; the kubeconfig paths.
async fn setup(workspaces: usize) -> (Server, Server, Vec<SimClient>, PathBuf, PathBuf) {
    let kube = Server::start(Config::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let kcp = Server::start(Config::kcp())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let service = kube.object_client(PLAIN_CLUSTER);
    for crd in kcp_sync::api::crds() {
        create(&service, serde_json::to_value(crd).unwrap_or_default()).await;
    }
    create(
        &service,
        serde_json::from_str(THING_CRD).unwrap_or_default(),
    )
    .await;
    create(
        &service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "agent"}}),
    )
    .await;
    create(&service, json!({"apiVersion": "syncagent.kcp.io/v1alpha1", "kind": "PublishedResource",
        "metadata": {"name": "things"}, "spec": {"resource": {"apiGroup": "example.com", "kind": "Thing"}}})).await;
    let root = kcp.object_client("root");
    create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "provider"}, "spec": {}})).await;
    create(&kcp.object_client("root:provider"), json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "things"}, "spec": {}})).await;
    let mut consumers = Vec::new();
    for i in 0..workspaces {
        create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": format!("c{i}")}, "spec": {}})).await;
        consumers.push(kcp.object_client(&format!("root:c{i}")));
    }
    let dir = std::env::temp_dir();
    let (service_kc, kcp_kc) = (
        dir.join(format!("syncagent-bench-{}-service", std::process::id())),
        dir.join(format!("syncagent-bench-{}-kcp", std::process::id())),
    );
    kube.write_kubeconfig(&service_kc, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    kcp.write_kubeconfig(&kcp_kc, &["root:provider"])
        .unwrap_or_else(|e| panic!("{e}"));
    (kube, kcp, consumers, service_kc, kcp_kc)
}

fn spawn(service_kc: &Path, kcp_kc: &Path, health: u16) -> Running {
    Running(
        Command::new(AGENT)
            .arg(format!("--kubeconfig={}", service_kc.display()))
            .arg(format!("--kcp-kubeconfig={}", kcp_kc.display()))
            .args([
                "--apiexportendpointslice-ref=things",
                "--namespace=agent",
                "--metrics-address=0",
                "--log-format=console",
            ])
            .arg(format!("--health-address=127.0.0.1:{health}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

async fn wait_ready(health: u16) -> Duration {
    let start = Instant::now();
    while !ready(health) {
        assert!(start.elapsed() < Duration::from_secs(30), "agent not ready");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    start.elapsed()
}

async fn memory(workspaces: usize) {
    let (kube, _kcp, consumers, service_kc, kcp_kc) = setup(workspaces).await;
    let health = free_port();
    let agent = spawn(&service_kc, &kcp_kc, health);
    wait_ready(health).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    eprintln!("idle agent RSS: {:.1} MiB", rss_mib(agent.0.id()));
    for consumer in &consumers {
        create(consumer, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "things"},
            "spec": {"reference": {"export": {"path": "root:provider", "name": "things"}}}})).await;
    }
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Thing");
    for consumer in &consumers {
        while consumer
            .list(&gvk, None, &ListOptions::default())
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for j in 0..100 {
            create(
                consumer,
                json!({"apiVersion": "example.com/v1", "kind": "Thing",
                "metadata": {"name": format!("t{j}"), "namespace": "default"}, "spec": {"n": j}}),
            )
            .await;
        }
    }
    let service = kube.object_client(PLAIN_CLUSTER);
    let total = workspaces * 100;
    let start = Instant::now();
    while service
        .list(&gvk, None, &ListOptions::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or(0)
        < total
    {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "objects not synced"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    eprintln!(
        "agent RSS with {total} synced objects: {:.1} MiB",
        rss_mib(agent.0.id())
    );
}

fn syncagent_memory(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let workspaces = std::env::var("KCP_SYNC_MEMORY_WORKSPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    rt.block_on(memory(workspaces));
    let mut group = c.benchmark_group("kcp_api_syncagent");
    group.sample_size(10);
    group.bench_function("process_start_to_readyz", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let (_kube, _kcp, _consumers, service_kc, kcp_kc) = setup(1).await;
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let health = free_port();
                let _agent = spawn(&service_kc, &kcp_kc, health);
                total += wait_ready(health).await;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, syncagent_memory);
criterion_main!(benches);
