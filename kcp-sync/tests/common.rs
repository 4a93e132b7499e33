//! Fixtures shared by the behaviour tests: a service cluster and a kcp, both kcp-sim.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kcp_core::cluster::{ApiExportConsumers, ClusterClients};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kcp_sim::{Config, PLAIN_CLUSTER, Server, SimClient};
use kcp_sync::api::{PublishedResource, PublishedResourceSpec, SourceResourceDescriptor};
use kcp_sync::controller::{Agent, Metrics};
use kcp_sync::reconcile::sync::SyncConfig;
use serde_json::{Value, json};

/// The agent's state namespace on the service cluster.
pub const STATE_NS: &str = "kcp-system";

/// Both simulators and the clients the tests use.
pub struct Env {
    /// The service cluster (plain Kubernetes).
    pub service_sim: Server,
    /// kcp.
    pub kcp_sim: Server,
    /// The service cluster, in-process.
    pub service: SimClient,
    /// The provider workspace `root:provider` (APIExport `crontabs`).
    pub provider: SimClient,
    /// The provider workspace's logical cluster name.
    pub provider_cluster: String,
}

/// JSON as a `DynamicObject`.
pub fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// The CronTab CRD (namespaced, status subresource) with one short name.
pub fn crontab_crd(short_name: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": [short_name]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    })
}

/// A PublishedResource of CronTabs without projection.
pub fn crontab_pr(name: &str) -> PublishedResource {
    PublishedResource::new(
        name,
        PublishedResourceSpec {
            resource: SourceResourceDescriptor {
                api_group: "example.com".into(),
                kind: "CronTab".into(),
                ..Default::default()
            },
            ..Default::default()
        },
    )
}

/// Creates an object from JSON.
pub async fn create(client: &dyn ObjectClient, value: Value) -> DynamicObject {
    client.create(&object(value)).await.unwrap()
}

impl Env {
    /// Starts both simulators: the PublishedResource and CronTab CRDs on the service
    /// cluster, `root:provider` with APIExport `crontabs` in kcp.
    pub async fn start() -> Env {
        Self::start_with(Config::kcp()).await
    }

    /// [`Env::start`] with a kcp of this configuration (e.g. two shards).
    pub async fn start_with(kcp: Config) -> Env {
        let service_sim = Server::start(Config::default()).await.unwrap();
        let kcp_sim = Server::start(kcp).await.unwrap();
        let service = service_sim.object_client(PLAIN_CLUSTER);
        for crd in kcp_sync::api::crds() {
            service.create_typed(&crd).await.unwrap();
        }
        create(&service, crontab_crd("ct")).await;
        let root = kcp_sim.object_client("root");
        create(
            &root,
            json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "provider"}, "spec": {}}),
        )
        .await;
        let provider_cluster = kcp_sim.logical_cluster("root:provider").unwrap();
        let provider = kcp_sim.object_client("root:provider");
        create(
            &provider,
            json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
            "metadata": {"name": "crontabs"}, "spec": {}}),
        )
        .await;
        Env {
            service_sim,
            kcp_sim,
            service,
            provider,
            provider_cluster,
        }
    }

    /// Creates a PublishedResource.
    pub async fn publish(&self, pr: &PublishedResource) -> PublishedResource {
        self.service.create_typed(pr).await.unwrap()
    }

    /// Reads a PublishedResource.
    pub async fn pr(&self, name: &str) -> PublishedResource {
        self.service.get_typed(None, name).await.unwrap().unwrap()
    }
}

/// An `ObjectClient` that counts the calls it forwards, by `"<verb> <Kind>"`.
#[derive(Clone)]
pub struct CountingClient {
    inner: SimClient,
    counts: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>,
}

impl CountingClient {
    /// Counts the calls made through `inner`.
    pub fn new(inner: SimClient) -> Self {
        Self {
            inner,
            counts: Default::default(),
        }
    }

    fn count(&self, verb: &str, kind: &str) {
        *self
            .counts
            .lock()
            .unwrap()
            .entry(format!("{verb} {kind}"))
            .or_default() += 1;
    }

    /// How many `"<verb> <Kind>"` calls were made.
    pub fn calls(&self, call: &str) -> usize {
        self.counts
            .lock()
            .unwrap()
            .get(call)
            .copied()
            .unwrap_or_default()
    }

    /// Forgets every count.
    pub fn reset(&self) {
        self.counts.lock().unwrap().clear();
    }
}

fn kind_of(obj: &DynamicObject) -> String {
    obj.types
        .as_ref()
        .map(|t| t.kind.clone())
        .unwrap_or_default()
}

#[async_trait::async_trait]
impl ObjectClient for CountingClient {
    async fn resolve(
        &self,
        gvk: &kcp_core::kube::api::GroupVersionKind,
    ) -> kcp_core::Result<kcp_core::ResourceInfo> {
        self.inner.resolve(gvk).await
    }

    async fn get(&self, target: &kcp_core::ObjectRef) -> kcp_core::Result<Option<DynamicObject>> {
        self.count("get", &target.gvk.kind);
        self.inner.get(target).await
    }

    async fn list(
        &self,
        gvk: &kcp_core::kube::api::GroupVersionKind,
        namespace: Option<&str>,
        options: &kcp_core::ListOptions,
    ) -> kcp_core::Result<kcp_core::ObjectList> {
        self.count("list", &gvk.kind);
        self.inner.list(gvk, namespace, options).await
    }

    async fn create(&self, obj: &DynamicObject) -> kcp_core::Result<DynamicObject> {
        self.count("create", &kind_of(obj));
        self.inner.create(obj).await
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: kcp_core::Subresource,
    ) -> kcp_core::Result<DynamicObject> {
        self.count("replace", &kind_of(obj));
        self.inner.replace(obj, subresource).await
    }

    async fn patch(
        &self,
        target: &kcp_core::ObjectRef,
        subresource: kcp_core::Subresource,
        patch: &kcp_core::ObjectPatch,
        options: &kcp_core::PatchOptions,
    ) -> kcp_core::Result<DynamicObject> {
        self.count("patch", &target.gvk.kind);
        self.inner.patch(target, subresource, patch, options).await
    }

    async fn delete(
        &self,
        target: &kcp_core::ObjectRef,
        options: &kcp_core::DeleteOptions,
    ) -> kcp_core::Result<kcp_core::DeleteOutcome> {
        self.count("delete", &target.gvk.kind);
        self.inner.delete(target, options).await
    }
}

/// Polls `check` every 20 ms for up to 15 s.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_within(what, 750, check).await;
}

/// Polls `check` every 20 ms, `polls` times at most.
pub async fn eventually_within<F, Fut>(what: &str, polls: usize, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..polls {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The whole agent over HTTP: export `crontabs` in `root:provider`, consumers from its
/// endpoint slice, the service cluster through its kube client too (watches, discovery).
pub fn agent(env: &Env) -> Agent {
    let clients = Arc::new(ClusterClients::new(
        env.kcp_sim.kube_config("root:provider").unwrap(),
    ));
    let provider = ApiExportConsumers::from_endpoint_slice(
        clients,
        env.kcp_sim.client("root:provider").unwrap(),
        "crontabs",
    );
    Agent {
        sync: SyncConfig::new("agent", STATE_NS),
        export_name: "crontabs".into(),
        selector: String::new(),
        disabled: Default::default(),
        service: Arc::new(env.service_sim.object_client(PLAIN_CLUSTER)),
        service_kube: Some(env.service_sim.client(PLAIN_CLUSTER).unwrap()),
        kcp: Arc::new(env.kcp_sim.object_client("root:provider")),
        kcp_kube: Some(env.kcp_sim.client("root:provider").unwrap()),
        provider: Arc::new(provider),
        resync: Duration::from_secs(300),
        workers: 2,
        metrics: Metrics::default(),
        ready: Default::default(),
        status_interval: Duration::from_millis(50),
    }
}
