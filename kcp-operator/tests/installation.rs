//! Behaviour tests of the reconcilers against kcp-sim: the spec's example installation
//! (section 7) converges, children carry the exact names, labels and owner references,
//! deletion garbage-collects, spec changes roll Deployments, certificate renewals reach the
//! kubeconfig, and a second pass over an unchanged installation writes nothing.
//!
//! kcp-sim has neither cert-manager nor a kube-controller-manager: the tests play both
//! ([`issue_certificates`] marks Certificates ready and writes their Secrets,
//! [`run_deployments`] marks Deployments available).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kcp_core::client::DeleteOptions;
use kcp_core::{ObjectClient as _, ObjectClientExt as _};
use kcp_operator::api::*;
use kcp_operator::reconcile::{PassContext, kubeconfig};
use kcp_operator::render::certmanager::{Certificate, Issuer};

fn ready(conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]) -> Option<&str> {
    conditions
        .iter()
        .find(|c| c.type_ == CONDITION_READY)
        .map(|c| c.status.as_str())
}

#[tokio::test]
async fn example_installation_converges_to_ready_with_every_child() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let rs: RootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    let status = rs.status.unwrap();
    assert_eq!(status.phase, "Running");
    assert_eq!(ready(&status.conditions), Some("True"));
    assert_eq!(status.observed_generation, rs.metadata.generation);
    assert_eq!(
        status.shards,
        [ShardReference {
            name: "alpha".into()
        }]
    );
    for name in [
        "root-kcp",
        "root-proxy",
        "alpha-shard-kcp",
        "edge-front-proxy",
        "cache-cache-server",
    ] {
        assert!(
            client
                .get_typed::<Deployment>(Some(NS), name)
                .await
                .unwrap()
                .is_some(),
            "Deployment {name}"
        );
        assert!(
            client
                .get_typed::<Service>(Some(NS), name)
                .await
                .unwrap()
                .is_some(),
            "Service {name}"
        );
    }
    for name in ["edge-config", "root-proxy-config"] {
        assert!(
            client
                .get_typed::<ConfigMap>(Some(NS), name)
                .await
                .unwrap()
                .is_some(),
            "ConfigMap {name}"
        );
    }
    let shard: Shard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    assert_eq!(shard.status.unwrap().phase, "Running");
    let fp: FrontProxy = client.get_typed(Some(NS), "edge").await.unwrap().unwrap();
    assert_eq!(ready(&fp.status.unwrap().conditions), Some("True"));
    let cs: CacheServer = client.get_typed(Some(NS), "cache").await.unwrap().unwrap();
    assert_eq!(cs.status.unwrap().phase, "Running");
    let vw: VirtualWorkspace = client
        .get_typed(Some(NS), "vw-root")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(vw.status.unwrap().phase, "Running");
    assert!(
        client
            .get_typed::<Deployment>(Some(NS), "vw-root-virtual-workspace")
            .await
            .unwrap()
            .is_some()
    );
    let kc: Kubeconfig = client.get_typed(Some(NS), "admin").await.unwrap().unwrap();
    let kc_status = kc.status.unwrap();
    assert_eq!(
        (kc_status.phase.as_str(), kc_status.target_name.as_str()),
        ("Ready", "FrontProxy/edge")
    );
    assert_eq!(
        kc_status.certificate_not_after.as_deref(),
        Some("2027-11-23T00:00:00Z")
    );
}

#[tokio::test]
async fn children_carry_upstream_names_labels_and_owner_references() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let rs: RootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    let dep: Deployment = client
        .get_typed(Some(NS), "root-kcp")
        .await
        .unwrap()
        .unwrap();
    let crs: CompiledRootShard = client.get_typed(Some(NS), "root").await.unwrap().unwrap();
    let owner = &dep.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("CompiledRootShard", crs.metadata.uid.as_deref().unwrap())
    );
    let crs_owner = &crs.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (crs_owner.kind.as_str(), crs_owner.controller),
        ("RootShard", Some(true))
    );
    assert_eq!(crs_owner.uid, rs.metadata.uid.clone().unwrap());
    assert_eq!(
        dep.metadata.labels.unwrap()["app.kubernetes.io/component"],
        "rootshard"
    );
    let cert: Certificate = client
        .get_typed(Some(NS), "root-server-ca")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cert.metadata.owner_references.unwrap()[0].kind, "RootShard");
    let issuer: Issuer = client
        .get_typed(Some(NS), "root-ca")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(issuer.spec.ca.unwrap().secret_name, "root-ca");
    let crs_annotations = crs.metadata.annotations.unwrap();
    assert_eq!(
        crs_annotations["operator.kcp.io/cert-root-server-revision"],
        "1"
    );
    let kubeconfig_secret: Secret = client
        .get_typed(Some(NS), "admin-kubeconfig")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        kubeconfig_secret.metadata.owner_references.unwrap()[0].kind,
        "Kubeconfig"
    );
    let kc_cert: Certificate = client
        .get_typed(Some(NS), "kubeconfig-cert-admin")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        kc_cert.metadata.owner_references.unwrap()[0].kind,
        "Kubeconfig"
    );
}

#[tokio::test]
async fn second_reconcile_of_an_unchanged_installation_writes_nothing() {
    let (_sim, client, kcp) = setup().await;
    assert_a_second_pass_writes_nothing(&client, NS, &kcp).await;
}

#[tokio::test]
async fn changed_shard_spec_rolls_its_deployment() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let mut shard: Shard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    shard.spec.common.logging = Some(LoggingSpec { level: 6 });
    client.replace_typed(&shard).await.unwrap();
    converge(&client, NS, &kcp).await;
    let dep: Deployment = client
        .get_typed(Some(NS), "alpha-shard-kcp")
        .await
        .unwrap()
        .unwrap();
    let args = dep.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(args.contains(&"-v=6".to_owned()), "{args:?}");
}

#[tokio::test]
async fn renewed_certificate_reaches_the_kubeconfig_secret_and_rolls_deployments() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let dep_before: Deployment = client
        .get_typed(Some(NS), "root-kcp")
        .await
        .unwrap()
        .unwrap();
    issue_certificates(&client, NS, 2).await;
    reconcile_all(&client, NS, &kcp).await;
    reconcile_all(&client, NS, &kcp).await;
    let secret: Secret = client
        .get_typed(Some(NS), "admin-kubeconfig")
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(secret.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    let expected = kcp_core::k8s_openapi::ByteString(
        b"-----BEGIN CERTIFICATE-----\nkubeconfig-cert-admin-2\n-----END CERTIFICATE-----\n"
            .to_vec(),
    );
    let encoded = serde_json::to_value(&expected).unwrap();
    assert!(text.contains(encoded.as_str().unwrap()), "{text}");
    let dep_after: Deployment = client
        .get_typed(Some(NS), "root-kcp")
        .await
        .unwrap()
        .unwrap();
    let labels = |d: &Deployment| {
        d.spec
            .clone()
            .unwrap()
            .template
            .metadata
            .unwrap()
            .labels
            .unwrap()
    };
    assert_ne!(
        labels(&dep_before),
        labels(&dep_after),
        "the pod template must change"
    );
}

#[tokio::test]
async fn deleting_sources_garbage_collects_their_children() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    for name in ["admin"] {
        let target = kcp_core::typed::object_ref_for::<Kubeconfig>(Some(NS), name);
        client
            .delete(&target, &DeleteOptions::default())
            .await
            .unwrap();
    }
    let target = kcp_core::typed::object_ref_for::<RootShard>(Some(NS), "root");
    client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
    // The Kubeconfig's RBAC finalizer is released by the next pass.
    reconcile_all(&client, NS, &kcp).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(
        client
            .get_typed::<Secret>(Some(NS), "admin-kubeconfig")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        client
            .get_typed::<Certificate>(Some(NS), "kubeconfig-cert-admin")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        client
            .get_typed::<CompiledRootShard>(Some(NS), "root")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        client
            .get_typed::<Deployment>(Some(NS), "root-kcp")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        client
            .get_typed::<Certificate>(Some(NS), "root-server")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn kubeconfig_grants_its_cluster_roles_in_the_target_workspace() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let kc: Kubeconfig = client.get_typed(Some(NS), "admin").await.unwrap().unwrap();
    assert!(
        kc.metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .contains(&FINALIZER_CLEANUP_RBAC.to_owned())
    );
    assert_eq!(
        kc.status
            .clone()
            .unwrap()
            .authorization
            .unwrap()
            .provisioned_cluster,
        "root:team-a"
    );
    let bindings = kcp.bindings("root:team-a").await;
    let uid = kc.metadata.uid.clone().unwrap();
    assert_eq!(bindings.len(), 1);
    assert_eq!(
        bindings[0].metadata.name.as_deref(),
        Some(format!("{uid}:cluster-admin").as_str())
    );
    assert_eq!(
        bindings[0].subjects.clone().unwrap()[0].name,
        "kubeconfig:admin"
    );
}

#[tokio::test]
async fn deleting_a_kubeconfig_revokes_its_grants_then_releases_it() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let target = kcp_core::typed::object_ref_for::<Kubeconfig>(Some(NS), "admin");
    client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
    reconcile_all(&client, NS, &kcp).await;
    assert!(kcp.bindings("root:team-a").await.is_empty());
    assert!(
        client
            .get_typed::<Kubeconfig>(Some(NS), "admin")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn kubeconfig_finalizer_is_released_when_the_target_is_gone() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    for kind in ["edge"] {
        let target = kcp_core::typed::object_ref_for::<FrontProxy>(Some(NS), kind);
        client
            .delete(&target, &DeleteOptions::default())
            .await
            .unwrap();
    }
    let target = kcp_core::typed::object_ref_for::<Kubeconfig>(Some(NS), "admin");
    client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
    reconcile_all(&client, NS, &kcp).await;
    assert!(
        client
            .get_typed::<Kubeconfig>(Some(NS), "admin")
            .await
            .unwrap()
            .is_none(),
        "the finalizer must not hold the Kubeconfig"
    );
}

#[tokio::test]
async fn a_kubeconfig_keeps_its_finalizer_and_grants_while_its_target_is_briefly_gone() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let front_proxy = kcp_core::typed::object_ref_for::<FrontProxy>(Some(NS), "edge");
    client
        .delete(&front_proxy, &DeleteOptions::default())
        .await
        .unwrap();
    let kc: Kubeconfig = client.get_typed(Some(NS), "admin").await.unwrap().unwrap();
    let err = kubeconfig::reconcile_kubeconfig(&PassContext::new(&client, &kcp), &kc)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("spec.target.frontProxyRef"),
        "{err}"
    );
    assert!(err.is_transient(), "retried with backoff: {err}");
    let kc: Kubeconfig = client.get_typed(Some(NS), "admin").await.unwrap().unwrap();
    assert_eq!(kc.status.unwrap().phase, "Failed");
    assert!(
        kc.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"operator.kcp.io/cleanup-rbac".to_owned())
    );
    assert!(!kcp.bindings("root:team-a").await.is_empty());
}

#[tokio::test]
async fn an_object_being_deleted_reports_phase_deleting() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let mut fp: FrontProxy = client.get_typed(Some(NS), "edge").await.unwrap().unwrap();
    fp.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    client.replace_typed(&fp).await.unwrap();
    let target = kcp_core::typed::object_ref_for::<FrontProxy>(Some(NS), "edge");
    client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
    let fp: FrontProxy = client.get_typed(Some(NS), "edge").await.unwrap().unwrap();
    kcp_operator::reconcile::config::reconcile_front_proxy(&PassContext::new(&client, &kcp), &fp)
        .await
        .unwrap();
    let fp: FrontProxy = client.get_typed(Some(NS), "edge").await.unwrap().unwrap();
    let status = fp.status.unwrap();
    assert_eq!(status.phase, "Deleting");
    assert!(!status.conditions.is_empty(), "the conditions stay");
}

#[tokio::test]
async fn deleting_a_shard_removes_its_kcp_registration_then_releases_it() {
    let (_sim, client, kcp) = setup().await;
    converge(&client, NS, &kcp).await;
    let shard: Shard = client.get_typed(Some(NS), "alpha").await.unwrap().unwrap();
    assert!(
        shard
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&FINALIZER_CLEANUP_SHARD.to_owned())
    );
    let target = kcp_core::typed::object_ref_for::<Shard>(Some(NS), "alpha");
    client
        .delete(&target, &DeleteOptions::default())
        .await
        .unwrap();
    assert!(
        client
            .get_typed::<Shard>(Some(NS), "alpha")
            .await
            .unwrap()
            .is_some(),
        "held by the finalizer"
    );
    reconcile_all(&client, NS, &kcp).await;
    assert!(
        client
            .get_typed::<Shard>(Some(NS), "alpha")
            .await
            .unwrap()
            .is_none()
    );
}
