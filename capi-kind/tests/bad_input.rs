//! Bad input through the running provider, as a user writes it: each broken KindCluster gets
//! phase `Failed`, `Ready=False` with reason `InvalidSpec` and a Warning Event, both naming the
//! object, the field and the reason; no kind cluster is created for it; a good KindCluster
//! beside it is provisioned all along. The kind settings are immutable (kind cannot change a
//! running cluster), so the fix is the object created again with a good spec, which is
//! provisioned. What the CRD schema already refuses is refused at admission, naming the field.
//!
//! Of the capi cases, a label selector and ignition are capi-agent's input (KindClusters
//! have neither), and a KindCluster refers to nothing but its owner Cluster, which the garbage
//! collector deletes it with when that Cluster does not exist; so this corpus has the kind
//! config and the Kubernetes version.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use capi_kind::api::{KindCluster, Phase};
use capi_kind::provisioner::Provisioner as _;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use support::*;

/// The `Ready` condition of `o`: (status, reason, message).
fn ready(o: &KindCluster) -> Option<(String, String, String)> {
    let c = o
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until KindCluster `name` is `Failed` with `Ready=False`, reason `InvalidSpec`, and a
/// message holding every one of `words`; then checks the Warning Event says the same.
async fn refused(env: &Env, name: &str, words: &[&str]) {
    let api = env.api::<KindCluster>();
    wait_for(&api, name, "refused as InvalidSpec", |o| {
        capi_phase(o) == Some(Phase::Failed)
            && ready(o).is_some_and(|(status, reason, message)| {
                status == "False"
                    && reason == "InvalidSpec"
                    && words.iter().all(|w| message.contains(w))
            })
    })
    .await;
    let events: Api<Event> = Api::namespaced(env.sim.client("").unwrap(), "default");
    let event = eventually(&format!("an Event about {name}"), || async {
        let list = events.list(&ListParams::default()).await.unwrap().items;
        list.into_iter()
            .find(|e| e.involved_object.name.as_deref() == Some(name))
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some("InvalidSpec"));
    let message = event.message.clone().unwrap_or_default();
    assert!(words.iter().all(|w| message.contains(w)), "{message}");
}

/// `name` with `spec` beside a good KindCluster: `name` is refused naming `words`, never
/// created as a kind cluster, while the good one becomes Ready; created again with
/// `fixed_spec`, it becomes Ready too.
async fn refused_beside_a_good_one_until_recreated(
    name: &str,
    spec: &str,
    fixed_spec: &str,
    words: &[&str],
) {
    let env = Env::start().await;
    let api = env.api::<KindCluster>();
    env.create::<KindCluster>(&capi_cluster("good", "", ""))
        .await;
    env.create::<KindCluster>(&capi_cluster(name, spec, ""))
        .await;
    refused(&env, name, words).await;
    wait_for(&api, "good", "Ready", |o| {
        capi_phase(o) == Some(Phase::Ready)
    })
    .await;
    let clusters = env.provisioner.list().await.unwrap();
    assert_eq!(clusters, ["default-good"]);

    delete_and_wait(&api, name).await;
    env.create::<KindCluster>(&capi_cluster(name, fixed_spec, ""))
        .await;
    wait_for(&api, name, "Ready once created again", |o| {
        capi_phase(o) == Some(Phase::Ready)
            && ready(o).is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    env.stop().await;
}

#[tokio::test]
async fn a_pod_subnet_that_is_not_a_cidr_is_refused_naming_the_field() {
    refused_beside_a_good_one_until_recreated(
        "subnet",
        "networking: {podSubnet: 10.1.0.0/33}",
        "networking: {podSubnet: 10.1.0.0/16}",
        &[
            "KindCluster default/subnet",
            "spec.networking.podSubnet",
            "\"10.1.0.0/33\" is not a CIDR",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_listen_address_that_is_not_an_ip_address_is_refused_naming_the_field() {
    refused_beside_a_good_one_until_recreated(
        "ports",
        "extraPortMappings: [{containerPort: 80, hostPort: 8080, listenAddress: everywhere}]",
        "extraPortMappings: [{containerPort: 80, hostPort: 8080, listenAddress: 127.0.0.1}]",
        &[
            "KindCluster default/ports",
            "spec.extraPortMappings[0].listenAddress",
            "\"everywhere\" is not an IP address",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_kubernetes_version_with_no_node_image_is_refused_naming_the_field() {
    // `1.31.0-rc.1` passes the schema's pattern, but kind publishes no such node image.
    refused_beside_a_good_one_until_recreated(
        "version",
        "kubernetesVersion: 1.31.0-rc.1",
        "kubernetesVersion: v1.31.0",
        &[
            "KindCluster default/version",
            "spec.kubernetesVersion",
            "\"1.31.0-rc.1\" has no kindest/node image",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_kubernetes_version_that_is_not_a_version_is_refused_by_the_api_server() {
    let env = Env::start().await;
    let status = env
        .create_refused::<KindCluster>(&capi_cluster("bad", "kubernetesVersion: latest", ""))
        .await;
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .contains("KindCluster.infrastructure.cluster.x-k8s.io \"bad\" is invalid")
            && status.message.contains("spec.kubernetesVersion"),
        "{}",
        status.message
    );
    assert_eq!(env.provisioner.creates(), 0);
    env.stop().await;
}
