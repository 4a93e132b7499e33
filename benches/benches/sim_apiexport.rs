//! kcp-sim's apiexport virtual workspace at scale: 1,000 consumer workspaces bound to one
//! APIExport, 10 exported objects in each.
//!
//! Targets on the project's 2-core machine: a wildcard LIST of the 10,000 objects through
//! `<endpoint>/clusters/*` (kube-rs over HTTP, decoding every object) in <= 1 s; with writes at
//! 1,000/s spread over the consumers, the time from a write to its arrival at one wildcard
//! watcher (kube-rs over HTTP) has p99 <= 10 ms. The paced run prints
//! `apiexport watch latency p50/p99/max`; criterion times the wildcard list.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::{StreamExt, TryStreamExt};
use kcp_benches::quantile;
use kcp_core::ObjectClient;
use kcp_sim::{Config, Server, SimClient};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const CONSUMERS: usize = 1_000;
const OBJECTS_PER_CONSUMER: usize = 10;
const RATE: u64 = 1_000;
const PACED_EVENTS: u64 = 3_000;

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn object(body: Value) -> DynamicObject {
    serde_json::from_value(body).unwrap_or_else(|e| panic!("fixture: {e}"))
}

fn widget(name: &str) -> DynamicObject {
    object(json!({"apiVersion": "example.io/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 3, "sent": now_nanos().to_string()}}))
}

fn widgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.io", "v1", "Widget"),
        "widgets",
    )
}

async fn create(client: &SimClient, body: Value) {
    client
        .create(&object(body))
        .await
        .unwrap_or_else(|e| panic!("create: {e}"));
}

/// The provider workspace with the export `widgets`; answers its logical cluster name.
async fn provider(sim: &Server) -> String {
    create(
        &sim.object_client("root"),
        json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": "provider"}, "spec": {}}),
    )
    .await;
    let provider = sim.object_client("root:provider");
    create(&provider, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
        "metadata": {"name": "v1.widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}]}}))
    .await;
    create(&provider, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "widgets"}, "spec": {"latestResourceSchemas": ["v1.widgets.example.io"]}}))
    .await;
    sim.logical_cluster("root:provider")
        .unwrap_or_else(|| panic!("provider workspace"))
}

/// A bound consumer workspace holding its first objects; answers its in-process client.
async fn consumer(sim: &Server, i: usize) -> SimClient {
    let name = format!("consumer-{i}");
    create(
        &sim.object_client("root"),
        json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": name}, "spec": {}}),
    )
    .await;
    let client = sim.object_client(&format!("root:{name}"));
    create(
        &client,
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
        "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "widgets"}}}}),
    )
    .await;
    for j in 0..OBJECTS_PER_CONSUMER {
        client
            .create(&widget(&format!("w{j}")))
            .await
            .unwrap_or_else(|e| panic!("create widget: {e}"));
    }
    client
}

fn view(url: &str) -> Api<DynamicObject> {
    let uri = url.parse().unwrap_or_else(|e| panic!("{url}: {e}"));
    let client =
        kube::Client::try_from(kube::Config::new(uri)).unwrap_or_else(|e| panic!("client: {e}"));
    Api::all_with(client, &widgets_resource())
}

/// Writes at `RATE` per second, round-robin over the consumers, and reports each arrival at
/// one wildcard watcher.
async fn paced_watch(all: &Api<DynamicObject>, consumers: &[SimClient]) -> Vec<f64> {
    let rv = all
        .list(&ListParams::default().limit(1))
        .await
        .unwrap_or_else(|e| panic!("list: {e}"))
        .metadata
        .resource_version
        .unwrap_or_default();
    let stream = all
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .unwrap_or_else(|e| panic!("watch: {e}"));
    let (tx, mut rx) = mpsc::unbounded_channel::<f64>();
    tokio::spawn(async move {
        let mut stream = stream.boxed();
        while let Ok(Some(event)) = stream.try_next().await {
            if let WatchEvent::Added(obj) = event {
                let sent: u128 = obj.data["spec"]["sent"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let _ = tx.send(now_nanos().saturating_sub(sent) as f64 / 1000.0);
            }
        }
    });
    let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
    for i in 0..PACED_EVENTS as usize {
        ticker.tick().await;
        consumers[i % consumers.len()]
            .create(&widget(&format!("paced-{i}")))
            .await
            .unwrap_or_else(|e| panic!("create: {e}"));
    }
    let mut samples = Vec::with_capacity(PACED_EVENTS as usize);
    while samples.len() < PACED_EVENTS as usize {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(us)) => samples.push(us),
            _ => break,
        }
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    samples
}

fn apiexport(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let _entered = rt.enter();
    let sim = rt
        .block_on(Server::start(Config::kcp()))
        .unwrap_or_else(|e| panic!("kcp-sim: {e}"));
    let started = Instant::now();
    let (export_cluster, consumers) = rt.block_on(async {
        let export_cluster = provider(&sim).await;
        let mut consumers = Vec::with_capacity(CONSUMERS);
        for i in 0..CONSUMERS {
            consumers.push(consumer(&sim, i).await);
        }
        (export_cluster, consumers)
    });
    eprintln!(
        "set-up: {CONSUMERS} bound consumers x {OBJECTS_PER_CONSUMER} objects in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let url = format!(
        "{}/services/apiexport/{export_cluster}/widgets/clusters/*",
        sim.url()
    );
    let all = view(&url);

    let samples = rt.block_on(paced_watch(&all, &consumers));
    eprintln!(
        "apiexport watch latency at {RATE} writes/s over {CONSUMERS} consumers to one wildcard watcher: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} of {PACED_EVENTS} arrived)",
        quantile(&samples, 0.5) / 1000.0,
        quantile(&samples, 0.99) / 1000.0,
        quantile(&samples, 1.0) / 1000.0,
        samples.len()
    );

    let mut group = c.benchmark_group("kcp_sim_apiexport");
    group.sample_size(10);
    group.bench_function("wildcard_list_1000_consumers_x_10", |b| {
        b.to_async(&rt).iter(|| async {
            let list = all
                .list(&ListParams::default())
                .await
                .unwrap_or_else(|e| panic!("list: {e}"));
            assert!(list.items.len() >= CONSUMERS * OBJECTS_PER_CONSUMER);
        })
    });
    group.finish();
}

criterion_group!(benches, apiexport);
criterion_main!(benches);
