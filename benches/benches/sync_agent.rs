//! kcp-api-syncagent throughput: both kcp-sim servers and the agent in one process, the agent
//! talking HTTP to both (the APIExportEndpointSlice provider, watches, writes).
//!
//! Target (issue 10): `workspaces` consumer workspaces x `objects` objects created in kcp, each
//! synced to its local copy and its status (filled by a small operator on the service side)
//! back in kcp: >= 1,000 objects/s for 100 x 100. The clock starts before the first object is
//! created and stops when every kcp object carries the status.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt as _;
use kcp_core::cluster::{ApiExportConsumers, ClusterClients};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::{ListOptions, ObjectClient, Subresource};
use kcp_sim::{Config, PLAIN_CLUSTER, Server, SimClient};
use kcp_sync::controller::{Agent, Metrics, run};
use kcp_sync::reconcile::sync::SyncConfig;
use serde_json::{Value, json};
use tokio::sync::watch;

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

async fn create(client: &dyn ObjectClient, value: Value) {
    client
        .create(&object(value))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

fn gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("example.com", "v1", "Thing")
}

const CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "things.example.com"},
 "spec": {"group": "example.com", "scope": "Namespaced",
  "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
  "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

/// The service side's operator: every local Thing without status gets `phase: Ready`. It
/// watches over HTTP (as a real operator does) and writes in-process, so the request counts
/// printed are the agent's own, plus this one watch.
async fn operator(kube: kube::Client, service: SimClient, mut stop: watch::Receiver<bool>) {
    let resource = kcp_core::kube::api::ApiResource::from_gvk_with_plural(&gvk(), "things");
    let api = kube::Api::<DynamicObject>::all_with(kube, &resource);
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(events);
    loop {
        let event = tokio::select! {
            _ = stop.changed() => return,
            event = events.next() => event,
        };
        let mut thing = match event {
            Some(Ok(watcher::Event::Apply(t) | watcher::Event::InitApply(t))) => t,
            Some(_) => continue,
            None => return,
        };
        if thing.data.get("status").is_none() {
            thing.data["status"] = json!({"phase": "Ready"});
            let _ = service.replace(&thing, Subresource::Status).await;
        }
    }
}

/// Prints what each object cost in requests on both servers.
fn print_requests(side: &str, sim: &Server, objects: usize) {
    let total = sim.requests().total();
    eprintln!(
        "{side}: {} requests ({:.2} per object), {:.2} s answering them",
        total.count,
        total.count as f64 / objects as f64,
        total.time.as_secs_f64()
    );
    for (label, count) in sim.requests().snapshot() {
        eprintln!(
            "  {label:<36} {:>8} ({:.2}/object) {:>8.1} ms",
            count.count,
            count.count as f64 / objects as f64,
            count.time.as_secs_f64() * 1000.0
        );
    }
}

async fn setup(workspaces: usize) -> (Server, Server, Vec<SimClient>) {
    let kube = Server::start(Config::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let kcp = Server::start(Config::kcp())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let service = kube.object_client(PLAIN_CLUSTER);
    for crd in kcp_sync::api::crds() {
        create(&service, serde_json::to_value(crd).unwrap_or_default()).await;
    }
    create(&service, serde_json::from_str(CRD).unwrap_or_default()).await;
    create(
        &service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "agent"}}),
    )
    .await;
    create(&service, json!({"apiVersion": "syncagent.kcp.io/v1alpha1", "kind": "PublishedResource",
        "metadata": {"name": "things"}, "spec": {"resource": {"apiGroup": "example.com", "kind": "Thing"}}})).await;
    let root = kcp.object_client("root");
    create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "provider"}, "spec": {}})).await;
    let provider = kcp.object_client("root:provider");
    create(&provider, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "things"}, "spec": {}})).await;
    let mut consumers = Vec::new();
    for i in 0..workspaces {
        create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": format!("c{i}")}, "spec": {}})).await;
        consumers.push(kcp.object_client(&format!("root:c{i}")));
    }
    (kube, kcp, consumers)
}

fn agent(kube: &Server, kcp: &Server) -> Agent {
    let clients = Arc::new(ClusterClients::new(
        kcp.kube_config("root:provider")
            .unwrap_or_else(|e| panic!("{e}")),
    ));
    let provider = ApiExportConsumers::from_endpoint_slice(
        clients,
        kcp.client("root:provider")
            .unwrap_or_else(|e| panic!("{e}")),
        "things",
    );
    Agent {
        sync: SyncConfig::new("bench", "agent"),
        export_name: "things".into(),
        selector: String::new(),
        disabled: BTreeSet::new(),
        service: Arc::new(kube.object_client(PLAIN_CLUSTER)),
        service_kube: Some(kube.client(PLAIN_CLUSTER).unwrap_or_else(|e| panic!("{e}"))),
        kcp: Arc::new(kcp.object_client("root:provider")),
        provider: Arc::new(provider),
        resync: Duration::from_secs(300),
        workers: 8,
        metrics: Metrics::default(),
        ready: Default::default(),
        status_interval: Duration::from_secs(1),
    }
}

/// Time from the first create in kcp until every object's status is back in kcp.
async fn sync(workspaces: usize, objects: usize) -> Duration {
    let (kube, kcp, consumers) = setup(workspaces).await;
    let config = agent(&kube, &kcp);
    let ready = config.ready.clone();
    let (stop, stop_rx) = watch::channel(false);
    let mut agent_stop = stop_rx.clone();
    let agent = tokio::spawn(run(config, async move {
        let _ = agent_stop.wait_for(|s| *s).await;
    }));
    let op = tokio::spawn(operator(
        kube.client(PLAIN_CLUSTER).unwrap_or_else(|e| panic!("{e}")),
        kube.object_client(PLAIN_CLUSTER),
        stop_rx,
    ));
    while !ready.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for consumer in &consumers {
        create(consumer, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "things"},
            "spec": {"reference": {"export": {"path": "root:provider", "name": "things"}}}})).await;
    }
    // Wait until the bindings serve Things.
    for consumer in &consumers {
        while consumer
            .list(&gvk(), None, &ListOptions::default())
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    kube.requests().reset();
    kcp.requests().reset();
    let start = Instant::now();
    for consumer in &consumers {
        for j in 0..objects {
            create(
                consumer,
                json!({"apiVersion": "example.com/v1", "kind": "Thing",
                "metadata": {"name": format!("t{j}"), "namespace": "default"}, "spec": {"n": j}}),
            )
            .await;
        }
    }
    // Consumers finish roughly in creation order: look at the first unfinished one only.
    let mut finished = 0;
    while finished < consumers.len() {
        let done = consumers[finished]
            .list(&gvk(), None, &ListOptions::default())
            .await
            .map(|list| {
                list.items
                    .iter()
                    .filter(|t| t.data["status"]["phase"] == "Ready")
                    .count()
            })
            .unwrap_or_default();
        if done == objects {
            finished += 1;
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let took = start.elapsed();
    if std::env::var_os("KCP_SYNC_BENCH_REQUESTS").is_some() {
        print_requests("kcp", &kcp, workspaces * objects);
        print_requests("service", &kube, workspaces * objects);
    }
    let _ = stop.send(true);
    let _ = agent.await;
    let _ = op.await;
    kube.shutdown().await;
    kcp.shutdown().await;
    took
}

/// `KCP_SYNC_BENCH=<workspaces>x<objects>` (default `100x100`).
fn sizes() -> (usize, usize) {
    std::env::var("KCP_SYNC_BENCH")
        .ok()
        .and_then(|v| {
            let (w, o) = v.split_once('x')?;
            Some((w.parse().ok()?, o.parse().ok()?))
        })
        .unwrap_or((100, 100))
}

fn sync_agent(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let (workspaces, objects) = sizes();
    let took = rt.block_on(sync(workspaces, objects));
    eprintln!(
        "{workspaces} workspaces x {objects} objects synced down and status back: {:.2} s, {:.0} objects/s",
        took.as_secs_f64(),
        (workspaces * objects) as f64 / took.as_secs_f64()
    );
    let mut group = c.benchmark_group("kcp_sync");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(100));
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(1000));
    group.bench_function("10_workspaces_x_100_objects", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += sync(10, 100).await;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, sync_agent);
criterion_main!(benches);
