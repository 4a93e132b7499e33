//! The `capi-provider-kind` binary as a process against kcp-sim, and its deploy assets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use capi_kind::api::{KINDCluster, Phase};
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_sim::{Config, Server};
use support::process::{Running, free_port};

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-kind");
const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/capi-provider-kind");
/// The parts of the clusterctl components, in order.
const PARTS: [&str; 4] = [
    "namespace.yaml",
    "crds.yaml",
    "rbac.yaml",
    "deployment.yaml",
];
const PROVIDER_LABEL: (&str, &str) = ("cluster.x-k8s.io/provider", "infrastructure-kind");

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("capi-provider-kind-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn http_answer(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

fn http_status(port: u16, path: &str) -> Option<u16> {
    http_answer(port, path)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn http_get(port: u16, path: &str) -> Option<String> {
    Some(
        http_answer(port, path)?
            .split_once("\r\n\r\n")?
            .1
            .to_string(),
    )
}

/// clusterctl's `infrastructure-components.yaml`: the kustomize parts, every object labelled
/// `cluster.x-k8s.io/provider: infrastructure-kind`.
fn components() -> String {
    let mut objects = Vec::new();
    for part in PARTS {
        let text = std::fs::read_to_string(format!("{DEPLOY}/{part}")).unwrap();
        for mut object in parse_manifests(part, &text).unwrap() {
            object
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(PROVIDER_LABEL.0.into(), PROVIDER_LABEL.1.into());
            objects.push(object);
        }
    }
    let header = "# Generated from namespace.yaml, crds.yaml, rbac.yaml and deployment.yaml by\n# bins/tests/capi_provider_kind.rs (UPDATE_DEPLOY=1 cargo test -p kcp-bins --test capi_provider_kind).\n";
    format!(
        "{header}{}",
        serde_saphyr::to_string_multiple(&objects).unwrap()
    )
}

#[test]
fn the_crds_subcommand_prints_the_generated_crds_kept_in_deploy() {
    let out = Command::new(PROVIDER).arg("crds").output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, capi_kind::api::crds_yaml().unwrap());
    let kept = std::fs::read_to_string(format!("{DEPLOY}/crds.yaml")).unwrap();
    assert_eq!(
        printed, kept,
        "regenerate with: capi-provider-kind crds > deploy/capi-provider-kind/crds.yaml"
    );
}

#[test]
fn the_clusterctl_components_are_generated_from_the_kustomize_parts() {
    let generated = components();
    let path = format!("{DEPLOY}/infrastructure-components.yaml");
    if std::env::var_os("UPDATE_DEPLOY").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(generated, kept, "regenerate with UPDATE_DEPLOY=1");
    let objects = parse_manifests("components", &kept).unwrap();
    let namespaces = objects
        .iter()
        .filter(|o| o.types.as_ref().unwrap().kind == "Namespace");
    assert_eq!(namespaces.count(), 1, "exactly one Namespace");
    for object in &objects {
        let labels = object.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(PROVIDER_LABEL.0).map(String::as_str),
            Some(PROVIDER_LABEL.1)
        );
        if let Some(ns) = &object.metadata.namespace {
            assert_eq!(ns, "capi-kind-system");
        }
    }
    let deployment = objects
        .iter()
        .find(|o| o.types.as_ref().unwrap().kind == "Deployment")
        .unwrap();
    let containers = &deployment.data["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["name"], "manager");
    let role = objects
        .iter()
        .find(|o| {
            o.metadata.name.as_deref() == Some("capi-kind-manager")
                && o.types.as_ref().unwrap().kind == "ClusterRole"
        })
        .unwrap();
    let rules = role.data["rules"].as_array().unwrap();
    assert!(
        rules.iter().any(|r| r["resources"]
            .as_array()
            .unwrap()
            .contains(&"secrets".into())),
        "Secrets are in the RBAC (upstream forgot them)"
    );
}

#[test]
fn the_clusterctl_metadata_names_the_contract_the_crds_are_labelled_with() {
    let metadata = std::fs::read_to_string(format!("{DEPLOY}/metadata.yaml")).unwrap();
    assert!(metadata.contains("contract: v1beta2"), "{metadata}");
    let crds = capi_kind::api::crds();
    let labels = crds[1].metadata.labels.clone().unwrap();
    assert!(labels.contains_key("cluster.x-k8s.io/v1beta2"));
}

#[cfg(not(feature = "sim-provisioner"))]
#[test]
fn the_sim_provisioner_is_refused_by_the_production_build() {
    let out = Command::new(PROVIDER)
        .args(["--provisioner", "sim", "--log-format", "console"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sim-provisioner"), "{stderr}");
}

/// A `kind` whose creates take ten minutes and that knows no clusters.
fn slow_kind(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("kind");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}/args.log'\ncase \"$1 $2\" in\n\"create cluster\") cat >/dev/null; exec sleep 600 ;;\n*) exit 0 ;;\nesac\n",
            dir.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn wait_until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_becomes_ready_starts_creates_in_the_background_and_stops_on_sigterm() {
    let sim = Server::start(Config::default()).await.unwrap();
    let admin = sim.object_client("");
    for crd in capi_kind::api::crd_objects().unwrap() {
        admin.create(&crd).await.unwrap();
    }
    let dir = temp_dir("e2e");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
    let kind = slow_kind(&dir);
    let (health, metrics) = (free_port(), free_port());
    let mut running = Running(
        Command::new(PROVIDER)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--kind-binary")
            .arg(&kind)
            .args(["--metrics-bind-address", &format!("127.0.0.1:{metrics}")])
            .args(["--log-format", "console"])
            .args([
                "--health-probe-bind-address",
                &format!("127.0.0.1:{health}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("/readyz", async || {
        http_status(health, "/readyz") == Some(200)
    })
    .await;
    for i in 1..=2 {
        let yaml = format!(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {{name: c{i}, namespace: default}}\nspec: {{clusterName: c{i}}}\n"
        );
        admin
            .create(&parse_manifests("kc", &yaml).unwrap()[0])
            .await
            .unwrap();
    }
    wait_until("both objects Provisioning", async || {
        let list: Vec<KINDCluster> = admin
            .list_typed(Some("default"), &Default::default())
            .await
            .unwrap();
        list.len() == 2
            && list
                .iter()
                .all(|o| o.status.as_ref().and_then(|s| s.phase) == Some(Phase::Provisioning))
    })
    .await;
    let args = std::fs::read_to_string(dir.join("args.log")).unwrap();
    assert_eq!(
        args.matches("create cluster").count(),
        2,
        "both creates run at once: {args}"
    );
    let text = http_get(metrics, "/metrics").unwrap();
    assert!(
        text.contains(
            "controller_runtime_reconcile_total{controller=\"KINDCluster\",result=\"success\"}"
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
            "the provider did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_playground_kind_section_converges_and_its_secrets_reach_the_workload_clusters() {
    let dir = temp_dir("playground");
    let out = Command::new(env!("CARGO_BIN_EXE_kcp-playground"))
        .args([
            "--exit-when-ready",
            "--timeout-seconds",
            "60",
            "--only",
            "kind",
        ])
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Provisioning"),
        "the table shows the phases: {stdout}"
    );
    for secret in ["default/test-1-config", "default/dev-kubeconfig"] {
        let line = stdout
            .lines()
            .find(|l| l.contains(secret))
            .unwrap_or_default();
        assert!(
            line.contains("namespaces: default, kube-node-lease, kube-public, kube-system"),
            "{stdout}"
        );
    }
}
