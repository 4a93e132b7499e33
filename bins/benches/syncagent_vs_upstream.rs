//! kcp-api-syncagent beside upstream's api-syncagent v0.7.0 (built from its Go module by the
//! test bed), in the same run, on the same real kcp and kube-apiserver.
//!
//! For each agent in turn: a provider workspace with the APIExport `things`,
//! `KCP_SYNC_VS_CONSUMERS` (default 20) consumer workspaces bound to it, each holding
//! `KCP_SYNC_VS_OBJECTS` (default 50) Things before the agent starts. Printed: the time from the
//! agent's start until every local copy exists (and the objects per second), the agent's
//! resident memory idle before the backlog and once everything is synced, and the latency of a
//! spec change in kcp reaching the local copy (p50, p99 over `KCP_SYNC_VS_CHANGES`, default 40,
//! changes, one at a time). A change that has not arrived after `KCP_SYNC_VS_CHANGE_LIMIT`
//! seconds (default 60) ends the latency phase: it is printed as a lower bound ("> 60 s"),
//! since an agent that slow would keep every later change waiting as long.
//! It also prints the most TCP connections the agent held to kcp while syncing (one watch per
//! consumer workspace would be one connection each). `KCP_SYNC_VS_AGENTS` (default
//! `upstream,kcp-rs`) chooses the agents and their order, so that a large run can leave out the
//! slow one, or time the fast one first.
//! Criterion then times one new object end to end (created in kcp until its local copy exists)
//! for each agent.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt as _;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{KubeObjectClient, ListOptions, ObjectClient, ObjectRef, Subresource};
use kcp_testbed::{Endpoint, KcpBed};
use serde_json::{Value, json};
use support::{Running, THING_CRD, connections_to, free_port, rss_mib};

const RS_AGENT: &str = env!("CARGO_BIN_EXE_kcp-api-syncagent");

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

fn thing() -> GroupVersionKind {
    GroupVersionKind::gvk("example.com", "v1", "Thing")
}

async fn create_or_keep(client: &dyn ObjectClient, value: Value) {
    match client.create(&object(value)).await {
        Ok(_) => {}
        Err(e) if e.is_already_exists() => {}
        Err(e) => panic!("{e}"),
    }
}

/// One agent's share of the servers.
struct Lane {
    name: &'static str,
    binary: PathBuf,
    agent: String,
    kcp_kubeconfig: PathBuf,
    consumers: Vec<Arc<dyn ObjectClient>>,
}

/// The service cluster and the kcp bed both lanes use.
struct Servers {
    bed: KcpBed,
    service: Arc<dyn ObjectClient>,
    service_kubeconfig: PathBuf,
    dir: PathBuf,
    /// kcp's port (its virtual workspaces are served there too).
    kcp_port: u16,
}

fn write_kubeconfig(dir: &Path, name: &str, endpoint: &Endpoint) -> PathBuf {
    kcp_testbed::kubeconfig::write_file(dir, name, endpoint).unwrap_or_else(|e| panic!("{e}"))
}

async fn servers() -> Servers {
    let bed = KcpBed::start_real().await.unwrap_or_else(|e| panic!("{e}"));
    let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let service: Arc<dyn ObjectClient> = Arc::new(KubeObjectClient::new(
        kube.admin.client().unwrap_or_else(|e| panic!("{e}")),
    ));
    for crd in kcp_sync::api::crds() {
        create_or_keep(&*service, serde_json::to_value(crd).unwrap_or_default()).await;
    }
    create_or_keep(
        &*service,
        serde_json::from_str(THING_CRD).unwrap_or_default(),
    )
    .await;
    let dir = kcp_testbed::real::credentials()
        .unwrap_or_else(|e| panic!("{e}"))
        .dir
        .clone();
    let service_kubeconfig = write_kubeconfig(&dir, "vs-service", &kube.admin);
    // The CRD is served once discovery lists it.
    wait_until("the Thing CRD served", || async {
        service
            .list(&thing(), None, &ListOptions::default())
            .await
            .is_ok()
    })
    .await;
    let kcp_url = bed
        .real_endpoint(bed.root())
        .unwrap_or_else(|| panic!("a real bed"))
        .url;
    let kcp_port = kcp_url
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.port_u16())
        .unwrap_or_else(|| panic!("no port in {kcp_url}"));
    Servers {
        bed,
        service,
        service_kubeconfig,
        dir,
        kcp_port,
    }
}

async fn wait_until<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(900);
    while !probe().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn lane(s: &Servers, name: &'static str, binary: PathBuf, consumers: usize) -> Lane {
    let root = s
        .bed
        .object_client(s.bed.root())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let provider_ws = format!("provider-{name}");
    kcp_testbed::create_workspace(&*root, &provider_ws, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let provider_path = s.bed.path(&provider_ws);
    let provider = s
        .bed
        .object_client(&provider_path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    create_or_keep(
        &*provider,
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "things"}, "spec": {}}),
    )
    .await;
    let tag = format!(
        "{name}-{}",
        s.bed.root().rsplit('-').next().unwrap_or_default()
    );
    create_or_keep(
        &*s.service,
        json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": format!("vs-{tag}")}}),
    )
    .await;
    create_or_keep(
        &*s.service,
        json!({"apiVersion": "syncagent.kcp.io/v1alpha1", "kind": "PublishedResource",
        "metadata": {"name": format!("things-{tag}"), "labels": {"vs": tag}},
        "spec": {"resource": {"apiGroup": "example.com", "kind": "Thing", "versions": ["v1"]}}}),
    )
    .await;
    // Consumers are made 16 at a time: a thousand one by one take most of an hour.
    let (root, provider_path) = (&root, &provider_path);
    let clients: Vec<Arc<dyn ObjectClient>> = futures::stream::iter(0..consumers)
        .map(|i| async move {
            let ws = format!("{name}-c{i}");
            kcp_testbed::create_workspace(&**root, &ws, None)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let consumer = s
                .bed
                .object_client(&s.bed.path(&ws))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let claim =
                |r: &str| json!({"group": "", "resource": r, "all": true, "state": "Accepted"});
            create_or_keep(
                &*consumer,
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
                "metadata": {"name": "things"},
                "spec": {"reference": {"export": {"path": provider_path, "name": "things"}},
                    "permissionClaims": [claim("events"), claim("namespaces")]}}),
            )
            .await;
            consumer
        })
        .buffer_unordered(16)
        .collect()
        .await;
    Lane {
        name,
        binary,
        agent: format!("vs-{tag}"),
        kcp_kubeconfig: write_kubeconfig(
            &s.dir,
            &format!("vs-kcp-{tag}"),
            &s.bed
                .real_endpoint(provider_path)
                .unwrap_or_else(|| panic!("a real bed")),
        ),
        consumers: clients,
    }
}

fn spawn(s: &Servers, lane: &Lane, extra: &[&str]) -> Running {
    let tag = lane.agent.trim_start_matches("vs-");
    let log = s.dir.join(format!("{}{}.log", lane.agent, extra.concat()));
    Running(
        Command::new(&lane.binary)
            .arg(format!("--agent-name={}", lane.agent))
            .arg("--apiexportendpointslice-ref=things")
            .arg("--enable-leader-election=false")
            .arg(format!("--kubeconfig={}", s.service_kubeconfig.display()))
            .arg(format!(
                "--kcp-kubeconfig={}",
                lane.kcp_kubeconfig.display()
            ))
            .arg(format!("--namespace=vs-{tag}"))
            .arg(format!("--published-resource-selector=vs={tag}"))
            .arg("--log-format=Console")
            .args(extra)
            .arg(format!("--health-address=127.0.0.1:{}", free_port()))
            .arg(format!("--metrics-address=127.0.0.1:{}", free_port()))
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(log).unwrap_or_else(|e| panic!("{e}")),
            ))
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

/// The local copies this lane's agent made, of the kcp objects named `name` if given (by the
/// name-hash label every agent writes).
async fn local_copies(s: &Servers, lane: &Lane, name: Option<&str>) -> Vec<DynamicObject> {
    let mut selector = format!("syncagent.kcp.io/agent-name={}", lane.agent);
    if let Some(name) = name {
        selector.push_str(&format!(
            ",syncagent.kcp.io/remote-object-name-hash={}",
            kcp_sync::hash::sha1_hex(name)
        ));
    }
    let options = ListOptions {
        label_selector: Some(selector),
        ..ListOptions::default()
    };
    s.service
        .list(&thing(), None, &options)
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

async fn local_count(s: &Servers, lane: &Lane) -> usize {
    local_copies(s, lane, None).await.len()
}

/// What one agent achieved.
struct Measured {
    objects: usize,
    sync_all: Duration,
    kcp_connections: usize,
    idle_mib: f64,
    synced_mib: f64,
    /// The latencies of the changes that arrived, sorted, and whether one did not arrive
    /// within the limit (then it is the last entry, at the limit).
    changes: Latencies,
}

/// Change latencies, sorted; `timed_out` when the last one is the limit a change missed.
struct Latencies {
    sorted: Vec<Duration>,
    timed_out: bool,
}

impl Latencies {
    /// The `q` quantile, "> limit" once it falls on a change that never arrived.
    fn quantile(&self, q: f64) -> String {
        let Some(last) = self.sorted.len().checked_sub(1) else {
            return "none".into();
        };
        let at = ((self.sorted.len() as f64 * q).ceil() as usize)
            .saturating_sub(1)
            .min(last);
        let value = self.sorted[at];
        if self.timed_out && at == last {
            format!("> {:.0} s", value.as_secs_f64())
        } else {
            format!("{:.1} ms", value.as_secs_f64() * 1e3)
        }
    }
}

async fn backlog(lane: &Lane, objects: usize) {
    futures::stream::iter(&lane.consumers)
        .for_each_concurrent(16, |consumer| async move {
            wait_until("the binding serving Things", || async {
                consumer
                    .list(&thing(), Some("default"), &ListOptions::default())
                    .await
                    .is_ok()
            })
            .await;
            for j in 0..objects {
                create_or_keep(
                    &**consumer,
                    json!({"apiVersion": "example.com/v1", "kind": "Thing",
                    "metadata": {"name": format!("t{j}"), "namespace": "default"}, "spec": {"n": j}}),
                )
                .await;
            }
        })
        .await;
}

async fn change_latencies(s: &Servers, lane: &Lane) -> Latencies {
    let changes = env_number("KCP_SYNC_VS_CHANGES", 40);
    let limit = Duration::from_secs(env_number("KCP_SYNC_VS_CHANGE_LIMIT", 60) as u64);
    let mut sorted = Vec::new();
    for i in 0..changes {
        let consumer = &lane.consumers[i % lane.consumers.len()];
        let started = change_t0(&**consumer, i).await;
        loop {
            let seen = local_copies(s, lane, Some("t0"))
                .await
                .iter()
                .any(|c| c.data["spec"]["changed"] == json!(i));
            if seen {
                break;
            }
            if started.elapsed() >= limit {
                eprintln!(
                    "{:>10} | change {i} not at its local copy after {} s: latency phase ended",
                    lane.name,
                    limit.as_secs()
                );
                sorted.sort();
                sorted.push(limit);
                return Latencies {
                    sorted,
                    timed_out: true,
                };
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sorted.push(started.elapsed());
    }
    sorted.sort();
    Latencies {
        sorted,
        timed_out: false,
    }
}

/// Writes change `i` into `t0` of `consumer`; answers when the write was sent.
async fn change_t0(consumer: &dyn ObjectClient, i: usize) -> Instant {
    let at = ObjectRef::namespaced(thing(), "default", "t0");
    let mut live = consumer
        .get(&at)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("t0"));
    live.data["spec"]["changed"] = json!(i);
    let started = Instant::now();
    consumer
        .replace(&live, Subresource::Main)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    started
}

async fn measure(s: &Servers, lane: &Lane, objects: usize) -> (Running, Measured) {
    // The agent itself publishes the schema the consumers need to hold the backlog: it runs
    // without its sync controller until then.
    let publisher = spawn(s, lane, &["--disabled-controllers=sync"]);
    backlog(lane, objects).await;
    drop(publisher);
    let total = lane.consumers.len() * objects;
    let started = Instant::now();
    let agent = spawn(s, lane, &[]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_mib = rss_mib(agent.0.id());
    let mut kcp_connections = 0;
    while local_count(s, lane).await < total {
        kcp_connections = kcp_connections.max(connections_to(agent.0.id(), s.kcp_port));
        // An hour, or one object a second where that is longer (upstream syncs 2.4 a second).
        let limit = Duration::from_secs(3600.max(total as u64));
        assert!(
            started.elapsed() < limit,
            "every local copy within {} s",
            limit.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let sync_all = started.elapsed();
    // Said at once: the change latencies of a slow agent can take many minutes more.
    eprintln!(
        "{:>10} | every local copy after {:.1} s",
        lane.name,
        sync_all.as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let synced_mib = rss_mib(agent.0.id());
    let changes = change_latencies(s, lane).await;
    let measured = Measured {
        objects: total,
        sync_all,
        kcp_connections,
        idle_mib,
        synced_mib,
        changes,
    };
    (agent, measured)
}

fn print(name: &str, m: &Measured) {
    eprintln!(
        "{name:>10} | {:>6} objects | all synced after {:>6.1} s ({:>6.1} objects/s) | at most {} connections to kcp | RSS {:>5.1} MiB at start, {:>5.1} MiB synced | change p50 {}, p99 {} ({} changes)",
        m.objects,
        m.sync_all.as_secs_f64(),
        m.objects as f64 / m.sync_all.as_secs_f64(),
        m.kcp_connections,
        m.idle_mib,
        m.synced_mib,
        m.changes.quantile(0.5),
        m.changes.quantile(0.99),
        m.changes.sorted.len()
    );
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn side_by_side(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let (consumers, objects) = (
        env_number("KCP_SYNC_VS_CONSUMERS", 20),
        env_number("KCP_SYNC_VS_OBJECTS", 50),
    );
    let go_binary = kcp_testbed::go_build::build("api-syncagent")
        .unwrap_or_else(|e| panic!("{e}"))
        .binary;
    let s = rt.block_on(servers());
    let mut running = Vec::new();
    let agents = std::env::var("KCP_SYNC_VS_AGENTS").unwrap_or("upstream,kcp-rs".into());
    // In the order `KCP_SYNC_VS_AGENTS` names them, so that a long run can time the fast agent
    // first on a quiet machine.
    let chosen = agents.split(',').filter_map(|a| match a.trim() {
        "upstream" => Some(("upstream", go_binary.clone())),
        "kcp-rs" => Some(("kcp-rs", PathBuf::from(RS_AGENT))),
        _ => None,
    });
    for (name, binary) in chosen {
        let lane = rt.block_on(lane(&s, name, binary, consumers));
        let (agent, measured) = rt.block_on(measure(&s, &lane, objects));
        print(name, &measured);
        running.push((agent, lane));
    }
    let mut group = c.benchmark_group("syncagent_vs_upstream");
    group.sample_size(10);
    for (_agent, lane) in &running {
        let s = &s;
        group.bench_function(format!("{}_new_object_to_local_copy", lane.name), |b| {
            b.to_async(&rt).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let name = format!("b{}", fastrand::u64(..));
                    let started = Instant::now();
                    create_or_keep(
                        &*lane.consumers[0],
                        json!({"apiVersion": "example.com/v1",
                        "kind": "Thing", "metadata": {"name": name, "namespace": "default"},
                        "spec": {"n": -1}}),
                    )
                    .await;
                    while local_copies(s, lane, Some(&name)).await.is_empty() {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    total += started.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, side_by_side);
criterion_main!(benches);
