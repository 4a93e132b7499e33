//! The `kcp-operator` binary, run as a process against kcp-sim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_operator::api::RootShard;
use kcp_operator::render::certmanager::Certificate;
use kcp_sim::{Config, Server};

const OPERATOR: &str = env!("CARGO_BIN_EXE_kcp-operator");

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn apply_objects(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

#[test]
fn the_crds_subcommand_prints_the_generated_crds_kept_in_deploy() {
    let out = Command::new(OPERATOR).arg("crds").output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, kcp_operator::api::crds_yaml().unwrap());
    let kept = include_str!("../../deploy/kcp-operator/crds.yaml");
    assert_eq!(
        printed, kept,
        "regenerate with: kcp-operator crds > deploy/kcp-operator/crds.yaml"
    );
}

#[test]
fn an_unknown_controller_group_is_a_clear_error() {
    let out = Command::new(OPERATOR)
        .args([
            "--enabled-controller-groups",
            "config,bogus",
            "--log-format",
            "console",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("--enabled-controller-groups") && stderr.contains("bogus"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_operator_process_issues_the_certificates_of_a_root_shard() {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.object_client("");
    let mut crds: Vec<DynamicObject> = Vec::new();
    for crd in kcp_operator::api::crds()
        .into_iter()
        .chain(kcp_operator::render::certmanager::crds())
    {
        crds.push(serde_json::from_value(serde_json::to_value(crd).unwrap()).unwrap());
    }
    apply_objects(&client, crds).await;
    let manifests = "apiVersion: v1\nkind: Namespace\nmetadata: {name: kcp}\n---\n".to_owned()
        + include_str!("../../kcp-operator/tests/fixtures/examples.yaml");
    apply_objects(
        &client,
        parse_manifests("examples.yaml", &manifests).unwrap(),
    )
    .await;
    let kubeconfig = std::env::temp_dir().join(format!(
        "kcp-operator-test-{}.kubeconfig",
        std::process::id()
    ));
    sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
    let _operator = Running(
        Command::new(OPERATOR)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "--health-probe-bind-address",
                "0",
                "--log-format",
                "console",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cert: Option<Certificate> = client
            .get_typed(Some("kcp"), "root-server-ca")
            .await
            .unwrap();
        let rs: Option<RootShard> = client.get_typed(Some("kcp"), "root").await.unwrap();
        let phase = rs.and_then(|r| r.status).map(|s| s.phase);
        if cert.is_some() && phase.as_deref() == Some("Provisioning") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the operator did not reconcile the RootShard"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::fs::remove_file(kubeconfig);
}
