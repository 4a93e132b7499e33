//! kcp-sim memory: 100,000 ConfigMaps of 1 KiB must fit in at most twice their JSON size.
//!
//! The figure is the growth of this process's resident memory while the objects are created
//! in-process, divided by the total size of the objects' JSON as submitted. It is printed as
//! `memory ratio`, once: only the first store grows a fresh process (later iterations reuse the
//! memory the allocator kept). Criterion also times the 100k creates (informative).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use kcp_benches::{config_map, resident_bytes};
use kcp_core::ObjectClient;
use kcp_sim::{Config, Server};

const OBJECTS: usize = 100_000;
const SIZE: usize = 1024;

static MEASURED: AtomicBool = AtomicBool::new(false);

fn memory(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let mut group = c.benchmark_group("kcp_sim_memory");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("store_100k_configmaps_1KiB", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let sim = Server::start(Config::default())
                    .await
                    .unwrap_or_else(|e| panic!("kcp-sim: {e}"));
                let client = sim.object_client("");
                let objects: Vec<_> = (0..OBJECTS)
                    .map(|i| config_map("default", &format!("cm-{i}"), SIZE))
                    .collect();
                let json_bytes: usize = objects
                    .iter()
                    .map(|o| serde_json::to_vec(o).map(|v| v.len()).unwrap_or(0))
                    .sum();
                let before = resident_bytes();
                let start = Instant::now();
                for obj in &objects {
                    client.create(obj).await.unwrap_or_else(|e| panic!("create: {e}"));
                }
                total += start.elapsed();
                drop(objects);
                let after = resident_bytes();
                let grown = after.saturating_sub(before) as f64;
                if !MEASURED.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "memory ratio: {:.2} (resident +{:.1} MiB for {:.1} MiB of JSON in {OBJECTS} ConfigMaps)",
                    grown / json_bytes as f64,
                    grown / 1048576.0,
                    json_bytes as f64 / 1048576.0
                );
                }
                sim.shutdown().await;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, memory);
criterion_main!(benches);
