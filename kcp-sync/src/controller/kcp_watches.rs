//! The kcp side's watches of a sync controller: the primary kind, and the kcp-origin related
//! kinds with a `watch`.
//!
//! Upstream watches each kind once per virtual-workspace URL (one wildcard informer per shard,
//! through its multicluster provider), not once per consumer workspace. So does this: a
//! cluster engaged through a view ([`EngagedCluster::view`]) is served by the one wildcard
//! watch of its URL (`<url>/clusters/*`), where each object's `kcp.io/cluster` annotation
//! names its cluster. A cluster without a view (a provider of single clusters) gets watches of
//! its own. With 1,000 consumers on one shard that is one watch, one connection, per kind
//! instead of 1,000.
//!
//! A view delivers the objects of every cluster bound at its URL, also of clusters the
//! provider has not engaged yet: they are cached and enqueued like the others (a key of a
//! cluster not engaged reconciles to nothing), and enqueued again from the cache when their
//! cluster is engaged.
//!
//! A watch starts once its URL serves the kind (see [`served`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kcp_core::cluster::EngagedCluster;
use kcp_core::kcp::CLUSTER_ANNOTATION;
use kcp_core::kube::api::{ApiResource, DynamicObject};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::runtime::{ObjectKey, TaskSet, WorkQueue};

use super::related_watch::{RelatedSide, RelatedWatch, run_related_watch};
use super::sync::Clusters;
use crate::api::RelatedResourceOrigin;
use crate::reconcile::caches::{SyncCaches, object_key};

/// Prefix of the task keys of a view's watches (`view <url>`, `view <url>#r<index>`); a
/// cluster's own watches are keyed `<cluster>` and `<cluster>#r<index>`.
const VIEW: &str = "view ";

/// What a sync controller watches in kcp.
pub(super) struct KcpWatches<'a> {
    pub queue: &'a WorkQueue<ObjectKey>,
    pub remote: &'a ApiResource,
    pub related: &'a [RelatedWatch],
    pub caches: &'a Arc<SyncCaches>,
    pub clusters: &'a Clusters,
}

impl KcpWatches<'_> {
    /// Starts (or keeps) what serves `cluster`: its view's watches, or its own.
    pub fn engaged(&self, watches: &mut TaskSet<String>, cluster: EngagedCluster) {
        match (cluster.view.clone(), cluster.base_url.clone()) {
            (Some(view), Some(url)) => {
                self.watch_view(watches, &url, (*view).clone());
                let name = cluster.name.as_str();
                for key in self.caches.remote.live_keys(|k| k.cluster == name) {
                    self.queue.add(key);
                }
            }
            _ => self.watch_cluster(watches, cluster),
        }
    }

    /// Stops what served the cluster `name` alone, forgets its objects, and stops the watches
    /// of a view no engaged cluster uses any more.
    pub fn disengaged(&self, watches: &mut TaskSet<String>, name: &str) {
        let prefix = format!("{name}#");
        watches.retain(|k| k != name && !k.starts_with(&prefix));
        self.caches.remote.retain(|k, _| k.cluster != name);
        let urls: HashSet<String> = self
            .clusters
            .all()
            .into_iter()
            .filter(|c| c.view.is_some())
            .filter_map(|c| c.base_url)
            .collect();
        watches.retain(|k| view_url(k).is_none_or(|url| urls.contains(url)));
    }

    fn kcp_related(&self) -> impl Iterator<Item = &RelatedWatch> {
        self.related
            .iter()
            .filter(|r| r.origin == RelatedResourceOrigin::Kcp)
    }

    fn watch_view(&self, watches: &mut TaskSet<String>, url: &str, view: kcp_core::kube::Client) {
        let key = format!("{VIEW}{url}");
        for rel in self.kcp_related() {
            let side = RelatedSide::View(self.clusters.clone());
            let (kube, rel, queue) = (view.clone(), rel.clone(), self.queue.clone());
            watches.ensure(format!("{key}#r{}", rel.index), url, move |t| {
                run_related_watch(kube, rel, side, queue, t)
            });
        }
        let source = Source::View;
        self.watch_primary(watches, key, url, view, source);
    }

    fn watch_cluster(&self, watches: &mut TaskSet<String>, cluster: EngagedCluster) {
        let Some(kube) = cluster.kube.clone() else {
            return;
        };
        let name = cluster.name.as_str().to_owned();
        let fingerprint = cluster.base_url.clone().unwrap_or_default();
        for rel in self.kcp_related() {
            let side = RelatedSide::Cluster {
                name: name.clone(),
                client: cluster.client.clone(),
            };
            let (kube, rel, queue) = (kube.clone(), rel.clone(), self.queue.clone());
            watches.ensure(format!("{name}#r{}", rel.index), &fingerprint, move |t| {
                run_related_watch(kube, rel, side, queue, t)
            });
        }
        let source = Source::Cluster(name.clone());
        self.watch_primary(watches, name, &fingerprint, kube, source);
    }

    fn watch_primary(
        &self,
        watches: &mut TaskSet<String>,
        key: String,
        fingerprint: &str,
        kube: kcp_core::kube::Client,
        source: Source,
    ) {
        let (queue, remote, caches) =
            (self.queue.clone(), self.remote.clone(), self.caches.clone());
        watches.ensure(key, fingerprint, move |token| async move {
            while !served(&kube, &remote).await {
                tokio::select! {
                    () = token.cancelled() => return,
                    () = tokio::time::sleep(SERVED_RECHECK) => {}
                }
            }
            let api = kcp_core::kube::Api::<DynamicObject>::all_with(kube, &remote);
            let stream = watcher(api, watcher::Config::default()).default_backoff();
            futures::pin_mut!(stream);
            let mut relist = Relist::default();
            loop {
                tokio::select! {
                    () = token.cancelled() => return,
                    event = stream.next() => match event {
                        Some(Ok(event)) => primary_event(&queue, &caches, &source, &mut relist, event),
                        Some(Err(e)) => tracing::debug!(error = %e, source = ?source, "watch error"),
                        None => return,
                    },
                }
            }
        });
    }
}

/// How often a URL that does not serve the kind yet is asked again (upstream: 1 s).
const SERVED_RECHECK: Duration = Duration::from_secs(1);

/// Whether the discovery behind `kube` lists `resource`. A watch starts only then, as
/// upstream starts a sync controller only once its endpoints serve the kind: a watch of a kind
/// not served yet fails, and its backoff would grow to half a minute before the first object
/// syncs. Unlike upstream, one URL that does not serve the kind yet holds back only its own
/// watch, not every shard's.
pub(super) async fn served(kube: &kcp_core::kube::Client, resource: &ApiResource) -> bool {
    let listed = if resource.group.is_empty() {
        kube.list_core_api_resources(&resource.version).await
    } else {
        kube.list_api_group_resources(&resource.api_version).await
    };
    match listed {
        Ok(list) => list.resources.iter().any(|r| r.name == resource.plural),
        Err(e) => {
            tracing::debug!(error = %e, resource = %resource.plural, "discovery of a watched kind failed");
            false
        }
    }
}

/// The URL of a view's task key.
fn view_url(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(VIEW)?;
    Some(rest.rsplit_once("#r").map_or(rest, |(url, _)| url))
}

/// Which cluster a watched object is in.
#[derive(Debug, Clone)]
enum Source {
    /// The watch of one cluster.
    Cluster(String),
    /// A wildcard view: the object's `kcp.io/cluster` annotation says.
    View,
}

impl Source {
    fn cluster_of<'a>(&'a self, obj: &'a DynamicObject) -> Option<&'a str> {
        match self {
            Source::Cluster(name) => Some(name),
            Source::View => obj
                .metadata
                .annotations
                .as_ref()?
                .get(CLUSTER_ANNOTATION)
                .map(String::as_str),
        }
    }
}

/// A watch's relist bookkeeping: the keys listed so far, and every cluster the watch has
/// delivered objects of (whose cached objects a relist may drop).
#[derive(Debug, Default)]
struct Relist {
    listed: Option<HashSet<ObjectKey>>,
    clusters: HashSet<String>,
}

/// Caches and enqueues one event of a primary watch; a relist drops the cached objects of
/// the watch's clusters it no longer lists.
fn primary_event(
    queue: &WorkQueue<ObjectKey>,
    caches: &SyncCaches,
    source: &Source,
    relist: &mut Relist,
    event: watcher::Event<DynamicObject>,
) {
    let (obj, deleted) = match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => (o, false),
        watcher::Event::Delete(o) => (o, true),
        watcher::Event::Init => {
            relist.listed = Some(HashSet::new());
            return;
        }
        watcher::Event::InitDone => {
            if let Some(keys) = relist.listed.take() {
                let clusters = &relist.clusters;
                caches
                    .remote
                    .retain(|k, _| !clusters.contains(&k.cluster) || keys.contains(k));
            }
            return;
        }
    };
    let Some(cluster) = source.cluster_of(&obj) else {
        tracing::debug!(name = ?obj.metadata.name, "an object of a view without its cluster annotation");
        return;
    };
    if !relist.clusters.contains(cluster) {
        relist.clusters.insert(cluster.to_owned());
    }
    let name = obj.metadata.name.clone().unwrap_or_default();
    let key = object_key(cluster, obj.metadata.namespace.as_deref(), &name);
    if let Ok(value) = serde_json::to_value(&obj) {
        if deleted {
            caches.remote.delete(&key, &value);
        } else {
            caches.remote.upsert(&key, value);
        }
    }
    if let Some(keys) = relist.listed.as_mut() {
        keys.insert(key.clone());
    }
    queue.add(key);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_key_names_its_url() {
        assert_eq!(
            view_url("view https://kcp/services/apiexport/x/y"),
            Some("https://kcp/services/apiexport/x/y")
        );
        assert_eq!(view_url("view https://kcp/a#r2"), Some("https://kcp/a"));
        assert_eq!(view_url("team-1#r0"), None);
        assert_eq!(view_url("team-1"), None);
    }

    fn object(cluster: &str, name: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "5",
                "annotations": {CLUSTER_ANNOTATION: cluster}},
        }))
        .unwrap()
    }

    #[test]
    fn a_view_keys_each_object_by_its_cluster_annotation() {
        let (queue, caches) = (
            WorkQueue::new(kcp_core::Backoff::default()),
            SyncCaches::default(),
        );
        let mut relist = Relist::default();
        for (cluster, name) in [("c1", "a"), ("c2", "a")] {
            let event = watcher::Event::Apply(object(cluster, name));
            primary_event(&queue, &caches, &Source::View, &mut relist, event);
        }
        let mut keys = caches.remote.live_keys(|_| true);
        keys.sort_by_key(|k| k.cluster.clone());
        assert_eq!(
            keys,
            vec![
                ObjectKey::namespaced("c1", "default", "a"),
                ObjectKey::namespaced("c2", "default", "a")
            ]
        );
    }

    #[test]
    fn a_relist_of_a_view_drops_what_it_no_longer_lists_of_its_clusters_only() {
        let (queue, caches) = (
            WorkQueue::new(kcp_core::Backoff::default()),
            SyncCaches::default(),
        );
        let mut relist = Relist::default();
        for (cluster, name) in [("c1", "a"), ("c2", "b")] {
            let event = watcher::Event::Apply(object(cluster, name));
            primary_event(&queue, &caches, &Source::View, &mut relist, event);
        }
        let other = ObjectKey::namespaced("elsewhere", "default", "z");
        let value = serde_json::to_value(object("elsewhere", "z")).unwrap();
        caches.remote.upsert(&other, value);
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(object("c1", "a")),
            watcher::Event::InitDone,
        ] {
            primary_event(&queue, &caches, &Source::View, &mut relist, event);
        }
        let mut keys = caches.remote.live_keys(|_| true);
        keys.sort_by_key(|k| k.cluster.clone());
        assert_eq!(
            keys,
            vec![ObjectKey::namespaced("c1", "default", "a"), other]
        );
    }

    #[test]
    fn an_object_of_a_view_without_its_cluster_is_ignored() {
        let (queue, caches) = (
            WorkQueue::new(kcp_core::Backoff::default()),
            SyncCaches::default(),
        );
        let mut obj = object("c1", "a");
        obj.metadata.annotations = None;
        let event = watcher::Event::Apply(obj);
        primary_event(
            &queue,
            &caches,
            &Source::View,
            &mut Relist::default(),
            event,
        );
        assert!(caches.remote.is_empty());
    }
}
