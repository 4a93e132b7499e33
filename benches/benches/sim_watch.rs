//! kcp-sim watch fan-out: one write reaching 100 watchers over HTTP (kube-rs watch streams).
//!
//! Target on the project's 2-core machine: with writes at 1,000 events/s, the time from a write
//! to its arrival at each of 100 watchers has p99 <= 5 ms. The paced run prints
//! `watch latency p50/p99/max`; criterion times one write reaching all 100 watchers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kcp_benches::quantile;
use kcp_sim::{Config, Server};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use tokio::sync::{Notify, mpsc};

const WATCHERS: usize = 100;
const RATE: u64 = 1_000;
const PACED_EVENTS: u64 = 3_000;

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn stamped(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"sent": now_nanos().to_string()}}))
    .unwrap_or_else(|e| panic!("fixture: {e}"))
}

struct Fanout {
    received: AtomicUsize,
    notify: Notify,
}

fn watch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let _entered = rt.enter();
    let sim = rt
        .block_on(Server::start(Config::default()))
        .unwrap_or_else(|e| panic!("kcp-sim: {e}"));
    let api: Api<ConfigMap> =
        Api::namespaced(sim.client("").unwrap_or_else(|e| panic!("{e}")), "default");
    let fanout = Arc::new(Fanout {
        received: AtomicUsize::new(0),
        notify: Notify::new(),
    });
    let (latency_tx, mut latency_rx) = mpsc::unbounded_channel::<f64>();

    rt.block_on(async {
        let rv = api
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("list: {e}"))
            .metadata
            .resource_version
            .unwrap_or_default();
        for _ in 0..WATCHERS {
            let api = api.clone();
            let rv = rv.clone();
            let fanout = fanout.clone();
            let latency_tx = latency_tx.clone();
            let stream = api
                .watch(&WatchParams::default().timeout(290), &rv)
                .await
                .unwrap_or_else(|e| panic!("watch: {e}"));
            tokio::spawn(async move {
                let mut stream = stream.boxed();
                while let Ok(Some(event)) = stream.try_next().await {
                    if let WatchEvent::Added(cm) = event {
                        let sent: u128 = cm
                            .data
                            .as_ref()
                            .and_then(|d| d.get("sent"))
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0);
                        let micros = now_nanos().saturating_sub(sent) as f64 / 1000.0;
                        let _ = latency_tx.send(micros);
                        fanout.received.fetch_add(1, Ordering::SeqCst);
                        fanout.notify.notify_waiters();
                    }
                }
            });
        }
    });
    drop(latency_tx);

    // Paced run: 1,000 writes per second, every watcher reports each arrival.
    rt.block_on(async {
        let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
        for i in 0..PACED_EVENTS {
            ticker.tick().await;
            api.create(&PostParams::default(), &stamped(&format!("paced-{i}")))
                .await
                .unwrap_or_else(|e| panic!("create: {e}"));
        }
        let expected = (PACED_EVENTS as usize) * WATCHERS;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut samples = Vec::with_capacity(expected);
        while samples.len() < expected && Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_secs(5), latency_rx.recv()).await {
                Ok(Some(us)) => samples.push(us),
                _ => break,
            }
        }
        samples.sort_by(|a, b| a.total_cmp(b));
        eprintln!(
            "watch latency at {RATE} events/s to {WATCHERS} watchers: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} of {expected} deliveries)",
            quantile(&samples, 0.5) / 1000.0,
            quantile(&samples, 0.99) / 1000.0,
            quantile(&samples, 1.0) / 1000.0,
            samples.len()
        );
    });
    // Keep draining so the channel does not grow during the timed part.
    rt.spawn(async move { while latency_rx.recv().await.is_some() {} });

    let mut group = c.benchmark_group("kcp_sim_watch");
    group.sample_size(30);
    let counter = AtomicUsize::new(0);
    group.bench_function("one_write_to_100_watchers", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let api = api.clone();
            let fanout = fanout.clone();
            let base = counter.fetch_add(iters as usize, Ordering::SeqCst);
            async move {
                let mut total = Duration::ZERO;
                for i in 0..iters as usize {
                    let target = fanout.received.load(Ordering::SeqCst) + WATCHERS;
                    let start = Instant::now();
                    api.create(
                        &PostParams::default(),
                        &stamped(&format!("timed-{}", base + i)),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("create: {e}"));
                    while fanout.received.load(Ordering::SeqCst) < target {
                        let notified = fanout.notify.notified();
                        if fanout.received.load(Ordering::SeqCst) >= target {
                            break;
                        }
                        let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
                    }
                    total += start.elapsed();
                }
                total
            }
        })
    });
    group.finish();
}

criterion_group!(benches, watch);
criterion_main!(benches);
