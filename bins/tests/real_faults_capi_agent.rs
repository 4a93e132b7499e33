//! capi-provider-agent under faults on the real kube-apiserver (issue 25): Machines of a hosted
//! cluster are bound to Agents, some of them are deleted again (the test plays Cluster API core:
//! Machine gone, then its AgentMachine deleted), while the binary is killed with SIGKILL at
//! random points, kube-apiserver and etcd are killed under it, or the leader of two replicas is
//! killed. Read off the server afterwards: every remaining AgentMachine holds exactly one Agent
//! that points back at it, no Agent is bound twice, every deleted AgentMachine is gone (its
//! finalizer released) and its Agent unbound. Real backend only, one run at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use capi_agent::api::AGENT_MACHINE_REF_LABEL;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{
    KubeObjectClient, ListOptions, ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource,
    parse_manifests,
};
use serde_json::{Value, json};
use support::chaos::{
    FaultBatch, SERIAL, restart_kube, run_with_binary_kills, run_with_leader_kill,
    run_with_server_restarts, size,
};
use support::process::free_port;

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-agent");
const FOREIGN_CRDS: &str = include_str!("../../examples/playground/agent/00-foreign-crds.yaml");
const LEASE: &str = "7605f49b.agent-install.openshift.io";

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

fn agent_machine() -> GroupVersionKind {
    gvk(
        "capi-provider.agent-install.openshift.io",
        "v1beta1",
        "AgentMachine",
    )
}

fn machine() -> GroupVersionKind {
    gvk("cluster.x-k8s.io", "v1beta2", "Machine")
}

fn agent() -> GroupVersionKind {
    gvk("agent-install.openshift.io", "v1beta1", "Agent")
}

fn owner(of: &DynamicObject) -> Value {
    let types = of.types.clone().unwrap();
    json!({"apiVersion": types.api_version, "kind": types.kind,
        "name": of.metadata.name, "uid": of.metadata.uid, "controller": true})
}

/// A hosted cluster's Machines, as many Agents as Machines, and the Machines deleted again.
struct Machines {
    kube: Arc<dyn ObjectClient>,
    /// Where the cluster's objects live, and where the Agents do.
    namespace: String,
    agents: String,
    kubeconfig: PathBuf,
    names: Vec<String>,
    /// The Machines deleted after binding (the first ones).
    deleted: usize,
    /// Those already deleted.
    deleting: std::sync::Mutex<BTreeSet<String>>,
}

impl Machines {
    async fn prepare(machines: usize, deleted: usize) -> Machines {
        let shared = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
            .await
            .unwrap()
            .unwrap();
        let kube: Arc<dyn ObjectClient> =
            Arc::new(KubeObjectClient::new(shared.admin.client().unwrap()));
        let tag = format!("{:08x}", fastrand::u32(..));
        let (namespace, agents) = (format!("fault-hc-{tag}"), format!("fault-agents-{tag}"));
        let mut objects = capi_agent::api::crd_objects().unwrap();
        objects.extend(parse_manifests("foreign", FOREIGN_CRDS).unwrap());
        for ns in [&namespace, &agents] {
            objects.push(object(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            ));
        }
        support::crds::apply_and_wait_served(&*kube, "fault-test", objects).await;
        let dir = kcp_testbed::real::credentials().unwrap().dir.clone();
        let kubeconfig =
            kcp_testbed::kubeconfig::write_file(&dir, &format!("fault-agent-{tag}"), &shared.admin)
                .unwrap();
        let batch = Machines {
            kube,
            namespace,
            agents,
            kubeconfig,
            names: (0..machines).map(|i| format!("m{i:02}")).collect(),
            deleted,
            deleting: std::sync::Mutex::new(BTreeSet::new()),
        };
        batch.hosted_cluster().await;
        for i in 0..machines {
            batch.agent(&format!("host-{i:02}")).await;
        }
        batch
    }

    async fn create(&self, value: Value) -> DynamicObject {
        self.kube.create(&object(value)).await.unwrap()
    }

    /// Cluster `hc` with a HostedControlPlane and its Secrets, and AgentCluster `hc` owned by
    /// it, as HyperShift and Cluster API leave them.
    async fn hosted_cluster(&self) {
        let ns = &self.namespace;
        support::hosted::hosted_control_plane(&*self.kube, ns).await;
        let cluster = self.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "hc", "namespace": ns},
            "spec": {
                "controlPlaneRef": {"apiGroup": "hypershift.openshift.io", "kind": "HostedControlPlane", "name": "hc"},
                "infrastructureRef": {"apiGroup": "capi-provider.agent-install.openshift.io", "kind": "AgentCluster", "name": "hc"}}})).await;
        self.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentCluster",
            "metadata": {"name": "hc", "namespace": ns, "ownerReferences": [owner(&cluster)]},
            "spec": {"controlPlaneEndpoint": {"host": "api.hc.example.com", "port": 6443},
                     "ignitionEndpoint": {"url": "https://ignition.example.com/ignition"}}})).await;
    }

    /// An approved, validated, connected, unbound Agent.
    async fn agent(&self, name: &str) {
        support::hosted::unbound_agent(&*self.kube, &self.agents, name).await;
    }

    /// Machine `name` with the bootstrap Secret, and AgentMachine `name` owned by it, as
    /// Cluster API makes them.
    async fn machine(&self, name: &str) {
        let ns = &self.namespace;
        let machine = self.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": "hc"},
                         "finalizers": ["machine.cluster.x-k8s.io"]},
            "spec": {"clusterName": "hc", "bootstrap": {"dataSecretName": "user-data"}}})).await;
        self.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner(&machine)],
                         "labels": {"cluster.x-k8s.io/cluster-name": "hc"}},
            "spec": {}})).await;
    }

    /// [`Machines::delete`], once per Machine.
    async fn delete_once(&self, name: &str) {
        let first = self
            .deleting
            .lock()
            .map(|mut d| d.insert(name.to_string()))
            .unwrap_or(false);
        if first {
            self.delete(name).await;
        }
    }

    /// Cluster API's part of a Machine deletion with no pre-terminate hook: the Machine goes,
    /// then its AgentMachine is deleted (and waits for its finalizer).
    async fn delete(&self, name: &str) {
        let at = ObjectRef::namespaced(machine(), &self.namespace, name);
        self.kube
            .patch(
                &at,
                Subresource::Main,
                &ObjectPatch::Merge(json!({"metadata": {"finalizers": null}})),
                &PatchOptions::default(),
            )
            .await
            .unwrap();
        self.kube.delete(&at, &Default::default()).await.unwrap();
        let at = ObjectRef::namespaced(agent_machine(), &self.namespace, name);
        self.kube.delete(&at, &Default::default()).await.unwrap();
    }

    async fn list(&self, kind: &GroupVersionKind, ns: &str) -> Result<Vec<DynamicObject>, String> {
        self.kube
            .list(kind, Some(ns), &ListOptions::default())
            .await
            .map(|l| l.items)
            .map_err(|e| e.to_string())
    }

    /// AgentMachine -> the Agent its status names.
    async fn bindings(&self) -> Result<BTreeMap<String, Option<String>>, String> {
        Ok(self
            .list(&agent_machine(), &self.namespace)
            .await?
            .into_iter()
            .map(|am| {
                let name = am.metadata.name.clone().unwrap_or_default();
                let bound = am.data["status"]["agentRef"]["name"]
                    .as_str()
                    .map(String::from);
                (name, bound)
            })
            .collect())
    }
}

#[async_trait]
impl FaultBatch for Machines {
    fn system(&self) -> &'static str {
        "capi-agent"
    }

    fn command(&self, _index: usize, leader_election: bool) -> (String, Vec<String>) {
        let args = vec![
            format!("--kubeconfig={}", self.kubeconfig.display()),
            format!("--namespace={}", self.namespace),
            format!("--agent-namespace={}", self.agents),
            format!("--enable-leader-election={leader_election}"),
            format!("--leader-election-namespace={}", self.namespace),
            "--leader-election-lease-duration=5".to_string(),
            "--leader-election-renew-grace=2".to_string(),
            format!("--health-address=127.0.0.1:{}", free_port()),
            format!("--metrics-address=127.0.0.1:{}", free_port()),
        ];
        (PROVIDER.to_string(), args)
    }

    fn lease(&self) -> (Arc<dyn ObjectClient>, String, String) {
        (self.kube.clone(), self.namespace.clone(), LEASE.into())
    }

    fn lease_duration(&self) -> Duration {
        Duration::from_secs(5)
    }

    /// Every Machine; the first `deleted` are deleted again by [`FaultBatch::check`] once
    /// bound, so that deletions happen while the faults do.
    async fn submit(&self) {
        for name in &self.names {
            self.machine(name).await;
        }
    }

    async fn check(&self) -> Result<Vec<(&'static str, u64)>, String> {
        let bindings = self.bindings().await?;
        let agents = self.list(&agent(), &self.agents).await?;
        let mut waiting = Vec::new();
        // Two AgentMachines may name one Agent only for a moment (a status not yet corrected
        // after a refused claim); the Agent's own label says which one holds it.
        let mut held: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (machine, agent) in &bindings {
            if let Some(agent) = agent {
                held.entry(agent).or_default().push(machine);
            }
        }
        for (agent, machines) in held.iter().filter(|(_, m)| m.len() > 1) {
            waiting.push(format!("Agent {agent} named by {machines:?}"));
        }
        for name in self.names[..self.deleted].iter() {
            if bindings.get(name).is_some_and(Option::is_some) {
                self.delete_once(name).await;
            }
        }
        for name in &self.names[..self.deleted] {
            if bindings.contains_key(name) {
                waiting.push(format!("{name} not deleted and released yet"));
            }
        }
        let mut bound = 0u64;
        for name in &self.names[self.deleted..] {
            match bindings.get(name) {
                Some(Some(agent)) => {
                    let back = agents
                        .iter()
                        .find(|a| a.metadata.name.as_deref() == Some(agent.as_str()))
                        .and_then(|a| a.metadata.labels.as_ref()?.get(AGENT_MACHINE_REF_LABEL));
                    if back == Some(name) {
                        bound += 1;
                    } else {
                        waiting.push(format!("{agent} does not point back at {name}"));
                    }
                }
                _ => waiting.push(format!("{name} unbound")),
            }
        }
        let mut unbound = 0u64;
        for agent in &agents {
            let label = agent
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(AGENT_MACHINE_REF_LABEL));
            match label {
                None if agent.data["spec"]["clusterDeploymentName"].is_null() => unbound += 1,
                None => waiting.push(format!(
                    "{:?} keeps its ClusterDeployment without a Machine",
                    agent.metadata.name
                )),
                Some(machine) if !bindings.contains_key(machine) => waiting.push(format!(
                    "{:?} still bound to the deleted {machine}",
                    agent.metadata.name
                )),
                Some(_) => {}
            }
        }
        if !waiting.is_empty() {
            return Err(waiting.join(", "));
        }
        Ok(vec![
            ("Machines bound once", bound),
            ("deleted and released", self.deleted as u64),
            ("Agents unbound again", unbound),
        ])
    }

    async fn restart_servers(&self) -> Duration {
        restart_kube().await
    }

    fn within(&self) -> Duration {
        Duration::from_secs(if support::chaos::long_run() { 600 } else { 180 })
    }
}

fn assert_converged(batch: &Machines, counts: &[(&'static str, u64)]) {
    let kept = (batch.names.len() - batch.deleted) as u64;
    assert_eq!(counts[0].1, kept);
    assert_eq!(counts[2].1, batch.deleted as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_points_the_provider_binds_each_agent_once_and_releases_the_deleted() {
    let _serial = SERIAL.lock().await;
    let batch = Machines::prepare(size(8, 20), size(3, 10)).await;
    let report = run_with_binary_kills(&batch, 3).await;
    assert_converged(&batch, &report.counts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_kube_apiserver_killed_under_it_the_provider_binds_once_and_releases_the_deleted() {
    let _serial = SERIAL.lock().await;
    let batch = Machines::prepare(size(8, 20), size(3, 10)).await;
    let report = run_with_server_restarts(&batch, 1).await;
    assert_converged(&batch, &report.counts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_leader_killed_the_standby_binds_once_and_releases_the_deleted() {
    let _serial = SERIAL.lock().await;
    let batch = Machines::prepare(size(8, 20), size(3, 10)).await;
    let report = run_with_leader_kill(&batch).await;
    assert_converged(&batch, &report.counts);
}
