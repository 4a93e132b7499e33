//! Behaviour tests of the workload side's additions over upstream, against kcp-sim: the
//! optional PodDisruptionBudgets (upstream kcp-operator#176) and the Compiled* contract's
//! required Secrets (a workload whose Secrets are missing says which, and writes no Deployment
//! that could not start).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kcp_core::client::DeleteOptions;
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kcp_operator::api::*;
use kcp_operator::reconcile::{PassContext, workload};

fn budget(min_available: i32) -> Option<PodDisruptionBudgetSpec> {
    Some(PodDisruptionBudgetSpec {
        enabled: true,
        min_available: Some(IntOrString::Int(min_available)),
        max_unavailable: None,
    })
}

async fn pdb(client: &dyn ObjectClient, name: &str) -> Option<PodDisruptionBudget> {
    client.get_typed(Some(NS), name).await.unwrap()
}

async fn set_root_shard_budget(client: &dyn ObjectClient, spec: Option<PodDisruptionBudgetSpec>) {
    let mut rs: RootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    rs.spec.common.pod_disruption_budget = spec;
    client.replace_typed(&rs).await.unwrap();
}

async fn delete<K: kube::Resource<DynamicType = ()>>(client: &dyn ObjectClient, name: &str) {
    let target = kcp_core::typed::object_ref_for::<K>(Some(NS), name);
    client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn enabled_budgets_are_created_next_to_their_deployments() {
    let (_sim, client, kcp) = setup().await;
    set_root_shard_budget(&client, budget(1)).await;
    let mut fp: FrontProxy = client.get_typed(Some(NS), "edge").await.unwrap().unwrap();
    fp.spec.pod_disruption_budget = budget(1);
    client.replace_typed(&fp).await.unwrap();
    converge(&client, NS, &kcp).await;

    let root = pdb(&client, "root-kcp").await.expect("root-kcp budget");
    let crs: CompiledRootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    let owner = &root.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        (
            "CompiledRootShard",
            crs.metadata.uid.as_deref().unwrap(),
            Some(true)
        )
    );
    let dep: Deployment = client
        .get_typed(Some(NS), "root-kcp")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        root.spec
            .as_ref()
            .unwrap()
            .selector
            .as_ref()
            .unwrap()
            .match_labels,
        dep.spec.unwrap().selector.match_labels
    );
    assert_eq!(root.spec.unwrap().min_available, Some(IntOrString::Int(1)));
    assert!(pdb(&client, "edge-front-proxy").await.is_some());
    assert!(
        pdb(&client, "alpha-shard-kcp").await.is_none(),
        "not enabled"
    );
    assert!(pdb(&client, "root-proxy").await.is_none(), "not enabled");
}

#[tokio::test]
async fn a_budget_with_both_bounds_is_refused_by_the_api_server() {
    let (_sim, client, _kcp) = setup().await;
    let mut rs: RootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    rs.spec.common.pod_disruption_budget = Some(PodDisruptionBudgetSpec {
        enabled: true,
        min_available: Some(IntOrString::Int(1)),
        max_unavailable: Some(IntOrString::String("50%".into())),
    });
    let err = client.replace_typed(&rs).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("at most one of minAvailable and maxUnavailable may be set"),
        "{err}"
    );
}

#[tokio::test]
async fn a_budget_is_deleted_when_it_is_disabled() {
    let (_sim, client, kcp) = setup().await;
    set_root_shard_budget(&client, budget(1)).await;
    converge(&client, NS, &kcp).await;
    assert!(pdb(&client, "root-kcp").await.is_some());

    set_root_shard_budget(
        &client,
        Some(PodDisruptionBudgetSpec {
            enabled: false,
            ..PodDisruptionBudgetSpec::default()
        }),
    )
    .await;
    converge(&client, NS, &kcp).await;
    assert!(pdb(&client, "root-kcp").await.is_none());
}

#[tokio::test]
async fn a_budget_someone_else_owns_is_left_alone() {
    let (_sim, client, kcp) = setup().await;
    let theirs = PodDisruptionBudget {
        metadata: kube::api::ObjectMeta {
            name: Some("root-kcp".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    client.create_typed(&theirs).await.unwrap();
    converge(&client, NS, &kcp).await;
    assert!(pdb(&client, "root-kcp").await.is_some());
}

#[tokio::test]
async fn deleting_the_source_garbage_collects_its_budget() {
    let (_sim, client, kcp) = setup().await;
    let mut cs: CacheServer = client.get_typed(Some(NS), "cache").await.unwrap().unwrap();
    cs.spec.pod_disruption_budget = budget(1);
    client.replace_typed(&cs).await.unwrap();
    converge(&client, NS, &kcp).await;
    assert!(pdb(&client, "cache-cache-server").await.is_some());

    delete::<CacheServer>(&client, "cache").await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(pdb(&client, "cache-cache-server").await.is_none());
}

#[tokio::test]
async fn a_second_pass_with_budgets_writes_nothing() {
    let (_sim, client, kcp) = setup().await;
    set_root_shard_budget(&client, budget(1)).await;
    assert_a_second_pass_writes_nothing(&client, NS, &kcp).await;
}

#[tokio::test]
async fn compiled_objects_list_the_secrets_their_workload_requires() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let crs: CompiledRootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    let required = &crs.spec.required_secrets;
    for name in [
        "root-server",
        "root-ca",
        "root-proxy-server",
        "cache-kubeconfig",
    ] {
        assert!(
            required.contains(&name.to_owned()),
            "{name} in {required:?}"
        );
    }
    assert!(
        !required.contains(&"root-proxy-dynamic-kubeconfig".to_owned()),
        "the workload group writes that one itself"
    );
    for name in required {
        let secret: Option<Secret> = client.get_typed(Some(NS), name).await.unwrap();
        assert!(
            secret.is_some(),
            "required Secret {name} exists once converged"
        );
    }
    let cfp: CompiledFrontProxy = client.get_typed(Some(NS), "edge").await.unwrap().unwrap();
    assert!(
        cfp.spec
            .required_secrets
            .contains(&"root-edge-server".to_owned())
    );
}

#[tokio::test]
async fn a_missing_required_secret_is_named_instead_of_writing_a_deployment() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    delete::<Deployment>(&client, "alpha-shard-kcp").await;
    delete::<Secret>(&client, "alpha-server").await;

    let cs: CompiledShard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    workload::reconcile_compiled_shard(&PassContext::new(&client, &kcp), &cs)
        .await
        .unwrap();

    assert!(
        client
            .get_typed::<Deployment>(Some(NS), "alpha-shard-kcp")
            .await
            .unwrap()
            .is_none(),
        "a Deployment that cannot start is not written"
    );
    let cs: CompiledShard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    let available = cs
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == CONDITION_AVAILABLE)
        .unwrap();
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("False", "RequiredSecretsMissing")
    );
    assert_eq!(
        available.message,
        "Deployment kcp/alpha-shard-kcp is not created until the required Secret kcp/alpha-server exists."
    );
    // The source shows the same reason.
    let shard: Shard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    kcp_operator::reconcile::config::reconcile_shard(&PassContext::new(&client, &kcp), &shard)
        .await
        .unwrap();
    let shard: Shard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    let copied = shard
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == CONDITION_AVAILABLE)
        .unwrap();
    assert_eq!(copied.reason, "RequiredSecretsMissing");
    assert!(
        copied.message.contains("kcp/alpha-server"),
        "{}",
        copied.message
    );
}
