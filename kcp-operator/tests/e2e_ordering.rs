//! Objects applied in any order converge, through the running controllers (as `kubectl apply
//! -f dir/` or a GitOps sync applies them): a Kubeconfig before its target, a VirtualWorkspace
//! before its Shard, and a Kubeconfig whose RBAC target workspace does not exist yet gets its
//! Secret at once and its grants once the workspace appears. On both backends
//! (`KCP_RS_BACKEND`); the installation's kcp is kcp-sim on both.
//!
//! The controllers watch every namespace, so on the shared real kube-apiserver the tests of
//! this file take turns ([`turn`]); on kcp-sim each test has a server of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::ObjectClientExt as _;
use kcp_operator::api::*;
use kube::api::DynamicObject;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The turn of a test on the shared real kube-apiserver (none is needed on kcp-sim).
async fn turn() -> Option<tokio::sync::MutexGuard<'static, ()>> {
    match kcp_testbed::Backend::from_env().unwrap() {
        kcp_testbed::Backend::Real => Some(SERIAL.lock().await),
        kcp_testbed::Backend::Sim => None,
    }
}

fn named<'a>(objects: &'a [DynamicObject], kind: &str, name: &str) -> &'a DynamicObject {
    objects
        .iter()
        .find(|o| {
            o.types.as_ref().is_some_and(|t| t.kind == kind)
                && o.metadata.name.as_deref() == Some(name)
        })
        .unwrap()
}

fn without(objects: &[DynamicObject], kind: &str, name: &str) -> Vec<DynamicObject> {
    let skipped = named(objects, kind, name).clone();
    objects
        .iter()
        .filter(|o| o.metadata.name != skipped.metadata.name || o.types != skipped.types)
        .cloned()
        .collect()
}

/// Plays cert-manager and the Deployment controller until `done` holds (60 s at most).
async fn wait_for<F, Fut>(bed: &Bed, what: &str, done: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        issue_certificates(bed.client.as_ref(), &bed.ns, 1).await;
        run_deployments(bed.client.as_ref(), &bed.ns).await;
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what} did not happen within 60 s");
}

async fn kubeconfig_phase(bed: &Bed, name: &str) -> String {
    let kc: Option<Kubeconfig> = bed.client.get_typed(Some(&bed.ns), name).await.unwrap();
    kc.and_then(|k| k.status)
        .map(|s| s.phase)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_kubeconfig_applied_before_its_target_becomes_ready() {
    let _turn = turn().await;
    let bed = bare_bed().await;
    let examples = examples_in(&bed.ns);
    let operator = Operator::on(&bed).await;
    apply_objects(
        bed.client.as_ref(),
        without(&examples, "FrontProxy", "edge"),
    )
    .await;
    wait_for(
        &bed,
        "the Kubeconfig failing on its missing target",
        || async { kubeconfig_phase(&bed, "admin").await == "Failed" },
    )
    .await;
    apply_objects(
        bed.client.as_ref(),
        vec![named(&examples, "FrontProxy", "edge").clone()],
    )
    .await;
    wait_for(&bed, "the Kubeconfig becoming Ready", || async {
        kubeconfig_phase(&bed, "admin").await == "Ready"
    })
    .await;
    operator.stop().await;
}

#[tokio::test]
async fn a_virtual_workspace_applied_before_its_shard_is_compiled() {
    let _turn = turn().await;
    let bed = bare_bed().await;
    let examples = examples_in(&bed.ns);
    let vw = format!(
        "apiVersion: operator.kcp.io/v1alpha1\nkind: VirtualWorkspace\n\
         metadata: {{name: vw-alpha, namespace: {}}}\n\
         spec: {{target: {{shardRef: {{name: alpha}}}}, replicas: 1,\n\
           external: {{hostname: vw-alpha.example.com, port: 6443}}}}\n",
        bed.ns
    );
    let mut first = without(&examples, "Shard", "alpha");
    first.extend(kcp_core::parse_manifests("vw.yaml", &vw).unwrap());
    let operator = Operator::on(&bed).await;
    apply_objects(bed.client.as_ref(), first).await;
    let reference_valid = |status: &str| {
        let status = status.to_owned();
        let bed = &bed;
        move || {
            let status = status.clone();
            async move {
                let vw: Option<VirtualWorkspace> = bed
                    .client
                    .get_typed(Some(&bed.ns), "vw-alpha")
                    .await
                    .unwrap();
                vw.and_then(|v| v.status).is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == CONDITION_REFERENCE_VALID && c.status == status)
                })
            }
        }
    };
    wait_for(
        &bed,
        "the VirtualWorkspace missing its Shard",
        reference_valid("False"),
    )
    .await;
    apply_objects(
        bed.client.as_ref(),
        vec![named(&examples, "Shard", "alpha").clone()],
    )
    .await;
    wait_for(
        &bed,
        "the VirtualWorkspace finding its Shard",
        reference_valid("True"),
    )
    .await;
    wait_for(&bed, "the CompiledVirtualWorkspace", || async {
        let compiled: Option<CompiledVirtualWorkspace> = bed
            .client
            .get_typed(Some(&bed.ns), "vw-alpha")
            .await
            .unwrap();
        compiled.is_some()
    })
    .await;
    operator.stop().await;
}

#[tokio::test]
async fn a_kubeconfig_gets_its_secret_before_its_rbac_workspace_exists() {
    let _turn = turn().await;
    let bed = bare_bed().await;
    let mut examples = examples_in(&bed.ns);
    for o in &mut examples {
        if o.types.as_ref().is_some_and(|t| t.kind == "Kubeconfig") {
            o.data["spec"]["targetWorkspace"] = "root:later".into();
        }
    }
    let operator = Operator::on(&bed).await;
    apply_objects(bed.client.as_ref(), examples).await;
    wait_for(&bed, "the kubeconfig Secret", || async {
        let secret: Option<Secret> = bed
            .client
            .get_typed(Some(&bed.ns), "admin-kubeconfig")
            .await
            .unwrap();
        secret.is_some()
    })
    .await;
    // (Grants elsewhere are not looked at: on the shared real server the controllers also serve
    // the Kubeconfigs earlier tests of this file left in their namespaces.)
    bed.kcp.add_workspace("later").await;
    let deadline = Instant::now() + Duration::from_secs(90);
    while bed.kcp.bindings("root:later").await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the grants never reached root:later"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(&bed, "status.authorization naming root:later", || async {
        let kc: Option<Kubeconfig> = bed.client.get_typed(Some(&bed.ns), "admin").await.unwrap();
        kc.and_then(|k| k.status)
            .and_then(|s| s.authorization)
            .is_some_and(|a| a.provisioned_cluster == "root:later")
    })
    .await;
    operator.stop().await;
}
