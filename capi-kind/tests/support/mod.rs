//! The provider's controllers against kcp-sim over HTTP, with workload clusters from the
//! in-process (kcp-sim) provisioner, and the helpers the behaviour tests share.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use capi_kind::api::{KINDCluster, KindCluster, Phase};
use capi_kind::provisioner::SimProvisioner;
use capi_kind::reconcile::Settings;
use capi_kind::{ControllerConfig, run};
use k8s_openapi::api::core::v1::Secret;
use kcp_core::{Backoff, ObjectClient};
use kcp_sim::{Config, Server};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::await_condition;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

pub struct Env {
    pub sim: Server,
    pub provisioner: SimProvisioner,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), capi_kind::Error>>,
}

impl Env {
    pub async fn start() -> Env {
        Env::start_with(SimProvisioner::new()).await
    }

    pub async fn start_with(provisioner: SimProvisioner) -> Env {
        Env::start_configured(provisioner, |_, _| ()).await
    }

    pub async fn start_configured(
        provisioner: SimProvisioner,
        configure: impl FnOnce(&mut ControllerConfig, &Server),
    ) -> Env {
        Env::run_on(management().await, provisioner, configure)
    }

    /// Starts the controllers against `sim` (a [`management`] server).
    pub fn run_on(
        sim: Server,
        provisioner: SimProvisioner,
        configure: impl FnOnce(&mut ControllerConfig, &Server),
    ) -> Env {
        let mut config =
            ControllerConfig::new(sim.client("").unwrap(), Arc::new(provisioner.clone()));
        config.backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        config.settings = Settings {
            resync: Duration::from_millis(500),
            create_wait: Duration::from_secs(60),
            retry_refused: Duration::from_millis(500),
        };
        configure(&mut config, &sim);
        let (stop, mut rx) = watch::channel(false);
        let task = tokio::spawn(run(config, async move {
            let _ = rx.wait_for(|s| *s).await;
        }));
        Env {
            sim,
            provisioner,
            stop,
            task,
        }
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.sim.client("").unwrap(), "default")
    }

    pub async fn create<K>(&self, yaml: &str) -> K
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + DeserializeOwned,
    {
        let obj: K = serde_saphyr::from_str(yaml).unwrap();
        self.api::<K>()
            .create(&PostParams::default(), &obj)
            .await
            .unwrap()
    }

    /// Creates an object the API server must refuse, returning its answer.
    pub async fn create_refused<K>(&self, yaml: &str) -> Box<kube::core::Status>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + DeserializeOwned,
    {
        let obj: K = serde_saphyr::from_str(yaml).unwrap();
        match self.api::<K>().create(&PostParams::default(), &obj).await {
            Err(kube::Error::Api(status)) => status,
            other => panic!("the API server should refuse {yaml}: {other:?}"),
        }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the controllers stop")
            .unwrap()
            .unwrap();
    }
}

/// The management cluster: a kcp-sim with the provider's CRDs.
pub async fn management() -> Server {
    let sim = Server::start(Config::default()).await.unwrap();
    let admin = sim.object_client("");
    for crd in capi_kind::api::crd_objects().unwrap() {
        admin.create(&crd).await.unwrap();
    }
    sim
}

/// Waits (on a watch, up to 30 s) until `name` satisfies `condition`.
pub async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, condition: impl Fn(&K) -> bool)
where
    K: kube::Resource + Clone + std::fmt::Debug + DeserializeOwned + Send + 'static,
{
    let waiting = await_condition(api.clone(), name, move |o: Option<&K>| {
        o.is_some_and(&condition)
    });
    if tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .is_err()
    {
        let now = api.get_opt(name).await.unwrap();
        panic!("{name}: timed out waiting for {what}; now: {now:#?}");
    }
}

pub async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + DeserializeOwned + Send + 'static,
{
    let gone = await_condition(api.clone(), name, |o: Option<&K>| o.is_none());
    tokio::time::timeout(Duration::from_secs(30), gone)
        .await
        .expect("the object is deleted")
        .unwrap();
}

/// Deletes `name` and waits until it is gone (its finalizer released).
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + DeserializeOwned + Send + 'static,
{
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_gone(api, name).await;
}

/// Waits until KINDCluster `name` (the Go provider's kind) is Ready.
pub async fn wait_kind_cluster_ready(api: &Api<KINDCluster>, name: &str) {
    wait_for(api, name, "Ready", |o| {
        upstream_phase(o) == Some(Phase::Ready)
    })
    .await;
}

pub fn upstream_phase(o: &KINDCluster) -> Option<Phase> {
    o.status.as_ref().and_then(|s| s.phase)
}

pub fn capi_phase(o: &KindCluster) -> Option<Phase> {
    o.status.as_ref().and_then(|s| s.phase)
}

pub fn condition_reason(o: &KindCluster, type_: &str) -> Option<String> {
    let status = o.status.as_ref()?;
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.reason.clone())
}

pub const TEST1: &str = "apiVersion: infrastructure.cluster-k8s.io/v1alpha1\nkind: KINDCluster\nmetadata:\n  name: test-cluster-1\n  namespace: default\nspec:\n  clusterName: test-1\n";

pub fn capi_cluster(name: &str, extra_spec: &str, annotations: &str) -> String {
    format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1\nkind: KindCluster\nmetadata:\n  name: {name}\n  namespace: default\n  annotations: {{{annotations}}}\n  ownerReferences:\n  - apiVersion: cluster.x-k8s.io/v1beta2\n    kind: Cluster\n    name: {name}\n    uid: 00000000-0000-0000-0000-000000000001\nspec: {{{extra_spec}}}\n"
    )
}

pub async fn kubeconfig_client(secret: &Secret, key: &str) -> kube::Client {
    let data = secret.data.as_ref().unwrap()[key].0.clone();
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&data).unwrap()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Polls `check` until it gives `Some` (30 s at most), for what no watch of one object shows.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
