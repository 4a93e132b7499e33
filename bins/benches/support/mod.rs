//! What the process benches share: a free port, `/readyz` polling, resident memory from
//! `/proc`, applying a set-up through the apply engine, and the criterion benchmark timing a
//! process from start to ready.
#![allow(dead_code)]

use std::future::Future;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use criterion::Criterion;
use kcp_core::kube::api::DynamicObject;
use kcp_core::{Applier, ApplierConfig, ApplyPlan, ObjectClient, RuleSet};

/// Whether the health endpoint on `port` answers `/readyz` with 200.
pub fn ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = write!(stream, "GET /readyz HTTP/1.0\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}

/// The resident memory of process `pid` in MiB (`VmRSS` of `/proc/<pid>/status`; 0 if gone).
pub fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    kcp_testbed::ports::free_port("a binary under benchmark").unwrap_or_else(|e| panic!("{e}"))
}

/// Criterion group `group`, benchmark `start_to_ready`: the sum of `run_once` (one process
/// started until ready, as it measures it) over the iterations, on a two-worker runtime.
pub fn bench_start_to_ready<F, Fut>(c: &mut Criterion, group: &str, run_once: F)
where
    F: Fn() -> Fut + Copy,
    Fut: Future<Output = Duration>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.bench_function("start_to_ready", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += run_once().await;
            }
            total
        })
    });
    group.finish();
}

/// Applies `objects` through kcp-core's apply engine (field manager `bench`); every object
/// must be applied.
pub async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap_or_else(|e| panic!("{e}"));
    let report = Applier::new(client, ApplierConfig::new("bench"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}
