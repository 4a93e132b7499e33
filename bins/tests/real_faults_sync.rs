//! kcp-api-syncagent under faults on the real kcp and kube-apiserver (issue 25): while it syncs
//! a batch of Databases from several consumer workspaces to the service cluster and their
//! status and credentials Secrets back, it is killed with SIGKILL at random points, kcp and
//! kube-apiserver are killed under it, or the leader of two replicas is killed. Read off both
//! servers afterwards: every kcp object has exactly one local copy, its status came back, and
//! its credentials Secret (made on the service cluster, by the test playing the database
//! operator) was copied into its workspace. Real backend only; the runs share the servers and
//! kill them, so they run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{KubeObjectClient, ListOptions, ObjectClient, ObjectRef, parse_manifests};
use kcp_sync::metadata::{AGENT_NAME_LABEL, REMOTE_OBJECT_CLUSTER_LABEL};
use kcp_testbed::KcpBed;
use serde_json::{Value, json};
use support::chaos::{
    FaultBatch, SERIAL, restart_kcp, restart_kube, run_with_binary_kills, run_with_leader_kill,
    run_with_server_restarts, size,
};
use support::process::free_port;

const AGENT: &str = env!("CARGO_BIN_EXE_kcp-api-syncagent");
const SERVICE: &str = include_str!("../../examples/playground/sync/01-service.yaml");

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn database() -> GroupVersionKind {
    GroupVersionKind::gvk("db.example.com", "v1", "Database")
}

fn secret() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "Secret")
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("fault-test"))
        .apply_until_settled(&plan, Duration::from_secs(120))
        .await;
    assert!(report.is_complete(), "{report}: {report:?}");
}

/// Databases in consumer workspaces bound to one provider's export, synced by one agent.
struct Databases {
    kcp: KcpBed,
    /// The service cluster (the token file's admin: it outlives a restart).
    service: Arc<dyn ObjectClient>,
    /// kcp's durable admin in each consumer workspace, with the workspace's logical cluster.
    consumers: Vec<(Arc<dyn ObjectClient>, String)>,
    per_consumer: usize,
    agent: String,
    namespace: String,
    kcp_kubeconfig: PathBuf,
    service_kubeconfig: PathBuf,
}

impl Databases {
    async fn prepare(consumers: usize, per_consumer: usize) -> Databases {
        let kcp = KcpBed::start_real().await.unwrap();
        let shared = tokio::task::spawn_blocking(kcp_testbed::shared_kcp)
            .await
            .unwrap()
            .unwrap();
        let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
            .await
            .unwrap()
            .unwrap();
        let at = |path: &str| -> Arc<dyn ObjectClient> {
            Arc::new(KubeObjectClient::new(
                shared.durable_admin_at(path).client().unwrap(),
            ))
        };
        let root = at(kcp.root());
        let tag = kcp.root().rsplit(':').next().unwrap().replace("e2e-", "");
        let provider_path = kcp.path("provider");
        kcp_testbed::create_workspace(&*root, "provider", None)
            .await
            .unwrap();
        let provider = at(&provider_path);
        apply(
            &*provider,
            vec![object(
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                "metadata": {"name": "databases"}, "spec": {}}),
            )],
        )
        .await;
        let mut consumer_clients = Vec::new();
        for i in 0..consumers {
            let name = format!("consumer-{i}");
            let cluster = kcp_testbed::create_workspace(&*root, &name, None)
                .await
                .unwrap();
            consumer_clients.push((at(&kcp.path(&name)), cluster));
        }
        let service: Arc<dyn ObjectClient> =
            Arc::new(KubeObjectClient::new(kube.admin.client().unwrap()));
        let namespace = format!("fault-sync-{tag}");
        let agent = format!("fault-{tag}");
        let mut objects: Vec<DynamicObject> = kcp_sync::api::crds()
            .into_iter()
            .map(|crd| serde_json::from_value(serde_json::to_value(crd).unwrap()).unwrap())
            .collect();
        for doc in parse_manifests("service", SERVICE).unwrap() {
            match doc.types.as_ref().map(|t| t.kind.as_str()) {
                Some("CustomResourceDefinition") => objects.push(doc),
                Some("PublishedResource") => {
                    let mut published = serde_json::to_value(doc).unwrap();
                    published["metadata"]["name"] = json!(format!("databases-{tag}"));
                    published["metadata"]["labels"] = json!({"fault": tag});
                    objects.push(object(published));
                }
                _ => {}
            }
        }
        objects.push(object(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace}})));
        apply(&*service, objects).await;
        let dir = kcp_testbed::real::credentials().unwrap().dir.clone();
        let kcp_kubeconfig = kcp_testbed::kubeconfig::write_file(
            &dir,
            &format!("fault-sync-kcp-{tag}"),
            &shared.durable_admin_at(&provider_path),
        )
        .unwrap();
        let service_kubeconfig = kcp_testbed::kubeconfig::write_file(
            &dir,
            &format!("fault-sync-service-{tag}"),
            &kube.admin,
        )
        .unwrap();
        Databases {
            kcp,
            service,
            consumers: consumer_clients,
            per_consumer,
            agent,
            namespace,
            kcp_kubeconfig,
            service_kubeconfig,
        }
    }

    fn total(&self) -> u64 {
        (self.consumers.len() * self.per_consumer) as u64
    }

    /// The local copies of this agent on the service cluster.
    async fn local_copies(&self) -> Result<Vec<DynamicObject>, String> {
        let options = ListOptions {
            label_selector: Some(format!("{AGENT_NAME_LABEL}={}", self.agent)),
            ..ListOptions::default()
        };
        self.service
            .list(&database(), None, &options)
            .await
            .map(|list| list.items)
            .map_err(|e| e.to_string())
    }

    /// Plays the database operator on the service cluster: a local copy gets a status and its
    /// credentials Secret (owned by it), once.
    async fn provision(&self, local: &DynamicObject) -> Result<(), String> {
        let namespace = local.metadata.namespace.clone().unwrap_or_default();
        if local.data["status"]["phase"] != "Ready" {
            let mut ready = local.clone();
            ready.data["status"] = json!({"phase": "Ready", "endpoint": "db:5432"});
            self.service
                .update_status(&ready)
                .await
                .map_err(|e| e.to_string())?;
        }
        let name = local.data["spec"]["secretName"]
            .as_str()
            .unwrap_or_default();
        let at = ObjectRef::namespaced(secret(), &namespace, name);
        if self
            .service
            .get(&at)
            .await
            .map_err(|e| e.to_string())?
            .is_none()
        {
            let owner = json!([{"apiVersion": "db.example.com/v1", "kind": "Database",
                "name": local.metadata.name, "uid": local.metadata.uid, "controller": true}]);
            self.service
                .create(&object(json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": name, "namespace": namespace, "ownerReferences": owner},
                    "stringData": {"password": "s3cret"}})))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// What came back into one consumer: Databases with the service's status, and their
    /// credentials Secrets.
    async fn returned(&self, consumer: &dyn ObjectClient) -> Result<(u64, u64), String> {
        let in_default = |kind| async move {
            consumer
                .list(&kind, Some("default"), &ListOptions::default())
                .await
                .map(|list| list.items)
                .map_err(|e| e.to_string())
        };
        let databases = in_default(database()).await?;
        let secrets = in_default(secret()).await?;
        let ready = databases
            .iter()
            .filter(|db| db.data["status"]["phase"] == "Ready")
            .count();
        let credentials = (0..self.per_consumer)
            .filter(|i| {
                let name = format!("db-{i}-credentials");
                secrets
                    .iter()
                    .any(|s| s.metadata.name.as_deref() == Some(name.as_str()))
            })
            .count();
        Ok((ready as u64, credentials as u64))
    }
}

#[async_trait]
impl FaultBatch for Databases {
    fn system(&self) -> &'static str {
        "kcp-sync"
    }

    fn command(&self, _index: usize, leader_election: bool) -> (String, Vec<String>) {
        let args = vec![
            format!("--agent-name={}", self.agent),
            "--apiexportendpointslice-ref=databases".to_string(),
            format!("--enable-leader-election={leader_election}"),
            "--leader-election-lease-duration=5".to_string(),
            "--leader-election-renew-grace=2".to_string(),
            format!("--kubeconfig={}", self.service_kubeconfig.display()),
            format!("--kcp-kubeconfig={}", self.kcp_kubeconfig.display()),
            format!("--namespace={}", self.namespace),
            format!("--health-address=127.0.0.1:{}", free_port()),
            format!("--metrics-address=127.0.0.1:{}", free_port()),
            format!(
                "--published-resource-selector=fault={}",
                self.agent.trim_start_matches("fault-")
            ),
        ];
        (AGENT.to_string(), args)
    }

    fn lease(&self) -> (Arc<dyn ObjectClient>, String, String) {
        (
            self.service.clone(),
            self.namespace.clone(),
            format!("syncagent.{}", self.agent),
        )
    }

    fn lease_duration(&self) -> Duration {
        Duration::from_secs(5)
    }

    async fn submit(&self) {
        let provider = self.kcp.path("provider");
        for (consumer, _) in &self.consumers {
            let claims: Vec<Value> = ["events", "namespaces", "secrets", "configmaps"]
                .iter()
                .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
                .collect();
            let binding = object(
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
                "metadata": {"name": "databases"},
                "spec": {"reference": {"export": {"path": provider, "name": "databases"}},
                    "permissionClaims": claims}}),
            );
            let databases = (0..self.per_consumer).map(|i| {
                object(
                    json!({"apiVersion": "db.example.com/v1", "kind": "Database",
                    "metadata": {"name": format!("db-{i}"), "namespace": "default"},
                    "spec": {"size": "small", "secretName": format!("db-{i}-credentials")}}),
                )
            });
            // The Database kind is served once the agent has published it and the binding is
            // bound: the apply waits for that.
            apply(
                &**consumer,
                std::iter::once(binding).chain(databases).collect(),
            )
            .await;
        }
    }

    async fn check(&self) -> Result<Vec<(&'static str, u64)>, String> {
        let copies = self.local_copies().await?;
        // Exactly one local copy per kcp object: a second copy never heals.
        let mut per_origin: BTreeMap<(String, String), u32> = BTreeMap::new();
        for copy in &copies {
            let cluster = copy
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(REMOTE_OBJECT_CLUSTER_LABEL))
                .cloned()
                .unwrap_or_default();
            let name = copy.data["spec"]["secretName"].to_string();
            *per_origin.entry((cluster, name)).or_default() += 1;
        }
        if let Some((origin, n)) = per_origin.iter().find(|(_, n)| **n > 1) {
            panic!("{n} local copies of {origin:?}");
        }
        // The operator takes up a few new copies per look, so the work spreads over the faults
        // (and finishes any it took up: a Secret missing after a restart is made again).
        let mut new_ones = (copies.len() / 5).max(4);
        for copy in &copies {
            let taken_up = copy.data["status"]["phase"] == "Ready";
            if taken_up || new_ones > 0 {
                new_ones -= usize::from(!taken_up);
                self.provision(copy).await?;
            }
        }
        let (mut statuses, mut credentials) = (0, 0);
        for (consumer, _) in &self.consumers {
            let (s, c) = self.returned(&**consumer).await?;
            statuses += s;
            credentials += c;
        }
        let total = self.total();
        let counts = vec![
            ("kcp objects", total),
            ("local copies", copies.len() as u64),
            ("statuses back", statuses),
            ("credentials back", credentials),
        ];
        if counts.iter().all(|(_, n)| *n == total) {
            Ok(counts)
        } else {
            Err(format!("{counts:?}"))
        }
    }

    async fn restart_servers(&self) -> Duration {
        let started = Instant::now();
        restart_kcp().await;
        restart_kube().await;
        started.elapsed()
    }

    fn within(&self) -> Duration {
        Duration::from_secs(if support::chaos::long_run() { 900 } else { 240 })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_points_the_agent_syncs_every_object_once_both_ways() {
    let _serial = SERIAL.lock().await;
    let batch = Databases::prepare(size(2, 20), size(10, 50)).await;
    let report = run_with_binary_kills(&batch, 3).await;
    assert_eq!(report.counts[1].1, batch.total());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_kcp_and_kube_apiserver_killed_under_it_the_agent_syncs_every_object_once() {
    let _serial = SERIAL.lock().await;
    let batch = Databases::prepare(size(2, 20), size(10, 50)).await;
    let report = run_with_server_restarts(&batch, 1).await;
    assert_eq!(report.counts[1].1, batch.total());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_leader_killed_the_standby_takes_over_and_syncs_every_object_once() {
    let _serial = SERIAL.lock().await;
    let batch = Databases::prepare(size(2, 20), size(10, 50)).await;
    let report = run_with_leader_kill(&batch).await;
    assert_eq!(report.counts[1].1, batch.total());
}
