//! One sync controller per PublishedResource (the "syncmanager" of upstream §4.1), over the
//! engaged consumer clusters.
//!
//! A controller watches the projected kind in the engaged clusters, once per virtual-workspace
//! URL (see `super::kcp_watches`; keys: cluster, namespace, name), and the local copies on
//! the service cluster (mapped back through their link metadata), and runs [`sync_object`] on
//! kcp-core's work queue. Clusters engaged after
//! the controller started are picked up from the shared [`Clusters`] registry (upstream bug
//! #99 was missing exactly that).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use kcp_core::cluster::{ClusterEvent, EngagedCluster};
use kcp_core::kube::api::{ApiResource, DynamicObject};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::runtime::{
    ConditionUpdate, EventRecorder, EventType, ObjectKey, Outcome, Reconciler, TaskSet, WorkQueue,
    WorkerConfig, run_workers,
};
use kcp_core::{Backoff, ObjectClient, TemplateEngine};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::kcp_watches::KcpWatches;
use super::progress::{Progress, Summary};
use super::related_watch::{RelatedSide, RelatedWatch, related_watches, run_related_watch};
use crate::api::{CONDITION_READY, RelatedResourceOrigin};
use crate::error::Error;
use crate::metadata::{AGENT_NAME_LABEL, RemoteObjectKey};
use crate::reconcile::caches::SyncCaches;
use crate::reconcile::kcp_events::{KcpEvents, RECONCILING_ERROR};
use crate::reconcile::local_index::{RemoteId, index_key};
use crate::reconcile::published_status::{self, StatusChange};
use crate::reconcile::sync::{
    PrimarySync, Sides, Step, SyncConfig, SyncContext, api_version, sync_object,
};

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
        let mut engaged = self.engaged.write().unwrap_or_else(PoisonError::into_inner);
        match &event {
            ClusterEvent::Engaged(c) => {
                engaged.insert(c.name.as_str().to_owned(), c.clone());
            }
            ClusterEvent::Disengaged(name) => {
                engaged.remove(name.as_str());
            }
        }
        drop(engaged);
        let _ = self.changes.send(event);
    }

    /// The engaged cluster `name`.
    pub fn get(&self, name: &str) -> Option<EngagedCluster> {
        let engaged = self.engaged.read().unwrap_or_else(PoisonError::into_inner);
        engaged.get(name).cloned()
    }

    /// Every engaged cluster.
    pub fn all(&self) -> Vec<EngagedCluster> {
        let engaged = self.engaged.read().unwrap_or_else(PoisonError::into_inner);
        engaged.values().cloned().collect()
    }

    /// How many clusters are engaged.
    pub fn len(&self) -> usize {
        self.engaged
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no cluster is engaged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ClusterEvent> {
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
        // Only the key is known here: the object as far as the Event's reference needs it.
        let object = serde_json::json!({
            "apiVersion": api_version(&self.target.remote_gvk),
            "kind": self.target.remote_gvk.kind,
            "metadata": {"name": key.name, "namespace": key.namespace},
        });
        let events = KcpEvents {
            recorder: Some(&self.shared.recorder),
            caches: Some(&self.caches),
            kcp: cluster.client.as_ref(),
            cluster: &key.cluster,
        };
        let (reason, message) = RECONCILING_ERROR;
        events
            .record(&object, EventType::Warning, reason, message)
            .await;
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
    let changes = shared.clusters.subscribe();
    let related = related_watches(&target);
    let caches = Arc::new(SyncCaches::default());
    let w = KcpWatches {
        queue: &queue,
        remote: &remote,
        related: &related,
        caches: &caches,
        clusters: &shared.clusters,
    };
    for cluster in shared.clusters.all() {
        w.engaged(&mut watches, cluster);
    }
    watch_service(&mut watches, &shared, local, &related, &queue, &caches);
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
    follow_clusters(&token, changes, &w, &mut watches).await;
    watches.retain(|_| false);
    status.abort();
    queue.shutdown();
    let _ = workers.await;
}

/// Starts the watches on the service cluster: the local copies and the service-origin related
/// objects (none without a kube client for it).
fn watch_service(
    watches: &mut TaskSet<String>,
    shared: &SyncShared,
    local: ApiResource,
    related: &[RelatedWatch],
    queue: &WorkQueue<ObjectKey>,
    caches: &Arc<SyncCaches>,
) {
    let Some(kube) = shared.service_kube.clone() else {
        return;
    };
    let caches = caches.clone();
    watches.ensure(String::new(), "local", |t| {
        let agent = shared.config.agent.clone();
        watch_local(kube.clone(), local, agent, queue.clone(), caches, t)
    });
    for rel in related
        .iter()
        .filter(|r| r.origin == RelatedResourceOrigin::Service)
    {
        let side = RelatedSide::Service(shared.service.clone());
        let (kube, rel, queue) = (kube.clone(), rel.clone(), queue.clone());
        watches.ensure(format!("#r{}", rel.index), "service", move |t| {
            run_related_watch(kube, rel, side, queue, t)
        });
    }
}

/// Starts and stops the kcp watches as clusters are engaged and disengaged (all engaged
/// clusters again after missed changes), until `token` is cancelled or the registry closes.
async fn follow_clusters(
    token: &CancellationToken,
    mut changes: broadcast::Receiver<ClusterEvent>,
    w: &KcpWatches<'_>,
    watches: &mut TaskSet<String>,
) {
    loop {
        tokio::select! {
            () = token.cancelled() => return,
            change = changes.recv() => match change {
                Ok(ClusterEvent::Engaged(cluster)) => w.engaged(watches, cluster),
                Ok(ClusterEvent::Disengaged(name)) => w.disengaged(watches, name.as_str()),
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    for cluster in w.clusters.all() {
                        w.engaged(watches, cluster);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
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
        let change = StatusChange::Progress {
            objects: summary.counts,
            ready: update,
        };
        if published_status::write_or_warn(shared.service.as_ref(), &pr, &change).await {
            last = Some(summary);
        }
    }
}
