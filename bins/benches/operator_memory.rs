//! Resident memory of an idle `kcp-operator` process (target: <= 25 MiB).
//!
//! Starts kcp-sim in-process (workload simulation on) with the operator's and cert-manager's
//! CRDs and the playground's example installation (a RootShard, a Shard, a FrontProxy, a
//! CacheServer and a Kubeconfig), runs the release binary against it with `--pki builtin` until
//! every source is Ready and the process has idled for three seconds, then prints
//! `idle operator RSS` from `/proc/<pid>/status`. Criterion times the process from start to
//! `/readyz` answering 200.

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_operator::api::{CacheServer, FrontProxy, Kubeconfig, RootShard, Shard};
use kcp_sim::{Config, Server};
use support::{apply, bench_start_to_ready, free_port, ready, rss_mib};

/// The binary measured: `KCP_RS_OPERATOR_BIN` when set (e.g. the `lean` profile's build:
/// `cargo build --profile lean -p kcp-bins --bin kcp-operator`), else the bench profile's.
fn operator() -> String {
    std::env::var("KCP_RS_OPERATOR_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_kcp-operator").to_owned())
}
const SETUP: [&str; 3] = [
    include_str!("../../examples/playground/operator/00-cert-manager-crds.yaml"),
    include_str!("../../examples/playground/operator/01-issuer.yaml"),
    include_str!("../../examples/playground/operator/02-installation.yaml"),
];

static PRINTED: AtomicBool = AtomicBool::new(false);

fn is_ready(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
) -> bool {
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether the five sources of the example report Ready.
async fn all_ready(client: &dyn ObjectClient) -> bool {
    let rs: Option<RootShard> = client.get_typed(Some("kcp"), "root").await.ok().flatten();
    let s: Option<Shard> = client.get_typed(Some("kcp"), "alpha").await.ok().flatten();
    let f: Option<FrontProxy> = client.get_typed(Some("kcp"), "edge").await.ok().flatten();
    let c: Option<CacheServer> = client.get_typed(Some("kcp"), "cache").await.ok().flatten();
    let k: Option<Kubeconfig> = client.get_typed(Some("kcp"), "admin").await.ok().flatten();
    is_ready(
        rs.as_ref()
            .and_then(|o| o.status.as_ref())
            .map(|s| &s.conditions[..]),
    ) && is_ready(
        s.as_ref()
            .and_then(|o| o.status.as_ref())
            .map(|s| &s.conditions[..]),
    ) && is_ready(
        f.as_ref()
            .and_then(|o| o.status.as_ref())
            .map(|s| &s.conditions[..]),
    ) && is_ready(
        c.as_ref()
            .and_then(|o| o.status.as_ref())
            .map(|s| &s.conditions[..]),
    ) && is_ready(
        k.as_ref()
            .and_then(|o| o.status.as_ref())
            .map(|s| &s.conditions[..]),
    )
}

/// The playground's Kubeconfig grants `cluster-admin` in its kcp; this bench runs no kcp, so
/// its Kubeconfig is applied without `authorization` (else it never gets Ready).
fn without_grants(object: &mut DynamicObject) {
    let is_kubeconfig = object
        .types
        .as_ref()
        .is_some_and(|t| t.kind == "Kubeconfig");
    if is_kubeconfig && let Some(spec) = object.data.get_mut("spec").and_then(|s| s.as_object_mut())
    {
        spec.remove("authorization");
    }
}

async fn setup() -> Server {
    let sim = Server::start(Config {
        simulate_workloads: Some(Duration::from_millis(10)),
        ..Config::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let client = sim.object_client("");
    let crds = kcp_operator::api::crd_objects().unwrap_or_else(|e| panic!("{e}"));
    apply(&client, crds).await;
    for doc in SETUP {
        let mut objects = parse_manifests("setup.yaml", doc).unwrap_or_else(|e| panic!("{e}"));
        objects.iter_mut().for_each(without_grants);
        apply(&client, objects).await;
    }
    sim
}

async fn run_operator_once() -> Duration {
    let sim = setup().await;
    let kubeconfig =
        std::env::temp_dir().join(format!("operator-memory-{}.kubeconfig", std::process::id()));
    sim.write_kubeconfig(&kubeconfig, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let port = free_port();
    let start = Instant::now();
    let mut child = Command::new(operator())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--pki", "builtin", "--metrics-bind-address", "0"])
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
        let client = sim.object_client("");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !all_ready(&client).await && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let converged = start.elapsed();
        assert!(
            all_ready(&client).await,
            "the example installation was not Ready within 60 s: the RSS would not be idle"
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
        eprintln!(
            "idle operator RSS: {:.1} MiB (the example installation Ready after {:.1?}, 29 certificates issued by the built-in PKI, then idling; {})",
            rss_mib(child.id()),
            converged,
            operator()
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(kubeconfig);
    sim.shutdown().await;
    took
}

fn operator_memory(c: &mut Criterion) {
    bench_start_to_ready(c, "kcp_operator_process", run_operator_once);
}

criterion_group!(benches, operator_memory);
criterion_main!(benches);
