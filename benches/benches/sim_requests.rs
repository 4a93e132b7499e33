//! kcp-sim request throughput.
//!
//! Targets on the project's 2-core machine:
//! - in-process creates (`SimClient`, no HTTP): >= 50,000 objects/s;
//! - creates over HTTP with `kube::Client`: >= 3,000/s;
//! - gets over HTTP with `kube::Client`: >= 10,000/s.
//!
//! HTTP figures use 16 requests in flight from one client (one connection pool), which is how a
//! controller's reconcilers load an API server. Objects are 1 KiB ConfigMaps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kcp_benches::config_map;
use kcp_core::ObjectClient;
use kcp_sim::{Config, Server};
use kube::api::{Api, PostParams};

const BATCH: u64 = 1_000;
const IN_FLIGHT: usize = 16;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
}

fn requests(c: &mut Criterion) {
    let rt = runtime();
    let sim = rt
        .block_on(Server::start(Config::default()))
        .unwrap_or_else(|e| panic!("kcp-sim: {e}"));
    let _entered = rt.enter();
    let counter = AtomicU64::new(0);
    let next_name = || format!("cm-{}", counter.fetch_add(1, Ordering::Relaxed));

    let mut group = c.benchmark_group("kcp_sim");
    group.throughput(Throughput::Elements(BATCH));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));

    let local = sim.object_client("");
    for (label, size) in [
        ("create_in_process_1k_small", 256),
        ("create_in_process_1k", 1024),
    ] {
        group.bench_function(label, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let local = local.clone();
                let objects: Vec<_> = (0..iters * BATCH)
                    .map(|_| config_map("default", &next_name(), size))
                    .collect();
                async move {
                    let start = Instant::now();
                    for obj in &objects {
                        local
                            .create(obj)
                            .await
                            .unwrap_or_else(|e| panic!("create: {e}"));
                    }
                    start.elapsed()
                }
            })
        });
    }

    let client = sim.client("").unwrap_or_else(|e| panic!("client: {e}"));
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let typed = |obj: kube::api::DynamicObject| -> ConfigMap {
        serde_json::from_value(serde_json::to_value(obj).unwrap_or_default())
            .unwrap_or_else(|e| panic!("fixture: {e}"))
    };
    group.bench_function("create_http_1k", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let api = api.clone();
            let objects: Vec<ConfigMap> = (0..iters * BATCH)
                .map(|_| typed(config_map("default", &next_name(), 1024)))
                .collect();
            async move {
                let start = Instant::now();
                futures::stream::iter(objects)
                    .map(|obj| {
                        let api = api.clone();
                        async move { api.create(&PostParams::default(), &obj).await }
                    })
                    .buffer_unordered(IN_FLIGHT)
                    .for_each(|r| async move {
                        r.unwrap_or_else(|e| panic!("create: {e}"));
                    })
                    .await;
                start.elapsed()
            }
        })
    });

    let names: Vec<String> = rt.block_on(async {
        let mut names = Vec::new();
        for _ in 0..BATCH {
            let name = next_name();
            api.create(
                &PostParams::default(),
                &typed(config_map("default", &name, 1024)),
            )
            .await
            .unwrap_or_else(|e| panic!("create: {e}"));
            names.push(name);
        }
        names
    });
    group.bench_function("get_http_1k", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let api = api.clone();
            let names = names.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    futures::stream::iter(names.iter())
                        .map(|name| {
                            let api = api.clone();
                            async move { api.get(name).await }
                        })
                        .buffer_unordered(IN_FLIGHT)
                        .for_each(|r| async move {
                            r.unwrap_or_else(|e| panic!("get: {e}"));
                        })
                        .await;
                }
                start.elapsed()
            }
        })
    });
    group.finish();
}

criterion_group!(benches, requests);
criterion_main!(benches);
