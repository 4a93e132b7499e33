//! kcp-init-agent throughput against kcp-sim over HTTP.
//!
//! Targets on the project's 2-core machine:
//! - 100 workspaces, each initialized from a 50-object template of dependency depth 4, with 2 ms
//!   injected latency per request: applying each plan wave by wave (concurrency 32 inside a
//!   wave) is >= 5x faster than applying the same objects one at a time (concurrency 1). Both
//!   run here; the ratio is printed as `wave-parallel speed-up`.
//! - 10-object templates, no injected latency: >= 200 workspaces initialized per second.
//!
//! Each measurement starts a fresh kcp-sim, installs the CRDs, the WorkspaceType, the template
//! and the InitTarget, starts the agent, creates the workspaces, and stops the clock when every
//! workspace is Ready. The speed-up compares the two apply strategies one cluster at a time;
//! the criterion figures run 4 clusters at a time (the agent's default).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::Workspace;
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, parse_manifests};
use kcp_init::{AgentConfig, run};
use kcp_sim::{Config, Server};
use tokio::sync::watch;

const WORKSPACE_TYPE: &str = "apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata: {name: bench}
spec: {initializer: true}
";

const TARGET: &str = "apiVersion: initialization.kcp.io/v1alpha1
kind: InitTarget
metadata: {name: bench}
spec:
  workspaceTypeRef: {path: root, name: bench}
  sources: [{template: {name: bench}}]
";

/// A template of `objects` objects in `depth` waves: a Namespace, then ConfigMaps in
/// `depth - 1` levels, each depending on one object of the level before.
fn template(objects: usize, depth: usize) -> String {
    let mut docs = vec!["apiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n".to_string()];
    let levels = depth.saturating_sub(1).max(1);
    let rest = objects.saturating_sub(1);
    for i in 0..rest {
        let level = i * levels / rest.max(1) + 1;
        let depends = if level > 1 {
            format!(
                "\n  annotations: {{apply.kcp-rs.io/depends-on: \"ConfigMap/bench/l{}-0\"}}",
                level - 1
            )
        } else {
            String::new()
        };
        let index = docs
            .iter()
            .filter(|d| d.contains(&format!("name: l{level}-")))
            .count();
        docs.push(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l{level}-{index}\n  namespace: bench{depends}\ndata:\n  cluster: \"{{{{ .ClusterName }}}}\"\n"
        ));
    }
    let body: String = docs
        .join("---\n")
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect();
    format!(
        "apiVersion: initialization.kcp.io/v1alpha1\nkind: InitTemplate\nmetadata: {{name: bench}}\nspec:\n  template: |\n{body}"
    )
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap_or_else(|e| panic!("{e}"));
    let report = Applier::new(client, ApplierConfig::new("bench"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

/// Time to initialize `workspaces` workspaces from a template of `objects` objects.
async fn initialize(
    workspaces: usize,
    objects: usize,
    latency: Duration,
    concurrency: usize,
    workers: usize,
) -> Duration {
    let sim = Server::start(Config::kcp())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let root = sim.object_client("root");
    let crds = kcp_init::api::crd_objects().unwrap_or_else(|e| panic!("{e}"));
    apply(&root, crds).await;
    let setup = format!("{WORKSPACE_TYPE}---\n{}---\n{TARGET}", template(objects, 4));
    apply(
        &root,
        parse_manifests("bench.yaml", &setup).unwrap_or_else(|e| panic!("{e}")),
    )
    .await;

    let mut config = AgentConfig::new(
        sim.kube_config("root").unwrap_or_else(|e| panic!("{e}")),
        "root",
    );
    config.applier.concurrency = concurrency;
    config.workers = workers;
    config.applier.detect_unchanged = false;
    let ready = config.ready.clone();
    let (stop, mut stop_rx) = watch::channel(false);
    let agent = tokio::spawn(run(config, async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    }));
    while !ready.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sim.faults().set_latency(latency, Duration::ZERO);
    let start = Instant::now();
    let docs: Vec<String> = (0..workspaces)
        .map(|i| format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: w{i}}}\nspec:\n  type: {{name: bench, path: root}}\n"))
        .collect();
    // The workspaces are created in-process (the latency applies to these requests too).
    apply(
        &root,
        parse_manifests("ws.yaml", &docs.join("---\n")).unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    loop {
        let list: Vec<Workspace> = root
            .list_typed(None, &ListOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let done = list
            .iter()
            .filter(|w| w.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Ready"))
            .count();
        if done == workspaces {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let took = start.elapsed();
    let _ = stop.send(true);
    let _ = agent.await;
    sim.shutdown().await;
    took
}

fn init_agent(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let latency = Duration::from_millis(2);

    // One cluster at a time, so the comparison measures the apply strategy rather than how
    // many clusters the two cores can initialize side by side.
    let parallel = rt.block_on(initialize(100, 50, latency, 32, 1));
    let serial = rt.block_on(initialize(100, 50, latency, 1, 1));
    eprintln!(
        "wave-parallel speed-up: {:.1}x (100 workspaces x 50 objects, 2 ms latency: one at a time {:.2} s, wave-parallel {:.2} s)",
        serial.as_secs_f64() / parallel.as_secs_f64(),
        serial.as_secs_f64(),
        parallel.as_secs_f64()
    );

    let mut group = c.benchmark_group("kcp_init");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(100));
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(100));
    group.bench_function(
        "100_workspaces_x_50_objects_2ms_latency_wave_parallel",
        |b| {
            b.to_async(&rt).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += initialize(100, 50, latency, 32, 4).await;
                }
                total
            })
        },
    );
    group.bench_function("100_workspaces_x_10_objects_no_latency", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += initialize(100, 10, Duration::ZERO, 32, 4).await;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, init_agent);
criterion_main!(benches);
