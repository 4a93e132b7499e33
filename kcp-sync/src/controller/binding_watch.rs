//! Wakes the export reconcile when a consumer's APIBinding changes (a claim accepted or
//! rejected), so the PublishedResources' `ClaimsAccepted` conditions follow at once instead
//! of at the next resync: one APIBinding watch per virtual-workspace URL the engaged clusters
//! came through (`<url>/clusters/*`), started and stopped as clusters come and go.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use kcp_core::kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::runtime::{TaskSet, WorkQueue};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::PublishKey;
use super::sync::Clusters;

/// Keeps one APIBinding watch per URL of the engaged clusters until the clusters' feed ends.
pub(super) async fn watch_bindings(clusters: Clusters, queue: WorkQueue<PublishKey>) {
    let mut changes = clusters.subscribe();
    let mut watches: TaskSet<String> = TaskSet::new();
    loop {
        let views: BTreeMap<String, kcp_core::kube::Client> = clusters
            .all()
            .into_iter()
            .filter_map(|c| Some((c.base_url?, (*c.view?).clone())))
            .collect();
        watches.retain(|url| views.contains_key(url));
        for (url, view) in views {
            let queue = queue.clone();
            watches.ensure(url.clone(), &url, move |stop| watch_one(view, queue, stop));
        }
        match changes.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
}

/// Watches the APIBindings of one view; any change enqueues the export.
async fn watch_one(
    view: kcp_core::kube::Client,
    queue: WorkQueue<PublishKey>,
    stop: CancellationToken,
) {
    let gvk = GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIBinding");
    let api = kcp_core::kube::Api::<DynamicObject>::all_with(
        view,
        &ApiResource::from_gvk_with_plural(&gvk, "apibindings"),
    );
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(events);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            event = events.next() => match event {
                Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_))) => {
                    queue.add(PublishKey::Export);
                }
                Some(_) => {}
                None => return,
            },
        }
    }
}
