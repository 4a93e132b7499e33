//! Wakes the export reconcile when a consumer's APIBinding changes (a claim accepted or
//! rejected), so the PublishedResources' `ClaimsAccepted` conditions follow at once instead
//! of at the next resync: one APIBinding watch per virtual-workspace URL the engaged clusters
//! came through (`<url>/clusters/*`), started and stopped as clusters come and go.

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt as _;
use kcp_core::kcp::CLUSTER_ANNOTATION;
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

/// Watches the APIBindings of one view; a new or deleted binding, or a change of a binding's
/// spec (its generation: the claims it accepts), enqueues the export. kcp's own status writes
/// to a binding (its phase and conditions) do not. Every completed (re)list enqueues it too:
/// a binding changed before the watch began, or while it was reconnecting, arrives only in
/// the list, never as an event of its own.
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
    let mut generations = Generations::default();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            event = events.next() => match event {
                Some(Ok(event)) => {
                    if generations.changed_by(&event) {
                        queue.add(PublishKey::Export);
                    }
                }
                Some(Err(_)) => {}
                None => return,
            },
        }
    }
}

/// The generation of every binding a view's watch has seen, by `<cluster>/<name>`.
#[derive(Default)]
struct Generations(HashMap<String, Option<i64>>);

impl Generations {
    /// Records `event`; whether it brought a binding, a spec change of one, a deletion, or
    /// the end of a (re)list (which may hide any of those).
    fn changed_by(&mut self, event: &watcher::Event<DynamicObject>) -> bool {
        match event {
            watcher::Event::Init => {
                // A relist brings every binding again; forget those it will not.
                self.0.clear();
                false
            }
            watcher::Event::InitDone => true,
            watcher::Event::InitApply(binding) => {
                self.0.insert(key(binding), binding.metadata.generation);
                false
            }
            watcher::Event::Apply(binding) => {
                let before = self.0.insert(key(binding), binding.metadata.generation);
                before != Some(binding.metadata.generation)
            }
            watcher::Event::Delete(binding) => {
                self.0.remove(&key(binding));
                true
            }
        }
    }
}

fn key(binding: &DynamicObject) -> String {
    let cluster = binding
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CLUSTER_ANNOTATION))
        .map(String::as_str)
        .unwrap_or_default();
    format!(
        "{cluster}/{}",
        binding.metadata.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(generation: i64) -> DynamicObject {
        let mut object = DynamicObject::new(
            "crontabs",
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIBinding"),
                "apibindings",
            ),
        );
        object.metadata.generation = Some(generation);
        object.metadata.annotations =
            Some([(CLUSTER_ANNOTATION.to_owned(), "c1".to_owned())].into());
        object
    }

    #[test]
    fn a_status_write_of_a_known_binding_wakes_nothing() {
        let mut seen = Generations::default();
        assert!(!seen.changed_by(&watcher::Event::InitApply(binding(1))));
        assert!(!seen.changed_by(&watcher::Event::Apply(binding(1))));
    }

    #[test]
    fn a_completed_list_wakes_the_export_once() {
        let mut seen = Generations::default();
        assert!(!seen.changed_by(&watcher::Event::Init));
        assert!(!seen.changed_by(&watcher::Event::InitApply(binding(2))));
        assert!(seen.changed_by(&watcher::Event::InitDone));
    }

    #[test]
    fn a_new_binding_a_spec_change_and_a_deletion_wake_the_export() {
        let mut seen = Generations::default();
        assert!(seen.changed_by(&watcher::Event::Apply(binding(1))));
        assert!(seen.changed_by(&watcher::Event::Apply(binding(2))));
        assert!(seen.changed_by(&watcher::Event::Delete(binding(2))));
    }
}
