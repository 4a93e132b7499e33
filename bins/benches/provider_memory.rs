//! Resident memory of an idle `capi-provider-kind` process (target: <= 25 MiB).
//!
//! Starts kcp-sim in-process with the CRDs and three KINDClusters, runs the release binary
//! against it with a stand-in `kind` whose creates never finish (no container engine here),
//! waits until the three objects are `Provisioning` and the process has idled for two seconds,
//! then prints `idle provider RSS` from `/proc/<pid>/status`. Criterion times the process from
//! start to `/readyz` answering 200.

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use capi_kind::api::{KINDCluster, Phase};
use criterion::{Criterion, criterion_group, criterion_main};
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_sim::{Config, Server};
use support::{bench_start_to_ready, ready, rss_mib};

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-kind");

static PRINTED: AtomicBool = AtomicBool::new(false);

fn stand_in_kind(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("kind");
    let script = "#!/bin/sh\ncase \"$1 $2\" in\n\"create cluster\") cat >/dev/null; exec sleep 600 ;;\n*) exit 0 ;;\nesac\n";
    std::fs::write(&path, script).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    path
}

async fn all_provisioning(client: &dyn ObjectClient) -> bool {
    let list: Vec<KINDCluster> = client
        .list_typed(Some("default"), &Default::default())
        .await
        .unwrap_or_default();
    list.len() == 3
        && list
            .iter()
            .all(|o| o.status.as_ref().and_then(|s| s.phase) == Some(Phase::Provisioning))
}

async fn run_provider_once() -> Duration {
    let sim = Server::start(Config::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let admin = sim.object_client("");
    for crd in capi_kind::api::crd_objects().unwrap_or_else(|e| panic!("{e}")) {
        admin.create(&crd).await.unwrap_or_else(|e| panic!("{e}"));
    }
    for i in 0..3 {
        let yaml = format!(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {{name: c{i}, namespace: default}}\nspec: {{clusterName: c{i}}}\n"
        );
        let object = parse_manifests("bench", &yaml)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0);
        admin
            .create(&object)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let dir = std::env::temp_dir().join(format!("provider-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let mut child = Command::new(PROVIDER)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--kind-binary")
        .arg(stand_in_kind(&dir))
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
        while !all_provisioning(&admin).await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        eprintln!(
            "idle provider RSS: {:.1} MiB (3 KINDClusters provisioning, then idling)",
            rss_mib(child.id())
        );
    }
    // SIGTERM, so the provider drains and its kind children are killed with it.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(dir);
    sim.shutdown().await;
    took
}

fn provider_memory(c: &mut Criterion) {
    bench_start_to_ready(c, "capi_provider_kind_process", run_provider_once);
}

criterion_group!(benches, provider_memory);
criterion_main!(benches);
