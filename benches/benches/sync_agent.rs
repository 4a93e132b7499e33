//! kcp-api-syncagent throughput: both kcp-sim servers and the agent in one process, the agent
//! talking HTTP to both (the APIExportEndpointSlice provider, watches, writes).
//!
//! Target (issue 10): `workspaces` consumer workspaces x `objects` objects created in kcp, each
//! synced to its local copy and its status (filled by a small operator on the service side)
//! back in kcp: >= 1,000 objects/s for 100 x 100. The clock starts before the first object is
//! created and stops when every kcp object carries the status.
//!
//! Change latency (issue 10: p99 <= 50 ms at 200 changes/s): 20 workspaces x 50 synced
//! objects, then 200 spec changes per second in kcp for 10 s, each timed from the write in
//! kcp until a watch on the service cluster shows it on the local copy.
//!
//! `KCP_SYNC_BENCH_ONLY=throughput|latency` runs one part and skips criterion;
//! `KCP_SYNC_BENCH_REQUESTS=1` prints the requests each server answered, per object.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt as _;
use kcp_core::cluster::{ApiExportConsumers, ClusterClients};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::{ListOptions, ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
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
        kcp_kube: Some(
            kcp.client("root:provider")
                .unwrap_or_else(|e| panic!("{e}")),
        ),
        provider: Arc::new(provider),
        resync: Duration::from_secs(300),
        workers: std::env::var("KCP_SYNC_BENCH_WORKERS")
            .ok()
            .and_then(|w| w.parse().ok())
            .unwrap_or(8),
        metrics: Metrics::default(),
        ready: Default::default(),
        status_interval: Duration::from_secs(1),
    }
}

/// Both servers, the agent and the service-side operator, running.
struct World {
    kube: Server,
    kcp: Server,
    consumers: Vec<SimClient>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl World {
    /// Starts everything with `workspaces` consumers that bind the export.
    async fn start(workspaces: usize) -> World {
        let (kube, kcp, consumers) = setup(workspaces).await;
        let config = agent(&kube, &kcp);
        let ready = config.ready.clone();
        let (stop, stop_rx) = watch::channel(false);
        let mut agent_stop = stop_rx.clone();
        let agent = tokio::spawn(async move {
            let _ = run(config, async move {
                let _ = agent_stop.wait_for(|s| *s).await;
            })
            .await;
        });
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
        World {
            kube,
            kcp,
            consumers,
            stop,
            tasks: vec![agent, op],
        }
    }

    /// Creates `objects` Things in every consumer and waits until each has its status back.
    async fn create_and_wait(&self, objects: usize) {
        for consumer in &self.consumers {
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
        while finished < self.consumers.len() {
            let done = self.consumers[finished]
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
    }

    async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        self.kube.shutdown().await;
        self.kcp.shutdown().await;
    }
}

/// Time from the first create in kcp until every object's status is back in kcp.
async fn sync(workspaces: usize, objects: usize) -> Duration {
    let world = World::start(workspaces).await;
    world.kube.requests().reset();
    world.kcp.requests().reset();
    let start = Instant::now();
    world.create_and_wait(objects).await;
    let took = start.elapsed();
    if std::env::var_os("KCP_SYNC_BENCH_REQUESTS").is_some() {
        print_requests("kcp", &world.kcp, workspaces * objects);
        print_requests("service", &world.kube, workspaces * objects);
    }
    world.stop().await;
    took
}

/// (logical cluster, kcp name, spec.n) of a change.
type Change = (String, String, i64);

/// Watches the local copies and records, for each change sent, when it arrived.
async fn observe(
    kube: kube::Client,
    sent: Arc<Mutex<HashMap<Change, Instant>>>,
    latencies: Arc<Mutex<Vec<Duration>>>,
    mut stop: watch::Receiver<bool>,
) {
    let resource = kcp_core::kube::api::ApiResource::from_gvk_with_plural(&gvk(), "things");
    let api = kube::Api::<DynamicObject>::all_with(kube, &resource);
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(events);
    loop {
        let thing = tokio::select! {
            _ = stop.changed() => return,
            event = events.next() => match event {
                Some(Ok(watcher::Event::Apply(t))) => t,
                Some(_) => continue,
                None => return,
            },
        };
        let arrived = Instant::now();
        let labels = thing.metadata.labels.unwrap_or_default();
        let annotations = thing.metadata.annotations.unwrap_or_default();
        let (Some(cluster), Some(name), Some(n)) = (
            labels.get("syncagent.kcp.io/remote-object-cluster"),
            annotations.get("syncagent.kcp.io/remote-object-name"),
            thing.data["spec"]["n"].as_i64(),
        ) else {
            continue;
        };
        let change = (cluster.clone(), name.clone(), n);
        if let Some(at) = sent.lock().ok().and_then(|mut s| s.remove(&change))
            && let Ok(mut l) = latencies.lock()
        {
            l.push(arrived - at);
        }
    }
}

/// Change latency: `workspaces` x `objects` synced Things, then spec changes in kcp at `rate`
/// per second for `duration`, each timed from the write in kcp until the local copy's watch
/// shows it. Returns the sorted latencies and how many changes never arrived.
async fn latency(
    workspaces: usize,
    objects: usize,
    rate: u32,
    duration: Duration,
) -> (Vec<Duration>, usize) {
    let world = World::start(workspaces).await;
    world.create_and_wait(objects).await;
    let clusters: Vec<String> = (0..workspaces)
        .map(|i| {
            world
                .kcp
                .logical_cluster(&format!("root:c{i}"))
                .unwrap_or_default()
        })
        .collect();
    let sent: Arc<Mutex<HashMap<Change, Instant>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let observer = tokio::spawn(observe(
        world
            .kube
            .client(PLAIN_CLUSTER)
            .unwrap_or_else(|e| panic!("{e}")),
        sent.clone(),
        latencies.clone(),
        world.stop.subscribe(),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    let total = (duration.as_secs_f64() * f64::from(rate)) as usize;
    for k in 0..total {
        tick.tick().await;
        let (w, o) = (k % workspaces, (k / workspaces) % objects);
        let name = format!("t{o}");
        let n = 1_000_000 + k as i64;
        if let Ok(mut s) = sent.lock() {
            s.insert((clusters[w].clone(), name.clone(), n), Instant::now());
        }
        let target = ObjectRef::namespaced(gvk(), "default", &name);
        let patch = ObjectPatch::Merge(json!({"spec": {"n": n}}));
        world.consumers[w]
            .patch(&target, Subresource::Main, &patch, &PatchOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && sent.lock().map(|s| !s.is_empty()).unwrap_or(false) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let lost = sent.lock().map(|s| s.len()).unwrap_or_default();
    world.stop().await;
    let _ = observer.await;
    let mut l = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    l.sort();
    (l, lost)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
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
    let only = std::env::var("KCP_SYNC_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "throughput" {
        let took = rt.block_on(sync(workspaces, objects));
        eprintln!(
            "{workspaces} workspaces x {objects} objects synced down and status back: {:.2} s, {:.0} objects/s",
            took.as_secs_f64(),
            (workspaces * objects) as f64 / took.as_secs_f64()
        );
    }
    if only.is_empty() || only == "latency" {
        let (rate, seconds) = (200, 10);
        let (l, lost) = rt.block_on(latency(20, 50, rate, Duration::from_secs(seconds)));
        eprintln!(
            "change in kcp to the local copy, {rate} changes/s for {seconds} s over 1,000 objects: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} arrived, {lost} lost)",
            percentile(&l, 0.5).as_secs_f64() * 1000.0,
            percentile(&l, 0.99).as_secs_f64() * 1000.0,
            percentile(&l, 1.0).as_secs_f64() * 1000.0,
            l.len()
        );
    }
    if !only.is_empty() {
        return;
    }
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
