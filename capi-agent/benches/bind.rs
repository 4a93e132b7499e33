//! 200 AgentMachines bound against 400 Agents by the running controllers (4 workers) over HTTP
//! against kcp-sim (target: <= 5 s). Setup is not timed; one measured run per sample.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::time::{Duration, Instant};

use capi_agent::api::AgentMachine;
use capi_agent::controller::{Options, run};
use criterion::{Criterion, criterion_group, criterion_main};
use futures::{StreamExt as _, TryStreamExt as _};
use kcp_core::kube::Api;
use kcp_core::kube::api::DynamicObject;
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use kcp_sim::{Config, Server};
use serde_json::{Value, json};

const NS: &str = "hc";
const USER_DATA: &str = r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://ign/ignition","httpHeaders":[{"name":"Authorization","value":"Bearer t"}]}]}}}"#;
const FOREIGN_CRDS: &str = include_str!("../../examples/playground/agent/00-foreign-crds.yaml");

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

async fn create(c: &dyn ObjectClient, v: Value) -> DynamicObject {
    c.create(&obj(v)).await.unwrap()
}

async fn world(machines: usize, agents: usize) -> Server {
    let sim = Server::start(Config::default()).await.unwrap();
    let c = sim.object_client("");
    let mut crds = capi_agent::api::crd_objects().unwrap();
    crds.extend(kcp_core::parse_manifests("crds", FOREIGN_CRDS).unwrap());
    for crd in crds {
        c.create(&crd).await.unwrap();
    }
    for ns in [NS, "agents"] {
        create(
            &c,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    create(&c, json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentCluster",
        "metadata": {"name": "hc", "namespace": NS}, "spec": {"controlPlaneEndpoint": {}}})).await;
    let ac = ObjectRef::namespaced(
        kcp_core::kube::api::GroupVersionKind::gvk(
            "capi-provider.agent-install.openshift.io",
            "v1beta1",
            "AgentCluster",
        ),
        NS,
        "hc",
    );
    let status = json!({"status": {"ready": true, "clusterDeploymentReference": {"name": "hc", "namespace": NS}}});
    c.patch(
        &ac,
        Subresource::Status,
        &ObjectPatch::Merge(status),
        &PatchOptions::default(),
    )
    .await
    .unwrap();
    create(&c, json!({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
        "metadata": {"name": "hc", "namespace": NS, "labels": {"agentClusterRef": "hc"}}, "spec": {}})).await;
    create(&c, json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "hc", "namespace": NS},
        "spec": {"infrastructureRef": {"apiGroup": "capi-provider.agent-install.openshift.io", "kind": "AgentCluster", "name": "hc"}}})).await;
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(USER_DATA);
    create(&c, json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "user-data", "namespace": NS}, "data": {"value": data}})).await;
    for i in 0..agents {
        let a = create(&c, json!({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": format!("host-{i:04}"), "namespace": "agents"}, "spec": {"approved": true}})).await;
        let status = json!({"status": {"conditions": [{"type": "Validated", "status": "True"}, {"type": "Connected", "status": "True"}, {"type": "Bound", "status": "False"}]}});
        c.patch(
            &ObjectRef::from_object(&a).unwrap(),
            Subresource::Status,
            &ObjectPatch::Merge(status),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    }
    for i in 0..machines {
        let m = create(&c, json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": format!("m{i:04}"), "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "hc"}},
            "spec": {"bootstrap": {"dataSecretName": "user-data"}}})).await;
        let owner = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": m.metadata.name, "uid": m.metadata.uid});
        create(&c, json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
            "metadata": {"name": format!("m{i:04}"), "namespace": NS, "ownerReferences": [owner]}, "spec": {}})).await;
    }
    sim
}

async fn bind_all(machines: usize, agents: usize) -> Duration {
    let sim = world(machines, agents).await;
    let mut options = Options::new(sim.client("").unwrap());
    options.concurrency = 4;
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let task = tokio::spawn(run(options, async move {
        let _ = rx.await;
    }));
    // Watched, not polled: listing 200 AgentMachines every few milliseconds would take CPU
    // from the controllers and the server on the same two cores.
    let api: Api<AgentMachine> = Api::namespaced(sim.client("").unwrap(), NS);
    let mut events = watcher(api, watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut bound = HashSet::new();
    while bound.len() < machines {
        let am = events.try_next().await.unwrap().expect("the watch goes on");
        let name = am.metadata.name.clone().unwrap_or_default();
        if am
            .status
            .as_ref()
            .and_then(|s| s.agent_ref.as_ref())
            .is_some()
        {
            bound.insert(name);
        } else {
            bound.remove(&name);
        }
    }
    let took = started.elapsed();
    let _ = stop.send(());
    let _ = task.await;
    took
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("bind");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function(
        "200 AgentMachines against 400 Agents, 4 workers, HTTP",
        |b| b.iter_custom(|iters| (0..iters).map(|_| rt.block_on(bind_all(200, 400))).sum()),
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
