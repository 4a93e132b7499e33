//! Watches on related resources (`related[].watch`), so that a change of a related object
//! re-examines its primary (upstream #118): `byOwner` follows the ownerReference of the
//! primary's kind, `bySelector` re-examines every primary matching a label selector. kcp-origin
//! objects are watched once per virtual-workspace URL (see `super::kcp_watches`), or per
//! cluster for a cluster without a view; service-origin ones on the service cluster (mapped
//! back to the kcp object through the local copy's link metadata).

use std::sync::Arc;

use futures::StreamExt as _;
use kcp_core::kcp::CLUSTER_ANNOTATION;
use kcp_core::kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::runtime::{ObjectKey, WorkQueue};
use kcp_core::{ListOptions, ObjectClient, ObjectRef};
use tokio_util::sync::CancellationToken;

use super::sync::Clusters;
use crate::api::RelatedResourceOrigin;
use crate::metadata::RemoteObjectKey;
use crate::reconcile::sync::PrimarySync;

/// One related watch.
#[derive(Debug, Clone)]
pub struct RelatedWatch {
    /// Position in `spec.related`.
    pub index: usize,
    /// Where the watched objects live.
    pub origin: RelatedResourceOrigin,
    /// The watched kind (origin side).
    pub resource: ApiResource,
    /// `byOwner`: follow ownerReferences of the primary's kind.
    pub by_owner: bool,
    /// `bySelector`: primaries matching this selector (`k=v,...`).
    pub selector: Option<String>,
    /// No `watch` configured, kcp origin: every primary of the object's namespace (see
    /// [`related_watches`]).
    pub by_namespace: bool,
    /// The primary's kind on the watched side.
    pub primary: GroupVersionKind,
}

/// The watches `target`'s related resources ask for, and one more for every kcp-origin
/// related resource without a `watch`: on a real kcp a claimed object becomes visible in the
/// virtual workspace only once kcp has labelled it, a moment after it was created, so a
/// primary that named it found nothing and, upstream, never looks again until the primary
/// changes. Watching the kind (once per URL) and re-examining the primaries of the object's
/// namespace when it appears closes that gap.
pub fn related_watches(target: &PrimarySync) -> Vec<RelatedWatch> {
    target
        .related
        .iter()
        .filter_map(|rel| {
            let (_, _, plural) = rel.spec.origin_gvr();
            let primary = match rel.spec.origin {
                RelatedResourceOrigin::Kcp => target.remote_gvk.clone(),
                RelatedResourceOrigin::Service => target.local_gvk.clone(),
            };
            let resource = ApiResource::from_gvk_with_plural(&rel.origin_gvk, &plural);
            let Some(watch) = rel.spec.watch.as_ref() else {
                return (rel.spec.origin == RelatedResourceOrigin::Kcp).then_some(RelatedWatch {
                    index: rel.index,
                    origin: rel.spec.origin,
                    resource,
                    by_owner: false,
                    selector: None,
                    by_namespace: true,
                    primary,
                });
            };
            let selector = watch.by_selector.as_ref().map(|s| {
                let mut parts: Vec<String> = s
                    .match_labels
                    .iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                for req in s.match_expressions.iter().flatten() {
                    let values = req.values.clone().unwrap_or_default().join(",");
                    parts.push(match req.operator.as_str() {
                        "In" => format!("{} in ({values})", req.key),
                        "NotIn" => format!("{} notin ({values})", req.key),
                        "DoesNotExist" => format!("!{}", req.key),
                        _ => req.key.clone(),
                    });
                }
                parts.join(",")
            });
            Some(RelatedWatch {
                index: rel.index,
                origin: rel.spec.origin,
                resource,
                by_owner: watch.by_owner.is_some(),
                selector,
                by_namespace: false,
                primary,
            })
        })
        .collect()
}

fn owner_of(obj: &DynamicObject, primary: &GroupVersionKind) -> Option<String> {
    obj.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find_map(|o| {
            let group = o
                .api_version
                .split_once('/')
                .map(|(g, _)| g)
                .unwrap_or_default();
            (o.kind == primary.kind && group == primary.group).then(|| o.name.clone())
        })
}

fn key_of(cluster: &str, namespace: Option<&str>, name: &str) -> ObjectKey {
    match namespace.filter(|n| !n.is_empty()) {
        Some(ns) => ObjectKey::namespaced(cluster, ns, name),
        None => ObjectKey::cluster_scoped(cluster, name),
    }
}

/// Where a related watch runs, which says how a changed object leads to its primaries.
#[derive(Clone)]
pub enum RelatedSide {
    /// The service cluster: the local primaries lead back to their kcp objects.
    Service(Arc<dyn ObjectClient>),
    /// One kcp cluster.
    Cluster {
        /// Its name.
        name: String,
        /// Its client, for `bySelector` lists.
        client: Arc<dyn ObjectClient>,
    },
    /// Every cluster of a wildcard view: an object's `kcp.io/cluster` annotation names its
    /// cluster, served by the engaged cluster of that name (objects of clusters not engaged
    /// are skipped; engaging a cluster enqueues its primaries anyway).
    View(Clusters),
}

impl RelatedSide {
    /// The client to look primaries up with, and the kcp cluster (`None` on the service side).
    fn resolve(&self, obj: &DynamicObject) -> Option<(Arc<dyn ObjectClient>, Option<String>)> {
        match self {
            RelatedSide::Service(client) => Some((client.clone(), None)),
            RelatedSide::Cluster { name, client } => Some((client.clone(), Some(name.clone()))),
            RelatedSide::View(clusters) => {
                let annotations = obj.metadata.annotations.as_ref()?;
                let name = annotations.get(CLUSTER_ANNOTATION)?;
                let cluster = clusters.get(name)?;
                Some((cluster.client, Some(name.clone())))
            }
        }
    }
}

/// The kcp objects a changed related object maps to. `cluster` is `None` on the service
/// side (the local primaries lead back to their kcp objects). Lookup errors map to nothing:
/// the periodic resync covers them.
async fn primaries_of(
    watch: &RelatedWatch,
    obj: &DynamicObject,
    client: &dyn ObjectClient,
    cluster: Option<&str>,
) -> Vec<ObjectKey> {
    let mut locals = Vec::new();
    if watch.by_owner
        && let Some(owner) = owner_of(obj, &watch.primary)
    {
        let ns = obj.metadata.namespace.as_deref();
        match cluster {
            Some(c) => return vec![key_of(c, ns, &owner)],
            None => {
                let target = match ns {
                    Some(ns) => ObjectRef::namespaced(watch.primary.clone(), ns, &owner),
                    None => ObjectRef::cluster_scoped(watch.primary.clone(), &owner),
                };
                if let Ok(Some(local)) = client.get(&target).await {
                    locals.push(local);
                }
            }
        }
    }
    if watch.by_namespace
        && let Some(c) = cluster
    {
        let ns = obj.metadata.namespace.as_deref().filter(|n| !n.is_empty());
        let listed = list_primaries(client, watch, ns, &ListOptions::default()).await;
        return keys_in(c, &listed);
    }
    if let Some(selector) = &watch.selector {
        let options = ListOptions::labels(selector.clone());
        let listed = list_primaries(client, watch, None, &options).await;
        match cluster {
            Some(c) => return keys_in(c, &listed),
            None => locals.extend(listed),
        }
    }
    locals
        .iter()
        .filter_map(|l| RemoteObjectKey::from_local(&serde_json::to_value(l).ok()?))
        .map(|k| key_of(&k.cluster, Some(&k.namespace), &k.name))
        .collect()
}

/// The primaries of `watch` in `namespace` (all without), as `options` select them; none when
/// listing fails.
async fn list_primaries(
    client: &dyn ObjectClient,
    watch: &RelatedWatch,
    namespace: Option<&str>,
    options: &ListOptions,
) -> Vec<DynamicObject> {
    client
        .list(&watch.primary, namespace, options)
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// The queue keys of kcp objects `primaries` in `cluster`.
fn keys_in(cluster: &str, primaries: &[DynamicObject]) -> Vec<ObjectKey> {
    primaries
        .iter()
        .map(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            key_of(cluster, p.metadata.namespace.as_deref(), name)
        })
        .collect()
}

/// Watches `watch.resource` through `kube` until `token` is cancelled, enqueueing the
/// primaries each change maps to on `side`.
pub async fn run_related_watch(
    kube: kube::Client,
    watch: RelatedWatch,
    side: RelatedSide,
    queue: WorkQueue<ObjectKey>,
    token: CancellationToken,
) {
    let api = kube::Api::<DynamicObject>::all_with(kube, &watch.resource);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    loop {
        let event = tokio::select! {
            () = token.cancelled() => return,
            event = stream.next() => event,
        };
        match event {
            Some(Ok(
                watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o),
            )) => {
                let Some((client, cluster)) = side.resolve(&o) else {
                    continue;
                };
                for key in primaries_of(&watch, &o, client.as_ref(), cluster.as_deref()).await {
                    queue.add(key);
                }
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::debug!(error = %e, related = watch.index, "related watch error")
            }
            None => return,
        }
    }
}
