//! The Helm charts under `deploy/charts`, through the real `helm` (built from its Go module by the
//! test bed) and the real servers: each lints and renders with every values file in its `ci/`
//! (upstream's own test values where upstream ships the chart), its RBAC is exactly the RBAC the
//! manifests under `deploy/` ship (the RBAC the real-RBAC tests run the binaries with), and
//! everything it renders is accepted by a server-side dry run: kube-side objects by the real
//! kube-apiserver, the init-agent's kcp-side targets by the real kcp. Always the real backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kcp_testbed::KcpBed;
use serde_json::Value;

fn charts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/charts")
}

fn helm() -> PathBuf {
    kcp_testbed::go_build::build("helm")
        .unwrap_or_else(|e| panic!("building helm: {e}"))
        .binary
}

fn run(command: &mut Command) -> Output {
    let out = command.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{command:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The values files of `chart`'s `ci/` directory.
fn values_files(chart: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(charts_dir().join(chart).join("ci"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{chart} has values files in ci/");
    files
}

/// `helm lint` and `helm template` of `chart` with `values`: the rendered objects.
fn render(helm: &Path, chart: &str, values: &Path, namespace: &str) -> Vec<Value> {
    let dir = charts_dir().join(chart);
    run(Command::new(helm)
        .arg("lint")
        .arg(&dir)
        .arg("-f")
        .arg(values));
    let out = run(Command::new(helm)
        .args(["template", "release", "--namespace", namespace])
        .arg(&dir)
        .arg("-f")
        .arg(values));
    let text = String::from_utf8(out.stdout).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// The rules of every Role and ClusterRole in `objects`, as a sorted list of JSON texts.
fn rules(objects: &[Value]) -> Vec<String> {
    let mut all: Vec<String> = objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("Role" | "ClusterRole")))
        .flat_map(|o| o["rules"].as_array().cloned().unwrap_or_default())
        .map(|r| r.to_string())
        .collect();
    all.sort();
    all
}

fn manifest_rules(files: &[&str]) -> Vec<String> {
    let objects: Vec<Value> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(charts_dir().join("..").join(f)).unwrap();
            serde_saphyr::from_multiple::<Value>(&text).unwrap()
        })
        .filter(|v| !v.is_null())
        .collect();
    rules(&objects)
}

/// A server-side dry run of `objects` through kubectl with `args` (context, server).
fn dry_run(objects: &[Value], kubeconfig: &Path, args: &[String]) {
    let text: String = objects
        .iter()
        .map(|o| format!("---\n{}\n", serde_json::to_string(o).unwrap()))
        .collect();
    let file = kubeconfig.with_extension(format!("{}.yaml", fastrand_suffix()));
    std::fs::write(&file, text).unwrap();
    run(Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .args([
            "apply",
            "--server-side",
            "--dry-run=server",
            "--field-manager=helm-test",
            "-f",
        ])
        .arg(&file));
    let _ = std::fs::remove_file(&file);
}

fn fastrand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

/// The playground kubeconfig of the shared real servers (contexts kcp and kube).
async fn real_kubeconfig() -> PathBuf {
    let path = kcp_testbed::real::credentials()
        .unwrap()
        .dir
        .join("helm.kubeconfig");
    let write = path.clone();
    tokio::task::spawn_blocking(move || kcp_testbed::write_kubeconfig(&write))
        .await
        .unwrap()
        .unwrap();
    path
}

/// Creates `namespace` on the real kube-apiserver (not a dry run: namespaced objects need it).
fn create_namespace(kubeconfig: &Path, namespace: &str) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--context", "kube", "create", "namespace", namespace])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || err.contains("AlreadyExists"),
        "{err}"
    );
}

/// A kube-side chart: lint, render, RBAC as `deploy/`, dry run on the real kube-apiserver.
async fn kube_chart(chart: &str, manifests: &[&str]) {
    let helm = tokio::task::spawn_blocking(helm).await.unwrap();
    let kubeconfig = real_kubeconfig().await;
    let namespace = format!("chart-{chart}");
    create_namespace(&kubeconfig, &namespace);
    for values in values_files(chart) {
        let objects = render(&helm, chart, &values, &namespace);
        assert_eq!(
            rules(&objects),
            manifest_rules(manifests),
            "{chart} with {}: its RBAC differs from {manifests:?}",
            values.display()
        );
        dry_run(&objects, &kubeconfig, &["--context".into(), "kube".into()]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_syncagent_chart_renders_upstreams_arguments_and_the_shipped_rbac() {
    kube_chart(
        "kcp-api-syncagent",
        &["kcp-api-syncagent/rbac-service.yaml"],
    )
    .await;
    let helm = tokio::task::spawn_blocking(helm).await.unwrap();
    let values = charts_dir().join("kcp-api-syncagent/ci/upstream-test-values.yaml");
    let objects = render(&helm, "kcp-api-syncagent", &values, "sync");
    let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    // Upstream's output: kcp-dev/helm-charts' api-syncagent chart (commit ca73c22c) with the
    // same values, rendered by this helm v3.22.0 (`helm template rel charts/api-syncagent -f
    // charts/api-syncagent/tests/default.yaml`), recorded here because CI cannot fetch it.
    let upstream = [
        "--namespace=$(POD_NAMESPACE)",
        "--enable-leader-election=true",
        "--apiexportendpointslice-ref=my-api",
        "--agent-name=$(AGENT_NAME)",
        "--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig",
    ];
    let ours: Vec<&str> = args
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(&ours[..upstream.len()], &upstream, "{ours:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kcp_operator_chart_renders_the_shipped_rbac_and_passes_a_dry_run() {
    kube_chart("kcp-operator", &["kcp-operator/rbac.yaml"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_provider_chart_renders_the_shipped_rbac_and_passes_a_dry_run() {
    kube_chart("capi-provider-agent", &["capi-provider-agent/rbac.yaml"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kind_provider_chart_renders_the_shipped_rbac_and_passes_a_dry_run() {
    kube_chart("capi-provider-kind", &["capi-provider-kind/rbac.yaml"]).await;
}

/// The init-agent chart's host target goes to the real kube-apiserver; its configcluster and
/// wstcluster targets (CRDs, RBAC, the Lease's namespace) to a fresh workspace of the real kcp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_init_agent_chart_renders_each_target_for_its_cluster() {
    let helm = tokio::task::spawn_blocking(helm).await.unwrap();
    let kubeconfig = real_kubeconfig().await;
    create_namespace(&kubeconfig, "chart-kcp-init-agent");
    let kcp = KcpBed::start_real().await.unwrap();
    let workspace = kcp.real_endpoint(kcp.root()).unwrap().url;
    let mut kcp_rules = Vec::new();
    for values in values_files("kcp-init-agent") {
        let objects = render(&helm, "kcp-init-agent", &values, "chart-kcp-init-agent");
        let kcp_side = objects.iter().all(|o| o["kind"] != "Deployment");
        let context = if kcp_side {
            kcp_rules.extend(rules(&objects));
            vec![
                "--context".into(),
                "kcp".into(),
                "--server".into(),
                workspace.clone(),
            ]
        } else {
            vec!["--context".into(), "kube".into()]
        };
        dry_run(&objects, &kubeconfig, &context);
    }
    kcp_rules.sort();
    // The wstcluster values name the type the shipped manifest names (dev-environment).
    assert_eq!(kcp_rules, manifest_rules(&["kcp-init-agent/rbac.yaml"]));
}
