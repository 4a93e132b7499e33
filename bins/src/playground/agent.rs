//! The capi-agent section: the Cluster API provider for Agents against the `kube` server (the
//! management cluster), with a third kcp-sim server as the hosted cluster's workload cluster.
//!
//! Nothing else of the Agent platform runs in the playground, so small stand-ins play the other
//! controllers, each doing only what the provider reads:
//! - HyperShift: the HostedControlPlane's status and the `admin-kubeconfig` Secret;
//! - CAPI core: owner references from `Cluster`/`Machine.spec.infrastructureRef`,
//!   `Machine.spec.providerID`, and Machine deletion (wait at the pre-terminate hook, then delete
//!   the AgentMachine and drop the Machine's finalizer);
//! - assisted-service: discovery status and inventory of every Agent, a bound Agent installed
//!   and its Node registered in the workload cluster, an unbound Agent back to discovery.
//!
//! The stand-ins write their objects as merge patches of plain JSON: they simulate foreign
//! controllers and are not part of the provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use capi_agent::api::{AgentMachine, PRE_TERMINATE_HOOK};
use capi_agent::controller::{Options, run};
use capi_agent::foreign::Agent;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{
    DeleteOptions, ListOptions, ObjectClient, ObjectClientExt, ObjectPatch, ObjectRef,
    PatchOptions, Subresource, parse_manifests,
};
use kcp_sim::{Config, Server, SimClient};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::{
    Playground, PlaygroundError, Running, Section, SectionStatus, apply_objects, apply_yaml,
};

const FOREIGN_CRDS: &str = include_str!("../../../examples/playground/agent/00-foreign-crds.yaml");
const CLUSTER: &str = include_str!("../../../examples/playground/agent/01-cluster.yaml");
const AGENTS: &str = include_str!("../../../examples/playground/agent/02-agents.yaml");
const MACHINES: &str = include_str!("../../../examples/playground/agent/03-machines.yaml");
const NS: &str = "clusters-demo";
const INSTALLED: &str = "added-to-existing-cluster";

/// The running provider, the workload cluster and the stand-ins.
#[derive(Default)]
pub struct AgentSection {
    provider: Option<Running<capi_agent::Error>>,
    workload: Option<Arc<Server>>,
    standins: Option<JoinHandle<()>>,
    synced: Arc<AtomicBool>,
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

fn machine_gvk() -> GroupVersionKind {
    gvk("cluster.x-k8s.io", "v1beta2", "Machine")
}

fn failed(context: &str) -> impl FnOnce(kcp_core::Error) -> PlaygroundError + '_ {
    move |source| PlaygroundError::Core {
        context: context.to_string(),
        source,
    }
}

fn section_error(message: String) -> PlaygroundError {
    PlaygroundError::Section {
        section: "agent",
        message,
    }
}

#[async_trait]
impl Section for AgentSection {
    fn name(&self) -> &'static str {
        "agent"
    }

    async fn start(&mut self, playground: &Playground) -> Result<(), PlaygroundError> {
        let kube = playground.kube.object_client("")?;
        let mut crds = capi_agent::api::crd_objects()
            .map_err(|e| section_error(format!("the capi-agent CRDs: {e}")))?;
        crds.extend(
            parse_manifests("00-foreign-crds.yaml", FOREIGN_CRDS)
                .map_err(failed("00-foreign-crds.yaml"))?,
        );
        apply_objects(kube.as_ref(), "the capi-agent and foreign CRDs", crds).await?;
        let workload = Arc::new(Server::start(Config::default()).await?);
        apply_yaml(kube.as_ref(), "01-cluster.yaml", CLUSTER).await?;
        hypershift(kube.as_ref(), &workload).await?;
        let mut options = Options::new(playground.kube.client("")?);
        options.ready = Some(self.synced.clone());
        self.provider = Some(Running::spawn(|shutdown| run(options, shutdown)));
        println!(
            "capi-provider-agent running against kube; workload cluster at {}",
            workload.url()
        );
        self.standins = Some(tokio::spawn(standins(
            kube.clone(),
            workload.object_client(""),
        )));
        self.workload = Some(workload);
        apply_yaml(kube.as_ref(), "02-agents.yaml", AGENTS).await?;
        apply_yaml(kube.as_ref(), "03-machines.yaml", MACHINES).await
    }

    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError> {
        if self.provider.as_ref().is_some_and(Running::is_finished) {
            return Err(section_error("the provider stopped early".into()));
        }
        let kube = playground.kube.object_client("")?;
        let agents: Vec<Agent> = kube
            .list_typed(Some("agents"), &ListOptions::default())
            .await
            .map_err(failed("listing Agents"))?;
        let machines: Vec<AgentMachine> = kube
            .list_typed(Some(NS), &ListOptions::default())
            .await
            .map_err(failed("listing AgentMachines"))?;
        let nodes = match &self.workload {
            Some(w) => node_ids(&w.object_client("")).await?,
            None => Vec::new(),
        };
        let converged = !machines.is_empty()
            && machines
                .iter()
                .all(|m| m.status.as_ref().is_some_and(|s| s.ready))
            && machines.iter().all(|m| {
                nodes
                    .iter()
                    .any(|(_, id)| id.as_deref() == m.spec.provider_id.as_deref())
            });
        Ok(SectionStatus {
            lines: table(
                &agents,
                &machines,
                &nodes,
                self.synced.load(Ordering::SeqCst),
            ),
            converged,
        })
    }

    async fn summary(&self, playground: &Playground) -> Result<Vec<String>, PlaygroundError> {
        let kc = playground.kubeconfig.display();
        let mut lines = vec!["what the provider did: each Machine bound an Agent, the Agent was installed and its Node got the Machine's providerID".to_string()];
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube get agents -n agents -L agentMachineRef"
        ));
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube get agentmachines -n {NS} -o yaml"
        ));
        lines.push(format!("kubectl --kubeconfig {kc} --context kube get clusterdeployments,agentclusterinstalls -n {NS}"));
        lines.push(format!("kubectl --kubeconfig {kc} --context kube delete machine -n {NS} workers-2 --wait=false   # its Agent is unbound"));
        if let Some(w) = &self.workload {
            lines.push(format!("kubectl --server {} get nodes -o custom-columns=NAME:.metadata.name,PROVIDERID:.spec.providerID", w.url()));
        }
        Ok(lines)
    }

    async fn stop(&mut self) {
        if let Some(standins) = self.standins.take() {
            standins.abort();
        }
        if let Some(provider) = self.provider.take() {
            provider.stop().await;
        }
        self.workload = None;
    }
}

/// The live table: Agents with their state and binding, AgentMachines with their Agent,
/// readiness and the Node's providerID.
fn table(
    agents: &[Agent],
    machines: &[AgentMachine],
    nodes: &[(String, Option<String>)],
    synced: bool,
) -> Vec<String> {
    let mut lines = vec![
        format!(
            "capi-provider-agent {}",
            if synced { "synced" } else { "starting" }
        ),
        format!("{:<18} {:<30} {:<12}", "AGENT", "STATE", "BOUND TO"),
    ];
    for a in agents {
        let state = a
            .status
            .as_ref()
            .map(|s| s.debug_info.state.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("-");
        lines.push(format!(
            "{:<18} {:<30} {:<12}",
            a.metadata.name.as_deref().unwrap_or(""),
            state,
            a.label("agentMachineRef").unwrap_or("-")
        ));
    }
    lines.push(format!(
        "{:<12} {:<18} {:<6} {:<10} NODE PROVIDERID",
        "MACHINE", "AGENT", "READY", "NODE"
    ));
    for m in machines {
        let status = m.status.clone().unwrap_or_default();
        let node = status
            .addresses
            .iter()
            .find(|a| a.type_ == capi_agent::api::MachineAddressType::InternalDns)
            .map(|a| a.address.clone());
        let id = node
            .as_ref()
            .and_then(|n| nodes.iter().find(|(name, _)| name == n))
            .and_then(|(_, id)| id.clone());
        lines.push(format!(
            "{:<12} {:<18} {:<6} {:<10} {}",
            m.metadata.name.as_deref().unwrap_or(""),
            status
                .agent_ref
                .map(|r| r.name)
                .unwrap_or_else(|| "-".into()),
            status.ready,
            node.unwrap_or_else(|| "-".into()),
            id.unwrap_or_else(|| "-".into()),
        ));
    }
    lines
}

async fn node_ids(workload: &SimClient) -> Result<Vec<(String, Option<String>)>, PlaygroundError> {
    let nodes: Vec<k8s_openapi::api::core::v1::Node> = workload
        .list_typed(None, &ListOptions::default())
        .await
        .map_err(failed("listing Nodes"))?;
    Ok(nodes
        .into_iter()
        .map(|n| {
            (
                n.metadata.name.unwrap_or_default(),
                n.spec.and_then(|s| s.provider_id),
            )
        })
        .collect())
}

async fn merge(
    client: &dyn ObjectClient,
    target: &ObjectRef,
    subresource: Subresource,
    patch: Value,
) -> Result<DynamicObject, kcp_core::Error> {
    client
        .patch(
            target,
            subresource,
            &ObjectPatch::Merge(patch),
            &PatchOptions::default(),
        )
        .await
}

/// HyperShift's part: the HostedControlPlane's status and the workload cluster's kubeconfig.
async fn hypershift(kube: &dyn ObjectClient, workload: &Server) -> Result<(), PlaygroundError> {
    use base64::Engine as _;
    let hcp = ObjectRef::namespaced(
        gvk("hypershift.openshift.io", "v1beta1", "HostedControlPlane"),
        NS,
        "demo",
    );
    merge(
        kube,
        &hcp,
        Subresource::Status,
        json!({"status": {"kubeConfig": {"name": "admin-kubeconfig", "key": "kubeconfig"}}}),
    )
    .await
    .map_err(failed("the HostedControlPlane status"))?;
    let kubeconfig = base64::engine::general_purpose::STANDARD.encode(workload.kubeconfig(&[]));
    let secret: DynamicObject = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "admin-kubeconfig", "namespace": NS}, "data": {"kubeconfig": kubeconfig}}))
        .map_err(|e| section_error(format!("the admin-kubeconfig Secret: {e}")))?;
    kube.create(&secret)
        .await
        .map_err(failed("the admin-kubeconfig Secret"))?;
    Ok(())
}

/// The CAPI and assisted-service stand-ins, every 200 ms until aborted.
async fn standins(kube: Arc<dyn ObjectClient>, workload: SimClient) {
    loop {
        if let Err(err) = capi(kube.as_ref()).await {
            tracing::debug!(error = %err, "CAPI stand-in");
        }
        if let Err(err) = assisted(kube.as_ref(), &workload).await {
            tracing::debug!(error = %err, "assisted-service stand-in");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn owner(obj: &DynamicObject) -> Value {
    let types = obj.types.clone().unwrap_or_default();
    json!({"apiVersion": types.api_version, "kind": types.kind, "name": obj.metadata.name, "uid": obj.metadata.uid})
}

/// CAPI core's part: owner references, the providerID copy, and Machine deletion.
async fn capi(kube: &dyn ObjectClient) -> Result<(), kcp_core::Error> {
    let cluster_ref =
        ObjectRef::namespaced(gvk("cluster.x-k8s.io", "v1beta2", "Cluster"), NS, "demo");
    let ac_ref = ObjectRef::namespaced(
        gvk(capi_agent::api::GROUP, "v1beta1", "AgentCluster"),
        NS,
        "demo",
    );
    if let (Some(cluster), Some(ac)) = (kube.get(&cluster_ref).await?, kube.get(&ac_ref).await?)
        && ac.metadata.owner_references.is_none()
    {
        merge(
            kube,
            &ac_ref,
            Subresource::Main,
            json!({"metadata": {"ownerReferences": [owner(&cluster)]}}),
        )
        .await?;
    }
    for machine in kube
        .list(&machine_gvk(), Some(NS), &ListOptions::default())
        .await?
        .items
    {
        machine_step(kube, &machine).await?;
    }
    Ok(())
}

async fn machine_step(
    kube: &dyn ObjectClient,
    machine: &DynamicObject,
) -> Result<(), kcp_core::Error> {
    let name = machine.metadata.name.clone().unwrap_or_default();
    let machine_ref = ObjectRef::namespaced(machine_gvk(), NS, &name);
    let am_name = machine.data["spec"]["infrastructureRef"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let am_ref = ObjectRef::namespaced(
        gvk(capi_agent::api::GROUP, "v1beta1", "AgentMachine"),
        NS,
        &am_name,
    );
    let am = kube.get(&am_ref).await?;
    if machine.metadata.deletion_timestamp.is_some() {
        let hooked = machine
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(PRE_TERMINATE_HOOK));
        if hooked {
            let deleting = json!({"status": {"conditions": [{"type": "Deleting", "status": "True",
                "reason": "WaitingForPreTerminateHook", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
            merge(kube, &machine_ref, Subresource::Status, deleting).await?;
        } else if am.is_some() {
            kube.delete(&am_ref, &DeleteOptions::default()).await?;
        } else {
            merge(
                kube,
                &machine_ref,
                Subresource::Main,
                json!({"metadata": {"finalizers": null}}),
            )
            .await?;
        }
        return Ok(());
    }
    let Some(am) = am else { return Ok(()) };
    if am.metadata.owner_references.is_none() {
        merge(
            kube,
            &am_ref,
            Subresource::Main,
            json!({"metadata": {"ownerReferences": [owner(machine)]}}),
        )
        .await?;
    }
    let provider_id = am.data["spec"]["providerID"].clone();
    if provider_id.is_string() && machine.data["spec"]["providerID"] != provider_id {
        merge(
            kube,
            &machine_ref,
            Subresource::Main,
            json!({"spec": {"providerID": provider_id}}),
        )
        .await?;
    }
    Ok(())
}

fn condition(type_: &str, status: bool) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": "PlaygroundStandIn"})
}

/// assisted-service's part: discovery, installation (with the Node registering), and the
/// return to discovery after an unbind.
async fn assisted(kube: &dyn ObjectClient, workload: &SimClient) -> Result<(), kcp_core::Error> {
    let agents: Vec<Agent> = kube
        .list_typed(Some("agents"), &ListOptions::default())
        .await?;
    for agent in agents {
        let name = agent.metadata.name.clone().unwrap_or_default();
        let target = ObjectRef::namespaced(
            gvk("agent-install.openshift.io", "v1beta1", "Agent"),
            "agents",
            &name,
        );
        let hostname = agent.spec.hostname.clone();
        let bound = agent.spec.cluster_deployment_name.is_some();
        let state = agent.state().to_owned();
        let next = match (bound, state.as_str()) {
            (true, INSTALLED) => continue,
            (true, _) => {
                register_node(workload, &hostname).await?;
                INSTALLED
            }
            (false, INSTALLED) => "unbinding-pending-user-action",
            (false, "known-unbound") => continue,
            // A host waiting for the user is rebooted into discovery at once here.
            (false, _) => "known-unbound",
        };
        let installed = next == INSTALLED;
        let status = json!({"status": {
            "conditions": [condition("Validated", true), condition("Connected", true), condition("Bound", installed),
                condition("SpecSynced", true), condition("RequirementsMet", true), condition("Installed", installed)],
            "inventory": {"hostname": hostname, "cpu": {"count": 8}, "memory": {"physicalBytes": 34359738368_i64},
                "interfaces": [{"hasCarrier": true, "ipV4Addresses": [format!("192.168.122.{}/24", 10 + name.len())], "ipV6Addresses": []}]},
            "debugInfo": {"state": next}}});
        merge(kube, &target, Subresource::Status, status).await?;
    }
    Ok(())
}

async fn register_node(workload: &SimClient, hostname: &str) -> Result<(), kcp_core::Error> {
    let node: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": hostname}, "spec": {}}),
    )
    .map_err(|e| kcp_core::Error::Config(format!("a Node for {hostname}: {e}")))?;
    match workload.create(&node).await {
        Err(err) if err.is_already_exists() => Ok(()),
        other => other.map(|_| ()),
    }
}
