//! The metrics refresher: upstream's count, phase and condition gauges
//! (`kcp_operator_*`), recomputed from the config group's controller caches every
//! [`Metrics::REFRESH`] rather than on every pass.

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use kube::runtime::reflector::Store;

use crate::api::*;
use crate::metrics::{CountedKind, Metrics, PhasedKind};
use crate::render::name_ns;

/// The config group's caches the count and condition metrics are computed from.
pub(super) struct Stores {
    /// The RootShard controller's store.
    pub root_shards: Store<RootShard>,
    /// The Shard controller's store.
    pub shards: Store<Shard>,
    /// The FrontProxy controller's store.
    pub front_proxies: Store<FrontProxy>,
    /// The CacheServer controller's store.
    pub cache_servers: Store<CacheServer>,
    /// The Kubeconfig controller's store.
    pub kubeconfigs: Store<Kubeconfig>,
    /// The VirtualWorkspace controller's store.
    pub virtual_workspaces: Store<VirtualWorkspace>,
}

impl Stores {
    fn refresh(&self, m: &Metrics) {
        let rs = self.root_shards.state();
        let shards = self.shards.state();
        let fps = self.front_proxies.state();
        set_phases(m, PhasedKind::RootShard, &rs, |o| {
            o.status.as_ref().map(|s| s.phase.clone())
        });
        set_phases(m, PhasedKind::Shard, &shards, |o| {
            o.status.as_ref().map(|s| s.phase.clone())
        });
        set_phases(m, PhasedKind::FrontProxy, &fps, |o| {
            o.status.as_ref().map(|s| s.phase.clone())
        });
        set_counts(m, CountedKind::CacheServer, &self.cache_servers.state());
        set_counts(m, CountedKind::Kubeconfig, &self.kubeconfigs.state());
        set_counts(
            m,
            CountedKind::VirtualWorkspace,
            &self.virtual_workspaces.state(),
        );
        set_all_conditions(m, "RootShard", &rs, |o| {
            o.status.as_ref().map(|s| s.conditions.as_slice())
        });
        set_all_conditions(m, "Shard", &shards, |o| {
            o.status.as_ref().map(|s| s.conditions.as_slice())
        });
        set_all_conditions(m, "FrontProxy", &fps, |o| {
            o.status.as_ref().map(|s| s.conditions.as_slice())
        });
    }
}

/// The phase gauge of `kind` from `objects` (namespace and phase of each).
fn set_phases<K: Resource>(
    m: &Metrics,
    kind: PhasedKind,
    objects: &[Arc<K>],
    phase: impl Fn(&K) -> Option<String>,
) {
    let rows: Vec<(String, String)> = objects
        .iter()
        .map(|o| {
            let (_, ns) = name_ns(o.meta());
            (ns.to_owned(), phase(o).unwrap_or_default())
        })
        .collect();
    m.set_phased(kind, rows.iter().map(|(a, b)| (a.as_str(), b.as_str())));
}

/// The count gauge of `kind` from `objects` (per namespace).
fn set_counts<K: Resource>(m: &Metrics, kind: CountedKind, objects: &[Arc<K>]) {
    m.set_counted(kind, objects.iter().map(|o| name_ns(o.meta()).1));
}

/// The condition gauges of every object of `kind`.
fn set_all_conditions<K: Resource>(
    m: &Metrics,
    kind: &str,
    objects: &[Arc<K>],
    conditions: impl Fn(&K) -> Option<&[Condition]>,
) {
    for o in objects {
        let (name, ns) = name_ns(o.meta());
        m.set_conditions(kind, ns, name, conditions(o).unwrap_or_default());
    }
}

/// Refreshes the count and condition metrics every [`Metrics::REFRESH`] until `shutdown`.
pub(super) async fn refresh_metrics(
    stores: Stores,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Metrics::REFRESH);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tick.tick() => stores.refresh(&metrics),
        }
    }
}
