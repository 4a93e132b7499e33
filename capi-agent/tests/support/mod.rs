//! What the capi-agent behaviour tests share: a kcp-sim management cluster with the provider's
//! and the foreign CRDs, and builders for the HyperShift-shaped world (Cluster,
//! HostedControlPlane, AgentCluster, Machines with bootstrap data, AgentMachines, Agents).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use capi_agent::api::{AgentCluster, AgentMachine};
use capi_agent::context::{Context, ProviderConfig};
use capi_agent::foreign::Agent;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{
    ObjectClient, ObjectClientExt, ObjectPatch, ObjectRef, PatchOptions, Subresource,
    parse_manifests,
};
use kcp_sim::{Config, Server, SimClient};
use serde_json::{Value, json};

/// The namespace of the hosted control plane (AgentCluster, AgentMachines, Machines).
pub const NS: &str = "clusters-hc";
/// The InfraEnv namespace, where Agents live.
pub const AGENTS: &str = "agents";
/// The foreign CRDs.
pub const FOREIGN_CRDS: &str =
    include_str!("../../../examples/playground/agent/00-foreign-crds.yaml");
/// An Ignition config as HyperShift writes it.
pub const USER_DATA: &str = r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://ignition.example.com/ignition","httpHeaders":[{"name":"Authorization","value":"Bearer s3cr3t"},{"name":"NodePool","value":"clusters/pool"}]}]}}}"#;

/// A management cluster with every CRD installed and the two namespaces.
pub struct World {
    pub sim: Server,
    pub client: SimClient,
}

impl World {
    pub async fn start() -> World {
        let sim = Server::start(Config::default()).await.unwrap();
        let client = sim.object_client("");
        let mut objects = capi_agent::api::crd_objects().unwrap();
        objects.extend(parse_manifests("foreign-crds.yaml", FOREIGN_CRDS).unwrap());
        for ns in [NS, AGENTS] {
            objects.push(dynamic(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            ));
        }
        apply(&client, objects).await;
        World { sim, client }
    }

    pub fn context(&self) -> Context {
        self.context_with(ProviderConfig::default())
    }

    pub fn context_with(&self, config: ProviderConfig) -> Context {
        Context::new(Arc::new(self.client.clone()), config)
    }

    pub async fn create(&self, value: Value) -> DynamicObject {
        self.client.create(&dynamic(value)).await.unwrap()
    }

    pub async fn patch(&self, target: &ObjectRef, subresource: Subresource, patch: Value) {
        self.client
            .patch(
                target,
                subresource,
                &ObjectPatch::Merge(patch),
                &PatchOptions::default(),
            )
            .await
            .unwrap();
    }

    pub async fn get(&self, target: &ObjectRef) -> Option<DynamicObject> {
        self.client.get(target).await.unwrap()
    }

    /// Cluster `hc` (v1beta2) with a HostedControlPlane and its Secrets, and AgentCluster `hc`
    /// owned by it, with an endpoint.
    pub async fn hosted_cluster(&self) -> DynamicObject {
        for name in ["pull-secret", "admin-kubeconfig", "kubeadmin-password"] {
            self.create(json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": NS}, "data": {"x": "eA=="}}))
                .await;
        }
        let hcp = self.create(json!({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedControlPlane",
            "metadata": {"name": "hc", "namespace": NS},
            "spec": {"dns": {"baseDomain": "example.com"}, "pullSecret": {"name": "pull-secret"}}})).await;
        self.patch(
            &ObjectRef::from_object(&hcp).unwrap(),
            Subresource::Status,
            json!({"status": {
            "kubeConfig": {"name": "admin-kubeconfig", "key": "kubeconfig"},
            "kubeadminPassword": {"name": "kubeadmin-password"}}}),
        )
        .await;
        let cluster = self.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "hc", "namespace": NS},
            "spec": {
                "controlPlaneRef": {"apiGroup": "hypershift.openshift.io", "kind": "HostedControlPlane", "name": "hc"},
                "infrastructureRef": {"apiGroup": "capi-provider.agent-install.openshift.io", "kind": "AgentCluster", "name": "hc"}}})).await;
        self.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentCluster",
            "metadata": {"name": "hc", "namespace": NS, "ownerReferences": [owner(&cluster)]},
            "spec": {"controlPlaneEndpoint": {"host": "api.hc.example.com", "port": 6443},
                     "ignitionEndpoint": {"url": "https://ignition.example.com/ignition"}}})).await;
        cluster
    }

    /// Bootstrap Secret `user-data`, Machine `name` using it, AgentMachine `name` owned by it.
    pub async fn machine(&self, name: &str, selector: Option<Value>) -> DynamicObject {
        if self.get(&secret_ref("user-data")).await.is_none() {
            self.create(json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "user-data", "namespace": NS},
                "data": {"value": base64(USER_DATA)}}))
                .await;
        }
        let machine = self.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "hc"},
                         "finalizers": ["machine.cluster.x-k8s.io"]},
            "spec": {"clusterName": "hc", "bootstrap": {"dataSecretName": "user-data"}}})).await;
        let mut spec = json!({});
        if let Some(s) = selector {
            spec["agentLabelSelector"] = s;
        }
        // Labelled with its Cluster, as Cluster API labels the infrastructure machines it owns.
        self.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
            "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner(&machine)],
                         "labels": {"cluster.x-k8s.io/cluster-name": "hc"}},
            "spec": spec})).await;
        machine
    }

    /// An approved, validated, connected, unbound Agent.
    pub async fn agent(&self, name: &str, labels: Value) -> DynamicObject {
        let agent = self
            .create(
                json!({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name, "namespace": AGENTS, "labels": labels},
            "spec": {"approved": true, "role": "worker", "installation_disk_id": "/dev/sda"}}),
            )
            .await;
        self.patch(&ObjectRef::from_object(&agent).unwrap(), Subresource::Status, json!({"status": {
            "conditions": [
                {"type": "Validated", "status": "True", "reason": "ValidationsPassing"},
                {"type": "Connected", "status": "True", "reason": "AgentIsConnected"},
                {"type": "Bound", "status": "False", "reason": "Unbound"},
                {"type": "SpecSynced", "status": "True", "reason": "SyncOK"},
                {"type": "RequirementsMet", "status": "True", "reason": "AgentIsReady"},
                {"type": "Installed", "status": "False", "reason": "InstallationNotStarted", "message": "not yet"}],
            "inventory": {"hostname": format!("{name}.local"),
                "interfaces": [{"hasCarrier": true, "ipV4Addresses": ["192.168.1.10/24"], "ipV6Addresses": []}]},
            "debugInfo": {"state": "known-unbound"}}})).await;
        self.get(&agent_ref(name)).await.unwrap()
    }

    pub async fn agent_machine(&self, name: &str) -> AgentMachine {
        self.client
            .get_typed(Some(NS), name)
            .await
            .unwrap()
            .expect("AgentMachine exists")
    }

    pub async fn try_agent_machine(&self, name: &str) -> Option<AgentMachine> {
        self.client.get_typed(Some(NS), name).await.unwrap()
    }

    pub async fn agent_cluster(&self, name: &str) -> AgentCluster {
        self.client
            .get_typed(Some(NS), name)
            .await
            .unwrap()
            .expect("AgentCluster exists")
    }

    pub async fn typed_agent(&self, name: &str) -> Agent {
        self.client
            .get_typed(Some(AGENTS), name)
            .await
            .unwrap()
            .expect("Agent exists")
    }

    pub async fn agents(&self) -> Vec<Agent> {
        self.client
            .list_typed(Some(AGENTS), &Default::default())
            .await
            .unwrap()
    }

    /// Marks the Machine deleted (it keeps its own finalizer) and parked at the hook.
    pub async fn delete_machine_at_hook(&self, name: &str) {
        self.client
            .delete(&machine_ref(name), &Default::default())
            .await
            .unwrap();
        self.patch(
            &machine_ref(name),
            Subresource::Status,
            json!({"status": {"conditions": [
            {"type": "Deleting", "status": "True", "reason": "WaitingForPreTerminateHook",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
        )
        .await;
    }
}

pub fn dynamic(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

pub fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

pub fn owner(obj: &DynamicObject) -> Value {
    let types = obj.types.clone().unwrap();
    json!({"apiVersion": types.api_version, "kind": types.kind,
           "name": obj.metadata.name, "uid": obj.metadata.uid})
}

pub fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

pub fn machine_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(gvk("cluster.x-k8s.io", "v1beta2", "Machine"), NS, name)
}

pub fn agent_machine_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(
        gvk(
            "capi-provider.agent-install.openshift.io",
            "v1beta1",
            "AgentMachine",
        ),
        NS,
        name,
    )
}

pub fn agent_cluster_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(
        gvk(
            "capi-provider.agent-install.openshift.io",
            "v1beta1",
            "AgentCluster",
        ),
        NS,
        name,
    )
}

pub fn agent_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(
        gvk("agent-install.openshift.io", "v1beta1", "Agent"),
        AGENTS,
        name,
    )
}

pub fn secret_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(gvk("", "v1", "Secret"), NS, name)
}

pub fn cd_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(
        gvk("hive.openshift.io", "v1", "ClusterDeployment"),
        NS,
        name,
    )
}

pub fn aci_ref(name: &str) -> ObjectRef {
    ObjectRef::namespaced(
        gvk(
            "extensions.hive.openshift.io",
            "v1beta1",
            "AgentClusterInstall",
        ),
        NS,
        name,
    )
}

pub async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

/// The condition of `type_` on an AgentMachine: (status, reason).
pub fn condition(am: &AgentMachine, type_: &str) -> Option<(String, String)> {
    am.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// Polls `check` until it holds (real time: for tests of the running controllers).
pub async fn until<F, Fut>(what: &str, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The provider's controllers (`capi_agent::controller::run`) against the world's kcp-sim.
pub struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<capi_agent::Result<()>>,
}

pub fn start(world: &World) -> Running {
    start_with(world, |_| {})
}

pub fn start_with(
    world: &World,
    configure: impl FnOnce(&mut capi_agent::controller::Options),
) -> Running {
    let mut options = capi_agent::controller::Options::new(world.sim.client("").unwrap());
    options.concurrency = 4;
    configure(&mut options);
    options.backoff = kcp_core::Backoff::new(Duration::from_millis(20), Duration::from_millis(500));
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(capi_agent::controller::run(options, async move {
        let _ = rx.await;
    }));
    Running { stop, task }
}

impl Running {
    pub async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the controllers drain")
            .unwrap()
            .unwrap();
    }
}
