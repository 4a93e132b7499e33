//! The APIExport provider: the consumer clusters of an APIExport, across every shard, as
//! api-syncagent serves them.
//!
//! kcp lists one apiexport virtual-workspace URL per shard in an APIExportEndpointSlice's
//! `status.endpoints` (kcp creates one named after each APIExport, so an export's name also
//! names its default slice). This provider follows the slice and keeps one APIBinding watch per URL
//! (`<url>/clusters/*`): the virtual workspace shows the bindings to this export, and each
//! announces its consumer cluster (the binding rides along as
//! [`EngagedCluster::announced_by`](crate::cluster::EngagedCluster::announced_by)). A
//! consumer is disengaged when its last binding is deleted or leaves a relist, or its URL
//! disappears; deleting the slice disengages everything. URLs added at runtime (a
//! new shard) are followed.
//!
//! The engaged cluster's clients talk to `<url>/clusters/<consumer>`: the consumer's objects of
//! the exported resources (and of claimed resources), as the virtual workspace serves them.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use tokio::sync::{mpsc, watch};

use crate::cluster::views::{Published, UrlSource, ViewSpec, follow, sorted};
use crate::cluster::{ClusterClients, ClusterEvent, ClusterProvider};
use crate::error::Result;
use crate::kcp::APIExportEndpointSlice;
use crate::kcp::urls::endpoint_slice_urls;

/// The consumer clusters of one APIExport (see the [module documentation](self)).
pub struct ApiExportConsumers {
    clients: Arc<ClusterClients>,
    slices: Api<APIExportEndpointSlice>,
    name: String,
    published: Published,
}

impl ApiExportConsumers {
    /// Follows APIExportEndpointSlice `name`, read through `workspace` (a client of the
    /// workspace holding it).
    pub fn from_endpoint_slice(
        clients: Arc<ClusterClients>,
        workspace: kube::Client,
        name: impl Into<String>,
    ) -> Self {
        ApiExportConsumers {
            clients,
            slices: Api::all(workspace),
            name: name.into(),
            published: Published::new(),
        }
    }

    /// The virtual-workspace URLs currently watched, sorted; readiness per URL starts here.
    pub fn urls(&self) -> watch::Receiver<Vec<String>> {
        self.published.urls.subscribe()
    }

    /// The watched URLs whose watch fails now (a 403 from the virtual workspace, say), each
    /// with the error it failed with; an entry goes once its watch lists again.
    pub fn failures(&self) -> watch::Receiver<BTreeMap<String, String>> {
        self.published.failures.subscribe()
    }
}

/// Every APIBinding the virtual workspace shows is a binding to this export.
fn bindings_view() -> ViewSpec {
    ViewSpec {
        resource: ApiResource {
            group: "apis.kcp.io".into(),
            version: "v1alpha1".into(),
            api_version: "apis.kcp.io/v1alpha1".into(),
            kind: "APIBinding".into(),
            plural: "apibindings".into(),
        },
        announces: Arc::new(|binding: &DynamicObject| {
            binding.metadata.deletion_timestamp.is_none()
        }),
    }
}

#[async_trait]
impl ClusterProvider for ApiExportConsumers {
    async fn run(&self, events: mpsc::Sender<ClusterEvent>) -> Result<()> {
        let source = UrlSource {
            api: self.slices.clone(),
            name: self.name.clone(),
            urls_of: |slice: &APIExportEndpointSlice| sorted(endpoint_slice_urls(slice)),
        };
        follow(
            source,
            bindings_view(),
            self.clients.clone(),
            &events,
            &self.published,
        )
        .await
    }
}
