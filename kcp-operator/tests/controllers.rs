//! The controllers end to end over HTTP against kcp-sim, through the library's `run`: both
//! groups in one process, the same with 10% injected 500s, and upstream's `config-workload`
//! topology (two processes' worth of controllers against two servers, with Compiled* objects
//! and labelled Secrets copied down and status copied up, as upstream's e2e syncer does).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::client::ListOptions;
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kcp_operator::api::*;
use kcp_operator::controller::ControllerGroup;
use kcp_sim::faults::{ErrorRule, FaultConfig};
use kcp_sim::{Config, Server};
use std::sync::atomic::Ordering;

fn start(sim: &Server, groups: &[ControllerGroup], kcp: &Kcp) -> Operator {
    Operator::start(sim.client("").unwrap(), groups, kcp)
}

async fn is_ready(client: &dyn ObjectClient) -> bool {
    let sources_ready =
        |conditions: Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>| {
            conditions.is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == CONDITION_READY && c.status == "True")
            })
        };
    let rs: Option<RootShard> = client.get_typed(Some(NS), "root").await.ok().flatten();
    let shard: Option<Shard> = client.get_typed(Some(NS), "alpha").await.ok().flatten();
    let fp: Option<FrontProxy> = client.get_typed(Some(NS), "edge").await.ok().flatten();
    let cs: Option<CacheServer> = client.get_typed(Some(NS), "cache").await.ok().flatten();
    let kc: Option<Kubeconfig> = client.get_typed(Some(NS), "admin").await.ok().flatten();
    let vw: Option<VirtualWorkspace> = client.get_typed(Some(NS), "vw-root").await.ok().flatten();
    sources_ready(rs.and_then(|o| o.status).map(|s| s.conditions))
        && sources_ready(shard.and_then(|o| o.status).map(|s| s.conditions))
        && sources_ready(fp.and_then(|o| o.status).map(|s| s.conditions))
        && sources_ready(cs.and_then(|o| o.status).map(|s| s.conditions))
        && sources_ready(kc.and_then(|o| o.status).map(|s| s.conditions))
        && sources_ready(vw.and_then(|o| o.status).map(|s| s.conditions))
}

/// Plays cert-manager and the Deployment controller until every source is Ready.
async fn wait_ready(
    config: &dyn ObjectClient,
    workload: &dyn ObjectClient,
    mut sync: impl AsyncSync,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            issue_certificates(config, NS, 1).await;
            run_deployments(workload, NS).await;
            sync.sync().await;
        })
        .await;
        if is_ready(config).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rs: Option<RootShard> = config.get_typed(Some(NS), "root").await.ok().flatten();
    let shard: Option<Shard> = config.get_typed(Some(NS), "alpha").await.ok().flatten();
    let kc: Option<Kubeconfig> = config.get_typed(Some(NS), "admin").await.ok().flatten();
    let vw: Option<VirtualWorkspace> = config.get_typed(Some(NS), "vw-root").await.ok().flatten();
    panic!(
        "the installation did not become ready: root {:?}; alpha {:?}; admin {:?}; vw-root {:?}",
        rs.and_then(|o| o.status).map(|s| s.conditions),
        shard.and_then(|o| o.status).map(|s| s.conditions),
        kc.and_then(|o| o.status).map(|s| s.conditions),
        vw.and_then(|o| o.status).map(|s| s.conditions),
    );
}

/// A step run between checks (the config-workload syncer, or nothing).
trait AsyncSync {
    async fn sync(&mut self);
}

struct NoSync;

impl AsyncSync for NoSync {
    async fn sync(&mut self) {}
}

#[tokio::test]
async fn both_groups_in_one_process_bring_the_examples_to_ready() {
    let (sim, client, kcp) = setup().await;
    let running = start(
        &sim,
        &[ControllerGroup::Config, ControllerGroup::Workload],
        &kcp,
    );
    wait_ready(&client, &client, NoSync).await;
    assert!(
        running.synced.load(Ordering::SeqCst),
        "every controller's cache synced once the installation is ready"
    );
    running.stop().await;
}

#[tokio::test]
async fn with_ten_percent_server_errors_everything_converges_without_duplicates() {
    let (sim, client, kcp) = setup().await;
    sim.faults().set(FaultConfig {
        errors: vec![ErrorRule::new(500, 0.1)],
        ..FaultConfig::default()
    });
    let running = start(
        &sim,
        &[ControllerGroup::Config, ControllerGroup::Workload],
        &kcp,
    );
    wait_ready(&client, &client, NoSync).await;
    sim.faults().set(FaultConfig::default());
    running.stop().await;
    let deployments: Vec<Deployment> = all(&client, NS).await;
    let mut names: Vec<_> = deployments
        .iter()
        .filter_map(|d| d.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "alpha-shard-kcp",
            "cache-cache-server",
            "edge-front-proxy",
            "root-kcp",
            "root-proxy",
            "vw-root-virtual-workspace"
        ]
    );
}

#[tokio::test]
async fn stopping_before_the_first_list_succeeded_does_not_hang() {
    let (sim, _client, kcp) = setup().await;
    sim.faults().set(FaultConfig {
        errors: vec![ErrorRule::new(500, 1.0).verbs([kcp_sim::Verb::List])],
        ..FaultConfig::default()
    });
    let running = start(
        &sim,
        &[ControllerGroup::Config, ControllerGroup::Workload],
        &kcp,
    );
    let lists_failed = async {
        while sim.faults().injected() == 0 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), lists_failed)
        .await
        .expect("the controllers tried to list");
    running.stop().await;
}

/// Copies Compiled* objects and exactly the Secrets they list in `spec.requiredSecrets` (the
/// contract of `kcp_operator::api::compiled`) from the config cluster to the workload cluster,
/// and the Compiled* status back.
struct Syncer<'a> {
    config: &'a dyn ObjectClient,
    workload: &'a dyn ObjectClient,
}

async fn copy_down<K>(from: &dyn ObjectClient, to: &dyn ObjectClient)
where
    K: kube::Resource<DynamicType = ()>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync,
{
    for mut obj in from
        .list_typed::<K>(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default()
    {
        let meta = obj.meta_mut();
        meta.owner_references = None;
        meta.uid = None;
        meta.resource_version = None;
        meta.creation_timestamp = None;
        meta.managed_fields = None;
        meta.generation = None;
        let name = meta.name.clone().unwrap_or_default();
        match to.get_typed::<K>(Some(NS), &name).await {
            Ok(None) => {
                let _ = to.create_typed(&obj).await;
            }
            Ok(Some(live)) => {
                obj.meta_mut().resource_version = live.meta().resource_version.clone();
                let a = serde_json::to_value(&obj).unwrap();
                let b = serde_json::to_value(&live).unwrap();
                if a.get("spec") != b.get("spec")
                    || a.get("data") != b.get("data")
                    || a["metadata"]["annotations"] != b["metadata"]["annotations"]
                {
                    let _ = to.replace_typed(&obj).await;
                }
            }
            Err(_) => {}
        }
    }
}

async fn copy_status_up<K>(from: &dyn ObjectClient, to: &dyn ObjectClient)
where
    K: kube::Resource<DynamicType = ()>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync,
{
    for obj in from
        .list_typed::<K>(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default()
    {
        let name = obj.meta().name.clone().unwrap_or_default();
        let Ok(Some(live)) = to.get_typed::<K>(Some(NS), &name).await else {
            continue;
        };
        let mut up = serde_json::to_value(&live).unwrap();
        let down = serde_json::to_value(&obj).unwrap();
        if up.get("status") == down.get("status") {
            continue;
        }
        up["status"] = down["status"].clone();
        let dynamic: kube::api::DynamicObject = serde_json::from_value(up).unwrap();
        let _ = to.update_status(&dynamic).await;
    }
}

/// The names in `spec.requiredSecrets` of every Compiled* object of kind `K`.
async fn required<K>(client: &dyn ObjectClient, names: &mut BTreeSet<String>)
where
    K: kube::Resource<DynamicType = ()>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync,
{
    for obj in client
        .list_typed::<K>(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default()
    {
        let value = serde_json::to_value(&obj).unwrap();
        let listed: Vec<String> =
            serde_json::from_value(value["spec"]["requiredSecrets"].clone()).unwrap_or_default();
        names.extend(listed);
    }
}

impl AsyncSync for Syncer<'_> {
    async fn sync(&mut self) {
        let mut names = BTreeSet::new();
        required::<CompiledRootShard>(self.config, &mut names).await;
        required::<CompiledShard>(self.config, &mut names).await;
        required::<CompiledFrontProxy>(self.config, &mut names).await;
        required::<CompiledCacheServer>(self.config, &mut names).await;
        required::<CompiledVirtualWorkspace>(self.config, &mut names).await;
        for name in names {
            let Ok(Some(mut secret)) = self.config.get_typed::<Secret>(Some(NS), &name).await
            else {
                continue;
            };
            secret.metadata.owner_references = None;
            secret.metadata.uid = None;
            secret.metadata.resource_version = None;
            let name = secret.metadata.name.clone().unwrap_or_default();
            match self.workload.get_typed::<Secret>(Some(NS), &name).await {
                Ok(None) => {
                    let _ = self.workload.create_typed(&secret).await;
                }
                Ok(Some(live)) if live.data != secret.data => {
                    secret.metadata.resource_version = live.metadata.resource_version;
                    let _ = self.workload.replace_typed(&secret).await;
                }
                _ => {}
            }
        }
        copy_down::<CompiledRootShard>(self.config, self.workload).await;
        copy_down::<CompiledShard>(self.config, self.workload).await;
        copy_down::<CompiledFrontProxy>(self.config, self.workload).await;
        copy_down::<CompiledCacheServer>(self.config, self.workload).await;
        copy_down::<CompiledVirtualWorkspace>(self.config, self.workload).await;
        copy_status_up::<CompiledRootShard>(self.workload, self.config).await;
        copy_status_up::<CompiledShard>(self.workload, self.config).await;
        copy_status_up::<CompiledFrontProxy>(self.workload, self.config).await;
        copy_status_up::<CompiledCacheServer>(self.workload, self.config).await;
        copy_status_up::<CompiledVirtualWorkspace>(self.workload, self.config).await;
    }
}

#[tokio::test]
async fn config_and_workload_groups_run_against_separate_servers() {
    let (config_sim, config_client, kcp) = setup().await;
    let (workload_sim, workload_client) = setup_with(Config::default(), false).await;
    let config = start(&config_sim, &[ControllerGroup::Config], &kcp);
    let workload = start(&workload_sim, &[ControllerGroup::Workload], &kcp);
    let syncer = Syncer {
        config: &config_client,
        workload: &workload_client,
    };
    wait_ready(&config_client, &workload_client, syncer).await;
    config.stop().await;
    workload.stop().await;
    let on_config: Vec<Deployment> = all(&config_client, NS).await;
    assert!(on_config.is_empty(), "the config cluster runs no workloads");
    let on_workload: Vec<Deployment> = all(&workload_client, NS).await;
    assert_eq!(on_workload.len(), 6);
}
