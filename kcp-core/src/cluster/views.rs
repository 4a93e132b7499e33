//! Per-URL virtual-workspace watches, the engine under the kcp cluster providers.
//!
//! A provider follows one named object (a WorkspaceType, an APIExportEndpointSlice, an
//! APIExport) whose status lists virtual-workspace URLs, one per shard. For every URL it keeps
//! one wildcard watch (`<url>/clusters/*`) of the kind that announces clusters there
//! (LogicalClusters carrying an initializer, APIBindings of an export), starting and stopping
//! those watches as URLs come and go. A cluster is engaged when an announcing object appears
//! and disengaged when the last one is gone: deleted, no longer announcing, missing from a
//! relist, or its URL dropped. Deleting the followed object disengages everything;
//! recreating it starts again.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::cluster::{ClusterClients, ClusterEvent, EngagedCluster, Engagements};
use crate::error::Result;
use crate::kcp::{CLUSTER_ANNOTATION, ClusterName};
use crate::kube_client::KubeObjectClient;
use crate::runtime::TaskSet;

/// Whether an object seen in a view announces its cluster.
pub(crate) type Announces = Arc<dyn Fn(&DynamicObject) -> bool + Send + Sync>;

/// What the per-URL watches look at.
#[derive(Clone)]
pub(crate) struct ViewSpec {
    /// The kind watched at `<url>/clusters/*`, read as `DynamicObject` so that nothing this
    /// code does not model is lost when a copy is written back.
    pub resource: ApiResource,
    /// Which of its objects engage their cluster.
    pub announces: Announces,
}

/// The object whose status lists the URLs.
pub(crate) struct UrlSource<K> {
    /// Its API (in its workspace).
    pub api: Api<K>,
    /// Its name.
    pub name: String,
    /// The sorted, deduplicated URLs its status lists.
    pub urls_of: fn(&K) -> Vec<String>,
}

/// What a provider publishes about its URLs: the ones watched, and the ones whose watch fails
/// now with the error it failed with (cleared once it lists again).
#[derive(Debug)]
pub(crate) struct Published {
    /// The URLs being watched, sorted.
    pub urls: watch::Sender<Vec<String>>,
    /// URL -> the last error of its watch, while it fails.
    pub failures: watch::Sender<BTreeMap<String, String>>,
}

impl Published {
    pub(crate) fn new() -> Self {
        Published {
            urls: watch::channel(Vec::new()).0,
            failures: watch::channel(BTreeMap::new()).0,
        }
    }

    fn failed(&self, url: String, error: String) {
        self.failures.send_if_modified(|current| {
            let changed = current.get(&url) != Some(&error);
            current.insert(url, error);
            changed
        });
    }

    fn recovered(&self, url: &str) {
        self.failures
            .send_if_modified(|current| current.remove(url).is_some());
    }
}

/// What one URL's watch saw.
enum ViewEvent {
    Failed {
        url: String,
        error: String,
    },
    Seen {
        url: String,
        object: Box<DynamicObject>,
    },
    Gone {
        url: String,
        object: Box<DynamicObject>,
    },
    Relisted {
        url: String,
        objects: Vec<DynamicObject>,
    },
}

/// Follows `source` and its views until `events` closes (see the module docs); `published`
/// always holds the URLs being watched and those whose watch fails.
pub(crate) async fn follow<K>(
    source: UrlSource<K>,
    spec: ViewSpec,
    clients: Arc<ClusterClients>,
    events: &mpsc::Sender<ClusterEvent>,
    published: &Published,
) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let (view_tx, mut view_rx) = mpsc::channel(256);
    let mut run = Views {
        spec,
        clients,
        events,
        published,
        engagements: Engagements::new(),
        per_url: BTreeMap::new(),
        views: TaskSet::new(),
        view_tx,
    };
    let config = watcher::Config::default().fields(&format!("metadata.name={}", source.name));
    let mut followed = watcher(source.api.clone(), config)
        .default_backoff()
        .boxed();
    let mut relisted = None;
    loop {
        let open = tokio::select! {
            _ = events.closed() => false,
            event = followed.next() => match event {
                Some(Ok(watcher::Event::Init)) => { relisted = None; true }
                Some(Ok(watcher::Event::InitApply(obj))) => { relisted = Some(obj); true }
                Some(Ok(watcher::Event::InitDone)) => {
                    let urls = relisted.take().map(|o| (source.urls_of)(&o)).unwrap_or_default();
                    run.set_urls(urls).await
                }
                Some(Ok(watcher::Event::Apply(obj))) => run.set_urls((source.urls_of)(&obj)).await,
                Some(Ok(watcher::Event::Delete(_))) => run.set_urls(Vec::new()).await,
                Some(Err(err)) => {
                    tracing::debug!(name = %source.name, error = %err, "watch of the URL source failed; retrying");
                    true
                }
                None => false,
            },
            Some(view) = view_rx.recv() => match view {
                ViewEvent::Failed { url, error } => { run.published.failed(url, error); true }
                ViewEvent::Seen { url, object } => { run.published.recovered(&url); run.seen(url, *object).await }
                ViewEvent::Gone { url, object } => run.gone(&url, &object).await,
                ViewEvent::Relisted { url, objects } => { run.published.recovered(&url); run.relisted(url, objects).await }
            },
        };
        if !open {
            break;
        }
    }
    run.views.shutdown(std::time::Duration::from_secs(1)).await;
    Ok(())
}

/// The bookkeeping of one provider run: for each URL, each cluster engaged through it and the
/// names of the objects announcing it there.
struct Views<'a> {
    spec: ViewSpec,
    clients: Arc<ClusterClients>,
    events: &'a mpsc::Sender<ClusterEvent>,
    published: &'a Published,
    engagements: Engagements,
    per_url: BTreeMap<String, BTreeMap<ClusterName, BTreeSet<String>>>,
    views: TaskSet<String>,
    view_tx: mpsc::Sender<ViewEvent>,
}

impl Views<'_> {
    /// Sends an event; `false` once the receiver is gone.
    async fn send(&self, event: Option<ClusterEvent>) -> bool {
        match event {
            Some(event) => self.events.send(event).await.is_ok(),
            None => true,
        }
    }

    async fn set_urls(&mut self, urls: Vec<String>) -> bool {
        let wanted: BTreeSet<String> = urls.iter().cloned().collect();
        let dropped: Vec<String> = self
            .per_url
            .keys()
            .filter(|u| !wanted.contains(*u))
            .cloned()
            .collect();
        for url in dropped {
            self.views.stop(&url);
            self.published.recovered(&url);
            for name in self.per_url.remove(&url).unwrap_or_default().into_keys() {
                let event = self.engagements.disengage(&name);
                if !self.send(event).await {
                    return false;
                }
            }
        }
        for url in wanted {
            self.per_url.entry(url.clone()).or_default();
            let (clients, tx) = (self.clients.clone(), self.view_tx.clone());
            let (task_url, resource) = (url.clone(), self.spec.resource.clone());
            self.views.ensure(url, "", move |stop| {
                watch_view(clients, task_url, resource, tx, stop)
            });
        }
        self.published.urls.send_if_modified(|current| {
            let changed = *current != urls;
            *current = urls;
            changed
        });
        true
    }

    async fn seen(&mut self, url: String, object: DynamicObject) -> bool {
        if !(self.spec.announces)(&object) {
            return self.gone(&url, &object).await;
        }
        let (Some(name), Some(members)) = (cluster_of(&object), self.per_url.get_mut(&url)) else {
            return true;
        };
        members
            .entry(name.clone())
            .or_default()
            .insert(object_name(&object));
        if self.engagements.is_engaged(&name) {
            return true;
        }
        match self.engaged_cluster(&url, name, object) {
            Ok(cluster) => {
                let event = self.engagements.engage(cluster);
                self.send(event).await
            }
            Err(err) => {
                tracing::error!(%url, error = %err, "cannot build a client for the cluster");
                true
            }
        }
    }

    async fn gone(&mut self, url: &str, object: &DynamicObject) -> bool {
        let (Some(name), Some(members)) = (cluster_of(object), self.per_url.get_mut(url)) else {
            return true;
        };
        let Some(announcers) = members.get_mut(&name) else {
            return true;
        };
        announcers.remove(&object_name(object));
        if !announcers.is_empty() {
            return true;
        }
        members.remove(&name);
        let event = self.engagements.disengage(&name);
        self.send(event).await
    }

    async fn relisted(&mut self, url: String, objects: Vec<DynamicObject>) -> bool {
        let Some(members) = self.per_url.get_mut(&url) else {
            return true;
        };
        let present: BTreeSet<(ClusterName, String)> = objects
            .iter()
            .filter(|o| (self.spec.announces)(o))
            .filter_map(|o| Some((cluster_of(o)?, object_name(o))))
            .collect();
        let mut stale = Vec::new();
        for (name, announcers) in members.iter_mut() {
            announcers.retain(|o| present.contains(&(name.clone(), o.clone())));
            if announcers.is_empty() {
                stale.push(name.clone());
            }
        }
        for name in &stale {
            members.remove(name);
        }
        for name in stale {
            let event = self.engagements.disengage(&name);
            if !self.send(event).await {
                return false;
            }
        }
        for object in objects {
            if !self.seen(url.clone(), object).await {
                return false;
            }
        }
        true
    }

    fn engaged_cluster(
        &self,
        url: &str,
        name: ClusterName,
        announcement: DynamicObject,
    ) -> Result<EngagedCluster> {
        let kube = self.clients.cluster(url, name.as_str())?;
        let view = self.clients.cluster(url, "*")?;
        let client = Arc::new(KubeObjectClient::new(kube.clone()));
        Ok(EngagedCluster::new(name, client)
            .with_kube(kube)
            .with_view(view)
            .with_base_url(url)
            .with_announcement(announcement))
    }
}

/// The logical cluster an object seen through a wildcard view lives in.
fn cluster_of(object: &DynamicObject) -> Option<ClusterName> {
    let name = object
        .metadata
        .annotations
        .as_ref()?
        .get(CLUSTER_ANNOTATION)?;
    ClusterName::new(name.as_str()).ok()
}

fn object_name(object: &DynamicObject) -> String {
    object.metadata.name.clone().unwrap_or_default()
}

/// Sorted, deduplicated owned URLs.
pub(crate) fn sorted(urls: Vec<&str>) -> Vec<String> {
    let mut urls: Vec<String> = urls.into_iter().map(String::from).collect();
    urls.sort();
    urls.dedup();
    urls
}

/// Watches the announcing kind at one virtual-workspace URL until `stop` is cancelled.
async fn watch_view(
    clients: Arc<ClusterClients>,
    url: String,
    resource: ApiResource,
    tx: mpsc::Sender<ViewEvent>,
    stop: CancellationToken,
) {
    let kube = match clients.cluster(&url, "*") {
        Ok(k) => k,
        Err(err) => {
            tracing::error!(%url, error = %err, "cannot watch the virtual workspace");
            return;
        }
    };
    let api: Api<DynamicObject> = Api::all_with(kube, &resource);
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut relisting = Vec::new();
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = stream.next() => event,
        };
        let url = url.clone();
        let view = match event {
            None => return,
            Some(Ok(watcher::Event::Init)) => {
                relisting.clear();
                continue;
            }
            Some(Ok(watcher::Event::InitApply(object))) => {
                relisting.push(object);
                continue;
            }
            Some(Ok(watcher::Event::InitDone)) => ViewEvent::Relisted {
                url,
                objects: std::mem::take(&mut relisting),
            },
            Some(Ok(watcher::Event::Apply(object))) => ViewEvent::Seen {
                url,
                object: Box::new(object),
            },
            Some(Ok(watcher::Event::Delete(object))) => ViewEvent::Gone {
                url,
                object: Box::new(object),
            },
            Some(Err(err)) => {
                tracing::debug!(%url, kind = %resource.kind, error = %err, "view watch error; retrying");
                ViewEvent::Failed {
                    url,
                    error: describe(&err),
                }
            }
        };
        if tx.send(view).await.is_err() {
            return;
        }
    }
}

/// A watch error in the server's own words when it answered (`403 Forbidden: ... cannot list
/// resource "logicalclusters" ...`), else the error as kube-runtime words it.
fn describe(err: &watcher::Error) -> String {
    let status = match err {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status))
        | watcher::Error::WatchError(status) => status,
        other => return other.to_string(),
    };
    format!("{} {}: {}", status.code, status.reason, status.message)
}
