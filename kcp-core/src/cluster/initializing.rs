//! The initializingworkspaces provider: the logical clusters of one WorkspaceType that still
//! carry its initializer, across every shard.
//!
//! kcp publishes one initializingworkspaces virtual-workspace URL per shard in the
//! WorkspaceType's `status.virtualWorkspaces`. This provider watches the WorkspaceType and
//! keeps one LogicalCluster watch per URL, starting and stopping them as URLs come and go at
//! runtime. A cluster is engaged when a LogicalCluster carrying the initializer appears (the
//! LogicalCluster rides along as
//! [`EngagedCluster::announced_by`](crate::cluster::EngagedCluster::announced_by)) and disengaged when it no
//! longer carries it, is deleted, leaves a relist, or its URL disappears. Deleting the
//! WorkspaceType stops every URL watch and disengages everything; recreating it starts again.
//!
//! The engaged cluster's clients talk to `<url>/clusters/<name>` over one shared client per
//! URL ([`ClusterClients`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use tokio::sync::{mpsc, watch};

use crate::cluster::views::{Published, UrlSource, ViewSpec, follow, sorted};
use crate::cluster::{ClusterClients, ClusterEvent, ClusterProvider};
use crate::error::Result;
use crate::kcp::WorkspaceType;
use crate::kcp::urls::initializing_workspace_urls;

/// The clusters of a WorkspaceType waiting for its initializer (see the
/// [module documentation](self)).
pub struct InitializingWorkspaces {
    clients: Arc<ClusterClients>,
    types: Api<WorkspaceType>,
    type_name: String,
    initializer: String,
    published: Published,
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
            published: Published::new(),
        }
    }

    /// The virtual-workspace URLs currently watched, sorted; changes as the WorkspaceType does.
    pub fn urls(&self) -> watch::Receiver<Vec<String>> {
        self.published.urls.subscribe()
    }

    /// The watched URLs whose watch fails now (a 403 from the virtual workspace, say), each
    /// with the error it failed with; an entry goes once its watch lists again.
    pub fn failures(&self) -> watch::Receiver<BTreeMap<String, String>> {
        self.published.failures.subscribe()
    }

    /// LogicalClusters still carrying the initializer announce their cluster.
    fn view(&self) -> ViewSpec {
        let initializer = self.initializer.clone();
        ViewSpec {
            resource: ApiResource {
                group: "core.kcp.io".into(),
                version: "v1alpha1".into(),
                api_version: "core.kcp.io/v1alpha1".into(),
                kind: "LogicalCluster".into(),
                plural: "logicalclusters".into(),
            },
            announces: Arc::new(move |lc: &DynamicObject| carries(lc, &initializer)),
        }
    }
}

/// Whether a LogicalCluster still lists `initializer` in `status.initializers`.
fn carries(lc: &DynamicObject, initializer: &str) -> bool {
    lc.data
        .pointer("/status/initializers")
        .and_then(|i| i.as_array())
        .is_some_and(|i| i.iter().any(|x| x.as_str() == Some(initializer)))
}

#[async_trait]
impl ClusterProvider for InitializingWorkspaces {
    async fn run(&self, events: mpsc::Sender<ClusterEvent>) -> Result<()> {
        let source = UrlSource {
            api: self.types.clone(),
            name: self.type_name.clone(),
            urls_of: |wt: &WorkspaceType| sorted(initializing_workspace_urls(wt)),
        };
        follow(
            source,
            self.view(),
            self.clients.clone(),
            &events,
            &self.published,
        )
        .await
    }
}
