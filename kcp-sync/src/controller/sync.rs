//! One sync controller per PublishedResource (the "syncmanager" of upstream §4.1), over the
//! engaged consumer clusters.
//!
//! A controller watches the projected kind in every engaged cluster (keys: cluster,
//! namespace, name) and the local copies on the service cluster (mapped back through their
//! link metadata), and runs [`sync_object`] on kcp-core's work queue. Clusters engaged after
//! the controller started are picked up from the shared [`Clusters`] registry (upstream bug
//! #99 was missing exactly that).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ObjectReference;
use kcp_core::cluster::{ClusterEvent, EngagedCluster};
use kcp_core::kube::api::{ApiResource, DynamicObject};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::{
    ConditionUpdate, EventRecorder, EventType, ObjectKey, Outcome, Reconciler, TaskSet, WorkQueue,
    WorkerConfig, run_workers, set_condition, write_status,
};
use kcp_core::{Backoff, ObjectClient, TemplateEngine};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::progress::{Progress, Summary};
use super::related_watch::{RelatedWatch, related_watches, run_related_watch};
use crate::api::{
    CONDITION_READY, PublishedResource, PublishedResourceStatus, RelatedResourceOrigin,
};
use crate::error::Error;
use crate::metadata::{AGENT_NAME_LABEL, RemoteObjectKey};
use crate::reconcile::caches::{SyncCaches, object_key};
use crate::reconcile::local_index::{RemoteId, index_key};
use crate::reconcile::sync::{PrimarySync, Sides, Step, SyncConfig, SyncContext, sync_object};

/// The engaged consumer clusters, shared by every sync controller, with a feed of changes.
#[derive(Clone)]
pub struct Clusters {
    engaged: Arc<RwLock<BTreeMap<String, EngagedCluster>>>,
    changes: broadcast::Sender<ClusterEvent>,
}

impl Default for Clusters {
    fn default() -> Self {
        Self {
            engaged: Arc::default(),
            changes: broadcast::channel(1024).0,
        }
    }
}

impl Clusters {
    /// Records a provider event and tells the running controllers.
    pub fn apply(&self, event: ClusterEvent) {
        if let Ok(mut engaged) = self.engaged.write() {
            match &event {
                ClusterEvent::Engaged(c) => {
                    engaged.insert(c.name.as_str().to_owned(), c.clone());
                }
                ClusterEvent::Disengaged(name) => {
                    engaged.remove(name.as_str());
                }
            }
        }
        let _ = self.changes.send(event);
    }

    /// The engaged cluster `name`.
    pub fn get(&self, name: &str) -> Option<EngagedCluster> {
        self.engaged.read().ok()?.get(name).cloned()
    }

    /// Every engaged cluster.
    pub fn all(&self) -> Vec<EngagedCluster> {
        self.engaged
            .read()
            .map(|e| e.values().cloned().collect())
            .unwrap_or_default()
    }

    /// How many clusters are engaged.
    pub fn len(&self) -> usize {
        self.engaged.read().map(|e| e.len()).unwrap_or_default()
    }

    /// Whether no cluster is engaged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn subscribe(&self) -> broadcast::Receiver<ClusterEvent> {
        self.changes.subscribe()
    }
}

/// What every sync controller shares.
#[derive(Clone)]
pub struct SyncShared {
    /// Agent settings.
    pub config: Arc<SyncConfig>,
    /// The service cluster.
    pub service: Arc<dyn ObjectClient>,
    /// The service cluster, for watches.
    pub service_kube: Option<kube::Client>,
    /// The engaged consumer clusters.
    pub clusters: Clusters,
    /// The shared template engine.
    pub engine: Arc<TemplateEngine>,
    /// Workers per controller (upstream: 4).
    pub workers: usize,
    /// Records Events on kcp objects.
    pub recorder: EventRecorder,
    /// How often the PublishedResource's object counts and `Ready` condition are written
    /// (when they changed).
    pub status_interval: Duration,
    /// The agent's metrics (object counts per PublishedResource).
    pub metrics: super::Metrics,
}

struct ObjectReconciler {
    shared: SyncShared,
    target: PrimarySync,
    progress: Arc<Progress>,
    caches: Arc<SyncCaches>,
}

/// How often a primary whose local copy is terminating is looked at again (upstream's fixed
/// requeue), besides the watch event of its final deletion.
const WAITING_RECHECK: Duration = Duration::from_secs(5);

#[async_trait]
impl Reconciler<ObjectKey> for ObjectReconciler {
    type Error = Error;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, Error> {
        let Some(cluster) = self.shared.clusters.get(&key.cluster) else {
            return Ok(Outcome::Done);
        };
        let ctx = SyncContext {
            config: &self.shared.config,
            engine: &self.shared.engine,
            recorder: Some(&self.shared.recorder),
            caches: Some(&self.caches),
            sides: Sides {
                kcp: cluster.client.as_ref(),
                service: self.shared.service.as_ref(),
                cluster: &key.cluster,
            },
        };
        let result = sync_object(&ctx, &self.target, key.namespace.as_deref(), &key.name).await;
        match result {
            Ok(Step::Done) => {
                self.progress.synced(key);
                Ok(Outcome::Done)
            }
            Ok(Step::Gone) => {
                self.progress.gone(key);
                Ok(Outcome::Done)
            }
            Ok(Step::Again) => {
                self.progress.pending(key);
                Ok(Outcome::RequeueAfter(Duration::ZERO))
            }
            Ok(Step::Waiting) => {
                self.progress.pending(key);
                Ok(Outcome::RequeueAfter(WAITING_RECHECK))
            }
            Err(e) => {
                if e.is_conflict() {
                    // A cached version was stale: read the server's next time.
                    self.caches.forget(key);
                }
                self.progress.failing(key, e.to_string());
                Err(e)
            }
        }
    }

    /// A Warning `ReconcilingError` on the kcp object with upstream's generic text (the real
    /// error stays on the service side: logs and the PublishedResource status).
    async fn failed(&self, key: &ObjectKey, error: &Error) {
        tracing::warn!(error = %error, key = %key, "sync failed");
        let Some(cluster) = self.shared.clusters.get(&key.cluster) else {
            return;
        };
        let reference = ObjectReference {
            api_version: Some(api_version(&self.target.remote_gvk)),
            kind: Some(self.target.remote_gvk.kind.clone()),
            name: Some(key.name.clone()),
            namespace: key.namespace.clone(),
            ..ObjectReference::default()
        };
        let message = "a provider-side issue has occurred";
        if let Err(e) = self
            .shared
            .recorder
            .record(
                cluster.client.as_ref(),
                &reference,
                EventType::Warning,
                "ReconcilingError",
                message,
            )
            .await
        {
            tracing::debug!(error = %e, "recording ReconcilingError failed");
        }
    }
}

impl kcp_core::runtime::Classify for Error {
    fn is_transient(&self) -> bool {
        Error::is_transient(self)
    }

    fn reason(&self) -> &str {
        Error::reason(self)
    }
}

/// Runs the sync controller of `target` until `token` is cancelled.
pub async fn run_sync_controller(
    shared: SyncShared,
    target: PrimarySync,
    remote: ApiResource,
    local: ApiResource,
    token: CancellationToken,
) {
    let queue = WorkQueue::new(Backoff::default());
    let mut watches: TaskSet<String> = TaskSet::new();
    let mut changes = shared.clusters.subscribe();
    let related = related_watches(&target);
    let caches = Arc::new(SyncCaches::default());
    let w = Watches {
        queue: &queue,
        remote: &remote,
        related: &related,
        caches: &caches,
    };
    for cluster in shared.clusters.all() {
        w.cluster(&mut watches, cluster);
    }
    if let Some(kube) = shared.service_kube.clone() {
        let caches = caches.clone();
        watches.ensure(String::new(), "local", |t| {
            let agent = shared.config.agent.clone();
            watch_local(kube.clone(), local, agent, queue.clone(), caches, t)
        });
        for rel in related
            .iter()
            .filter(|r| r.origin == RelatedResourceOrigin::Service)
        {
            let (kube, rel, service, queue) = (
                kube.clone(),
                rel.clone(),
                shared.service.clone(),
                queue.clone(),
            );
            watches.ensure(format!("#r{}", rel.index), "service", move |t| {
                run_related_watch(kube, rel, service, None, queue, t)
            });
        }
    }
    let name = format!("sync-{}", target.pr.name());
    let progress = Arc::new(Progress::default());
    let status = tokio::spawn(write_progress(
        shared.clone(),
        target.pr.name().to_owned(),
        progress.clone(),
    ));
    let reconciler = Arc::new(ObjectReconciler {
        shared: shared.clone(),
        target,
        progress,
        caches: caches.clone(),
    });
    let mut config = WorkerConfig::new(name, shared.workers);
    config.metrics = shared.metrics.controllers.clone();
    let workers = tokio::spawn(run_workers(queue.clone(), reconciler, config));
    loop {
        tokio::select! {
            () = token.cancelled() => break,
            change = changes.recv() => match change {
                Ok(ClusterEvent::Engaged(cluster)) => w.cluster(&mut watches, cluster),
                Ok(ClusterEvent::Disengaged(name)) => {
                    let prefix = format!("{}#", name.as_str());
                    watches.retain(|k| k != name.as_str() && !k.starts_with(&prefix));
                    caches.remote.retain(|k, _| k.cluster != name.as_str());
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    for cluster in shared.clusters.all() {
                        w.cluster(&mut watches, cluster);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    watches.retain(|_| false);
    status.abort();
    queue.shutdown();
    let _ = workers.await;
}

/// What a controller watches per engaged cluster.
struct Watches<'a> {
    queue: &'a WorkQueue<ObjectKey>,
    remote: &'a ApiResource,
    related: &'a [RelatedWatch],
    caches: &'a Arc<SyncCaches>,
}

impl Watches<'_> {
    /// Starts (or keeps) the watches of `cluster`: the primary kind, and the kcp-origin
    /// related kinds with a `watch`.
    fn cluster(&self, watches: &mut TaskSet<String>, cluster: EngagedCluster) {
        let Some(kube) = cluster.kube.clone() else {
            return;
        };
        let name = cluster.name.as_str().to_owned();
        let fingerprint = cluster.base_url.clone().unwrap_or_default();
        for rel in self
            .related
            .iter()
            .filter(|r| r.origin == RelatedResourceOrigin::Kcp)
        {
            let (kube, rel, client, queue) = (
                kube.clone(),
                rel.clone(),
                cluster.client.clone(),
                self.queue.clone(),
            );
            let cluster_name = Some(name.clone());
            watches.ensure(format!("{name}#r{}", rel.index), &fingerprint, move |t| {
                run_related_watch(kube, rel, client, cluster_name, queue, t)
            });
        }
        let cluster = WatchedCluster {
            name,
            fingerprint,
            kube,
        };
        watch_cluster(watches, self.queue, self.remote, self.caches, cluster);
    }
}

/// One engaged cluster's watch of the primary kind.
struct WatchedCluster {
    name: String,
    fingerprint: String,
    kube: kube::Client,
}

fn watch_cluster(
    watches: &mut TaskSet<String>,
    queue: &WorkQueue<ObjectKey>,
    remote: &ApiResource,
    caches: &Arc<SyncCaches>,
    cluster: WatchedCluster,
) {
    let (queue, remote, caches) = (queue.clone(), remote.clone(), caches.clone());
    let WatchedCluster {
        name,
        fingerprint,
        kube,
    } = cluster;
    watches.ensure(name.clone(), &fingerprint, move |token| async move {
        let api = kube::Api::<DynamicObject>::all_with(kube, &remote);
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(stream);
        let mut listed: Option<HashSet<ObjectKey>> = None;
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                event = stream.next() => match event {
                    Some(Ok(event)) => remote_event(&queue, &caches, &name, &mut listed, event),
                    Some(Err(e)) => tracing::debug!(error = %e, cluster = %name, "watch error"),
                    None => return,
                },
            }
        }
    });
}

/// Caches and enqueues one event of a cluster's watch; a relist (`listed`: the keys listed so
/// far) drops the cached objects it no longer lists.
fn remote_event(
    queue: &WorkQueue<ObjectKey>,
    caches: &SyncCaches,
    cluster: &str,
    listed: &mut Option<HashSet<ObjectKey>>,
    event: watcher::Event<DynamicObject>,
) {
    let (obj, deleted) = match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => (o, false),
        watcher::Event::Delete(o) => (o, true),
        watcher::Event::Init => {
            *listed = Some(HashSet::new());
            return;
        }
        watcher::Event::InitDone => {
            if let Some(keys) = listed.take() {
                caches
                    .remote
                    .retain(|k, _| k.cluster != cluster || keys.contains(k));
            }
            return;
        }
    };
    let name = obj.metadata.name.clone().unwrap_or_default();
    let key = object_key(cluster, obj.metadata.namespace.as_deref(), &name);
    if let Ok(value) = serde_json::to_value(&obj) {
        if deleted {
            caches.remote.delete(&key, &value);
        } else {
            caches.remote.upsert(&key, value);
        }
    }
    if let Some(keys) = listed.as_mut() {
        keys.insert(key.clone());
    }
    queue.add(key);
}

async fn watch_local(
    kube: kube::Client,
    local: ApiResource,
    agent: String,
    queue: WorkQueue<ObjectKey>,
    caches: Arc<SyncCaches>,
    token: CancellationToken,
) {
    let index = &caches.local;
    let mut listed: Option<HashSet<RemoteId>> = None;
    let api = kube::Api::<DynamicObject>::all_with(kube, &local);
    let config = watcher::Config::default().labels(&format!("{AGENT_NAME_LABEL}={agent}"));
    let stream = watcher(api, config).default_backoff();
    futures::pin_mut!(stream);
    loop {
        let event = tokio::select! {
            () = token.cancelled() => return,
            event = stream.next() => event,
        };
        let (object, deleted) = match event {
            Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => (o, false),
            Some(Ok(watcher::Event::Delete(o))) => (o, true),
            Some(Ok(watcher::Event::Init)) => {
                index.set_unsynced();
                listed = Some(HashSet::new());
                continue;
            }
            Some(Ok(watcher::Event::InitDone)) => {
                if let Some(keys) = listed.take() {
                    index.retain_listed(&keys);
                }
                index.set_synced();
                continue;
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, "local watch error");
                continue;
            }
            None => return,
        };
        let value = serde_json::to_value(&object).unwrap_or_default();
        let Some(key) = RemoteObjectKey::from_local(&value) else {
            continue;
        };
        if let Some(keys) = listed.as_mut() {
            keys.insert(index_key(&key));
        }
        if deleted {
            index.remove(&key, &value);
        } else {
            index.insert(&key, value);
        }
        queue.add(if key.namespace.is_empty() {
            ObjectKey::cluster_scoped(key.cluster, key.name)
        } else {
            ObjectKey::namespaced(key.cluster, key.namespace, key.name)
        });
    }
}

fn api_version(gvk: &kcp_core::kube::api::GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        gvk.version.clone()
    } else {
        format!("{}/{}", gvk.group, gvk.version)
    }
}

/// Writes the object counts and the `Ready` condition of the PublishedResource whenever they
/// changed, every `status_interval`.
async fn write_progress(shared: SyncShared, pr: String, progress: Arc<Progress>) {
    let mut last: Option<Summary> = None;
    let mut tick = tokio::time::interval(shared.status_interval);
    loop {
        tick.tick().await;
        let summary = progress.summary();
        if last.as_ref() == Some(&summary) {
            continue;
        }
        shared.metrics.set_objects(&pr, &summary.counts);
        let update = match &summary.failure {
            None => ConditionUpdate::new(CONDITION_READY, true, "ObjectsSynced")
                .message(format!("{} objects synced", summary.counts.synced)),
            Some((key, error)) => ConditionUpdate::new(CONDITION_READY, false, "ObjectsFailing")
                .message(format!(
                    "{} of {} objects failing; {key}: {error}",
                    summary.counts.failing,
                    summary.counts.synced + summary.counts.failing + summary.counts.pending
                )),
        };
        let counts = summary.counts;
        let result =
            write_status::<PublishedResource, _>(shared.service.as_ref(), None, &pr, |obj| {
                let status = obj
                    .status
                    .get_or_insert_with(PublishedResourceStatus::default);
                status.objects = counts;
                set_condition(&mut status.conditions, update.clone(), now());
            })
            .await;
        match result {
            Ok(_) => last = Some(summary),
            Err(e) => tracing::debug!(error = %e, "writing the object counts failed"),
        }
    }
}
