//! kcp-operator: rendering cost and convergence at scale against kcp-sim.
//!
//! Targets (issue 11), on the project's 2-core machine:
//! - rendering one RootShard's children (PKI, kubeconfig Secrets, root shard and internal proxy
//!   Deployment, Service, ConfigMap, Secret) <= 1 ms (criterion `operator/render_root_shard`);
//! - 100 RootShards with a Shard, a FrontProxy and a Kubeconfig each, both controller groups and
//!   the built-in PKI (`--pki=builtin`, signing every Certificate) over HTTP, kcp-sim's workload
//!   simulation making Deployments available: every source Ready in <= 10 s (printed as
//!   `converged`);
//! - a no-op resync of all of them (restarted controllers list and reconcile everything) issues
//!   0 writes (printed as `writes during a no-op resync`, counted by the server's
//!   resourceVersion).

/// The allocator the binaries ship with, so the figures are the shipped binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, ObjectMeta};
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, parse_manifests};
use kcp_operator::addresser::InCluster;
use kcp_operator::api::*;
use kcp_operator::controller::{ControllerGroup, run_with};
use kcp_operator::metrics::Metrics;
use kcp_operator::render::certmanager;
use kcp_operator::render::frontproxy::*;
use kcp_operator::render::kubeconfig::*;
use kcp_operator::render::pki::render_root_shard_pki;
use kcp_operator::render::rootshard::*;
use kcp_sim::{Config, Server};
use tokio::sync::watch;

const NS: &str = "kcp";
/// The number of installations; `KCP_OPERATOR_BENCH_INSTALLATIONS` overrides it.
fn installations_count() -> usize {
    std::env::var("KCP_OPERATOR_BENCH_INSTALLATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

fn example_root_shard() -> RootShard {
    let yaml = "apiVersion: operator.kcp.io/v1alpha1
kind: RootShard
metadata: {name: root, namespace: kcp}
spec:
  external: {hostname: api.kcp.example.com, port: 6443}
  certificates: {issuerRef: {group: cert-manager.io, kind: ClusterIssuer, name: selfsigned}}
  cache: {ref: {name: cache}}
  etcd: {endpoints: ['http://etcd-root.kcp.svc.cluster.local:2379']}
  auth: {serviceAccount: {enabled: true}}
  certificateTemplates: {server: {spec: {dnsNames: [localhost]}}}
  proxy: {replicas: 1}
";
    let obj = &parse_manifests("rs.yaml", yaml).unwrap_or_else(|e| panic!("{e}"))[0];
    serde_json::from_value(serde_json::to_value(obj).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn render_all(rs: &RootShard, crs: &CompiledRootShard) -> usize {
    let (certs, issuers) = render_root_shard_pki(rs);
    let mut n = certs.len() + issuers.len();
    for which in [
        AdminKubeconfig::LogicalClusterAdmin,
        AdminKubeconfig::ExternalLogicalClusterAdmin,
    ] {
        n += usize::from(render_root_shard_kubeconfig_secret(rs, which).is_ok());
    }
    let _ = render_root_shard_deployment(crs);
    let _ = render_root_shard_service(crs);
    let input = ProxyInput::internal(crs);
    let _ = render_proxy_deployment(&input);
    let _ = render_proxy_service(&input);
    n += usize::from(render_proxy_config_map(&input).is_ok());
    n += usize::from(render_proxy_dynamic_kubeconfig_secret(&input).is_ok());
    n + 4
}

fn bench_render(c: &mut Criterion) {
    let rs = example_root_shard();
    let crs = CompiledRootShard {
        metadata: ObjectMeta {
            name: Some("root".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: CompiledRootShardSpec {
            root_shard: rs.spec.clone(),
            virtual_workspace: None,
            shards: vec!["alpha".into()],
            required_secrets: Vec::new(),
        },
        status: None,
    };
    c.bench_function("operator/render_root_shard", |b| {
        b.iter(|| render_all(&rs, &crs))
    });
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap_or_else(|e| panic!("{e}"));
    let report = Applier::new(client, ApplierConfig::new("bench"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

fn installations() -> String {
    let mut docs = vec!["apiVersion: v1\nkind: Namespace\nmetadata: {name: kcp}\n".to_owned()];
    for i in 0..installations_count() {
        docs.push(format!("apiVersion: operator.kcp.io/v1alpha1\nkind: RootShard\nmetadata: {{name: r{i}, namespace: kcp}}\nspec:\n  external: {{hostname: r{i}.example.com, port: 6443}}\n  certificates: {{issuerRef: {{kind: ClusterIssuer, name: selfsigned}}}}\n  cache: {{}}\n  etcd: {{endpoints: ['http://etcd:2379']}}\n"));
        docs.push(format!("apiVersion: operator.kcp.io/v1alpha1\nkind: Shard\nmetadata: {{name: s{i}, namespace: kcp}}\nspec:\n  rootShard: {{ref: {{name: r{i}}}}}\n  etcd: {{endpoints: ['http://etcd:2379']}}\n"));
        docs.push(format!("apiVersion: operator.kcp.io/v1alpha1\nkind: FrontProxy\nmetadata: {{name: f{i}, namespace: kcp}}\nspec:\n  rootShard: {{ref: {{name: r{i}}}}}\n"));
        docs.push(format!("apiVersion: operator.kcp.io/v1alpha1\nkind: Kubeconfig\nmetadata: {{name: k{i}, namespace: kcp}}\nspec:\n  target: {{frontProxyRef: {{name: f{i}}}}}\n  username: u{i}\n  validity: 8766h\n  secretRef: {{name: k{i}-kubeconfig}}\n"));
    }
    docs.join("---\n")
}

async fn ready_count(client: &dyn ObjectClient) -> usize {
    fn ready(c: Option<Vec<Condition>>) -> bool {
        c.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }
    let rs: Vec<RootShard> = client
        .list_typed(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default();
    let s: Vec<Shard> = client
        .list_typed(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default();
    let f: Vec<FrontProxy> = client
        .list_typed(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default();
    let k: Vec<Kubeconfig> = client
        .list_typed(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default();
    rs.into_iter()
        .filter(|o| ready(o.status.clone().map(|s| s.conditions)))
        .count()
        + s.into_iter()
            .filter(|o| ready(o.status.clone().map(|s| s.conditions)))
            .count()
        + f.into_iter()
            .filter(|o| ready(o.status.clone().map(|s| s.conditions)))
            .count()
        + k.into_iter()
            .filter(|o| ready(o.status.clone().map(|s| s.conditions)))
            .count()
}

fn start(sim: &Server, metrics: Metrics) -> (watch::Sender<bool>, tokio::task::JoinHandle<()>) {
    let client = sim.client("").unwrap_or_else(|e| panic!("{e}"));
    let (stop, mut rx) = watch::channel(false);
    let groups: BTreeSet<_> = [ControllerGroup::Config, ControllerGroup::Workload].into();
    let task = tokio::spawn(async move {
        run_with(
            client,
            &groups,
            &kcp_operator::pki::Pki::Builtin(Default::default()),
            Arc::new(InCluster),
            metrics,
            Arc::new(std::sync::atomic::AtomicBool::new(false)),
            async move {
                let _ = rx.wait_for(|s| *s).await;
            },
        )
        .await;
    });
    (stop, task)
}

async fn converge_and_resync() {
    let sim = Server::start(Config {
        simulate_workloads: Some(Duration::from_millis(10)),
        ..Config::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let client = sim.object_client("");
    let crds: Vec<DynamicObject> = crds()
        .into_iter()
        .chain(certmanager::crds())
        .map(|c| {
            serde_json::from_value(serde_json::to_value(c).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    apply(&client, crds).await;
    let issuer = "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: selfsigned}\nspec: {selfSigned: {}}\n";
    apply(
        &client,
        parse_manifests("issuer.yaml", issuer).unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    let mut registry = prometheus_client::registry::Registry::default();
    let (stop, task) = start(&sim, Metrics::register(&mut registry));
    let rv_before = sim.resource_version();
    sim.requests().reset();
    let started = Instant::now();
    apply(
        &client,
        parse_manifests("bench.yaml", &installations()).unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    let want = 4 * installations_count();
    while ready_count(&client).await < want {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if started.elapsed() > Duration::from_secs(300) {
            println!(
                "operator: did not converge in 300 s: {} of {want} sources Ready",
                ready_count(&client).await
            );
            return;
        }
    }
    println!(
        "operator: {} installations converged (every source Ready) in {:.2?}",
        installations_count(),
        started.elapsed()
    );
    println!(
        "operator: {} writes while converging; reconciles per controller (errors):",
        sim.resource_version() - rv_before
    );
    print_reconciles(&registry);
    print_requests(&sim);
    let _ = stop.send(true);
    let _ = task.await;
    let before = sim.resource_version();
    let (stop, task) = start(&sim, Metrics::unregistered());
    tokio::time::sleep(Duration::from_secs(10)).await;
    let _ = stop.send(true);
    let _ = task.await;
    println!(
        "operator: writes during a no-op resync of all of them: {}",
        sim.resource_version() - before
    );
}

/// Prints the requests kcp-sim answered while converging, by label, with the time spent.
fn print_requests(sim: &Server) {
    let total = sim.requests().total();
    println!(
        "operator: {} requests to kcp-sim ({:.2?} answering them), by label:",
        total.count, total.time
    );
    let mut rows: Vec<_> = sim.requests().snapshot().into_iter().collect();
    rows.sort_by_key(|(_, c)| std::cmp::Reverse(c.count));
    for (label, count) in rows.iter().take(15) {
        println!("  {label}: {} ({:.2?})", count.count, count.time);
    }
}

/// Prints `controller: reconciles (errors)` from the `kcp_operator_*` metrics.
fn print_reconciles(registry: &prometheus_client::registry::Registry) {
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, registry).is_err() {
        return;
    }
    for line in text.lines() {
        let counted = line.starts_with("kcp_operator_reconciliation_duration_seconds_count")
            || line.starts_with("kcp_operator_reconciliation_errors_total");
        if counted {
            println!("  {line}");
        }
    }
}

fn bench_scale(_c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(converge_and_resync());
}

criterion_group!(benches, bench_render, bench_scale);
criterion_main!(benches);
