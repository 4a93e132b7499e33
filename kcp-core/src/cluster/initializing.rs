//! The initializingworkspaces provider: the logical clusters of one WorkspaceType that still
//! carry its initializer, across every shard.
//!
//! kcp publishes one initializingworkspaces virtual-workspace URL per shard in the
//! WorkspaceType's `status.virtualWorkspaces`. This provider watches the WorkspaceType and
//! keeps one LogicalCluster watch per URL, starting and stopping them as URLs come and go at
//! runtime. A cluster is engaged when a LogicalCluster carrying the initializer appears (the
//! LogicalCluster rides along as [`EngagedCluster::announced_by`]) and disengaged when it no
//! longer carries it, is deleted, leaves a relist, or its URL disappears. Deleting the
//! WorkspaceType stops every URL watch and disengages everything; recreating it starts again.
//!
//! The engaged cluster's clients talk to `<url>/clusters/<name>` over one shared client per
//! URL ([`ClusterClients`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::cluster::{ClusterClients, ClusterEvent, ClusterProvider, EngagedCluster, Engagements};
use crate::error::Result;
use crate::kcp::urls::initializing_workspace_urls;
use crate::kcp::{CLUSTER_ANNOTATION, ClusterName, WorkspaceType};
use crate::kube_client::KubeObjectClient;
use crate::runtime::TaskSet;

/// What one URL's LogicalCluster watch saw.
enum ViewEvent {
    Seen {
        url: String,
        lc: Box<DynamicObject>,
    },
    Gone {
        url: String,
        cluster: String,
    },
    Relisted {
        url: String,
        lcs: Vec<DynamicObject>,
    },
}

/// The clusters of a WorkspaceType waiting for its initializer (see the
/// [module documentation](self)).
pub struct InitializingWorkspaces {
    clients: Arc<ClusterClients>,
    types: Api<WorkspaceType>,
    type_name: String,
    initializer: String,
    urls: watch::Sender<Vec<String>>,
}

impl InitializingWorkspaces {
    /// Follows WorkspaceType `type_name` read through `types` (a client of its workspace) and
    /// engages the clusters carrying `initializer`.
    pub fn new(
        clients: Arc<ClusterClients>,
        types: kube::Client,
        type_name: impl Into<String>,
        initializer: impl Into<String>,
    ) -> Self {
        InitializingWorkspaces {
            clients,
            types: Api::all(types),
            type_name: type_name.into(),
            initializer: initializer.into(),
            urls: watch::channel(Vec::new()).0,
        }
    }

    /// The virtual-workspace URLs currently watched, sorted; changes as the WorkspaceType does.
    pub fn urls(&self) -> watch::Receiver<Vec<String>> {
        self.urls.subscribe()
    }

    fn carries(&self, lc: &DynamicObject) -> bool {
        lc.data
            .pointer("/status/initializers")
            .and_then(|i| i.as_array())
            .is_some_and(|i| {
                i.iter()
                    .any(|x| x.as_str() == Some(self.initializer.as_str()))
            })
    }

    fn engaged_cluster(
        &self,
        url: &str,
        name: ClusterName,
        lc: DynamicObject,
    ) -> Result<EngagedCluster> {
        let kube = self.clients.cluster(url, name.as_str())?;
        let client = Arc::new(KubeObjectClient::new(kube.clone()));
        Ok(EngagedCluster::new(name, client)
            .with_kube(kube)
            .with_base_url(url)
            .with_announcement(lc))
    }
}

/// The bookkeeping of one provider run.
struct Run<'a> {
    provider: &'a InitializingWorkspaces,
    events: &'a mpsc::Sender<ClusterEvent>,
    engagements: Engagements,
    per_url: BTreeMap<String, BTreeSet<ClusterName>>,
    views: TaskSet<String>,
    view_tx: mpsc::Sender<ViewEvent>,
}

impl Run<'_> {
    /// Sends an event; `false` once the receiver is gone.
    async fn send(&self, event: Option<ClusterEvent>) -> bool {
        match event {
            Some(event) => self.events.send(event).await.is_ok(),
            None => true,
        }
    }

    async fn set_urls(&mut self, urls: Vec<String>) -> bool {
        let wanted: BTreeSet<String> = urls.iter().cloned().collect();
        let gone: Vec<String> = self
            .per_url
            .keys()
            .filter(|u| !wanted.contains(*u))
            .cloned()
            .collect();
        for url in gone {
            self.views.stop(&url);
            for name in self.per_url.remove(&url).unwrap_or_default() {
                let event = self.engagements.disengage(&name);
                if !self.send(event).await {
                    return false;
                }
            }
        }
        for url in wanted {
            self.per_url.entry(url.clone()).or_default();
            let (clients, tx) = (self.provider.clients.clone(), self.view_tx.clone());
            let task_url = url.clone();
            self.views
                .ensure(url, "", move |stop| watch_view(clients, task_url, tx, stop));
        }
        self.provider.urls.send_if_modified(|current| {
            let changed = *current != urls;
            *current = urls;
            changed
        });
        true
    }

    async fn seen(&mut self, url: String, lc: DynamicObject) -> bool {
        let Some(name) = cluster_of(&lc) else {
            return true;
        };
        let Some(members) = self.per_url.get_mut(&url) else {
            return true;
        };
        if !self.provider.carries(&lc) {
            members.remove(&name);
            let event = self.engagements.disengage(&name);
            return self.send(event).await;
        }
        members.insert(name.clone());
        if self.engagements.is_engaged(&name) {
            return true;
        }
        match self.provider.engaged_cluster(&url, name, lc) {
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

    async fn gone(&mut self, url: &str, cluster: &str) -> bool {
        let Ok(name) = ClusterName::new(cluster) else {
            return true;
        };
        if let Some(members) = self.per_url.get_mut(url)
            && members.remove(&name)
        {
            let event = self.engagements.disengage(&name);
            return self.send(event).await;
        }
        true
    }

    async fn relisted(&mut self, url: String, lcs: Vec<DynamicObject>) -> bool {
        let Some(members) = self.per_url.get(&url) else {
            return true;
        };
        let present: BTreeSet<ClusterName> = lcs
            .iter()
            .filter(|lc| self.provider.carries(lc))
            .filter_map(cluster_of)
            .collect();
        let stale: Vec<ClusterName> = members.difference(&present).cloned().collect();
        for name in stale {
            if !self.gone(&url, name.as_str()).await {
                return false;
            }
        }
        for lc in lcs {
            if !self.seen(url.clone(), lc).await {
                return false;
            }
        }
        true
    }
}

fn cluster_of(lc: &DynamicObject) -> Option<ClusterName> {
    let name = lc.metadata.annotations.as_ref()?.get(CLUSTER_ANNOTATION)?;
    ClusterName::new(name.as_str()).ok()
}

fn sorted_urls(wt: &WorkspaceType) -> Vec<String> {
    let mut urls: Vec<String> = initializing_workspace_urls(wt)
        .into_iter()
        .map(String::from)
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

#[async_trait]
impl ClusterProvider for InitializingWorkspaces {
    async fn run(&self, events: mpsc::Sender<ClusterEvent>) -> Result<()> {
        let (view_tx, mut view_rx) = mpsc::channel(256);
        let mut run = Run {
            provider: self,
            events: &events,
            engagements: Engagements::new(),
            per_url: BTreeMap::new(),
            views: TaskSet::new(),
            view_tx,
        };
        let config =
            watcher::Config::default().fields(&format!("metadata.name={}", self.type_name));
        let mut types = watcher(self.types.clone(), config)
            .default_backoff()
            .boxed();
        let mut relisted_type = None;
        loop {
            let open = tokio::select! {
                _ = events.closed() => false,
                event = types.next() => match event {
                    Some(Ok(watcher::Event::Init)) => { relisted_type = None; true }
                    Some(Ok(watcher::Event::InitApply(wt))) => { relisted_type = Some(wt); true }
                    Some(Ok(watcher::Event::InitDone)) => {
                        let urls = relisted_type.take().map(|wt| sorted_urls(&wt)).unwrap_or_default();
                        run.set_urls(urls).await
                    }
                    Some(Ok(watcher::Event::Apply(wt))) => run.set_urls(sorted_urls(&wt)).await,
                    Some(Ok(watcher::Event::Delete(_))) => run.set_urls(Vec::new()).await,
                    Some(Err(err)) => {
                        tracing::debug!(workspace_type = %self.type_name, error = %err, "WorkspaceType watch error; retrying");
                        true
                    }
                    None => false,
                },
                Some(view) = view_rx.recv() => match view {
                    ViewEvent::Seen { url, lc } => run.seen(url, *lc).await,
                    ViewEvent::Gone { url, cluster } => run.gone(&url, &cluster).await,
                    ViewEvent::Relisted { url, lcs } => run.relisted(url, lcs).await,
                },
            };
            if !open {
                break;
            }
        }
        run.views.shutdown(std::time::Duration::from_secs(1)).await;
        Ok(())
    }
}

/// Watches the LogicalClusters of one virtual-workspace URL until `stop` is cancelled.
async fn watch_view(
    clients: Arc<ClusterClients>,
    url: String,
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
    // Read as DynamicObject so that nothing this code does not model is lost when a copy is
    // written back (the initializer's removal).
    let resource = ApiResource {
        group: "core.kcp.io".into(),
        version: "v1alpha1".into(),
        api_version: "core.kcp.io/v1alpha1".into(),
        kind: "LogicalCluster".into(),
        plural: "logicalclusters".into(),
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
        let view = match event {
            None => return,
            Some(Ok(watcher::Event::Init)) => {
                relisting.clear();
                continue;
            }
            Some(Ok(watcher::Event::InitApply(lc))) => {
                relisting.push(lc);
                continue;
            }
            Some(Ok(watcher::Event::InitDone)) => ViewEvent::Relisted {
                url: url.clone(),
                lcs: std::mem::take(&mut relisting),
            },
            Some(Ok(watcher::Event::Apply(lc))) => ViewEvent::Seen {
                url: url.clone(),
                lc: Box::new(lc),
            },
            Some(Ok(watcher::Event::Delete(lc))) => match cluster_of(&lc) {
                Some(cluster) => ViewEvent::Gone {
                    url: url.clone(),
                    cluster: cluster.as_str().to_string(),
                },
                None => continue,
            },
            Some(Err(err)) => {
                tracing::debug!(%url, error = %err, "LogicalCluster watch error; retrying");
                continue;
            }
        };
        if tx.send(view).await.is_err() {
            return;
        }
    }
}
