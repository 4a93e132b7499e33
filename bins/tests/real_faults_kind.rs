//! capi-provider-kind under faults on the real kube-apiserver (issue 25): while it creates a batch
//! of kind clusters for KINDCluster objects through a stand-in `kind` (a shell script of this
//! test: no container engine exists here), it is killed with SIGKILL at random points,
//! kube-apiserver and etcd are killed under it, or the leader of two replicas is killed. Read
//! afterwards, from the server and from what the stand-in `kind` recorded (never from the
//! binary): every KINDCluster `Ready` with its kubeconfig Secret, every kind cluster created
//! exactly once and marked as its object's, no cluster nobody asked for.
//! Real backend only; the runs share one kube-apiserver and kill it, so they run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use capi_kind::kind_config::OWNER_LABEL;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{KubeObjectClient, ListOptions, ObjectClient};
use kcp_sim::Server;
use support::chaos::{
    FaultBatch, SERIAL, restart_kube, run_with_binary_kills, run_with_leader_kill,
    run_with_server_restarts, size,
};
use support::process::free_port;

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-kind");
/// The provider's Lease (upstream's name, the binary's default).
const LEASE: &str = "0515b1bd.cluster-k8s.io";
const LEASE_SECONDS: u64 = 5;

fn kind_clusters() -> GroupVersionKind {
    GroupVersionKind::gvk("infrastructure.cluster-k8s.io", "v1alpha1", "KINDCluster")
}

/// A batch of KINDClusters in a namespace of their own, the stand-in `kind` in a directory of
/// its own, and the API servers its clusters' kubeconfigs point at (one per cluster name).
struct Clusters {
    client: Arc<dyn ObjectClient>,
    ns: String,
    kubeconfig: PathBuf,
    dir: PathBuf,
    workloads: Vec<Server>,
    count: usize,
}

impl Clusters {
    async fn prepare(count: usize) -> Clusters {
        let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
            .await
            .unwrap()
            .unwrap();
        let client: Arc<dyn ObjectClient> =
            Arc::new(KubeObjectClient::new(kube.admin.client().unwrap()));
        let ns = format!("fault-kind-{:08x}", fastrand::u32(..));
        let mut objects = capi_kind::api::crd_objects().unwrap();
        let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n");
        objects.extend(kcp_core::parse_manifests("namespace.yaml", &namespace).unwrap());
        apply(&*client, objects).await;
        let kubeconfig =
            std::env::temp_dir().join(format!("{ns}-{}.kubeconfig", std::process::id()));
        let document = kcp_testbed::kubeconfig::kubeconfig(&[("kube", &kube.admin)]);
        std::fs::write(&kubeconfig, document.to_string()).unwrap();

        let dir = std::env::temp_dir().join(format!("{ns}-{}-kind", std::process::id()));
        let names: Vec<String> = (0..count).map(Clusters::cluster_name).collect();
        let workloads = support::kind_stand_in::install(&dir, &names).await;
        Clusters {
            client,
            ns,
            kubeconfig,
            dir,
            workloads,
            count,
        }
    }

    fn cluster_name(i: usize) -> String {
        format!("fault-{i}")
    }

    /// The lines of a file the stand-in `kind` writes, counted.
    fn recorded(&self, file: &str) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for line in std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_default()
            .lines()
        {
            *counts.entry(line.to_owned()).or_default() += 1;
        }
        counts
    }
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("fault-test"))
        .apply_until_settled(&plan, Duration::from_secs(60))
        .await;
    assert!(report.is_complete(), "{report}");
}

#[async_trait]
impl FaultBatch for Clusters {
    fn system(&self) -> &'static str {
        "capi-kind"
    }

    fn command(&self, _index: usize, leader_election: bool) -> (String, Vec<String>) {
        let mut args = vec![
            "--kubeconfig".to_string(),
            self.kubeconfig.display().to_string(),
            format!("--kind-binary={}", self.dir.join("kind").display()),
            "--max-concurrent-creates=2".to_string(),
            format!("--namespace={}", self.ns),
            "--metrics-address=0".to_string(),
            format!("--health-address=127.0.0.1:{}", free_port()),
        ];
        if leader_election {
            args.extend([
                "--leader-elect".to_string(),
                format!("--leader-election-namespace={}", self.ns),
                format!("--leader-election-lease-duration={LEASE_SECONDS}"),
                "--leader-election-renew-grace=2".to_string(),
            ]);
        }
        (PROVIDER.to_string(), args)
    }

    fn lease(&self) -> (Arc<dyn ObjectClient>, String, String) {
        (self.client.clone(), self.ns.clone(), LEASE.into())
    }

    fn lease_duration(&self) -> Duration {
        Duration::from_secs(LEASE_SECONDS)
    }

    async fn submit(&self) {
        let objects = (0..self.count)
            .flat_map(|i| {
                let yaml = format!(
                    "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {{name: cluster-{i}, namespace: {}}}\nspec: {{clusterName: {}}}\n",
                    self.ns,
                    Clusters::cluster_name(i)
                );
                kcp_core::parse_manifests("kindcluster.yaml", &yaml).unwrap()
            })
            .collect();
        apply(&*self.client, objects).await;
    }

    async fn check(&self) -> Result<Vec<(&'static str, u64)>, String> {
        let wanted: Vec<String> = (0..self.count).map(Clusters::cluster_name).collect();
        let objects = self
            .client
            .list(&kind_clusters(), Some(&self.ns), &ListOptions::default())
            .await
            .map_err(|e| format!("listing KINDClusters: {e}"))?
            .items;
        // What the stand-in kind made (read after the objects: a cluster a listed object is
        // Ready for was made before): each asked-for cluster at most once, nothing else.
        let created = self.recorded("created");
        let listed = self.recorded("clusters");
        for (name, times) in created.iter().chain(&listed) {
            assert!(
                wanted.contains(name),
                "kind cluster {name} was made, which no KINDCluster asks for"
            );
            assert_eq!(*times, 1, "kind cluster {name} was created {times} times");
        }
        let mut waiting = Vec::new();
        let mut ready = 0u64;
        for object in &objects {
            let name = object.metadata.name.clone().unwrap_or_default();
            let cluster = object.data["spec"]["clusterName"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let status = &object.data["status"];
            if status["phase"] != "Ready" || status["ready"] != true {
                waiting.push(format!(
                    "{name} ({}: {})",
                    status["phase"], status["failureMessage"]
                ));
                continue;
            }
            if status["observedGeneration"].as_i64() != object.metadata.generation {
                waiting.push(format!("{name} (status of an older generation)"));
                continue;
            }
            // Ready means the cluster exists and its kubeconfig is published.
            assert!(
                listed.contains_key(&cluster),
                "{name} is Ready, but kind lists no cluster {cluster}"
            );
            let secret = self
                .client
                .get(&kcp_core::ObjectRef::namespaced(
                    GroupVersionKind::gvk("", "v1", "Secret"),
                    &self.ns,
                    format!("{cluster}-config"),
                ))
                .await
                .map_err(|e| format!("reading Secret {cluster}-config: {e}"))?
                .unwrap_or_else(|| panic!("{name} is Ready without its Secret {cluster}-config"));
            let config = secret.data["data"]["config"].as_str().unwrap_or_default();
            assert!(
                !config.is_empty(),
                "{name}'s Secret {cluster}-config holds no kubeconfig"
            );
            ready += 1;
        }
        if objects.len() != self.count {
            waiting.push(format!("{} KINDClusters of {}", objects.len(), self.count));
        }
        if !waiting.is_empty() {
            return Err(format!("waiting: {}", waiting.join(", ")));
        }
        // Each cluster marked as its object's: its Node carries the object's uid.
        for object in &objects {
            let cluster = object.data["spec"]["clusterName"].as_str().unwrap_or("");
            let index = wanted.iter().position(|w| w == cluster).unwrap();
            let nodes = KubeObjectClient::new(self.workloads[index].client("").unwrap())
                .list(
                    &GroupVersionKind::gvk("", "v1", "Node"),
                    None,
                    &ListOptions::default(),
                )
                .await
                .map_err(|e| format!("listing the Nodes of {cluster}: {e}"))?
                .items;
            let marks: Vec<_> = nodes
                .iter()
                .map(|n| n.metadata.labels.as_ref().and_then(|l| l.get(OWNER_LABEL)))
                .collect();
            assert!(
                !marks.is_empty() && marks.iter().all(|m| *m == object.metadata.uid.as_ref()),
                "kind cluster {cluster} is not marked as its object's: {marks:?}"
            );
        }
        let attempts = std::fs::read_to_string(self.dir.join("args.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("create cluster"))
            .count() as u64;
        Ok(vec![
            ("clusters Ready", ready),
            ("created exactly once", created.len() as u64),
            ("create commands run", attempts),
        ])
    }

    async fn restart_servers(&self) -> Duration {
        restart_kube().await
    }

    fn within(&self) -> Duration {
        Duration::from_secs(if support::chaos::long_run() { 600 } else { 120 })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_points_the_provider_creates_every_cluster_exactly_once() {
    let _serial = SERIAL.lock().await;
    let batch = Clusters::prepare(size(4, 20)).await;
    let report = run_with_binary_kills(&batch, 3).await;
    assert_eq!(report.counts[0].1, batch.count as u64);
    assert_eq!(report.counts[1].1, batch.count as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_kube_apiserver_killed_under_it_the_provider_creates_every_cluster_exactly_once() {
    let _serial = SERIAL.lock().await;
    let batch = Clusters::prepare(size(4, 20)).await;
    let report = run_with_server_restarts(&batch, 1).await;
    assert_eq!(report.counts[0].1, batch.count as u64);
    assert_eq!(report.counts[1].1, batch.count as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_leader_killed_the_standby_takes_over_and_creates_every_cluster_exactly_once() {
    let _serial = SERIAL.lock().await;
    let batch = Clusters::prepare(size(4, 20)).await;
    let report = run_with_leader_kill(&batch).await;
    assert_eq!(report.counts[0].1, batch.count as u64);
    assert_eq!(report.counts[1].1, batch.count as u64);
}
