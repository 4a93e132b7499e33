//! The kcp agents under `--metrics-secure`, on the real servers (TokenReview and
//! SubjectAccessReview exist only there): kcp-init-agent asks the kcp its `--kubeconfig` points
//! at, kcp-api-syncagent the service cluster (the real kube-apiserver; its kcp side is kcp-sim
//! here, as the agent only needs an endpoint slice from it). 401 without a token, 403 for a user
//! without the rule, every family for the admin. (kcp-operator and the Cluster API providers are
//! scraped the same way in `real_rbac.rs`.) Always the real backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{KubeObjectClient, ObjectClient, parse_manifests};
use kcp_testbed::{Endpoint, KcpBed};
use support::process::{Running, free_port, ready};

fn write_kubeconfig(dir: &Path, name: &str, endpoint: &Endpoint) -> PathBuf {
    kcp_testbed::kubeconfig::write_file(dir, name, endpoint).unwrap()
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply_until_settled(&plan, Duration::from_secs(30))
        .await;
    assert!(report.is_complete(), "{report}");
}

/// Starts `binary` with `args` plus secure metrics on a free port and health on another; waits
/// until it is ready. Returns the process and the metrics port.
async fn start_ready(binary: &str, args: &[String], log: &Path) -> (Running, u16) {
    let (metrics, health) = (free_port(), free_port());
    let child = Command::new(binary)
        .args(args)
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
        .arg("--metrics-secure")
        .arg(format!("--health-address=127.0.0.1:{health}"))
        .env_remove("KUBECONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
        .spawn()
        .unwrap();
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(health) {
        assert!(
            Instant::now() < deadline,
            "not ready:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (running, metrics)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_init_agent_serves_metrics_only_to_who_kcp_lets_read_them() {
    let bed = KcpBed::start_real().await.unwrap();
    let root = bed.object_client(bed.root()).await.unwrap();
    apply(root.as_ref(), kcp_init::api::crd_objects().unwrap()).await;
    // A WorkspaceType and one InitTarget, so that the target's controller runs.
    let localized = |yaml: &str| yaml.replace("path: root", &format!("path: {}", bed.root()));
    let mut objects = parse_manifests(
        "type",
        include_str!("../../examples/playground/01-workspace-type.yaml"),
    )
    .unwrap();
    objects.extend(
        parse_manifests(
            "init",
            &localized(include_str!("../../examples/playground/02-init.yaml")),
        )
        .unwrap(),
    );
    apply(root.as_ref(), objects).await;
    let endpoint = bed.real_endpoint(bed.root()).unwrap();
    let dir = kcp_testbed::real::credentials().unwrap().dir.clone();
    let kubeconfig = write_kubeconfig(&dir, "init-agent", &endpoint);
    let log = dir.join("secure-init-agent.log");
    let (_running, port) = start_ready(
        env!("CARGO_BIN_EXE_kcp-init-agent"),
        &[
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--config-workspace={}", bed.root()),
            "--enable-leader-election".to_owned(),
        ],
        &log,
    )
    .await;
    support::secure_metrics::served_only_to_who_may_read_them(port, endpoint.token.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_syncagent_serves_metrics_only_to_who_the_service_cluster_lets_read_them() {
    let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
        .await
        .unwrap()
        .unwrap();
    let service = KubeObjectClient::new(kube.admin.client().unwrap());
    let mut objects = parse_manifests("crds", &kcp_sync::api::crds_yaml().unwrap()).unwrap();
    objects.extend(
        parse_manifests(
            "ns",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: secure-syncagent}\n",
        )
        .unwrap(),
    );
    apply(&service, objects).await;
    let kcp = kcp_sim::Server::start(kcp_sim::Config::kcp())
        .await
        .unwrap();
    apply(
        &kcp.object_client("root"),
        parse_manifests(
            "provider",
            include_str!("../../examples/playground/sync/02-provider.yaml"),
        )
        .unwrap(),
    )
    .await;
    apply(
        &kcp.object_client("root:db-provider"),
        parse_manifests(
            "export",
            include_str!("../../examples/playground/sync/03-export.yaml"),
        )
        .unwrap(),
    )
    .await;
    let dir = kcp_testbed::real::credentials().unwrap().dir.clone();
    let service_kubeconfig = write_kubeconfig(&dir, "service", &kube.admin);
    let kcp_kubeconfig = dir.join("secure-syncagent-kcp.kubeconfig");
    kcp.write_kubeconfig(&kcp_kubeconfig, &["root:db-provider"])
        .unwrap();
    let log = dir.join("secure-syncagent.log");
    let (_running, port) = start_ready(
        env!("CARGO_BIN_EXE_kcp-api-syncagent"),
        &[
            format!("--kubeconfig={}", service_kubeconfig.display()),
            format!("--kcp-kubeconfig={}", kcp_kubeconfig.display()),
            "--apiexportendpointslice-ref=databases".to_owned(),
            "--namespace=secure-syncagent".to_owned(),
            "--enable-leader-election".to_owned(),
        ],
        &log,
    )
    .await;
    support::secure_metrics::served_only_to_who_may_read_them(port, kube.admin.token.clone()).await;
}
