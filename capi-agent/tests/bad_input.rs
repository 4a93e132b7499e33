//! Bad input through the running provider, as a user (or HyperShift) writes it: each broken
//! object gets a condition naming the object, the field and the reason (upstream's provider
//! records no Events, so neither does this one for these); a good AgentMachine beside it is
//! bound all along; nothing is half-applied (no Agent bound through a selector that does not
//! parse, no AgentClusterInstall with an endpoint that cannot work); fixing the object clears
//! the condition. (A kind config and a Kubernetes version are capi-kind's input; an
//! AgentMachine has neither.)
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::time::Duration;

use capi_agent::api::AgentMachine;
use kcp_core::Subresource;
use serde_json::{Value, json};
use support::*;

const WITHIN: Duration = Duration::from_secs(30);

/// The condition `type_` of `am`: (status, reason, message).
fn condition_of(am: &AgentMachine, type_: &str) -> Option<(String, String, String)> {
    let c = am
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until condition `type_` of AgentMachine `name` is False with `reason` and a message
/// holding every one of `words`.
async fn machine_says(world: &World, name: &str, type_: &str, reason: &str, words: &[&str]) {
    let what = format!("AgentMachine {name}: {type_}=False/{reason} naming {words:?}");
    until(&what, WITHIN, || async {
        let am = world.agent_machine(name).await;
        condition_of(&am, type_).is_some_and(|(status, r, message)| {
            status == "False" && r == reason && words.iter().all(|w| message.contains(w))
        })
    })
    .await;
}

async fn bound(world: &World, name: &str) -> bool {
    let am = world.agent_machine(name).await;
    am.status.and_then(|s| s.agent_ref).is_some()
}

async fn until_bound(world: &World, name: &str) {
    until(&format!("AgentMachine {name} bound"), WITHIN, || {
        bound(world, name)
    })
    .await;
}

/// A hosted cluster, two free Agents, and the good AgentMachine `good`.
async fn world_with_a_good_machine() -> World {
    let world = World::start().await;
    world.hosted_cluster().await;
    world.agent("host-1", json!({"pool": "a"})).await;
    world.agent("host-2", json!({"pool": "a"})).await;
    world.machine("good", None).await;
    world
}

/// AgentMachine `picky` with `selector` says why it binds nothing, naming `words`, while the
/// good one binds; merge-patched with `fix`, it binds.
async fn a_selector_that_does_not_parse_is_named_and_binds_nothing(
    selector: Value,
    words: &[&str],
    fix: Value,
) {
    let world = world_with_a_good_machine().await;
    world.machine("picky", Some(selector)).await;
    let running = start(&world);
    machine_says(&world, "picky", "AgentReserved", "AgentNotYetFound", words).await;
    until_bound(&world, "good").await;
    assert!(!bound(&world, "picky").await);

    let fixed = json!({"spec": {"agentLabelSelector": fix}});
    world
        .patch(&agent_machine_ref("picky"), Subresource::Main, fixed)
        .await;
    until_bound(&world, "picky").await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_selector_with_an_unknown_operator_is_named_and_binds_nothing_until_fixed() {
    let selector =
        json!({"matchExpressions": [{"key": "pool", "operator": "Equals", "values": ["a"]}]});
    let words = [
        "AgentMachine clusters-hc/picky",
        "spec.agentLabelSelector.matchExpressions[0].operator",
        "\"Equals\" is not an operator",
    ];
    let fix = json!({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]});
    a_selector_that_does_not_parse_is_named_and_binds_nothing(selector, &words, fix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_selector_with_a_key_that_is_no_label_key_is_named_and_binds_nothing_until_fixed() {
    let selector = json!({"matchLabels": {"pool name!": "a"}});
    let words = [
        "AgentMachine clusters-hc/picky",
        "spec.agentLabelSelector.matchLabels[\"pool name!\"]",
        "is not a label key",
    ];
    let fix = json!({"matchLabels": {"pool name!": null, "pool": "a"}});
    a_selector_that_does_not_parse_is_named_and_binds_nothing(selector, &words, fix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_data_secret_that_does_not_exist_is_named_until_it_is_created() {
    let world = world_with_a_good_machine().await;
    world.machine("late", None).await;
    let later = json!({"spec": {"bootstrap": {"dataSecretName": "late-data"}}});
    world
        .patch(&machine_ref("late"), Subresource::Main, later)
        .await;
    let running = start(&world);
    let words = [
        "AgentMachine clusters-hc/late",
        "Secret clusters-hc/late-data",
        "Machine clusters-hc/late names in spec.bootstrap.dataSecretName",
    ];
    machine_says(
        &world,
        "late",
        "BootstrapDataReady",
        "WaitingForBootstrapData",
        &words,
    )
    .await;
    until_bound(&world, "good").await;
    assert!(!bound(&world, "late").await);

    world
        .create(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "late-data", "namespace": NS},
            "data": {"value": base64(USER_DATA)}}))
        .await;
    until_bound(&world, "late").await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_ignition_is_named_and_binds_nothing_until_fixed() {
    let world = world_with_a_good_machine().await;
    world
        .create(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "broken-data", "namespace": NS},
            "data": {"value": base64(r#"{"ignition": {"version": "3.2.0", "config": {"merge": []}}}"#)}}))
        .await;
    world.machine("broken", None).await;
    let broken = json!({"spec": {"bootstrap": {"dataSecretName": "broken-data"}}});
    world
        .patch(&machine_ref("broken"), Subresource::Main, broken)
        .await;
    let running = start(&world);
    let words = ["Secret clusters-hc/broken-data", "field data.value"];
    machine_says(
        &world,
        "broken",
        "BootstrapDataReady",
        "BootstrapDataInvalid",
        &words,
    )
    .await;
    until_bound(&world, "good").await;
    assert!(!bound(&world, "broken").await);

    let fixed = json!({"data": {"value": base64(USER_DATA)}});
    world
        .patch(&secret_ref("broken-data"), Subresource::Main, fixed)
        .await;
    until_bound(&world, "broken").await;
    let am = world.agent_machine("broken").await;
    assert_eq!(
        condition_of(&am, "BootstrapDataReady").map(|c| c.0),
        Some("True".into())
    );
    running.stop().await;
}

/// The AgentCluster `hc`'s `AgentClusterInstallReady` condition: (status, reason, message).
async fn install_condition(world: &World) -> Option<(String, String, String)> {
    let ac = world.agent_cluster("hc").await;
    let c = ac
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == "AgentClusterInstallReady")?;
    Some((c.status, c.reason, c.message))
}

/// AgentCluster `hc` with `endpoint` as its `spec.ignitionEndpoint` says `reason` naming
/// `words` and gets no AgentClusterInstall, while the good AgentMachine binds; with
/// `fixed` instead, the AgentClusterInstall is written.
async fn an_ignition_endpoint_that_cannot_work(
    endpoint: Value,
    reason: &str,
    words: &[&str],
    fixed: Value,
) {
    let world = world_with_a_good_machine().await;
    let bad = json!({"spec": {"ignitionEndpoint": endpoint}});
    world
        .patch(&agent_cluster_ref("hc"), Subresource::Main, bad)
        .await;
    let running = start(&world);
    let what = format!("AgentClusterInstallReady=False/{reason} naming {words:?}");
    until(&what, WITHIN, || async {
        install_condition(&world)
            .await
            .is_some_and(|(status, r, message)| {
                status == "False" && r == reason && words.iter().all(|w| message.contains(w))
            })
    })
    .await;
    until_bound(&world, "good").await;
    assert!(world.get(&aci_ref("hc")).await.is_none());

    let fixed = json!({"spec": {"ignitionEndpoint": fixed}});
    world
        .patch(&agent_cluster_ref("hc"), Subresource::Main, fixed)
        .await;
    until("the AgentClusterInstall written", WITHIN, || async {
        world.get(&aci_ref("hc")).await.is_some()
            && install_condition(&world)
                .await
                .is_some_and(|c| c.0 == "True")
    })
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignition_endpoint_url_that_is_not_a_url_is_named_until_fixed() {
    an_ignition_endpoint_that_cannot_work(
        json!({"url": "ignition.example.com/ignition"}),
        "InvalidIgnitionEndpoint",
        &[
            "AgentCluster clusters-hc/hc",
            "spec.ignitionEndpoint.url",
            "is not an http or https URL",
        ],
        json!({"url": "https://ignition.example.com/ignition"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignition_ca_secret_that_does_not_exist_is_named_until_the_reference_is_fixed() {
    an_ignition_endpoint_that_cannot_work(
        json!({"url": "https://ignition.example.com/ignition",
               "caCertificateReference": {"namespace": NS, "name": "ignition-ca"}}),
        "IgnitionCASecretNotFound",
        &[
            "AgentCluster clusters-hc/hc",
            "spec.ignitionEndpoint.caCertificateReference",
            "Secret clusters-hc/ignition-ca",
        ],
        json!({"url": "https://ignition.example.com/ignition",
               "caCertificateReference": {"namespace": NS, "name": "pull-secret"}}),
    )
    .await;
}

/// The `ClusterDeploymentReady` condition of AgentCluster `name`: (status, reason, message).
async fn deployment_condition(world: &World, name: &str) -> Option<(String, String, String)> {
    let ac = world.agent_cluster(name).await;
    let c = ac
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == "ClusterDeploymentReady")?;
    Some((c.status, c.reason, c.message))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_reference_that_matches_nothing_is_named_until_it_exists() {
    let world = world_with_a_good_machine().await;
    let cluster = world.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "other", "namespace": NS},
        "spec": {
            "controlPlaneRef": {"apiGroup": "hypershift.openshift.io", "kind": "HostedControlPlane", "name": "other"},
            "infrastructureRef": {"apiGroup": "capi-provider.agent-install.openshift.io", "kind": "AgentCluster", "name": "other"}}})).await;
    world
        .create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentCluster",
            "metadata": {"name": "other", "namespace": NS, "ownerReferences": [owner(&cluster)]},
            "spec": {"controlPlaneEndpoint": {"host": "api.other.example.com", "port": 6443}}}))
        .await;
    let running = start(&world);
    let words = [
        "AgentCluster clusters-hc/other",
        "Cluster clusters-hc/other names in spec.controlPlaneRef",
        "HostedControlPlane clusters-hc/other, which does not exist",
    ];
    until(
        "ClusterDeploymentReady=False naming the control plane",
        WITHIN,
        || async {
            deployment_condition(&world, "other")
                .await
                .is_some_and(|(status, reason, message)| {
                    status == "False"
                        && reason == "WaitingForControlPlane"
                        && words.iter().all(|w| message.contains(w))
                })
        },
    )
    .await;
    until_bound(&world, "good").await;
    assert!(world.get(&cd_ref("other")).await.is_none());

    let hcp = world
        .create(
            json!({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedControlPlane",
            "metadata": {"name": "other", "namespace": NS},
            "spec": {"dns": {"baseDomain": "example.com"}, "pullSecret": {"name": "pull-secret"}}}),
        )
        .await;
    let status = json!({"status": {
        "kubeConfig": {"name": "admin-kubeconfig", "key": "kubeconfig"},
        "kubeadminPassword": {"name": "kubeadmin-password"}}});
    world
        .patch(
            &kcp_core::ObjectRef::from_object(&hcp).unwrap(),
            Subresource::Status,
            status,
        )
        .await;
    until("ClusterDeploymentReady=True", WITHIN, || async {
        deployment_condition(&world, "other")
            .await
            .is_some_and(|c| c.0 == "True")
    })
    .await;
    running.stop().await;
}
