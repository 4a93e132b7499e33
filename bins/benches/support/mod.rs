//! What the process benches share: a free port, `/readyz` polling, resident memory and TCP
//! connections from `/proc`, applying a set-up through the apply engine, and the criterion benchmark timing a
//! process from start to ready.
#![allow(dead_code)]

use std::future::Future;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use criterion::Criterion;
use kcp_core::kube::api::DynamicObject;
use kcp_core::{Applier, ApplierConfig, ApplyPlan, ObjectClient, RuleSet};

/// The `things.example.com` CRD (kind `Thing`, schemaless, with a status subresource) the
/// sync-agent benches publish.
pub const THING_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "things.example.com"},
 "spec": {"group": "example.com", "scope": "Namespaced",
  "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
  "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

/// A started process, killed and reaped when dropped.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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

/// The established TCP connections of process `pid` to `127.0.0.1:port` (its sockets in
/// `/proc/<pid>/fd`, matched with `/proc/<pid>/net/tcp`; 0 if the process is gone).
pub fn connections_to(pid: u32, port: u16) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let sockets: std::collections::HashSet<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            let inode = target.strip_prefix("socket:[")?.strip_suffix(']')?;
            Some(inode.to_owned())
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let wanted = format!("0100007F:{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local remote state ... inode (the 10th field)
            fields.len() > 9
                && fields[2] == wanted
                && fields[3] == "01"
                && sockets.contains(fields[9])
        })
        .count()
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
