//! capi-provider-agent under Cluster API's own core controllers (issue 22), on the real
//! kube-apiserver: Cluster API's manager (built from its Go module, v1.11.3) with its own CRDs,
//! conversion and admission webhooks ([`kcp_testbed::cluster_api`]), our provider binary (as
//! its shipped ServiceAccount, bound only by `deploy/capi-provider-agent/rbac.yaml`), and
//! the test playing only what neither is: HyperShift's HostedControlPlane and the assisted
//! installer's Agents (their CRDs stay the stand-ins of `examples/playground/agent`).
//!
//! What Cluster API itself does here, and no test of ours plays any more: it owns and labels
//! the AgentCluster and the AgentMachine, reads their provisioning through the v1beta2
//! contract, copies the control-plane endpoint, the providerID and the addresses, and on a
//! Machine's deletion waits at our pre-terminate hook, then deletes the AgentMachine and lets
//! the Machine go. A v1beta1 Machine is converted by Cluster API's own conversion webhook.
//! Real backend only (Cluster API core has no kcp-sim counterpart); one test at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{KubeObjectClient, ObjectClient, ObjectRef, parse_manifests};
use kcp_testbed::cluster_api::ClusterApi;
use kcp_testbed::process::PeerProcess;
use serde_json::{Value, json};
use tokio::sync::Mutex;

const PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-agent");
const KIND_PROVIDER: &str = env!("CARGO_BIN_EXE_capi-provider-kind");
const FOREIGN_CRDS: &str = include_str!("../../examples/playground/agent/00-foreign-crds.yaml");
const INFRA_GROUP: &str = "capi-provider.agent-install.openshift.io";
const HOOK: &str = capi_agent::api::PRE_TERMINATE_HOOK;

/// One test at a time: they share the manager and the kube-apiserver.
static SERIAL: Mutex<()> = Mutex::const_new(());

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

fn machine_v1beta2() -> GroupVersionKind {
    gvk("cluster.x-k8s.io", "v1beta2", "Machine")
}

fn agent_machine() -> GroupVersionKind {
    gvk(INFRA_GROUP, "v1beta1", "AgentMachine")
}

/// The real servers of this test binary: kube-apiserver, Cluster API's manager, and our
/// provider watching every namespace.
struct Stack {
    admin: kcp_testbed::Endpoint,
    _capi: std::sync::Mutex<ClusterApi>,
    _provider: std::sync::Mutex<PeerProcess>,
}

static STACK: tokio::sync::OnceCell<Stack> = tokio::sync::OnceCell::const_new();

/// The kube-apiserver's admin endpoint (the stack started first).
async fn admin() -> kcp_testbed::Endpoint {
    STACK.get_or_init(start_stack).await.admin.clone()
}

/// The stack, started by the first test that asks, and a client of this test's own (a client
/// lives on the runtime that made it, and each test has its own).
async fn stack() -> Arc<dyn ObjectClient> {
    let stack = STACK.get_or_init(start_stack).await;
    Arc::new(KubeObjectClient::new(stack.admin.client().unwrap()))
}

async fn start_stack() -> Stack {
    let shared = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
        .await
        .unwrap()
        .unwrap();
    let dir = kcp_testbed::real::credentials().unwrap().dir.clone();
    let admin = shared.admin.clone();
    let capi_dir = dir.clone();
    let capi = tokio::task::spawn_blocking(move || ClusterApi::start(&admin, &capi_dir))
        .await
        .unwrap()
        .unwrap();
    let kube: Arc<dyn ObjectClient> =
        Arc::new(KubeObjectClient::new(shared.admin.client().unwrap()));
    let mut objects = capi_agent::api::crd_objects().unwrap();
    objects.extend(capi_kind::api::crd_objects().unwrap());
    objects.extend(foreign_crds());
    support::crds::apply_and_wait_served(&*kube, "capi-core-test", objects).await;
    let kubeconfig = deployed_identity(
        &*kube,
        &shared.admin,
        "capi-provider-agent",
        (
            "cluster-api-provider-agent",
            "cluster-api-provider-agent-controller-manager",
        ),
        &dir.join("capi-core-provider.kubeconfig"),
    )
    .await;
    let port = |_| kcp_testbed::ports::free_port("capi-provider-agent").unwrap();
    let args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        "--agent-namespace=capi-core-agents".to_string(),
        "--enable-leader-election=false".to_string(),
        format!("--health-address=127.0.0.1:{}", port(0)),
        format!("--metrics-address=127.0.0.1:{}", port(1)),
    ];
    let log = dir.join("capi-core-provider.log");
    let provider = PeerProcess::spawn(
        "capi-provider-agent",
        std::path::Path::new(PROVIDER),
        &args,
        &[("RUST_LOG", "info")],
        &log,
    )
    .unwrap();
    Stack {
        admin: shared.admin.clone(),
        _capi: std::sync::Mutex::new(capi),
        _provider: std::sync::Mutex::new(provider),
    }
}

/// The stand-in CRDs of what is neither Cluster API nor ours (Agent, ClusterDeployment,
/// AgentClusterInstall, HostedControlPlane): Cluster API's own Cluster and Machine come from
/// its module. The HostedControlPlane CRD carries the contract label HyperShift's does, so
/// Cluster API can read it as a control plane.
fn foreign_crds() -> Vec<DynamicObject> {
    parse_manifests("foreign", FOREIGN_CRDS)
        .unwrap()
        .into_iter()
        .filter(|crd| {
            !crd.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.ends_with(".cluster.x-k8s.io"))
        })
        .map(|mut crd| {
            if crd.metadata.name.as_deref() == Some("hostedcontrolplanes.hypershift.openshift.io") {
                crd.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert("cluster.x-k8s.io/v1beta1".into(), "v1beta1".into());
            }
            crd
        })
        .collect()
}

/// A hosted cluster's namespace with what HyperShift and the assisted installer leave there.
struct HostedCluster {
    kube: Arc<dyn ObjectClient>,
    ns: String,
}

impl HostedCluster {
    async fn create(&self, value: Value) -> DynamicObject {
        self.kube.create(&object(value)).await.unwrap()
    }

    async fn get(&self, kind: &GroupVersionKind, name: &str) -> Option<DynamicObject> {
        let at = ObjectRef::namespaced(kind.clone(), &self.ns, name);
        self.kube.get(&at).await.unwrap()
    }

    /// Namespace, Secrets, a HostedControlPlane (not initialized: there is no workload cluster
    /// to connect to), Cluster `hc` naming it and AgentCluster `hc`, as a user creates them:
    /// no owner references, no labels; Cluster API adds those.
    async fn prepare(kube: Arc<dyn ObjectClient>) -> HostedCluster {
        let ns = format!("capi-core-{:06x}", fastrand::u32(..0xffffff));
        let hc = HostedCluster { kube, ns };
        let ns = hc.ns.as_str();
        for namespace in [ns, "capi-core-agents"] {
            let created = hc
                .kube
                .create(&object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})))
                .await;
            assert!(
                created.is_ok() || namespace == "capi-core-agents",
                "{created:?}"
            );
        }
        support::hosted::hosted_control_plane(&*hc.kube, ns).await;
        hc.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "hc", "namespace": ns},
            "spec": {
                "controlPlaneRef": {"apiGroup": "hypershift.openshift.io", "kind": "HostedControlPlane", "name": "hc"},
                "infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "AgentCluster", "name": "hc"}}}))
            .await;
        hc.create(
            json!({"apiVersion": format!("{INFRA_GROUP}/v1beta1"), "kind": "AgentCluster",
            "metadata": {"name": "hc", "namespace": ns},
            "spec": {"controlPlaneEndpoint": {"host": "api.hc.example.com", "port": 6443},
                     "ignitionEndpoint": {"url": "https://ignition.example.com/ignition"}}}),
        )
        .await;
        hc
    }

    /// An approved, validated, connected, unbound Agent in the agents' namespace.
    async fn agent(&self, name: &str) {
        support::hosted::unbound_agent(&*self.kube, "capi-core-agents", name).await;
    }

    /// AgentMachine `name` as a MachineSet clones it from its template (no owner, no labels),
    /// and Machine `name` at `version` of Cluster API's API naming it.
    async fn machine(&self, name: &str, version: &str) {
        let ns = &self.ns;
        self.create(
            json!({"apiVersion": format!("{INFRA_GROUP}/v1beta1"), "kind": "AgentMachine",
            "metadata": {"name": name, "namespace": ns}, "spec": {}}),
        )
        .await;
        let spec = match version {
            "v1beta1" => json!({"clusterName": "hc", "bootstrap": {"dataSecretName": "user-data"},
                "infrastructureRef": {"apiVersion": format!("{INFRA_GROUP}/v1beta1"), "kind": "AgentMachine", "name": name, "namespace": ns}}),
            _ => json!({"clusterName": "hc", "bootstrap": {"dataSecretName": "user-data"},
                "infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "AgentMachine", "name": name}}),
        };
        self.create(
            json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "Machine",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}),
        )
        .await;
    }
}

impl HostedCluster {
    /// The assisted installer's part once the provider binds an Agent to AgentMachine
    /// `machine`: it installs the host, so the Agent reports `Installed` and the state of a
    /// host joined to its cluster. Returns the Agent's name.
    async fn install_when_bound(&self, machine: &str) -> String {
        let name = until(
            "an Agent bound to the AgentMachine",
            Duration::from_secs(120),
            || async {
                let am = self
                    .get(&agent_machine(), machine)
                    .await
                    .ok_or("no AgentMachine")?;
                am.data["status"]["agentRef"]["name"]
                    .as_str()
                    .map(String::from)
                    .ok_or_else(|| am.data["status"].to_string())
            },
        )
        .await;
        let agent = gvk("agent-install.openshift.io", "v1beta1", "Agent");
        let at = ObjectRef::namespaced(agent, "capi-core-agents", &name);
        let bound = self.kube.get(&at).await.unwrap().unwrap();
        assert!(
            !bound.data["spec"]["clusterDeploymentName"].is_null(),
            "{}",
            bound.data["spec"]
        );
        support::hosted::set_status(
            &*self.kube,
            &bound,
            json!({
            "conditions": support::hosted::agent_conditions(true),
            "debugInfo": {"state": "added-to-existing-cluster"}}),
        )
        .await;
        name
    }

    /// The assisted installer's part once the provider unbinds a host: it reboots it into
    /// discovery, and the Agent reports an unbound state again. Returns Machine `machine` as
    /// it was when the unbind was seen, before the host came back (the provider holds the
    /// pre-terminate hook until then).
    async fn rediscover_when_unbound(
        &self,
        agent_name: &str,
        machine: &str,
    ) -> Option<DynamicObject> {
        let agent = gvk("agent-install.openshift.io", "v1beta1", "Agent");
        let at = ObjectRef::namespaced(agent, "capi-core-agents", agent_name);
        let unbound = until("the Agent unbound", Duration::from_secs(120), || async {
            let a = self.kube.get(&at).await.unwrap().ok_or("no Agent")?;
            a.data["spec"]["clusterDeploymentName"]
                .is_null()
                .then_some(a)
                .ok_or_else(|| "still bound".to_string())
        })
        .await;
        let machine = self.get(&machine_v1beta2(), machine).await;
        support::hosted::set_status(&*self.kube, &unbound, json!({
            "conditions": [
                {"type": "Bound", "status": "False", "reason": "Unbound"},
                {"type": "Installed", "status": "False", "reason": "InstallationNotStarted", "message": "not yet"}],
            "debugInfo": {"state": "known-unbound"}})).await;
        machine
    }
}

/// Polls `read` every 250 ms until it returns `Some`, for at most `within`; the panic names
/// `what` and the last value seen.
async fn until<T, F, Fut>(what: &str, within: Duration, mut read: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match read().await {
            Ok(value) => return value,
            Err(last) => assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: not within {within:?}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn owned_by(obj: &DynamicObject, kind: &str, name: &str) -> bool {
    obj.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == kind && o.name == name && o.api_version.starts_with("cluster.x-k8s.io/"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_provisions_the_cluster_from_the_agent_cluster_and_copies_its_endpoint() {
    let _serial = SERIAL.lock().await;
    let kube = stack().await;
    let hc = HostedCluster::prepare(kube.clone()).await;
    let cluster = gvk("cluster.x-k8s.io", "v1beta2", "Cluster");
    let agent_cluster = gvk(INFRA_GROUP, "v1beta1", "AgentCluster");
    until(
        "the AgentCluster owned by its Cluster",
        Duration::from_secs(60),
        || async {
            let ac = hc
                .get(&agent_cluster, "hc")
                .await
                .ok_or("no AgentCluster")?;
            owned_by(&ac, "Cluster", "hc")
                .then_some(())
                .ok_or_else(|| format!("{:?}", ac.metadata.owner_references))
        },
    )
    .await;
    let status = until(
        "the Cluster's infrastructure provisioned",
        Duration::from_secs(120),
        || async {
            let c = hc.get(&cluster, "hc").await.ok_or("no Cluster")?;
            (c.data["status"]["initialization"]["infrastructureProvisioned"] == json!(true))
                .then(|| c.data.clone())
                .ok_or_else(|| c.data["status"].to_string())
        },
    )
    .await;
    assert_eq!(
        status["spec"]["controlPlaneEndpoint"],
        json!({"host": "api.hc.example.com", "port": 6443}),
        "Cluster API copies the AgentCluster's endpoint into the Cluster"
    );
}

/// The Machine as Cluster API reports it once the AgentMachine is provisioned.
async fn provisioned_machine(hc: &HostedCluster, name: &str) -> Value {
    until(
        "the Machine provisioned",
        Duration::from_secs(120),
        || async {
            let m = hc.get(&machine_v1beta2(), name).await.ok_or("no Machine")?;
            (m.data["status"]["initialization"]["infrastructureProvisioned"] == json!(true)
                && m.data["spec"]["providerID"].is_string())
            .then(|| m.data.clone())
            .ok_or_else(|| format!("spec {} status {}", m.data["spec"], m.data["status"]))
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_gets_an_agent_and_cluster_api_copies_its_provider_id_and_addresses() {
    let _serial = SERIAL.lock().await;
    let kube = stack().await;
    let hc = HostedCluster::prepare(kube.clone()).await;
    hc.agent("core-host-a").await;
    hc.machine("worker-a", "v1beta2").await;
    hc.install_when_bound("worker-a").await;
    let machine = provisioned_machine(&hc, "worker-a").await;
    let am = hc.get(&agent_machine(), "worker-a").await.unwrap();
    assert!(
        owned_by(&am, "Machine", "worker-a"),
        "Cluster API owns the AgentMachine: {:?}",
        am.metadata.owner_references
    );
    assert_eq!(
        am.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("cluster.x-k8s.io/cluster-name"))
            .map(String::as_str),
        Some("hc"),
        "Cluster API labels the AgentMachine with its cluster"
    );
    assert_eq!(machine["spec"]["providerID"], am.data["spec"]["providerID"]);
    assert_eq!(
        machine["status"]["addresses"],
        am.data["status"]["addresses"]
    );
    assert_eq!(machine["status"]["phase"], json!("Provisioned"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_machine_waits_at_our_hook_unbinds_the_agent_and_then_the_machine_goes() {
    let _serial = SERIAL.lock().await;
    let kube = stack().await;
    let hc = HostedCluster::prepare(kube.clone()).await;
    hc.agent("core-host-b").await;
    hc.machine("worker-b", "v1beta2").await;
    let host = hc.install_when_bound("worker-b").await;
    provisioned_machine(&hc, "worker-b").await;
    until(
        "our pre-terminate hook on the Machine",
        Duration::from_secs(60),
        || async {
            let m = hc
                .get(&machine_v1beta2(), "worker-b")
                .await
                .ok_or("no Machine")?;
            let annotations = m.metadata.annotations.unwrap_or_default();
            annotations
                .contains_key(HOOK)
                .then_some(())
                .ok_or_else(|| format!("{annotations:?}"))
        },
    )
    .await;
    let agent = gvk("agent-install.openshift.io", "v1beta1", "Agent");
    let at = ObjectRef::namespaced(machine_v1beta2(), &hc.ns, "worker-b");
    kube.delete(&at, &Default::default()).await.unwrap();
    let at_unbind = hc.rediscover_when_unbound(&host, "worker-b").await;
    let at_unbind = at_unbind.expect("Cluster API keeps the Machine while our hook is on it");
    let deleting = at_unbind.data["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Deleting"))
        .cloned();
    assert_eq!(
        deleting.as_ref().map(|c| c["reason"].clone()),
        Some(json!("WaitingForPreTerminateHook")),
        "Cluster API waits at the hook while the host is unbound: {deleting:?}"
    );
    until(
        "the Machine and its AgentMachine gone",
        Duration::from_secs(180),
        || async {
            let machine = hc.get(&machine_v1beta2(), "worker-b").await;
            let am = hc.get(&agent_machine(), "worker-b").await;
            match (machine, am) {
                (None, None) => Ok(()),
                (m, a) => Err(format!(
                    "Machine status {:?}, AgentMachine {:?}",
                    m.map(|m| m.data["status"].clone()),
                    a.map(|a| a.data["status"].clone())
                )),
            }
        },
    )
    .await;
    let host = kube
        .get(&ObjectRef::namespaced(agent, "capi-core-agents", &host))
        .await
        .unwrap()
        .unwrap();
    assert!(
        host.data["spec"]["clusterDeploymentName"].is_null(),
        "the Agent is back in the pool: {}",
        host.data["spec"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta1_machine_is_converted_by_cluster_api_and_provisioned_like_a_v1beta2_one() {
    let _serial = SERIAL.lock().await;
    let kube = stack().await;
    let hc = HostedCluster::prepare(kube.clone()).await;
    hc.agent("core-host-c").await;
    hc.machine("worker-c", "v1beta1").await;
    hc.install_when_bound("worker-c").await;
    let machine = provisioned_machine(&hc, "worker-c").await;
    assert_eq!(
        machine["spec"]["infrastructureRef"],
        json!({"apiGroup": INFRA_GROUP, "kind": "AgentMachine", "name": "worker-c"}),
        "Cluster API's conversion turns the v1beta1 reference into a v1beta2 one"
    );
    let v1beta1 = hc
        .get(&gvk("cluster.x-k8s.io", "v1beta1", "Machine"), "worker-c")
        .await
        .unwrap();
    assert_eq!(v1beta1.data["status"]["phase"], json!("Provisioned"));
    assert_eq!(v1beta1.data["status"]["infrastructureReady"], json!(true));
}

/// A kubeconfig of the ServiceAccount `deploy/<dir>` installs, bound only by that directory's
/// RBAC (applied here as the admin): the providers run under Cluster API as their Deployments
/// run them, so their write paths are proven within the shipped rules.
async fn deployed_identity(
    kube: &dyn ObjectClient,
    admin: &kcp_testbed::Endpoint,
    dir: &str,
    (namespace, account): (&str, &str),
    path: &std::path::Path,
) -> std::path::PathBuf {
    use support::service_account::{apply, deploy_file, kubeconfig};
    apply(kube, "namespace.yaml", &deploy_file(dir, "namespace.yaml")).await;
    apply(kube, "rbac.yaml", &deploy_file(dir, "rbac.yaml")).await;
    kubeconfig(admin, namespace, account, path).await
}

/// capi-provider-kind for the KINDClusters of `ns`, with the stand-in `kind` of `dir`, as the
/// ServiceAccount of `deploy/capi-provider-kind`.
async fn start_kind_provider(
    kube: &dyn ObjectClient,
    admin: &kcp_testbed::Endpoint,
    ns: &str,
    dir: &std::path::Path,
) -> PeerProcess {
    let account = ("capi-kind-system", "capi-kind-manager");
    let path = dir.join("capi-core-kind.kubeconfig");
    let kubeconfig = deployed_identity(kube, admin, "capi-provider-kind", account, &path).await;
    let args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--kind-binary={}", dir.join("kind").display()),
        format!("--namespace={ns}"),
        "--metrics-address=0".to_string(),
        format!(
            "--health-address=127.0.0.1:{}",
            kcp_testbed::ports::free_port("capi-provider-kind").unwrap()
        ),
    ];
    PeerProcess::spawn(
        "capi-provider-kind",
        std::path::Path::new(KIND_PROVIDER),
        &args,
        &[("RUST_LOG", "info")],
        &dir.join("capi-provider-kind.log"),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_provisions_a_kind_cluster_and_connects_to_it_with_our_kubeconfig_secret() {
    let _serial = SERIAL.lock().await;
    let kube = stack().await;
    let admin = admin().await;
    let ns = format!("capi-core-kind-{:06x}", fastrand::u32(..0xffffff));
    kube.create(&object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    ))
    .await
    .unwrap();
    let dir = kcp_testbed::real::credentials().unwrap().dir.join(&ns);
    let _workloads = support::kind_stand_in::install(&dir, &["core-kind".to_string()]).await;
    let _provider = start_kind_provider(&*kube, &admin, &ns, &dir).await;
    let kind_cluster = gvk("infrastructure.cluster.x-k8s.io", "v1alpha1", "KindCluster");
    kube.create(&object(
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "KindCluster",
        "metadata": {"name": "kc", "namespace": ns}, "spec": {"clusterName": "core-kind"}}),
    ))
    .await
    .unwrap();
    kube.create(&object(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "kc", "namespace": ns},
        "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "KindCluster", "name": "kc"}}})))
        .await
        .unwrap();
    let cluster_at =
        ObjectRef::namespaced(gvk("cluster.x-k8s.io", "v1beta2", "Cluster"), &ns, "kc");
    let condition = |c: &DynamicObject, type_: &str| {
        c.data["status"]["conditions"]
            .as_array()
            .and_then(|all| all.iter().find(|x| x["type"] == type_))
            .map(|x| {
                (
                    x["status"].clone(),
                    x["reason"].clone(),
                    x["message"].clone(),
                )
            })
    };
    let cluster = until(
        "Cluster API connected to the kind cluster through the kubeconfig Secret",
        Duration::from_secs(180),
        || async {
            let c = kube.get(&cluster_at).await.unwrap().ok_or("no Cluster")?;
            let probe = condition(&c, "RemoteConnectionProbe");
            (c.data["status"]["initialization"]["infrastructureProvisioned"] == json!(true)
                && probe.as_ref().is_some_and(|p| p.0 == json!("True")))
            .then(|| c.clone())
            .ok_or_else(|| format!("{probe:?}; status {}", c.data["status"]))
        },
    )
    .await;
    let kc = kube
        .get(&ObjectRef::namespaced(kind_cluster, &ns, "kc"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        owned_by(&kc, "Cluster", "kc"),
        "{:?}",
        kc.metadata.owner_references
    );
    assert_eq!(
        cluster.data["spec"]["controlPlaneEndpoint"], kc.data["spec"]["controlPlaneEndpoint"],
        "Cluster API copies the KindCluster's endpoint"
    );
    // What Cluster API waits for next is a control plane, which neither provider makes.
    let available = condition(&cluster, "ControlPlaneAvailable");
    assert!(
        available.as_ref().is_some_and(|a| a.0 != json!("True")),
        "{available:?}"
    );
}
