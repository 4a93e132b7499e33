//! Each binary started with the argument list of the upstream manifest it replaces, against
//! kcp-sim: a user who keeps upstream's Helm chart or kustomize and swaps the image must get a
//! process that starts, leads and serves. The lists are upstream's, verbatim (their sources named
//! per test); only what a test cannot use as is gets replaced: listen addresses (every server a
//! test starts binds 127.0.0.1, on a free port) and mounted file paths (the test's kubeconfigs).
//! Each list was checked against upstream's own output at the commit named: the Helm charts
//! rendered by helm v3.22.0 with their `tests/default.yaml`, the kustomize directories by
//! `kubectl kustomize` (the kubebuilder scaffold's `testdata/project-v4/config/default`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, parse_manifests};
use kcp_sim::{Config, PLAIN_CLUSTER, Server};
use support::process::free_port;

/// The kcp agents' upstream metrics default is the fixed `127.0.0.1:8085`: their tests take
/// turns.
static PORT_8085: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Running {
    child: Child,
    log: tempfile::TempPath,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A file of this test's, removed when dropped.
fn temp_path(name: &str) -> tempfile::TempPath {
    tempfile::Builder::new()
        .prefix(&format!("upstream-manifests-{name}-"))
        .tempfile()
        .unwrap()
        .into_temp_path()
}

/// Starts `binary` with `args` and `env`; its log is kept until it stops.
fn replay(binary: &str, args: &[String], env: &[(&str, String)]) -> Running {
    let log = temp_path("log");
    let mut command = Command::new(binary);
    command
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("POD_NAMESPACE")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
    for (key, value) in env {
        command.env(key, value);
    }
    Running {
        child: command.spawn().expect("the binary starts"),
        log,
    }
}

/// A plain HTTP GET: the status code and body, or None when nothing answers.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((code, body))
}

fn http_status(port: u16, path: &str) -> Option<u16> {
    http_get(port, path).map(|(code, _)| code)
}

/// Scrapes plain `/metrics` on `port` and requires every family.
fn assert_families(port: u16) {
    let (code, body) = http_get(port, "/metrics").expect("metrics answer");
    assert_eq!(code, 200);
    assert_eq!(
        support::secure_metrics::missing_families(&body),
        Vec::<&str>::new(),
        "{body}"
    );
}

/// The status of an HTTPS GET without a token (`curl -k`: the certificate is self-signed).
fn https_status(port: u16, path: &str) -> Option<u16> {
    let out = Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Waits until `done` holds of the process's log so far (the probes run in `done` too).
async fn until(what: &str, running: &mut Running, mut done: impl FnMut(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(&running.log()) {
        if let Ok(Some(status)) = running.child.try_wait() {
            panic!("exited ({status}) before {what}:\n{}", running.log());
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{}",
            running.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply_until_settled(&plan, Duration::from_secs(10))
        .await;
    assert!(report.is_complete(), "{report}");
}

async fn apply_yaml(client: &dyn ObjectClient, yaml: &str) {
    apply(client, parse_manifests("test.yaml", yaml).unwrap()).await;
}

fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n")
}

/// A plain Kubernetes kcp-sim with `crds` and `namespace`; its kubeconfig.
async fn kube_with(crds: Vec<DynamicObject>, namespace_name: &str) -> (Server, tempfile::TempPath) {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.object_client(PLAIN_CLUSTER);
    apply(&client, crds).await;
    apply_yaml(&client, &namespace(namespace_name)).await;
    let kubeconfig = temp_path("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
    (sim, kubeconfig)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// kcp-dev/helm-charts `charts/init-agent` (ca73c22c) with its `tests/default.yaml` values:
/// the kubeconfig Secret mounted at `/etc/init-agent/kcp/kubeconfig`, no probes, metrics on
/// the binary's default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_agent_helm_chart_default_values() {
    let _turn = PORT_8085.lock().await;
    let sim = Server::start(Config::kcp()).await.unwrap();
    apply_yaml(
        &sim.object_client("root"),
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: init-agent}\nspec: {}\n",
    )
    .await;
    let config = sim.object_client("root:init-agent");
    apply(&config, kcp_init::api::crd_objects().unwrap()).await;
    apply_yaml(&config, &namespace("kcp-init-agent")).await;
    // One InitTarget, so that its controller runs (and has series to scrape).
    apply_yaml(
        &sim.object_client("root"),
        include_str!("../../examples/playground/01-workspace-type.yaml"),
    )
    .await;
    apply_yaml(
        &config,
        include_str!("../../examples/playground/02-init.yaml"),
    )
    .await;
    let kubeconfig = temp_path("kcp-kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &["root"]).unwrap();
    let mut running = replay(
        env!("CARGO_BIN_EXE_kcp-init-agent"),
        &[
            "--config-workspace=root:init-agent".to_owned(),
            "--enable-leader-election=true".to_owned(),
            "--leader-election-namespace=kcp-init-agent".to_owned(),
            // /etc/init-agent/kcp/kubeconfig in the chart.
            format!("--kubeconfig={}", path(&kubeconfig)),
        ],
        &[],
    );
    until(
        "leadership and every metric family on 127.0.0.1:8085",
        &mut running,
        |log| {
            log.contains("became leader")
                && http_get(8085, "/metrics").is_some_and(|(code, body)| {
                    code == 200 && support::secure_metrics::missing_families(&body).is_empty()
                })
        },
    )
    .await;
}

/// kcp-dev/helm-charts `charts/api-syncagent` (ca73c22c) with its test values
/// (`apiExportEndpointSliceName: my-api`): the service cluster from the pod's environment (here
/// `KUBECONFIG`, in a pod the in-cluster config), `POD_NAMESPACE` and `AGENT_NAME` (the release
/// name) from the chart's env, the kcp kubeconfig Secret mounted at
/// `/etc/api-syncagent/kcp/kubeconfig`, metrics on the binary's default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_syncagent_helm_chart_default_values() {
    let _turn = PORT_8085.lock().await;
    let crds = parse_manifests("crds", &kcp_sync::api::crds_yaml().unwrap()).unwrap();
    let (_service, service_kubeconfig) = kube_with(crds, "kcp-system").await;
    let kcp = Server::start(Config::kcp()).await.unwrap();
    apply_yaml(
        &kcp.object_client("root"),
        include_str!("../../examples/playground/sync/02-provider.yaml"),
    )
    .await;
    let export = include_str!("../../examples/playground/sync/03-export.yaml")
        .replace("name: databases", "name: my-api");
    apply_yaml(&kcp.object_client("root:db-provider"), &export).await;
    let kcp_kubeconfig = temp_path("kcp-kubeconfig");
    kcp.write_kubeconfig(&kcp_kubeconfig, &["root:db-provider"])
        .unwrap();
    let mut running = replay(
        env!("CARGO_BIN_EXE_kcp-api-syncagent"),
        &[
            "--namespace=$(POD_NAMESPACE)".replace("$(POD_NAMESPACE)", "kcp-system"),
            "--enable-leader-election=true".to_owned(),
            "--apiexportendpointslice-ref=my-api".to_owned(),
            "--agent-name=$(AGENT_NAME)".replace("$(AGENT_NAME)", "api-syncagent"),
            // /etc/api-syncagent/kcp/kubeconfig in the chart.
            format!("--kcp-kubeconfig={}", path(&kcp_kubeconfig)),
        ],
        &[
            ("KUBECONFIG", path(&service_kubeconfig)),
            ("POD_NAMESPACE", "kcp-system".to_owned()),
            ("AGENT_NAME", "api-syncagent".to_owned()),
        ],
    );
    until(
        "leadership and every metric family on 127.0.0.1:8085",
        &mut running,
        |log| {
            log.contains("became leader")
                && http_get(8085, "/metrics").is_some_and(|(code, body)| {
                    code == 200 && support::secure_metrics::missing_families(&body).is_empty()
                })
        },
    )
    .await;
}

/// `/readyz` answers 200 on `health`, and `/metrics` on `metrics` answers the way the flags ask:
/// plain 200, or (secure, as kcp-operator's default) 401 to a scraper without a token.
async fn ready_and_serving(running: &mut Running, health: u16, metrics: u16, secure: bool) {
    until("/readyz, /metrics and leadership", running, |log| {
        let metrics = if secure {
            https_status(metrics, "/metrics") == Some(401)
        } else {
            http_status(metrics, "/metrics") == Some(200)
        };
        http_status(health, "/readyz") == Some(200) && metrics && log.contains("became leader")
    })
    .await;
    if !secure {
        assert_families(metrics);
    }
}

fn operator_crds() -> Vec<DynamicObject> {
    let mut crds = kcp_operator::api::crd_objects().unwrap();
    crds.extend(
        parse_manifests(
            "cert-manager",
            include_str!("../../examples/playground/operator/00-cert-manager-crds.yaml"),
        )
        .unwrap(),
    );
    crds
}

/// kcp-dev/kcp-operator `config/manager/manager.yaml` with `config/default`'s patches (406169b3,
/// unchanged since v0.8.3): `command: [/manager]` and these args (outside a pod the Lease falls
/// back to `kcp-operator-system`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_operator_kustomize_config_default() {
    let (_sim, kubeconfig) = kube_with(operator_crds(), "kcp-operator-system").await;
    let (health, metrics) = (free_port(), free_port());
    let mut running = replay(
        env!("CARGO_BIN_EXE_kcp-operator"),
        &[
            format!("--metrics-bind-address=127.0.0.1:{metrics}"), // :8443
            "--leader-elect".to_owned(),
            format!("--health-probe-bind-address=127.0.0.1:{health}"), // :8081
            "--zap-time-encoding=iso8601".to_owned(),
        ],
        &[("KUBECONFIG", path(&kubeconfig))],
    );
    ready_and_serving(&mut running, health, metrics, true).await;
}

/// kcp-dev/helm-charts `charts/kcp-operator` (ca73c22c) at its default values; the chart sets no
/// health address, so the binary's default `:8081` is the one replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_operator_helm_chart_default_values() {
    let (_sim, kubeconfig) = kube_with(operator_crds(), "kcp-operator-system").await;
    let (health, metrics) = (free_port(), free_port());
    let mut args = strings(&[
        "--leader-elect=true",
        "--zap-log-level=info",
        "--zap-encoder=json",
        "--zap-time-encoding=iso8601",
    ]);
    args.insert(0, format!("--metrics-bind-address=127.0.0.1:{metrics}")); // :8443
    args.push(format!("--health-probe-bind-address=127.0.0.1:{health}")); // default :8081
    let mut running = replay(
        env!("CARGO_BIN_EXE_kcp-operator"),
        &args,
        &[("KUBECONFIG", path(&kubeconfig))],
    );
    ready_and_serving(&mut running, health, metrics, true).await;
}

fn agent_provider_crds() -> Vec<DynamicObject> {
    let mut crds = capi_agent::api::crd_objects().unwrap();
    crds.extend(
        parse_manifests(
            "foreign",
            include_str!("../../examples/playground/agent/00-foreign-crds.yaml"),
        )
        .unwrap(),
    );
    crds
}

/// openshift/cluster-api-provider-agent `config/manager/manager.yaml` with
/// `config/default/manager_auth_proxy_patch.yaml` (79696ce0), whose args replace the manager's;
/// `${WATCH_NAMESPACE}` and `${AGENTS_NAMESPACE}` as `make deploy` leaves them (empty).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_provider_agent_manager_auth_proxy_patch() {
    let (_sim, kubeconfig) = kube_with(agent_provider_crds(), "cluster-api-provider-agent").await;
    let (health, metrics) = (free_port(), free_port());
    let mut running = replay(
        env!("CARGO_BIN_EXE_capi-provider-agent"),
        &[
            format!("--health-probe-bind-address=127.0.0.1:{health}"), // :8081
            format!("--metrics-bind-address=127.0.0.1:{metrics}"),     // 127.0.0.1:8080
            "--leader-elect".to_owned(),
            "--namespace=".to_owned(),
            "--agent-namespace=".to_owned(),
        ],
        &[("KUBECONFIG", path(&kubeconfig))],
    );
    ready_and_serving(&mut running, health, metrics, false).await;
}

/// A kubebuilder v4 scaffold's `config/manager/manager.yaml` (kubebuilder 5c400728), what a kind
/// provider made with kubebuilder passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_provider_kubebuilder_scaffold_manager() {
    let mut crds = capi_kind::api::crd_objects().unwrap();
    crds.extend(
        parse_manifests(
            "foreign",
            include_str!("../../examples/playground/agent/00-foreign-crds.yaml"),
        )
        .unwrap(),
    );
    let (_sim, kubeconfig) = kube_with(crds, "capi-kind-system").await;
    let (health, metrics) = (free_port(), free_port());
    let mut running = replay(
        env!("CARGO_BIN_EXE_capi-provider-kind"),
        &[
            format!("--metrics-bind-address=127.0.0.1:{metrics}"), // :8443
            "--leader-elect".to_owned(),
            format!("--health-probe-bind-address=127.0.0.1:{health}"), // :8081
        ],
        &[("KUBECONFIG", path(&kubeconfig))],
    );
    ready_and_serving(&mut running, health, metrics, false).await;
}

/// Not an upstream manifest: kcp-operator with `--metrics-secure=false`, so its families are
/// scraped plain as well (under TLS they are scraped in `real_rbac.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_operator_with_plain_metrics_serves_every_family() {
    let (_sim, kubeconfig) = kube_with(operator_crds(), "kcp-operator-system").await;
    let (health, metrics) = (free_port(), free_port());
    let mut running = replay(
        env!("CARGO_BIN_EXE_kcp-operator"),
        &[
            format!("--metrics-bind-address=127.0.0.1:{metrics}"),
            "--metrics-secure=false".to_owned(),
            "--leader-elect".to_owned(),
            format!("--health-probe-bind-address=127.0.0.1:{health}"),
        ],
        &[("KUBECONFIG", path(&kubeconfig))],
    );
    ready_and_serving(&mut running, health, metrics, false).await;
}
