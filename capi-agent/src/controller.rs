//! Wiring: which watches trigger which reconcile, on `kube::runtime::Controller`.
//!
//! - `agentcluster-controller`: AgentClusters; Clusters whose pause state changed (to the
//!   AgentCluster their `infrastructureRef` names, so an unpause is noticed, see
//!   [`crate::pause_watch`]); polls what it does not watch every 5 s, as upstream.
//! - `agentmachine-controller`: AgentMachines; Machines (to the AgentMachine they own);
//!   Clusters whose pause state changed (to their AgentMachines); Agents
//!   (a bound Agent to its AgentMachine, by label and namespace annotation; a usable free Agent
//!   to the unassigned AgentMachines whose selector it matches, instead of every one).
//!
//! One manager serves every restriction: `--namespace` scopes the AgentCluster, AgentMachine
//! and Machine watches, `--agent-namespace` scopes the Agent watch, `--watch-filter` selects
//! AgentClusters and AgentMachines by the `cluster.x-k8s.io/watch-filter` label (upstream starts
//! a second manager for the Agent namespace).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use kcp_core::runtime::{ErrorPolicy, Harness, drain_controller};
use kcp_core::{Backoff, KubeObjectClient, ObjectClient};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use tokio_util::sync::CancellationToken;

use crate::agent_cache::AgentCache;
use crate::api::{
    AGENT_MACHINE_REF_LABEL, AGENT_MACHINE_REF_NAMESPACE_ANNOTATION, AgentCluster, AgentMachine,
    WATCH_FILTER_LABEL,
};
use crate::cluster::reconcile_agent_cluster;
use crate::context::{Context, ProviderConfig};
use crate::error::{Error, Result};
use crate::foreign::{Agent, capi_gvk};
use crate::machine::reconcile_agent_machine;
use crate::metrics::Metrics;
use crate::nodes::{Workloads, reconcile_node_provider_id};
use crate::pause_watch::{infrastructure_of, machines_of, pause_changes};
use crate::select::{selector_matches, usable};

/// Everything [`run`] needs.
pub struct Options {
    /// The management cluster.
    pub client: kube::Client,
    /// Provider settings (namespaces, timeouts, preferences).
    pub config: ProviderConfig,
    /// `--watch-filter`: only objects labelled `cluster.x-k8s.io/watch-filter=<value>`.
    pub watch_filter: Option<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// The provider's metrics.
    pub metrics: Arc<Metrics>,
    /// Set once the caches are synced (for `/readyz`).
    pub ready: Option<Arc<AtomicBool>>,
    /// Delays between retries of a failing object.
    pub backoff: Backoff,
}

impl Options {
    /// Options over `client` with default settings.
    pub fn new(client: kube::Client) -> Self {
        Options {
            client,
            config: ProviderConfig::default(),
            watch_filter: None,
            concurrency: 4,
            metrics: Arc::new(Metrics::unregistered()),
            ready: None,
            backoff: Backoff::default(),
        }
    }
}

struct Shared {
    ctx: Context,
    cluster: Harness,
    machine: Harness,
    node: Harness,
}

fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs the AgentCluster and AgentMachine controllers until `shutdown` completes, then drains.
pub async fn run(
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let object_client: Arc<dyn ObjectClient> =
        Arc::new(KubeObjectClient::new(options.client.clone()));
    let machine_resource = capi_resource(object_client.as_ref(), "Machine").await?;
    let cluster_resource = capi_resource(object_client.as_ref(), "Cluster").await?;
    let stop = CancellationToken::new();
    let (agent_store, agent_watch) = agent_reflector(&options, stop.clone());
    let shared = shared(&options, object_client, agent_store);
    let trigger = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    let filter = options
        .watch_filter
        .as_ref()
        .map(|v| format!("{WATCH_FILTER_LABEL}={v}"));
    let namespace = options.config.namespace.as_deref();
    let clusters = cluster_controller(&options, namespace, &filter, &cluster_resource, &stop);
    let machines = machine_controller(&options, namespace, &filter, machine_resource);
    let by_cluster = machines.store();
    let machines = machines
        .watches_stream_with(
            cluster_pauses(&options, namespace, &cluster_resource),
            move |c| machines_of(&by_cluster, &c),
            cluster_resource,
        )
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    let (cluster_store, machine_store) = (clusters.store(), machines.store());
    if let Some(ready) = options.ready.clone() {
        // Ready once the AgentMachine cache synced (kcp-core polls around kube-runtime's
        // single-waiter store readiness).
        kcp_core::runtime::CacheSync::new(ready).track(machine_store.clone());
    }
    let nodes = node_controller(&options, namespace, &filter, shared.clone(), stop.clone());
    let clusters = clusters
        .run(reconcile_cluster, error_policy_cluster, shared.clone())
        .for_each(|_| async {});
    let machines = machines
        .run(reconcile_machine, error_policy_machine, shared)
        .for_each(|_| async {});
    tokio::join!(
        drain_controller(clusters, cluster_store, stop.clone()),
        drain_controller(machines, machine_store, stop.clone()),
        nodes,
        agent_watch,
    );
    Ok(())
}

/// The reconciles' context and a harness per controller.
fn shared(options: &Options, client: Arc<dyn ObjectClient>, agents: Store<Agent>) -> Arc<Shared> {
    let harness = |controller: &str| {
        Harness::new(
            controller,
            options.metrics.controllers.clone(),
            options.concurrency,
        )
        .with_error_policy(ErrorPolicy::new(options.backoff))
    };
    let mut ctx = Context::new(client, options.config.clone());
    ctx.metrics = options.metrics.clone();
    ctx.agents = Some(AgentCache::new(agents));
    Arc::new(Shared {
        ctx,
        cluster: harness("agentcluster"),
        machine: harness("agentmachine"),
        node: harness("node-provider-id"),
    })
}

/// The watch of the provider's own kinds: every object, or those `--watch-filter` selects.
fn filtered(filter: &Option<String>) -> watcher::Config {
    match filter {
        Some(f) => watcher::Config::default().labels(f),
        None => watcher::Config::default(),
    }
}

/// The AgentCluster controller, woken also by its Cluster's pause changes.
fn cluster_controller(
    options: &Options,
    namespace: Option<&str>,
    filter: &Option<String>,
    cluster_resource: &ApiResource,
    stop: &CancellationToken,
) -> Controller<AgentCluster> {
    Controller::new(
        api::<AgentCluster>(&options.client, namespace),
        filtered(filter),
    )
    .with_config(ControllerConfig::default().concurrency(options.concurrency))
    .watches_stream_with(
        cluster_pauses(options, namespace, cluster_resource),
        |c| infrastructure_of(&c),
        cluster_resource.clone(),
    )
    .graceful_shutdown_on(stop.clone().cancelled_owned())
}

/// The Agent cache selection reads, and the future filling it until `stop`.
fn agent_reflector(
    options: &Options,
    stop: CancellationToken,
) -> (Store<Agent>, impl Future<Output = ()> + use<>) {
    let agent_api = api::<Agent>(&options.client, options.config.agent_namespace.as_deref());
    let (store, writer) = reflector::store();
    let fill = reflector::reflector(
        writer,
        watcher::watcher(agent_api, watcher::Config::default()),
    )
    .default_backoff()
    .take_until(stop.cancelled_owned())
    .for_each(|_| async {});
    (store, fill)
}

/// The AgentMachine controller with its Machine and Agent watches.
fn machine_controller(
    options: &Options,
    namespace: Option<&str>,
    filter: &Option<String>,
    machine_resource: ApiResource,
) -> Controller<AgentMachine> {
    let machines = Controller::new(
        api::<AgentMachine>(&options.client, namespace),
        filtered(filter),
    )
    .with_config(ControllerConfig::default().concurrency(options.concurrency));
    let by_machine = machines.store();
    let by_agent = machines.store();
    let machine_api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(options.client.clone(), ns, &machine_resource),
        None => Api::all_with(options.client.clone(), &machine_resource),
    };
    let agent_api = api::<Agent>(&options.client, options.config.agent_namespace.as_deref());
    machines
        .watches_with(
            machine_api,
            machine_resource,
            watcher::Config::default(),
            move |m| owned_by(&by_machine, &m),
        )
        .watches(agent_api, watcher::Config::default(), move |a| {
            waiting_for(&by_agent, &a)
        })
}

/// Clusters (in `namespace`, or all) whose pause state changed.
fn cluster_pauses(
    options: &Options,
    namespace: Option<&str>,
    resource: &ApiResource,
) -> impl futures::Stream<Item = std::result::Result<DynamicObject, watcher::Error>> + Send + 'static
{
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(options.client.clone(), ns, resource),
        None => Api::all_with(options.client.clone(), resource),
    };
    pause_changes(
        watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects(),
    )
}

/// A Cluster API kind (`Machine`, `Cluster`) as served: v1beta2 when the server has it, else
/// v1beta1.
async fn capi_resource(client: &dyn ObjectClient, kind: &str) -> Result<ApiResource> {
    let mut last = None;
    for version in crate::foreign::CAPI_VERSIONS {
        match client.resolve(&capi_gvk(version, kind)).await {
            Ok(info) => return Ok(info.resource),
            Err(err) => last = Some(err),
        }
    }
    Err(Error::Client(last.unwrap_or_else(|| {
        kcp_core::Error::Config("no CAPI version".into())
    })))
}

/// Machine -> the AgentMachine it owns (by owner reference).
fn owned_by(store: &Store<AgentMachine>, machine: &DynamicObject) -> Vec<ObjectRef<AgentMachine>> {
    let name = machine.metadata.name.as_deref().unwrap_or_default();
    let namespace = machine.metadata.namespace.as_deref();
    store
        .state()
        .iter()
        .filter(|am| am.metadata.namespace.as_deref() == namespace)
        .filter(|am| {
            am.metadata.owner_references.iter().flatten().any(|o| {
                o.kind == "Machine"
                    && o.api_version.starts_with("cluster.x-k8s.io/")
                    && o.name == name
            })
        })
        .map(|am| ObjectRef::from_obj(am.as_ref()))
        .collect()
}

/// Agent -> the AgentMachine it is bound to; or, for a usable free Agent, the unassigned
/// AgentMachines whose selector it matches.
fn waiting_for(store: &Store<AgentMachine>, agent: &Agent) -> Vec<ObjectRef<AgentMachine>> {
    if let (Some(name), Some(ns)) = (
        agent.label(AGENT_MACHINE_REF_LABEL),
        agent.annotation(AGENT_MACHINE_REF_NAMESPACE_ANNOTATION),
    ) {
        return vec![ObjectRef::new(name).within(ns)];
    }
    if usable(agent).is_err() || agent.label(AGENT_MACHINE_REF_LABEL).is_some() {
        return Vec::new();
    }
    store
        .state()
        .iter()
        .filter(|am| {
            am.status
                .as_ref()
                .and_then(|s| s.agent_ref.as_ref())
                .is_none()
        })
        .filter(|am| {
            am.spec
                .agent_label_selector
                .as_ref()
                .is_none_or(|s| selector_matches(s, agent.metadata.labels.as_ref()))
        })
        .map(|am| ObjectRef::from_obj(am.as_ref()))
        .collect()
}

fn names(meta: &kube::api::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

async fn reconcile_cluster(obj: Arc<AgentCluster>, shared: Arc<Shared>) -> Result<Action> {
    let (namespace, name) = names(&obj.metadata);
    let pass = reconcile_agent_cluster(&shared.ctx, &namespace, &name);
    shared.cluster.reconcile(obj.as_ref(), pass).await
}

async fn reconcile_machine(obj: Arc<AgentMachine>, shared: Arc<Shared>) -> Result<Action> {
    let (namespace, name) = names(&obj.metadata);
    let pass = reconcile_agent_machine(&shared.ctx, &namespace, &name);
    shared.machine.reconcile(obj.as_ref(), pass).await
}

fn error_policy_cluster(obj: Arc<AgentCluster>, err: &Error, shared: Arc<Shared>) -> Action {
    shared.cluster.error_policy(obj.as_ref(), err)
}

fn error_policy_machine(obj: Arc<AgentMachine>, err: &Error, shared: Arc<Shared>) -> Action {
    shared.machine.error_policy(obj.as_ref(), err)
}

struct NodeShared {
    shared: Arc<Shared>,
    workloads: Workloads,
}

/// The node-provider-id controller: AgentMachines, plus wake-ups from the workload clusters'
/// Node watches, queued through `reconcile_on` so a woken machine is reconciled like any
/// other (one reconcile per object at a time, errors through the error policy).
fn node_controller(
    options: &Options,
    namespace: Option<&str>,
    filter: &Option<String>,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> impl Future<Output = ()> + use<> {
    let wc = filtered(filter);
    let (wake, woken) = futures::channel::mpsc::unbounded::<ObjectRef<AgentMachine>>();
    let controller = Controller::new(api::<AgentMachine>(&options.client, namespace), wc)
        .with_config(ControllerConfig::default().concurrency(options.concurrency))
        .reconcile_on(woken)
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    let store = controller.store();
    let workloads = Workloads::new(store.clone(), wake);
    let ctx = Arc::new(NodeShared { shared, workloads });
    let run = controller
        .run(reconcile_node, error_policy_node, ctx)
        .for_each(|_| async {});
    drain_controller(run, store, stop)
}

async fn reconcile_node(obj: Arc<AgentMachine>, ctx: Arc<NodeShared>) -> Result<Action> {
    let pass = reconcile_node_provider_id(&ctx.shared.ctx, &ctx.workloads, obj.as_ref());
    ctx.shared.node.reconcile(obj.as_ref(), pass).await
}

fn error_policy_node(obj: Arc<AgentMachine>, err: &Error, ctx: Arc<NodeShared>) -> Action {
    ctx.shared.node.error_policy(obj.as_ref(), err)
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::api::AgentMachineSpec;
    use crate::api::v1beta1::{AgentMachineStatus, AgentReference};
    use crate::foreign::{AgentCondition, AgentSpec, AgentStatus};

    fn machine(name: &str, owner: &str, bound: bool, pool: Option<&str>) -> AgentMachine {
        let mut am = AgentMachine::new(name, AgentMachineSpec::default());
        am.metadata.namespace = Some("ns".into());
        am.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "cluster.x-k8s.io/v1beta2".into(),
                kind: "Machine".into(),
                name: owner.into(),
                uid: format!("{owner}-uid"),
                ..Default::default()
            },
        ]);
        am.spec.agent_label_selector =
            pool.map(
                |p| k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some([("pool".to_string(), p.to_string())].into()),
                    match_expressions: None,
                },
            );
        if bound {
            am.status = Some(AgentMachineStatus {
                agent_ref: Some(AgentReference {
                    namespace: "agents".into(),
                    name: "x".into(),
                }),
                ..AgentMachineStatus::default()
            });
        }
        am
    }

    fn store(machines: Vec<AgentMachine>) -> Store<AgentMachine> {
        let (reader, mut writer) = reflector::store();
        for m in machines {
            writer.apply_watcher_event(&Event::Apply(m));
        }
        reader
    }

    fn agent(usable: bool, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Agent {
        let mut a = Agent::new(
            "a",
            AgentSpec {
                approved: usable,
                ..AgentSpec::default()
            },
        );
        a.metadata.namespace = Some("agents".into());
        a.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        a.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        let c = |t: &str, s: &str| AgentCondition {
            type_: t.into(),
            status: s.into(),
            ..AgentCondition::default()
        };
        a.status = Some(AgentStatus {
            conditions: vec![
                c("Validated", "True"),
                c("Connected", "True"),
                c("Bound", "False"),
            ],
            ..AgentStatus::default()
        });
        a
    }

    fn names(refs: Vec<ObjectRef<AgentMachine>>) -> Vec<String> {
        let mut n: Vec<String> = refs.into_iter().map(|r| r.name).collect();
        n.sort();
        n
    }

    #[test]
    fn a_machine_maps_to_the_agent_machine_it_owns_or_nothing() {
        let s = store(vec![
            machine("am-1", "m-1", false, None),
            machine("am-2", "m-2", false, None),
        ]);
        let m: DynamicObject =
            serde_json::from_value(serde_json::json!({"apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine", "metadata": {"name": "m-2", "namespace": "ns"}}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names(owned_by(&s, &m)), ["am-2"]);
        let other: DynamicObject =
            serde_json::from_value(serde_json::json!({"apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine", "metadata": {"name": "m-9", "namespace": "ns"}}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(owned_by(&s, &other).is_empty());
    }

    #[test]
    fn a_bound_agent_maps_to_its_agent_machine() {
        let s = store(vec![]);
        let a = agent(
            true,
            &[(AGENT_MACHINE_REF_LABEL, "am-1")],
            &[(AGENT_MACHINE_REF_NAMESPACE_ANNOTATION, "ns")],
        );
        let refs = waiting_for(&s, &a);
        assert_eq!(
            (refs[0].name.as_str(), refs[0].namespace.as_deref()),
            ("am-1", Some("ns"))
        );
    }

    #[test]
    fn an_unusable_agent_maps_to_nothing() {
        let s = store(vec![machine("am-1", "m-1", false, None)]);
        assert!(waiting_for(&s, &agent(false, &[], &[])).is_empty());
    }

    #[test]
    fn a_usable_free_agent_wakes_the_unassigned_machines_its_labels_match() {
        let s = store(vec![
            machine("any", "m-1", false, None),
            machine("pool-a", "m-2", false, Some("a")),
            machine("pool-b", "m-3", false, Some("b")),
            machine("bound", "m-4", true, None),
        ]);
        assert_eq!(
            names(waiting_for(&s, &agent(true, &[("pool", "a")], &[]))),
            ["any", "pool-a"]
        );
    }
}
