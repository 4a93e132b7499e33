//! The `capi-provider-agent` binary, run as a process against kcp-sim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use capi_agent::api::AgentCluster;
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_sim::{Config, Server};
use support::process::{Running, free_port};

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-agent");
const FOREIGN_CRDS: &str = include_str!("../../examples/playground/agent/00-foreign-crds.yaml");

fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

async fn wait_for<F: AsyncFnMut() -> bool>(what: &str, within: Duration, mut f: F) {
    let deadline = Instant::now() + within;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn the_crds_subcommand_prints_the_crds_kept_in_deploy() {
    let out = Command::new(PROVIDER).arg("crds").output().unwrap();
    assert!(out.status.success());
    let kept = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/capi-provider-agent/crds.yaml"
    ))
    .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), kept);
}

#[test]
fn the_components_subcommand_prints_the_clusterctl_components_kept_in_deploy() {
    let out = Command::new(PROVIDER).arg("components").output().unwrap();
    assert!(out.status.success());
    let kept = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/capi-provider-agent/infrastructure-components.yaml"
    ))
    .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_process_reconciles_and_reports_ready_and_metrics() {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.object_client("");
    let mut crds = capi_agent::api::crd_objects().unwrap();
    crds.extend(parse_manifests("foreign", FOREIGN_CRDS).unwrap());
    for crd in crds {
        client.create(&crd).await.unwrap();
    }
    let object = |v: serde_json::Value| -> DynamicObject { serde_json::from_value(v).unwrap() };
    client.create(&object(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hc"}}))).await.unwrap();
    client
        .create(&object(serde_json::json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1",
            "kind": "AgentCluster", "metadata": {"name": "hc", "namespace": "hc"}, "spec": {"controlPlaneEndpoint": {}}})))
        .await
        .unwrap();
    let kubeconfig: PathBuf = std::env::temp_dir().join(format!(
        "capi-provider-agent-{}.kubeconfig",
        std::process::id()
    ));
    sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
    let (metrics, health) = (free_port(), free_port());
    let child = Command::new(PROVIDER)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
        .args(["--log-format", "console"])
        .stdout(Stdio::null())
        .stderr(match std::env::var_os("AGENT_LOG") {
            Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
            None => Stdio::null(),
        })
        .spawn()
        .expect("capi-provider-agent starts");
    let _running = Running(child);
    wait_for("/readyz", Duration::from_secs(30), async || {
        http_get(health, "/readyz").is_some_and(|(c, _)| c == 200)
    })
    .await;
    wait_for(
        "the AgentCluster finalizer",
        Duration::from_secs(30),
        async || {
            let ac: Option<AgentCluster> = client.get_typed(Some("hc"), "hc").await.unwrap();
            ac.and_then(|a| a.metadata.finalizers)
                .is_some_and(|f| f.iter().any(|f| f.starts_with("agentclustercapi-provider")))
        },
    )
    .await;
    let (code, body) = http_get(metrics, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(
        body.contains("capi_agent_selection_duration_seconds"),
        "{body}"
    );
    assert!(body.contains("controller=\"agentcluster\""), "{body}");
    let _ = std::fs::remove_file(kubeconfig);
}
