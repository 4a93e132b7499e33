//! The `kcp-init-agent` binary, run as processes against kcp-sim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::Workspace;
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_sim::{Config, Server, SimClient};
use support::process::{Running, free_port};

const AGENT: &str = env!("CARGO_BIN_EXE_kcp-init-agent");
const WORKSPACE_TYPE: &str = include_str!("../../examples/playground/01-workspace-type.yaml");
const INIT: &str = include_str!("../../examples/playground/02-init.yaml");
const WORKSPACES: &str = include_str!("../../examples/playground/03-workspaces.yaml");

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "kcp-bins-{}-{}-{name}",
        std::process::id(),
        fastrand_u64()
    ))
}

fn fastrand_u64() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}

/// A plain HTTP GET: (status code, body), or None when nothing listens.
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

async fn apply(client: &dyn ObjectClient, yaml: &str) {
    let objects = parse_manifests("test.yaml", yaml).unwrap();
    apply_objects(client, objects).await;
}

async fn apply_objects(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

async fn prepared_sim() -> (Server, SimClient, PathBuf) {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let root = sim.object_client("root");
    let crds = kcp_init::api::crd_objects().unwrap();
    apply_objects(&root, crds).await;
    apply(&root, WORKSPACE_TYPE).await;
    apply(&root, INIT).await;
    let kubeconfig = temp_path("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &["root"]).unwrap();
    (sim, root, kubeconfig)
}

fn agent(kubeconfig: &PathBuf, extra: &[&str]) -> Running {
    let child = Command::new(AGENT)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--config-workspace", "root", "--log-format", "console"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(match std::env::var_os("AGENT_LOG") {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap(),
            ),
            None => Stdio::null(),
        })
        .spawn()
        .expect("kcp-init-agent starts");
    Running(child)
}

async fn wait_for<F: FnMut() -> bool>(what: &str, within: Duration, mut f: F) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn all_ready(root: &SimClient) -> bool {
    let list: Vec<Workspace> = root.list_typed(None, &Default::default()).await.unwrap();
    !list.is_empty()
        && list
            .iter()
            .all(|w| w.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Ready"))
}

#[test]
fn the_crds_subcommand_prints_the_generated_crds_kept_in_deploy() {
    let out = Command::new(AGENT).arg("crds").output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, kcp_init::api::crds_yaml().unwrap());
    let kept = include_str!("../../deploy/kcp-init-agent/crds.yaml");
    assert_eq!(
        printed, kept,
        "regenerate with: kcp-init-agent crds > deploy/kcp-init-agent/crds.yaml"
    );
}

#[test]
fn a_missing_config_workspace_is_a_clear_error() {
    let out = Command::new(AGENT)
        .args(["--log-format", "console"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--config-workspace") && stderr.contains("required"),
        "{stderr}"
    );
}

#[test]
fn an_invalid_selector_is_refused_at_start() {
    let out = Command::new(AGENT)
        .args([
            "--config-workspace",
            "root",
            "--init-target-selector",
            "a in (b",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--init-target-selector"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_binary_is_ready_after_sync_initializes_serves_metrics_and_drains_on_sigterm() {
    let (sim, root, kubeconfig) = prepared_sim().await;
    let (metrics, health) = (free_port(), free_port());
    let mut running = agent(
        &kubeconfig,
        &[
            "--metrics-address",
            &format!("127.0.0.1:{metrics}"),
            "--health-address",
            &format!("127.0.0.1:{health}"),
        ],
    );
    wait_for("/readyz", Duration::from_secs(20), || {
        http_get(health, "/readyz").is_some_and(|(code, _)| code == 200)
    })
    .await;
    assert_eq!(http_get(health, "/healthz").map(|(c, _)| c), Some(200));
    apply(&root, WORKSPACES).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !all_ready(&root).await {
        assert!(Instant::now() < deadline, "workspaces not Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A workspace turns Ready as soon as the initializer is gone, a moment before the agent
    // has read the answer and counted it: wait for the count, not just for Ready.
    wait_for(
        "three initializations counted",
        Duration::from_secs(10),
        || initialized_by(metrics) == 3,
    )
    .await;
    let (_, text) = http_get(metrics, "/metrics").unwrap();
    assert!(
        text.contains(
            "kcp_init_initialization_duration_seconds_count{target=\"init-dev-environment\"} 3"
        ),
        "{text}"
    );

    let pid = running.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the agent did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}");
    drop(sim);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_leader_election_only_one_of_two_agents_acts() {
    let (_sim, root, kubeconfig) = prepared_sim().await;
    let (m1, m2) = (free_port(), free_port());
    let _a = agent(
        &kubeconfig,
        &[
            "--enable-leader-election",
            "--leader-election-namespace=default",
            "--leader-election-id=kcp-init-agent",
            "--metrics-address",
            &format!("127.0.0.1:{m1}"),
        ],
    );
    let _b = agent(
        &kubeconfig,
        &[
            "--enable-leader-election",
            "--leader-election-namespace=default",
            "--leader-election-id=kcp-init-agent",
            "--metrics-address",
            &format!("127.0.0.1:{m2}"),
        ],
    );
    apply(&root, WORKSPACES).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !all_ready(&root).await {
        assert!(Instant::now() < deadline, "workspaces not Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for(
        "three initializations counted",
        Duration::from_secs(10),
        || initialized_by(m1) + initialized_by(m2) >= 3,
    )
    .await;
    let (a, b) = (initialized_by(m1), initialized_by(m2));
    assert_eq!(a + b, 3, "a={a} b={b}");
    assert!(a == 0 || b == 0, "both agents acted: a={a} b={b}");
    let lease: Option<k8s_openapi::api::coordination::v1::Lease> = root
        .get_typed(Some("default"), "kcp-init-agent")
        .await
        .unwrap();
    assert!(lease.unwrap().spec.unwrap().holder_identity.is_some());
}

/// Reads one agent's `kcp_init_clusters_initialized_total` for the playground's InitTarget.
fn initialized_by(port: u16) -> u64 {
    http_get(port, "/metrics")
        .and_then(|(_, text)| {
            text.lines()
                .find(|l| {
                    l.starts_with(
                        "kcp_init_clusters_initialized_total{target=\"init-dev-environment\"}",
                    )
                })
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_replicas_are_ready_and_a_killed_leader_hands_over_within_the_lease_duration() {
    let (_sim, root, kubeconfig) = prepared_sim().await;
    let ports: Vec<(u16, u16)> = (0..2).map(|_| (free_port(), free_port())).collect();
    let mut agents: Vec<Running> = ports
        .iter()
        .map(|(metrics, health)| {
            agent(
                &kubeconfig,
                &[
                    "--enable-leader-election",
                    "--leader-election-namespace=default",
                    "--leader-election-lease-duration=3",
                    "--leader-election-renew-grace=1",
                    &format!("--metrics-address=127.0.0.1:{metrics}"),
                    &format!("--health-address=127.0.0.1:{health}"),
                ],
            )
        })
        .collect();
    wait_for(
        "both replicas Ready (leader synced, standby waiting)",
        Duration::from_secs(20),
        || {
            let answers: Vec<_> = ports
                .iter()
                .map(|(_, health)| http_get(*health, "/readyz"))
                .collect();
            answers
                .iter()
                .all(|a| a.as_ref().is_some_and(|(code, _)| *code == 200))
        },
    )
    .await;
    apply(&root, WORKSPACES).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !all_ready(&root).await {
        assert!(Instant::now() < deadline, "workspaces not Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for(
        "three initializations counted",
        Duration::from_secs(10),
        || ports.iter().map(|(m, _)| initialized_by(*m)).sum::<u64>() >= 3,
    )
    .await;
    let counts: Vec<u64> = ports.iter().map(|(m, _)| initialized_by(*m)).collect();
    let leader = counts
        .iter()
        .position(|c| *c == 3)
        .expect("one agent initialized all three");
    let standby = 1 - leader;
    // SIGKILL: the leader cannot release the Lease; the standby must wait for it to expire.
    let _ = agents[leader].0.kill();
    let _ = agents[leader].0.wait();
    let killed_at = Instant::now();
    let more = "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: after-handover\nspec:\n  type:\n    name: dev-environment\n    path: root\n";
    apply(&root, more).await;
    wait_for(
        "the standby to initialize the new workspace",
        Duration::from_secs(20),
        || initialized_by(ports[standby].0) == 1,
    )
    .await;
    let took = killed_at.elapsed();
    assert!(took < Duration::from_secs(3 + 5), "handover took {took:?}");
    assert_eq!(
        initialized_by(ports[standby].0),
        1,
        "no workspace was initialized twice"
    );
    agents.clear();
}
