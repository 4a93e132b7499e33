//! The Node provider-ID controller (spec 1.7, its unit behaviours of 1.8) against two kcp-sim
//! servers: the management cluster and a workload cluster reached through the kubeconfig
//! Secret.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::time::Duration;

use capi_agent::api::AgentMachine;
use capi_agent::nodes::{Workloads, reconcile_node_provider_id};
use futures::StreamExt as _;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::Node;
use kcp_core::runtime::Outcome;
use kcp_core::{ObjectClient, ObjectClientExt, Subresource};
use kcp_sim::{Config, Server};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher::Event;
use serde_json::json;
use support::*;

struct Setup {
    world: World,
    workload: Server,
    workloads: Workloads,
    writer: reflector::store::Writer<AgentMachine>,
    woken: mpsc::UnboundedReceiver<ObjectRef<AgentMachine>>,
}

async fn setup(secret: &str, key: &str) -> Setup {
    let world = World::start().await;
    let workload = Server::start(Config::default()).await.unwrap();
    world.create(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": NS},
        "data": {key: base64(&workload.kubeconfig(&[]))}})).await;
    let (store, writer) = reflector::store();
    let (wake, woken) = mpsc::unbounded();
    Setup {
        world,
        workload,
        workloads: Workloads::new(store, wake),
        writer,
        woken,
    }
}

/// AgentMachine `m1`, ready, bound to `host-1`, whose Node is `worker-1`.
async fn ready_machine(setup: &mut Setup, ready: bool) -> AgentMachine {
    setup.world.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
        "metadata": {"name": "m1", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "hc"}},
        "spec": {"providerID": "agent://host-1"}})).await;
    setup.world.patch(&agent_machine_ref("m1"), Subresource::Status, json!({"status": {"ready": ready,
        "addresses": [{"type": "ExternalIP", "address": "192.168.1.10"}, {"type": "InternalDNS", "address": "worker-1"}]}})).await;
    let am = setup.world.agent_machine("m1").await;
    setup.writer.apply_watcher_event(&Event::Apply(am.clone()));
    am
}

async fn create_node(workload: &Server, provider_id: Option<&str>) {
    let mut node =
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}, "spec": {}});
    if let Some(p) = provider_id {
        node["spec"]["providerID"] = p.into();
    }
    workload
        .object_client("")
        .create(&dynamic(node))
        .await
        .unwrap();
}

async fn provider_id(workload: &Server) -> Option<String> {
    let node: Node = workload
        .object_client("")
        .get_typed(None, "worker-1")
        .await
        .unwrap()
        .unwrap();
    node.spec.and_then(|s| s.provider_id)
}

#[tokio::test]
async fn the_node_of_a_ready_machine_gets_its_provider_id() {
    let mut s = setup("admin-kubeconfig", "kubeconfig").await;
    create_node(&s.workload, None).await;
    let am = ready_machine(&mut s, true).await;
    let outcome = reconcile_node_provider_id(&s.world.context(), &s.workloads, &am)
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Done);
    assert_eq!(
        provider_id(&s.workload).await.as_deref(),
        Some("agent://host-1")
    );
}

#[tokio::test]
async fn an_unready_machine_leaves_the_node_alone() {
    let mut s = setup("admin-kubeconfig", "kubeconfig").await;
    create_node(&s.workload, None).await;
    let am = ready_machine(&mut s, false).await;
    reconcile_node_provider_id(&s.world.context(), &s.workloads, &am)
        .await
        .unwrap();
    assert_eq!(provider_id(&s.workload).await, None);
}

#[tokio::test]
async fn a_different_provider_id_is_never_overwritten() {
    let mut s = setup("admin-kubeconfig", "kubeconfig").await;
    create_node(&s.workload, Some("agent://other")).await;
    let am = ready_machine(&mut s, true).await;
    let err = reconcile_node_provider_id(&s.world.context(), &s.workloads, &am)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("spec.providerID"), "{err}");
    assert_eq!(
        provider_id(&s.workload).await.as_deref(),
        Some("agent://other")
    );
}

#[tokio::test]
async fn a_node_registering_later_wakes_its_machine_through_the_watch() {
    let mut s = setup("admin-kubeconfig", "kubeconfig").await;
    let am = ready_machine(&mut s, true).await;
    let ctx = s.world.context();
    assert_eq!(
        reconcile_node_provider_id(&ctx, &s.workloads, &am)
            .await
            .unwrap(),
        Outcome::Done
    );
    create_node(&s.workload, None).await;
    let woken = tokio::time::timeout(Duration::from_secs(10), s.woken.next())
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(woken.name, "m1");
    reconcile_node_provider_id(&ctx, &s.workloads, &am)
        .await
        .unwrap();
    assert_eq!(
        provider_id(&s.workload).await.as_deref(),
        Some("agent://host-1")
    );
}

#[tokio::test]
async fn capis_cluster_kubeconfig_secret_is_accepted_too() {
    let mut s = setup("hc-kubeconfig", "value").await;
    create_node(&s.workload, None).await;
    let am = ready_machine(&mut s, true).await;
    reconcile_node_provider_id(&s.world.context(), &s.workloads, &am)
        .await
        .unwrap();
    assert_eq!(
        provider_id(&s.workload).await.as_deref(),
        Some("agent://host-1")
    );
}

#[tokio::test]
async fn a_missing_kubeconfig_is_a_transient_error() {
    let world = World::start().await;
    let (store, _writer) = reflector::store::<AgentMachine>();
    let (wake, _woken) = mpsc::unbounded();
    let workloads = Workloads::new(store, wake);
    world.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
        "metadata": {"name": "m1", "namespace": NS}, "spec": {"providerID": "agent://host-1"}})).await;
    world.patch(&agent_machine_ref("m1"), Subresource::Status,
        json!({"status": {"ready": true, "addresses": [{"type": "InternalDNS", "address": "worker-1"}]}})).await;
    let am = world.agent_machine("m1").await;
    let err = reconcile_node_provider_id(&world.context(), &workloads, &am)
        .await
        .unwrap_err();
    assert!(kcp_core::runtime::Classify::is_transient(&err), "{err}");
}

/// A tenant who can write Secrets in the AgentMachine's namespace puts a kubeconfig there.
async fn tenant_kubeconfig(world: &World, user: &str) {
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
         clusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:1\"}}}}]\n\
         users: [{{name: tenant, user: {{{user}}}}}]\n\
         contexts: [{{name: c, context: {{cluster: c, user: tenant}}}}]\n"
    );
    world.create(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "admin-kubeconfig", "namespace": NS},
        "data": {"kubeconfig": base64(&kubeconfig)}})).await;
}

async fn warning_events(world: &World, reason: &str) -> Vec<String> {
    let events = world
        .client
        .list(
            &gvk("", "v1", "Event"),
            Some(NS),
            &kcp_core::ListOptions::default(),
        )
        .await
        .unwrap();
    events
        .items
        .iter()
        .filter(|e| e.data["reason"] == reason && e.data["type"] == "Warning")
        .map(|e| e.data["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn refused_with_world(user: &str) -> (World, String) {
    let mut s = setup("unused", "unused").await;
    tenant_kubeconfig(&s.world, user).await;
    let am = ready_machine(&mut s, true).await;
    let err = reconcile_node_provider_id(&s.world.context(), &s.workloads, &am)
        .await
        .unwrap_err();
    (s.world, err.to_string())
}

#[tokio::test]
async fn a_tenant_kubeconfig_with_an_exec_plugin_is_refused_and_the_command_never_runs() {
    let marker = std::env::temp_dir().join(format!("capi-agent-pwned-{}", std::process::id()));
    let user = format!(
        "exec: {{apiVersion: client.authentication.k8s.io/v1, command: touch, args: [\"{}\"]}}",
        marker.display()
    );
    let (world, message) = refused_with_world(&user).await;
    assert!(
        message
            .contains("Secret clusters-hc/admin-kubeconfig key kubeconfig users[tenant].user.exec"),
        "{message}"
    );
    assert!(!marker.exists(), "the tenant's command ran in the provider");
    let events = warning_events(&world, "KubeconfigRefused").await;
    assert!(
        events.iter().any(|m| m.contains("users[tenant].user.exec")),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_tenant_kubeconfig_reading_the_service_account_token_file_is_refused() {
    let (_, message) =
        refused_with_world("tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token").await;
    assert!(
        message.contains("users[tenant].user.tokenFile"),
        "{message}"
    );
}

#[tokio::test]
async fn a_tenant_kubeconfig_turning_off_tls_verification_is_refused() {
    let mut s = setup("unused", "unused").await;
    let kubeconfig = "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
        clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}]\n\
        users: [{name: tenant, user: {token: t}}]\n\
        contexts: [{name: c, context: {cluster: c, user: tenant}}]\n";
    s.world.create(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "admin-kubeconfig", "namespace": NS},
        "data": {"kubeconfig": base64(kubeconfig)}})).await;
    let am = ready_machine(&mut s, true).await;
    let message = reconcile_node_provider_id(&s.world.context(), &s.workloads, &am)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("clusters[c].cluster.insecure-skip-tls-verify"),
        "{message}"
    );
}
