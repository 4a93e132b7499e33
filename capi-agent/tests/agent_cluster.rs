//! AgentCluster behaviour (spec 1.5, the AgentCluster unit behaviours of 1.8, and the quirks of
//! 1.9 with the corrected behaviour) against kcp-sim.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::time::Duration;

use capi_agent::api::AGENT_CLUSTER_FINALIZER;
use capi_agent::cluster::reconcile_agent_cluster;
use capi_agent::foreign::{AgentClusterInstall, ClusterDeployment};
use kcp_core::runtime::Outcome;
use kcp_core::typed::from_dynamic;
use kcp_core::{ObjectClient, Subresource};
use serde_json::json;
use support::*;

fn condition_of(ac: &capi_agent::api::AgentCluster, type_: &str) -> Option<(String, String)> {
    ac.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// Merge-patches the CAPI Cluster `hc`.
async fn patch_cluster(world: &World, patch: serde_json::Value) {
    let cluster = gvk("cluster.x-k8s.io", "v1beta2", "Cluster");
    let target = kcp_core::ObjectRef::namespaced(cluster, NS, "hc");
    world.patch(&target, Subresource::Main, patch).await;
}

#[tokio::test]
async fn a_missing_agent_cluster_is_a_no_op() {
    let world = World::start().await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "nope")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Done);
}

#[tokio::test]
async fn the_cluster_deployment_is_created_with_all_fields_and_the_owner_reference() {
    let world = World::start().await;
    let cluster = world.hosted_cluster().await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    let cd: ClusterDeployment = from_dynamic(world.get(&cd_ref("hc")).await.unwrap()).unwrap();
    let ac = world.agent_cluster("hc").await;
    let spec = &cd.spec;
    assert_eq!(
        (
            spec.cluster_name.as_str(),
            spec.base_domain.as_str(),
            spec.installed
        ),
        ("hc", "example.com", true)
    );
    let metadata = spec.cluster_metadata.clone().unwrap();
    assert_eq!(Some(metadata.cluster_id), cluster.metadata.uid.clone());
    assert_eq!(
        metadata.admin_kubeconfig_secret_ref.name,
        "admin-kubeconfig"
    );
    assert_eq!(
        metadata.admin_password_secret_ref.unwrap().name,
        "kubeadmin-password"
    );
    let owners = cd.metadata.owner_references.unwrap();
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].uid.clone()),
        ("AgentCluster", ac.metadata.uid.clone().unwrap())
    );
    assert_eq!(cd.metadata.labels.unwrap()["agentClusterRef"], "hc");
}

#[tokio::test]
async fn the_agent_cluster_install_is_created_with_user_managed_networking_and_the_ignition_endpoint()
 {
    let world = World::start().await;
    world.hosted_cluster().await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    let aci: AgentClusterInstall = from_dynamic(world.get(&aci_ref("hc")).await.unwrap()).unwrap();
    assert!(aci.spec.networking.user_managed_networking);
    assert_eq!(aci.spec.provision_requirements.control_plane_agents, 3);
    assert_eq!(
        aci.spec.ignition_endpoint.unwrap().url,
        "https://ignition.example.com"
    );
}

#[tokio::test]
async fn a_ready_agent_cluster_sets_both_contract_fields_and_its_conditions() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Done);
    let ac = world.agent_cluster("hc").await;
    let status = ac.status.clone().unwrap();
    assert!(status.ready);
    assert_eq!(status.initialization.unwrap().provisioned, Some(true));
    assert_eq!(status.cluster_deployment_ref.name, "hc");
    for type_ in [
        "ClusterDeploymentReady",
        "AgentClusterInstallReady",
        "ControlPlaneEndpointReady",
        "Ready",
    ] {
        assert_eq!(
            condition_of(&ac, type_).map(|c| c.0),
            Some("True".into()),
            "{type_}"
        );
    }
    assert_eq!(
        condition_of(&ac, "Paused").map(|c| c.0),
        Some("False".into())
    );
}

#[tokio::test]
async fn the_dotless_upstream_finalizer_is_added() {
    let world = World::start().await;
    world.hosted_cluster().await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    let ac = world.agent_cluster("hc").await;
    assert_eq!(
        ac.metadata.finalizers,
        Some(vec![AGENT_CLUSTER_FINALIZER.to_owned()])
    );
    assert_eq!(
        AGENT_CLUSTER_FINALIZER,
        "agentclustercapi-provider.agent-install.openshift.io/deprovision"
    );
}

#[tokio::test]
async fn a_missing_cluster_requeues_after_five_seconds_without_a_reference() {
    let world = World::start().await;
    world.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentCluster",
        "metadata": {"name": "lonely", "namespace": NS}, "spec": {"controlPlaneEndpoint": {}}})).await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "lonely")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::RequeueAfter(Duration::from_secs(5)));
    let ac = world.agent_cluster("lonely").await;
    assert_eq!(ac.status.clone().unwrap().cluster_deployment_ref.name, "");
    assert_eq!(
        condition_of(&ac, "ClusterDeploymentReady"),
        Some(("False".into(), "WaitingForCluster".into()))
    );
}

#[tokio::test]
async fn a_cluster_without_control_plane_ref_requeues() {
    let world = World::start().await;
    world.hosted_cluster().await;
    patch_cluster(&world, json!({"spec": {"controlPlaneRef": null}})).await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::RequeueAfter(Duration::from_secs(5)));
    assert!(world.get(&cd_ref("hc")).await.is_none());
}

#[tokio::test]
async fn a_control_plane_without_kubeconfig_requeues() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let hcp = kcp_core::ObjectRef::namespaced(
        gvk("hypershift.openshift.io", "v1beta1", "HostedControlPlane"),
        NS,
        "hc",
    );
    world
        .patch(
            &hcp,
            Subresource::Status,
            json!({"status": {"kubeConfig": null}}),
        )
        .await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::RequeueAfter(Duration::from_secs(5)));
    assert!(world.get(&cd_ref("hc")).await.is_none());
}

#[tokio::test]
async fn a_missing_endpoint_requeues_and_is_not_ready() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world
        .patch(
            &agent_cluster_ref("hc"),
            Subresource::Main,
            json!({"spec": {"controlPlaneEndpoint": {"host": null, "port": null}}}),
        )
        .await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::RequeueAfter(Duration::from_secs(5)));
    let ac = world.agent_cluster("hc").await;
    assert!(!ac.status.clone().unwrap().ready);
    assert_eq!(
        condition_of(&ac, "ControlPlaneEndpointReady").map(|c| c.0),
        Some("False".into())
    );
}

#[tokio::test]
async fn a_dangling_reference_goes_back_to_creating_the_cluster_deployment() {
    // Upstream quirk: a reference recorded before a failed create fails on NotFound forever.
    let world = World::start().await;
    world.hosted_cluster().await;
    world.patch(&agent_cluster_ref("hc"), Subresource::Status,
        json!({"status": {"ready": false, "clusterDeploymentReference": {"name": "gone", "namespace": NS}}})).await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert!(world.get(&cd_ref("hc")).await.is_some());
    assert_eq!(
        world
            .agent_cluster("hc")
            .await
            .status
            .unwrap()
            .cluster_deployment_ref
            .name,
        "hc"
    );
}

#[tokio::test]
async fn a_labelled_cluster_deployment_is_adopted_instead_of_created() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world.create(json!({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
        "metadata": {"name": "restored", "namespace": NS, "labels": {"agentClusterRef": "hc"}},
        "spec": {"clusterName": "hc", "baseDomain": "example.com", "installed": true, "platform": {"agentBareMetal": {}}}})).await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert_eq!(
        world
            .agent_cluster("hc")
            .await
            .status
            .unwrap()
            .cluster_deployment_ref
            .name,
        "restored"
    );
    assert!(world.get(&cd_ref("hc")).await.is_none());
    let cd: ClusterDeployment =
        from_dynamic(world.get(&cd_ref("restored")).await.unwrap()).unwrap();
    assert_eq!(
        cd.metadata.owner_references.unwrap()[0].kind,
        "AgentCluster"
    );
}

#[tokio::test]
async fn a_paused_agent_cluster_creates_nothing_and_says_so() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world
        .patch(
            &agent_cluster_ref("hc"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": "true"}}}),
        )
        .await;
    let outcome = reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Done);
    assert!(world.get(&cd_ref("hc")).await.is_none());
    let ac = world.agent_cluster("hc").await;
    assert_eq!(
        condition_of(&ac, "Paused").map(|c| c.0),
        Some("True".into())
    );
    assert_eq!(
        ac.metadata.finalizers,
        Some(vec![AGENT_CLUSTER_FINALIZER.to_owned()])
    );
}

#[tokio::test]
async fn cluster_spec_paused_pauses_the_agent_cluster() {
    // Upstream's provider ignores Cluster.spec.paused; Cluster API's contract does not.
    let world = World::start().await;
    world.hosted_cluster().await;
    patch_cluster(&world, json!({"spec": {"paused": true}})).await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert!(world.get(&cd_ref("hc")).await.is_none());
}

#[tokio::test]
async fn a_pause_annotation_on_the_cluster_itself_does_not_pause_the_agent_cluster() {
    // Cluster API's `annotations.IsPaused(cluster, obj)` reads the Cluster's spec.paused and
    // the object's own annotation only.
    let world = World::start().await;
    world.hosted_cluster().await;
    patch_cluster(
        &world,
        json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": "true"}}}),
    )
    .await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert!(world.get(&cd_ref("hc")).await.is_some());
}

#[tokio::test]
async fn pausing_orphans_the_cluster_deployment_and_unpausing_adopts_it_again() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let ctx = world.context();
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    let owners = |cd: kcp_core::kube::api::DynamicObject| {
        cd.metadata.owner_references.unwrap_or_default().len()
    };
    assert_eq!(owners(world.get(&cd_ref("hc")).await.unwrap()), 1);
    let pause =
        |v: serde_json::Value| json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": v}}});
    world
        .patch(
            &agent_cluster_ref("hc"),
            Subresource::Main,
            pause(json!("true")),
        )
        .await;
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    assert_eq!(owners(world.get(&cd_ref("hc")).await.unwrap()), 0);
    world
        .patch(
            &agent_cluster_ref("hc"),
            Subresource::Main,
            pause(json!(null)),
        )
        .await;
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    assert_eq!(owners(world.get(&cd_ref("hc")).await.unwrap()), 1);
}

#[tokio::test]
async fn deleting_a_paused_agent_cluster_keeps_the_cluster_deployment() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let ctx = world.context();
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    world
        .patch(
            &agent_cluster_ref("hc"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": "true"}}}),
        )
        .await;
    world
        .client
        .delete(&agent_cluster_ref("hc"), &Default::default())
        .await
        .unwrap();
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    assert!(
        world.get(&agent_cluster_ref("hc")).await.is_none(),
        "the finalizer is gone"
    );
    let cd = world
        .get(&cd_ref("hc"))
        .await
        .expect("the ClusterDeployment survives");
    assert!(cd.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn an_externally_managed_agent_cluster_is_never_touched() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world
        .patch(
            &agent_cluster_ref("hc"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/managed-by": "someone-else"}}}),
        )
        .await;
    reconcile_agent_cluster(&world.context(), NS, "hc")
        .await
        .unwrap();
    assert!(world.get(&cd_ref("hc")).await.is_none());
    assert!(
        world
            .agent_cluster("hc")
            .await
            .metadata
            .finalizers
            .is_none()
    );
}
