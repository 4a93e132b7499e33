//! The `kcp-api-syncagent` binary, run as a process between two kcp-sim servers (a service
//! cluster and kcp), configured with the upstream flags.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ListOptions, ObjectClient, parse_manifests};
use kcp_sim::{Config, PLAIN_CLUSTER, Server};
use support::process::free_port;

const AGENT: &str = env!("CARGO_BIN_EXE_kcp-api-syncagent");
const SERVICE: &str = include_str!("../../examples/playground/sync/01-service.yaml");
const WORKSPACES: &str = include_str!("../../examples/playground/sync/02-provider.yaml");
const EXPORT: &str = include_str!("../../examples/playground/sync/03-export.yaml");
const CONSUMER: &str = include_str!("../../examples/playground/sync/04-consumer.yaml");
const DATABASE: &str = include_str!("../../examples/playground/sync/05-database.yaml");

fn temp_path(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!(
        "kcp-syncagent-{}-{nanos}-{name}",
        std::process::id()
    ))
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

/// Applies a YAML stream; `false` when something stayed pending (not served yet).
async fn apply(client: &dyn ObjectClient, yaml: &str) -> bool {
    let objects = parse_manifests("test.yaml", yaml).unwrap();
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    Applier::new(client, ApplierConfig::new("test"))
        .apply(&plan)
        .await
        .is_complete()
}

struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_for<F, Fut>(what: &str, within: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn crds_prints_the_published_resource_crd() {
    let out = Command::new(AGENT).arg("crds").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("name: publishedresources.syncagent.kcp.io"));
}

#[test]
fn missing_required_flags_are_reported_together() {
    let out = Command::new(AGENT)
        .args(["--log-format", "console"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    for flag in [
        "--apiexportendpointslice-ref",
        "--kcp-kubeconfig",
        "--namespace",
    ] {
        assert!(stderr.contains(flag), "{flag} missing in {stderr}");
    }
}

/// The flag errors of a start with `args` (it has no kubeconfigs, so it stops at the flags).
fn flag_errors(args: &[&str]) -> String {
    let out = Command::new(AGENT)
        .args(["--log-format", "console", "--namespace", "sync"])
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn an_agent_name_too_long_for_the_per_agent_finalizer_is_refused_at_start() {
    let long = format!("a{}", "b".repeat(55));
    let stderr = flag_errors(&["--agent-name", &long, "--per-agent-finalizer"]);
    assert!(
        stderr.contains("too long for --per-agent-finalizer"),
        "{stderr}"
    );
    let stderr = flag_errors(&["--agent-name", &long]);
    assert!(
        !stderr.contains("too long"),
        "only the per-agent finalizer limits it: {stderr}"
    );
}

#[test]
fn an_empty_agent_name_means_the_default() {
    let stderr = flag_errors(&[
        "--apiexportendpointslice-ref",
        "databases",
        "--agent-name",
        "",
    ]);
    assert!(!stderr.contains("--agent-name"), "{stderr}");
}

/// A service cluster with the PublishedResource CRD and the service objects, and a kcp with
/// the provider and consumer workspaces (no APIExport yet).
async fn service_and_kcp() -> (Server, Server, kcp_sim::SimClient) {
    let (kube, kcp) = (
        Server::start(Config::default()).await.unwrap(),
        Server::start(Config::kcp()).await.unwrap(),
    );
    let service = kube.object_client(PLAIN_CLUSTER);
    assert!(apply(&service, &kcp_sync::api::crds_yaml().unwrap()).await);
    assert!(apply(&service, SERVICE).await);
    assert!(apply(&kcp.object_client("root"), WORKSPACES).await);
    (kube, kcp, service)
}

/// Starts the agent against `kube` and the provider workspace of `kcp`, serving health and
/// metrics on the given ports.
fn start_agent(kube: &Server, kcp: &Server, name: &str, health: u16, metrics: u16) -> Agent {
    let (service_kc, kcp_kc) = (
        temp_path(&format!("service-{name}")),
        temp_path(&format!("kcp-{name}")),
    );
    kube.write_kubeconfig(&service_kc, &[]).unwrap();
    kcp.write_kubeconfig(&kcp_kc, &["root:db-provider"])
        .unwrap();
    Agent(
        Command::new(AGENT)
            .arg(format!("--kubeconfig={}", service_kc.display()))
            .arg(format!("--kcp-kubeconfig={}", kcp_kc.display()))
            .args([
                "--apiexportendpointslice-ref=databases",
                "--namespace=kcp-api-syncagent",
                "--log-format=console",
            ])
            .arg(format!("--health-address=127.0.0.1:{health}"))
            .arg(format!("--metrics-address=127.0.0.1:{metrics}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_publishes_the_crd_and_syncs_a_consumer_object() {
    let (kube, kcp, service) = service_and_kcp().await;
    assert!(apply(&kcp.object_client("root:db-provider"), EXPORT).await);
    let (health, metrics) = (free_port(), free_port());
    let _agent = start_agent(&kube, &kcp, "syncs", health, metrics);
    wait_for("/readyz", Duration::from_secs(20), || async {
        http_get(health, "/readyz").is_some_and(|(c, _)| c == 200)
    })
    .await;
    let consumer = kcp.object_client("root:db-consumer");
    assert!(apply(&consumer, CONSUMER).await);
    wait_for("the Database applied", Duration::from_secs(20), || {
        apply(&consumer, DATABASE)
    })
    .await;
    let gvk = GroupVersionKind::gvk("db.example.com", "v1", "Database");
    wait_for("the local copy", Duration::from_secs(20), || async {
        service
            .list(&gvk, None, &ListOptions::default())
            .await
            .unwrap()
            .items
            .len()
            == 1
    })
    .await;
    let (_, body) = http_get(metrics, "/metrics").unwrap();
    assert!(body.contains("sync_agent_published_resource 1"), "{body}");
}

/// kcp creates an export's endpoint slice a moment after the export: an agent started beside
/// them waits (served, not ready) instead of exiting as upstream's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_started_before_its_apiexport_waits_for_it_and_then_becomes_ready() {
    let (kube, kcp, _service) = service_and_kcp().await;
    let health = free_port();
    let mut agent = start_agent(&kube, &kcp, "early", health, free_port());
    wait_for("/healthz", Duration::from_secs(20), || async {
        http_get(health, "/healthz").is_some_and(|(c, _)| c == 200)
    })
    .await;
    assert_ne!(http_get(health, "/readyz").map(|(c, _)| c), Some(200));
    assert!(agent.0.try_wait().unwrap().is_none(), "the agent exited");
    assert!(apply(&kcp.object_client("root:db-provider"), EXPORT).await);
    wait_for("/readyz", Duration::from_secs(20), || async {
        http_get(health, "/readyz").is_some_and(|(c, _)| c == 200)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_prints_exactly_the_published_and_related_kinds_instead_of_everything() {
    let kube = Server::start(Config::default()).await.unwrap();
    let service = kube.object_client(PLAIN_CLUSTER);
    assert!(apply(&service, &kcp_sync::api::crds_yaml().unwrap()).await);
    assert!(apply(&service, SERVICE).await);
    let service_kc = temp_path("service-rbac");
    kube.write_kubeconfig(&service_kc, &[]).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(AGENT)
            .arg("rbac")
            .arg(format!("--kubeconfig={}", service_kc.display()))
            .arg("--namespace=sync-system")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(
        docs[0]["rules"],
        serde_json::json!([
            {"apiGroups": [""], "resources": ["secrets"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": ["db.example.com"], "resources": ["databases"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        ])
    );
    assert_eq!(docs[1]["kind"], "ClusterRoleBinding");
    assert_eq!(
        docs[1]["subjects"][0],
        serde_json::json!({"kind": "ServiceAccount", "name": "kcp-api-syncagent", "namespace": "sync-system"})
    );
}
