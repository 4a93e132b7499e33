//! Workload simulation: Deployments and StatefulSets report ready and available replicas after
//! the configured delay, and follow spec changes, as on a cluster with kubelets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kcp_sim::{Config, Server};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

async fn simulating() -> Server {
    Server::start(Config {
        simulate_workloads: Some(Duration::from_millis(20)),
        ..Config::default()
    })
    .await
    .unwrap()
}

fn deployment(replicas: i32) -> Deployment {
    serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}))
    .unwrap()
}

/// Polls `get` until `done` holds, failing after 10 s.
async fn eventually<T, F, Fut>(what: &str, mut get: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let value = get().await;
        if done(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_deployment_becomes_available_with_its_replicas_ready() {
    let sim = simulating().await;
    let api: Api<Deployment> = Api::namespaced(sim.client("").unwrap(), "default");
    api.create(&PostParams::default(), &deployment(2))
        .await
        .unwrap();
    let settled = eventually(
        "an available deployment",
        || async { api.get("web").await.unwrap() },
        |d| d.status.as_ref().and_then(|s| s.available_replicas) == Some(2),
    )
    .await;
    let status = settled.status.unwrap();
    assert_eq!(status.ready_replicas, Some(2));
    assert_eq!(status.observed_generation, Some(1));
    let available = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Available")
        .unwrap();
    assert_eq!(available.status, "True");
}

#[tokio::test]
async fn scaling_a_deployment_rolls_its_status_to_the_new_generation() {
    let sim = simulating().await;
    let api: Api<Deployment> = Api::namespaced(sim.client("").unwrap(), "default");
    api.create(&PostParams::default(), &deployment(1))
        .await
        .unwrap();
    eventually(
        "the first generation observed",
        || async { api.get("web").await.unwrap() },
        |d| d.status.as_ref().and_then(|s| s.observed_generation) == Some(1),
    )
    .await;
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    let scaled = eventually(
        "three ready replicas",
        || async { api.get("web").await.unwrap() },
        |d| d.status.as_ref().and_then(|s| s.ready_replicas) == Some(3),
    )
    .await;
    assert_eq!(scaled.status.unwrap().observed_generation, Some(2));
}

#[tokio::test]
async fn a_stateful_set_reports_its_replicas_ready() {
    let sim = simulating().await;
    let api: Api<StatefulSet> = Api::namespaced(sim.client("").unwrap(), "default");
    let set: StatefulSet = serde_json::from_value(json!({"apiVersion": "apps/v1",
        "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres"}]}}}}))
    .unwrap();
    api.create(&PostParams::default(), &set).await.unwrap();
    let settled = eventually(
        "a ready stateful set",
        || async { api.get("db").await.unwrap() },
        |s| s.status.as_ref().and_then(|s| s.ready_replicas) == Some(2),
    )
    .await;
    assert_eq!(settled.status.unwrap().current_replicas, Some(2));
}
