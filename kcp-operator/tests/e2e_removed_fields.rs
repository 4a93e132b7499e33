//! A field removed from a source leaves its children: each field family is added, the child
//! follows, the field is removed, and the child follows again; what others added to a child
//! stays; an unchanged installation is not written. On both backends (`KCP_RS_BACKEND`):
//! kcp-sim's server-side apply, and the real kube-apiserver's, which is the oracle for what an
//! apply removes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PodSpec;
use kcp_core::ObjectClientExt as _;
use kcp_core::client::{DeleteOptions, ObjectPatch, PatchOptions, Subresource};
use kcp_core::typed::object_ref_for;
use kcp_operator::api::*;
use serde_json::{Value, json};

/// Merge-patches the source `K` `name` and converges the installation.
async fn change<K>(bed: &Bed, name: &str, patch: Value)
where
    K: kube::Resource<DynamicType = ()>,
{
    let target = object_ref_for::<K>(Some(&bed.ns), name);
    bed.client
        .patch(
            &target,
            Subresource::Main,
            &ObjectPatch::Merge(patch),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    converge(bed.client.as_ref(), &bed.ns, &bed.kcp).await;
}

async fn deployment(bed: &Bed, name: &str) -> Deployment {
    bed.client
        .get_typed(Some(&bed.ns), name)
        .await
        .unwrap()
        .unwrap()
}

async fn args(bed: &Bed, name: &str) -> Vec<String> {
    pod(bed, name).await.containers[0].args.clone().unwrap()
}

async fn pod(bed: &Bed, name: &str) -> PodSpec {
    deployment(bed, name)
        .await
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
}

fn any_starts_with(args: &[String], prefix: &str) -> bool {
    args.iter().any(|a| a.starts_with(prefix))
}

async fn converged() -> Bed {
    let bed = setup_bed().await;
    converge(bed.client.as_ref(), &bed.ns, &bed.kcp).await;
    bed
}

#[tokio::test]
async fn removing_oidc_removes_its_flags() {
    let bed = converged().await;
    let oidc = json!({"spec": {"auth": {"oidc": {"issuerURL": "https://idp.example.com", "clientID": "kcp"}}}});
    change::<Shard>(&bed, "alpha", oidc).await;
    assert!(any_starts_with(
        &args(&bed, "alpha-shard-kcp").await,
        "--oidc-issuer-url="
    ));
    change::<Shard>(&bed, "alpha", json!({"spec": {"auth": {"oidc": null}}})).await;
    let args = args(&bed, "alpha-shard-kcp").await;
    assert!(!any_starts_with(&args, "--oidc-"), "{args:?}");
}

#[tokio::test]
async fn removing_the_last_extra_arg_removes_it() {
    let bed = converged().await;
    let extra = json!({"spec": {"extraArgs": ["--profiling=true"]}});
    change::<Shard>(&bed, "alpha", extra).await;
    assert!(
        args(&bed, "alpha-shard-kcp")
            .await
            .contains(&"--profiling=true".to_owned())
    );
    change::<Shard>(&bed, "alpha", json!({"spec": {"extraArgs": null}})).await;
    let args = args(&bed, "alpha-shard-kcp").await;
    assert!(!args.contains(&"--profiling=true".to_owned()), "{args:?}");
}

#[tokio::test]
async fn removing_the_cache_ref_removes_its_flag_and_mounts() {
    let bed = converged().await;
    assert!(any_starts_with(
        &args(&bed, "root-kcp").await,
        "--cache-kubeconfig="
    ));
    let embedded = json!({"spec": {"cache": {"ref": null, "embedded": {"enabled": true}}}});
    change::<RootShard>(&bed, "root", embedded).await;
    let pod = pod(&bed, "root-kcp").await;
    let args = pod.containers[0].args.clone().unwrap();
    assert!(!any_starts_with(&args, "--cache-kubeconfig="), "{args:?}");
    let mounts: Vec<_> = pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.clone())
        .collect();
    assert!(
        !mounts.iter().any(|p| p.starts_with("/etc/cache-server")),
        "{mounts:?}"
    );
}

#[tokio::test]
async fn removing_the_etcd_tls_config_removes_its_flags() {
    let bed = converged().await;
    assert!(any_starts_with(
        &args(&bed, "cache-cache-server").await,
        "--etcd-certfile="
    ));
    change::<CacheServer>(
        &bed,
        "cache",
        json!({"spec": {"etcd": {"tlsConfig": null}}}),
    )
    .await;
    let args = args(&bed, "cache-cache-server").await;
    assert!(!any_starts_with(&args, "--etcd-certfile="), "{args:?}");
    assert!(!any_starts_with(&args, "--etcd-cafile="), "{args:?}");
}

#[tokio::test]
async fn deleting_the_last_shard_removes_it_from_the_root_shard_and_front_proxy() {
    let bed = converged().await;
    let compiled: CompiledRootShard = bed
        .client
        .get_typed(Some(&bed.ns), "root")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(compiled.spec.shards.len(), 1);
    let target = object_ref_for::<Shard>(Some(&bed.ns), "alpha");
    bed.client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
    for _ in 0..3 {
        converge(bed.client.as_ref(), &bed.ns, &bed.kcp).await;
    }
    let compiled: CompiledRootShard = bed
        .client
        .get_typed(Some(&bed.ns), "root")
        .await
        .unwrap()
        .unwrap();
    assert!(
        compiled.spec.shards.is_empty(),
        "{:?}",
        compiled.spec.shards
    );
    let front: CompiledFrontProxy = bed
        .client
        .get_typed(Some(&bed.ns), "edge")
        .await
        .unwrap()
        .unwrap();
    assert!(front.spec.shards.is_empty(), "{:?}", front.spec.shards);
    let args = args(&bed, "root-kcp").await;
    assert!(!args.iter().any(|a| a.contains("/alpha/")), "{args:?}");
}

#[tokio::test]
async fn a_changed_node_selector_key_replaces_the_old_one() {
    let bed = converged().await;
    let selector = |key: &str| json!({"spec": {"deploymentTemplate": {"spec": {"template": {"spec": {"nodeSelector": {key: "yes"}}}}}}});
    change::<Shard>(&bed, "alpha", selector("pool-a")).await;
    change::<Shard>(&bed, "alpha", json!({"spec": {"deploymentTemplate": null}})).await;
    change::<Shard>(&bed, "alpha", selector("pool-b")).await;
    let nodes = pod(&bed, "alpha-shard-kcp")
        .await
        .node_selector
        .unwrap_or_default();
    assert_eq!(nodes.keys().collect::<Vec<_>>(), ["pool-b"]);
}

#[tokio::test]
async fn removing_a_toleration_removes_it_from_the_pod() {
    let bed = converged().await;
    let toleration =
        json!({"key": "dedicated", "operator": "Equal", "value": "kcp", "effect": "NoSchedule"});
    let template = json!({"spec": {"deploymentTemplate": {"spec": {"template": {"spec": {"tolerations": [toleration]}}}}}});
    change::<Shard>(&bed, "alpha", template).await;
    assert_eq!(
        pod(&bed, "alpha-shard-kcp")
            .await
            .tolerations
            .unwrap_or_default()
            .len(),
        1
    );
    change::<Shard>(&bed, "alpha", json!({"spec": {"deploymentTemplate": null}})).await;
    let tolerations = pod(&bed, "alpha-shard-kcp")
        .await
        .tolerations
        .unwrap_or_default();
    assert!(tolerations.is_empty(), "{tolerations:?}");
}

#[tokio::test]
async fn removing_an_annotation_removes_it_and_keeps_one_someone_else_added() {
    let bed = converged().await;
    let annotated = json!({"spec": {"deploymentTemplate": {"metadata": {"annotations": {"team": "platform"}}}}});
    change::<Shard>(&bed, "alpha", annotated).await;
    let target = object_ref_for::<Deployment>(Some(&bed.ns), "alpha-shard-kcp");
    let theirs = json!({"metadata": {"annotations": {"example.com/owner": "ops"}}});
    let options = PatchOptions {
        field_manager: Some("kubectl-annotate".into()),
        ..PatchOptions::default()
    };
    bed.client
        .patch(
            &target,
            Subresource::Main,
            &ObjectPatch::Merge(theirs),
            &options,
        )
        .await
        .unwrap();
    change::<Shard>(&bed, "alpha", json!({"spec": {"deploymentTemplate": null}})).await;
    let annotations = deployment(&bed, "alpha-shard-kcp")
        .await
        .metadata
        .annotations
        .unwrap_or_default();
    assert!(!annotations.contains_key("team"), "{annotations:?}");
    assert_eq!(
        annotations.get("example.com/owner").map(String::as_str),
        Some("ops")
    );
}

#[tokio::test]
async fn a_pass_over_an_unchanged_installation_writes_nothing() {
    let bed = setup_bed().await;
    assert_a_second_pass_writes_nothing(bed.client.as_ref(), &bed.ns, &bed.kcp).await;
}

#[tokio::test]
async fn a_pass_after_a_removal_writes_nothing_more() {
    let bed = converged().await;
    change::<Shard>(
        &bed,
        "alpha",
        json!({"spec": {"extraArgs": ["--profiling=true"]}}),
    )
    .await;
    change::<Shard>(&bed, "alpha", json!({"spec": {"extraArgs": null}})).await;
    assert_a_second_pass_writes_nothing(bed.client.as_ref(), &bed.ns, &bed.kcp).await;
}
