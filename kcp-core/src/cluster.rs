//! Multi-cluster plumbing: providers tell controllers which logical clusters to serve.
//!
//! A [`ClusterProvider`] discovers logical clusters (one fixed cluster, the workspaces waiting
//! in an initializingworkspaces virtual workspace, the consumers of an APIExport, ...) and
//! reports them as a stream of [`ClusterEvent`]s: [`ClusterEvent::Engaged`] when a cluster
//! should be served, with the clients to serve it, and [`ClusterEvent::Disengaged`] when it
//! should no longer be. Controllers key their work by (cluster, namespace, name), so
//! same-named objects in two workspaces never collide.
//!
//! ## The provider contract
//!
//! * Per call of [`ClusterProvider::run`], a cluster name is engaged **at most once until it is
//!   disengaged**; after `Disengaged(name)` it may be engaged again (with fresh clients).
//!   [`Engagements`] keeps that bookkeeping for provider implementations.
//! * `Disengaged(name)` is only sent for an engaged name.
//! * `run` returns `Ok(())` once the receiver is dropped, and `Err` only when the provider
//!   cannot go on (transient API errors are retried inside). When `run` returns, for whatever
//!   reason, every cluster it engaged counts as disengaged; no final `Disengaged` events are
//!   sent.
//! * Sending blocks when the channel is full: the consumer paces the provider.

pub mod apiexport;
pub mod clients;
pub mod initializing;
mod views;

pub use apiexport::ApiExportConsumers;
pub use clients::ClusterClients;
pub use initializing::InitializingWorkspaces;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::DynamicObject;
use tokio::sync::mpsc;

use crate::client::ObjectClient;
use crate::error::Result;
use crate::kcp::ClusterName;

/// A logical cluster a provider has made available, with the clients to serve it.
#[derive(Clone)]
pub struct EngagedCluster {
    /// The logical cluster name (never the wildcard).
    pub name: ClusterName,
    /// A client scoped to this cluster, for reads and writes.
    pub client: Arc<dyn ObjectClient>,
    /// A `kube::Client` scoped to this cluster (its URL ends in `/clusters/<name>`), for
    /// watches; `None` when the provider has no HTTP connection (e.g. in-process tests).
    pub kube: Option<kube::Client>,
    /// The cluster-scoped base URL the clients talk to, when there is one; for logs and for
    /// building further clients.
    pub base_url: Option<String>,
    /// A `kube::Client` of the whole view the cluster was engaged through
    /// (`<base_url>/clusters/*`), shared by every cluster of that URL: a controller watches a
    /// kind once per URL with it, instead of once per cluster. `None` when the provider has no
    /// such view. (Behind an `Arc`: it is shared, and a second `kube::Client` inline would
    /// double the size of every [`ClusterEvent`].)
    pub view: Option<Arc<kube::Client>>,
    /// The object that announced the cluster, as the provider last saw it (the LogicalCluster
    /// in an initializing view, the APIBinding of an APIExport view), when there is one.
    pub announced_by: Option<Arc<DynamicObject>>,
}

impl EngagedCluster {
    /// A cluster served through `client` only (no `kube::Client`, no URL).
    pub fn new(name: ClusterName, client: Arc<dyn ObjectClient>) -> Self {
        EngagedCluster {
            name,
            client,
            kube: None,
            base_url: None,
            view: None,
            announced_by: None,
        }
    }

    /// Records the object that announced the cluster.
    pub fn with_announcement(mut self, object: DynamicObject) -> Self {
        self.announced_by = Some(Arc::new(object));
        self
    }

    /// Adds a `kube::Client` scoped to this cluster, for watches.
    pub fn with_kube(mut self, kube: kube::Client) -> Self {
        self.kube = Some(kube);
        self
    }

    /// Records the cluster-scoped base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Adds the `kube::Client` of the wildcard view the cluster belongs to.
    pub fn with_view(mut self, view: kube::Client) -> Self {
        self.view = Some(Arc::new(view));
        self
    }
}

impl fmt::Debug for EngagedCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngagedCluster")
            .field("name", &self.name)
            .field("kube", &self.kube.is_some())
            .field("base_url", &self.base_url)
            .field("view", &self.view.is_some())
            .finish_non_exhaustive()
    }
}

/// What a provider reports about a logical cluster.
#[derive(Debug, Clone)]
pub enum ClusterEvent {
    /// Start serving this cluster.
    Engaged(EngagedCluster),
    /// Stop serving this cluster; its clients should be dropped.
    Disengaged(ClusterName),
}

impl ClusterEvent {
    /// The name of the cluster the event is about.
    pub fn name(&self) -> &ClusterName {
        match self {
            ClusterEvent::Engaged(cluster) => &cluster.name,
            ClusterEvent::Disengaged(name) => name,
        }
    }
}

/// A source of logical clusters to serve. See the [module documentation](self) for the
/// contract.
///
/// Object-safe: controllers hold an `Arc<dyn ClusterProvider>`.
#[async_trait]
pub trait ClusterProvider: Send + Sync {
    /// Reports clusters on `events` until the receiver is dropped (then returns `Ok`) or the
    /// provider fails.
    async fn run(&self, events: mpsc::Sender<ClusterEvent>) -> Result<()>;
}

/// The set of engaged cluster names of one provider run; turns "seen" and "gone" into the
/// events the contract allows.
#[derive(Debug, Default)]
pub struct Engagements {
    engaged: BTreeSet<ClusterName>,
}

impl Engagements {
    /// An empty set.
    pub fn new() -> Self {
        Engagements::default()
    }

    /// `Some(Engaged)` when the cluster is not engaged yet (and records it), `None` otherwise.
    pub fn engage(&mut self, cluster: EngagedCluster) -> Option<ClusterEvent> {
        self.engaged
            .insert(cluster.name.clone())
            .then_some(ClusterEvent::Engaged(cluster))
    }

    /// `Some(Disengaged)` when the cluster is engaged (and forgets it), `None` otherwise.
    pub fn disengage(&mut self, name: &ClusterName) -> Option<ClusterEvent> {
        self.engaged
            .remove(name)
            .then(|| ClusterEvent::Disengaged(name.clone()))
    }

    /// Whether a cluster is engaged.
    pub fn is_engaged(&self, name: &ClusterName) -> bool {
        self.engaged.contains(name)
    }

    /// The engaged names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &ClusterName> {
        self.engaged.iter()
    }
}

/// A provider that serves exactly one cluster, given up front (e.g. the workspace of the
/// kubeconfig).
#[derive(Clone, Debug)]
pub struct SingleClusterProvider {
    cluster: EngagedCluster,
}

impl SingleClusterProvider {
    /// Serves `name` through `client`, and through `kube` for watches when given.
    pub fn new(
        name: ClusterName,
        client: Arc<dyn ObjectClient>,
        kube: Option<kube::Client>,
    ) -> Self {
        let mut cluster = EngagedCluster::new(name, client);
        cluster.kube = kube;
        SingleClusterProvider { cluster }
    }

    /// Serves an already assembled cluster.
    pub fn from_cluster(cluster: EngagedCluster) -> Self {
        SingleClusterProvider { cluster }
    }
}

#[async_trait]
impl ClusterProvider for SingleClusterProvider {
    /// Engages the cluster once, then waits until the receiver is dropped.
    async fn run(&self, events: mpsc::Sender<ClusterEvent>) -> Result<()> {
        if events
            .send(ClusterEvent::Engaged(self.cluster.clone()))
            .await
            .is_err()
        {
            return Ok(());
        }
        events.closed().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{
        DeleteOptions, DeleteOutcome, ListOptions, ObjectList, ObjectPatch, ObjectRef,
        PatchOptions, ResourceInfo, Subresource,
    };
    use crate::error::Error;
    use kube::api::{DynamicObject, GroupVersionKind};

    /// A client that is never called: every method fails.
    struct UnusedClient;

    fn unused() -> Error {
        Error::Config("UnusedClient is not meant to be called".into())
    }

    #[async_trait]
    impl ObjectClient for UnusedClient {
        async fn resolve(&self, _: &GroupVersionKind) -> Result<ResourceInfo> {
            Err(unused())
        }
        async fn get(&self, _: &ObjectRef) -> Result<Option<DynamicObject>> {
            Err(unused())
        }
        async fn list(
            &self,
            _: &GroupVersionKind,
            _: Option<&str>,
            _: &ListOptions,
        ) -> Result<ObjectList> {
            Err(unused())
        }
        async fn create(&self, _: &DynamicObject) -> Result<DynamicObject> {
            Err(unused())
        }
        async fn replace(&self, _: &DynamicObject, _: Subresource) -> Result<DynamicObject> {
            Err(unused())
        }
        async fn patch(
            &self,
            _: &ObjectRef,
            _: Subresource,
            _: &ObjectPatch,
            _: &PatchOptions,
        ) -> Result<DynamicObject> {
            Err(unused())
        }
        async fn delete(&self, _: &ObjectRef, _: &DeleteOptions) -> Result<DeleteOutcome> {
            Err(unused())
        }
    }

    fn name(s: &str) -> ClusterName {
        ClusterName::new(s).unwrap()
    }

    fn cluster(s: &str) -> EngagedCluster {
        EngagedCluster::new(name(s), Arc::new(UnusedClient))
    }

    #[tokio::test]
    async fn single_provider_engages_its_cluster_once_then_waits_for_the_receiver_to_close() {
        let provider: Arc<dyn ClusterProvider> = Arc::new(SingleClusterProvider::new(
            name("root"),
            Arc::new(UnusedClient),
            None,
        ));
        let (tx, mut rx) = mpsc::channel(4);
        let task = tokio::spawn(async move { provider.run(tx).await });

        let event = rx.recv().await.unwrap();
        assert!(matches!(&event, ClusterEvent::Engaged(c) if c.name.as_str() == "root"));
        tokio::task::yield_now().await;
        assert!(rx.try_recv().is_err(), "only one event");
        assert!(
            !task.is_finished(),
            "keeps running while the receiver lives"
        );

        drop(rx);
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn single_provider_returns_ok_when_the_receiver_is_already_gone() {
        let provider = SingleClusterProvider::from_cluster(cluster("root"));
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        provider.run(tx).await.unwrap();
    }

    #[test]
    fn a_name_is_engaged_at_most_once_until_disengaged() {
        let mut engagements = Engagements::new();
        assert!(engagements.engage(cluster("a")).is_some());
        assert!(engagements.engage(cluster("a")).is_none());
        assert!(engagements.is_engaged(&name("a")));

        let gone = engagements.disengage(&name("a")).unwrap();
        assert!(matches!(gone, ClusterEvent::Disengaged(n) if n.as_str() == "a"));
        assert!(engagements.engage(cluster("a")).is_some(), "may come back");
    }

    #[test]
    fn only_engaged_names_are_disengaged() {
        let mut engagements = Engagements::new();
        assert!(engagements.disengage(&name("never")).is_none());
    }

    #[test]
    fn events_name_their_cluster() {
        assert_eq!(ClusterEvent::Engaged(cluster("a")).name().as_str(), "a");
        assert_eq!(ClusterEvent::Disengaged(name("b")).name().as_str(), "b");
    }

    #[test]
    fn engaged_cluster_debug_shows_name_and_url() {
        let c = cluster("a").with_base_url("https://kcp/clusters/a");
        let text = format!("{c:?}");
        assert!(
            text.contains("\"a\"") && text.contains("https://kcp/clusters/a"),
            "{text}"
        );
    }
}
