//! capi-kind: 20 KINDClusters created together with a provisioner that takes 2 s per create
//! (target: all Ready in <= 4 s; upstream creates inside the reconcile, one at a time: 40 s).
//!
//! The provider library runs over HTTP against kcp-sim with `--max-concurrent-creates 20`; the
//! workload clusters are in-process kcp-sim servers started after the 2 s delay. Each
//! iteration starts from an empty management cluster and measures from the creation of the 20
//! objects until every one is `Ready` with its kubeconfig Secret written.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capi_kind::api::{KINDCluster, Phase};
use capi_kind::provisioner::{Provisioner, SimProvisioner};
use capi_kind::{ControllerConfig, run};
use criterion::{Criterion, criterion_group, criterion_main};
use kcp_core::{ObjectClient, ObjectClientExt, parse_manifests};
use kcp_sim::{Config, Server};

const CLUSTERS: usize = 20;
const CREATE: Duration = Duration::from_secs(2);

async fn create_together() -> Duration {
    let sim = Server::start(Config::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let admin = sim.object_client("");
    for crd in capi_kind::api::crd_objects().unwrap_or_else(|e| panic!("{e}")) {
        admin.create(&crd).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let provisioner = SimProvisioner::new().with_create_delay(CREATE);
    let client = sim.client("").unwrap_or_else(|e| panic!("{e}"));
    let mut config = ControllerConfig::new(client, Arc::new(provisioner.clone()));
    config.max_concurrent_creates = CLUSTERS;
    let ready = config.ready.clone();
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let controller = tokio::spawn(run(config, async move {
        let _ = stopped.wait_for(|s| *s).await;
    }));
    while !ready.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = Instant::now();
    for i in 0..CLUSTERS {
        let yaml = format!(
            "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata: {{name: c{i}, namespace: default}}\nspec: {{clusterName: c{i}}}\n"
        );
        let object = parse_manifests("bench", &yaml)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0);
        admin
            .create(&object)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    loop {
        let list: Vec<KINDCluster> = admin
            .list_typed(Some("default"), &Default::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let ready = list
            .iter()
            .filter(|o| o.status.as_ref().and_then(|s| s.phase) == Some(Phase::Ready))
            .count();
        if ready == CLUSTERS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = started.elapsed();
    let _ = stop.send(true);
    let _ = controller.await;
    for name in provisioner.list().await.unwrap_or_default() {
        let _ = provisioner.delete(&name).await;
    }
    sim.shutdown().await;
    took
}

fn capi_kind(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let mut group = c.benchmark_group("capi_kind");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.bench_function("20_clusters_2s_creates_all_ready", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += create_together().await;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, capi_kind);
criterion_main!(benches);
