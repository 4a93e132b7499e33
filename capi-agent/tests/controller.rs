//! The controllers running on `kube::runtime::Controller` over HTTP against kcp-sim: watches,
//! concurrency and retries.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::time::Duration;

use kcp_core::{ObjectClient as _, ObjectClientExt as _};
use kcp_sim::{ErrorRule, Verb};
use serde_json::json;
use support::*;

async fn bound_and_waiting(world: &World, names: &[String]) -> (usize, usize) {
    let (mut bound, mut waiting) = (0, 0);
    for n in names {
        let am = world.agent_machine(n).await;
        if am
            .status
            .as_ref()
            .and_then(|s| s.agent_ref.as_ref())
            .is_some()
        {
            bound += 1;
        } else if condition(&am, "AgentReserved").is_some_and(|c| c.1 == "NoSuitableAgents") {
            waiting += 1;
        }
    }
    (bound, waiting)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_machines_for_ten_agents_with_four_workers_bind_ten_and_ten_wait() {
    let world = World::start().await;
    world.hosted_cluster().await;
    for i in 0..10 {
        world.agent(&format!("host-{i:02}"), json!({})).await;
    }
    let names: Vec<String> = (0..20).map(|i| format!("m{i:02}")).collect();
    for n in &names {
        world.machine(n, None).await;
    }
    let running = start(&world);
    until(
        "10 bound and 10 waiting",
        Duration::from_secs(60),
        || async { bound_and_waiting(&world, &names).await == (10, 10) },
    )
    .await;
    let mut owners = std::collections::BTreeSet::new();
    for agent in world.agents().await {
        let owner = agent
            .label("agentMachineRef")
            .expect("every Agent is bound")
            .to_owned();
        assert!(owners.insert(owner), "an AgentMachine holds two Agents");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_agent_wakes_a_waiting_machine() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world
        .machine("m1", Some(json!({"matchLabels": {"pool": "a"}})))
        .await;
    let running = start(&world);
    let names = vec!["m1".to_string()];
    until("m1 waiting", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &names).await == (0, 1)
    })
    .await;
    world.agent("host-1", json!({"pool": "a"})).await;
    until("m1 bound", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &names).await == (1, 0)
    })
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_machine_converges_with_ten_percent_injected_server_errors() {
    let world = World::start().await;
    world.hosted_cluster().await;
    for i in 0..10 {
        world.agent(&format!("host-{i:02}"), json!({})).await;
    }
    let names: Vec<String> = (0..10).map(|i| format!("m{i:02}")).collect();
    for n in &names {
        world.machine(n, None).await;
    }
    let running = start(&world);
    let faulty = ErrorRule::new(500, 0.1).verbs([
        Verb::Get,
        Verb::List,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
    ]);
    world.sim.faults().add_error(faulty);
    until("all 10 bound", Duration::from_secs(90), || async {
        // The test's own reads must not fail: look without faults, then put them back.
        let config = world.sim.faults().config();
        world.sim.faults().clear();
        let done = bound_and_waiting(&world, &names).await == (10, 0);
        world.sim.faults().set(config);
        done
    })
    .await;
    world.sim.faults().clear();
    let bound: std::collections::BTreeSet<_> = world
        .agents()
        .await
        .iter()
        .filter_map(|a| a.label("agentMachineRef").map(str::to_owned))
        .collect();
    assert_eq!(bound.len(), 10);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_before_the_first_list_succeeded_does_not_hang() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world
        .sim
        .faults()
        .add_error(ErrorRule::new(500, 1.0).verbs([Verb::List]));
    let running = start(&world);
    until(
        "the controllers tried to list",
        Duration::from_secs(30),
        || async { world.sim.faults().injected() > 0 },
    )
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_filter_leaves_unlabelled_machines_alone() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world.agent("host-1", json!({})).await;
    world.agent("host-2", json!({})).await;
    world.machine("mine", None).await;
    world.machine("other", None).await;
    world
        .patch(
            &agent_machine_ref("mine"),
            kcp_core::Subresource::Main,
            json!({"metadata": {"labels": {"cluster.x-k8s.io/watch-filter": "a"}}}),
        )
        .await;
    world
        .patch(
            &agent_cluster_ref("hc"),
            kcp_core::Subresource::Main,
            json!({"metadata": {"labels": {"cluster.x-k8s.io/watch-filter": "a"}}}),
        )
        .await;
    let running = start_with(&world, |o| o.watch_filter = Some("a".into()));
    let mine = vec!["mine".to_string()];
    until("mine bound", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &mine).await == (1, 0)
    })
    .await;
    running.stop().await;
    assert!(
        world.agent_machine("other").await.status.is_none(),
        "the unlabelled AgentMachine was reconciled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_outside_the_agent_namespace_are_never_bound() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere"}}))
        .await;
    let stray = world
        .create(
            json!({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
        "metadata": {"name": "stray", "namespace": "elsewhere"}, "spec": {"approved": true}}),
        )
        .await;
    world.patch(&kcp_core::ObjectRef::from_object(&stray).unwrap(), kcp_core::Subresource::Status, json!({"status": {"conditions": [
        {"type": "Validated", "status": "True"}, {"type": "Connected", "status": "True"}, {"type": "Bound", "status": "False"}]}})).await;
    world.machine("m1", None).await;
    let running = start_with(&world, |o| o.config.agent_namespace = Some(AGENTS.into()));
    let names = vec!["m1".to_string()];
    until("m1 waiting", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &names).await == (0, 1)
    })
    .await;
    world.agent("host-1", json!({})).await;
    until("m1 bound", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &names).await == (1, 0)
    })
    .await;
    running.stop().await;
    assert_eq!(
        world
            .agent_machine("m1")
            .await
            .status
            .unwrap()
            .agent_ref
            .unwrap()
            .namespace,
        AGENTS
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_namespace_only_that_namespaces_machines_are_reconciled() {
    let world = World::start().await;
    world
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere"}}))
        .await;
    // An AgentMachine without its Machine owner gets a status saying so once it is reconciled.
    for namespace in [NS, "elsewhere"] {
        world
            .create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
                "metadata": {"name": "orphan", "namespace": namespace},
                "spec": {}}))
            .await;
    }
    let running = start_with(&world, |o| o.config.namespace = Some(NS.into()));
    until(
        "the AgentMachine in the namespace is reconciled",
        Duration::from_secs(30),
        || async { world.agent_machine("orphan").await.status.is_some() },
    )
    .await;
    running.stop().await;
    let outside: Option<capi_agent::api::AgentMachine> = world
        .client
        .get_typed(Some("elsewhere"), "orphan")
        .await
        .unwrap();
    let outside = outside.expect("the AgentMachine outside still exists");
    assert!(
        outside.status.is_none(),
        "an AgentMachine outside --namespace was reconciled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_is_reported_once_the_caches_synced() {
    let world = World::start().await;
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ready.clone();
    let running = start_with(&world, |o| o.ready = Some(flag));
    until("ready", Duration::from_secs(10), || async {
        ready.load(std::sync::atomic::Ordering::SeqCst)
    })
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_registering_after_its_machine_is_ready_gets_the_provider_id_through_the_controller()
{
    let world = World::start().await;
    world.hosted_cluster().await;
    let workload = kcp_sim::Server::start(kcp_sim::Config::default())
        .await
        .unwrap();
    world
        .patch(
            &secret_ref("admin-kubeconfig"),
            kcp_core::Subresource::Main,
            json!({"data": {"kubeconfig": base64(&workload.kubeconfig(&[]))}}),
        )
        .await;
    world.machine("m1", None).await;
    world.agent("host-1", json!({})).await;
    let running = start(&world);
    until("m1 bound", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &["m1".to_string()]).await == (1, 0)
    })
    .await;
    world
        .patch(
            &agent_ref("host-1"),
            kcp_core::Subresource::Status,
            json!({"status": {"conditions": [
        {"type": "Validated", "status": "True"}, {"type": "Connected", "status": "True"},
        {"type": "Bound", "status": "True"}, {"type": "SpecSynced", "status": "True"},
        {"type": "RequirementsMet", "status": "True"}, {"type": "Installed", "status": "True"}]}}),
        )
        .await;
    until("m1 ready", Duration::from_secs(30), || async {
        world
            .agent_machine("m1")
            .await
            .status
            .is_some_and(|s| s.ready)
    })
    .await;
    let ready = world.agent_machine("m1").await;
    until(
        "the Node looked up and watched before it exists",
        Duration::from_secs(30),
        || async {
            let requests = workload.requests().snapshot();
            ["get nodes", "watch nodes"]
                .iter()
                .all(|r| requests.contains_key(*r))
        },
    )
    .await;
    let node_name = capi_agent::nodes::node_name(&ready).unwrap().unwrap();
    let nodes = workload.object_client("");
    nodes
        .create(&dynamic(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node_name}, "spec": {}})))
        .await
        .unwrap();
    until(
        "the Node has the machine's provider ID",
        Duration::from_secs(30),
        || async {
            let node: k8s_openapi::api::core::v1::Node =
                nodes.get_typed(None, node_name).await.unwrap().unwrap();
            node.spec.and_then(|s| s.provider_id) == ready.spec.provider_id
        },
    )
    .await;
    running.stop().await;
}

/// The Cluster `hc`'s `spec.paused`.
async fn pause_cluster(world: &World, paused: bool) {
    let cluster =
        kcp_core::ObjectRef::namespaced(gvk("cluster.x-k8s.io", "v1beta2", "Cluster"), NS, "hc");
    world
        .patch(
            &cluster,
            kcp_core::Subresource::Main,
            json!({"spec": {"paused": paused}}),
        )
        .await;
}

async fn cluster_deployment_owners(world: &World) -> Option<usize> {
    let cd = world.get(&cd_ref("hc")).await?;
    Some(cd.metadata.owner_references.unwrap_or_default().len())
}

async fn agent_cluster_paused(world: &World) -> Option<String> {
    let ac = world.agent_cluster("hc").await;
    ac.status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Paused")
        .map(|c| c.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpausing_the_cluster_wakes_the_agent_cluster_and_adopts_its_cluster_deployment_again() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let running = start(&world);
    until(
        "the ClusterDeployment owned",
        Duration::from_secs(30),
        || async { cluster_deployment_owners(&world).await == Some(1) },
    )
    .await;
    pause_cluster(&world, true).await;
    until(
        "the AgentCluster paused",
        Duration::from_secs(30),
        || async {
            agent_cluster_paused(&world).await.as_deref() == Some("True")
                && cluster_deployment_owners(&world).await == Some(0)
        },
    )
    .await;
    pause_cluster(&world, false).await;
    until(
        "the AgentCluster unpaused",
        Duration::from_secs(30),
        || async {
            agent_cluster_paused(&world).await.as_deref() == Some("False")
                && cluster_deployment_owners(&world).await == Some(1)
        },
    )
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpausing_the_cluster_wakes_its_agent_machines() {
    let world = World::start().await;
    world.hosted_cluster().await;
    world.machine("m1", None).await;
    world.agent("host-1", json!({})).await;
    let running = start(&world);
    let names = vec!["m1".to_string()];
    until("m1 bound", Duration::from_secs(30), || async {
        bound_and_waiting(&world, &names).await == (1, 0)
    })
    .await;
    let paused = |status: &'static str| {
        let world = &world;
        move || async move {
            condition(&world.agent_machine("m1").await, "Paused").is_some_and(|c| c.0 == status)
        }
    };
    pause_cluster(&world, true).await;
    until("m1 paused", Duration::from_secs(30), paused("True")).await;
    pause_cluster(&world, false).await;
    until("m1 unpaused", Duration::from_secs(30), paused("False")).await;
    running.stop().await;
}
