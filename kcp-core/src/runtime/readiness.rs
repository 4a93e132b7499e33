//! Cache readiness of `kube::runtime::Controller`s: a process is Ready once the primary cache of
//! every controller it runs has synced, whether or not it leads (a standby replica is Ready).
//!
//! kube-runtime's `Store::wait_until_ready` wakes only the most recent of several concurrent
//! waiters, and the Controller waits on its own store too; so [`CacheSync`] polls each store's
//! readiness on a short interval instead of awaiting it once.

use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use kube::Resource;
use kube::runtime::reflector::Store;

/// How often an unsynced store is asked again.
const POLL: Duration = Duration::from_millis(100);

/// Sets a flag once every tracked cache has synced (see the module docs).
#[derive(Clone)]
pub struct CacheSync {
    pending: Arc<AtomicUsize>,
    synced: Arc<AtomicBool>,
}

impl CacheSync {
    /// Tracks caches for `synced` (e.g. kcp-manager's `Readiness::synced_flag`).
    pub fn new(synced: Arc<AtomicBool>) -> Self {
        CacheSync {
            pending: Arc::new(AtomicUsize::new(0)),
            synced,
        }
    }

    /// Counts `store` as one cache to wait for and watches it in the background. Track every
    /// controller's store before running any of them, so the flag cannot turn true early.
    pub fn track<K>(&self, store: Store<K>)
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Eq + Hash + Clone + Send + Sync,
    {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let (pending, synced) = (self.pending.clone(), self.synced.clone());
        tokio::spawn(async move {
            if wait_synced(&store).await && pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                synced.store(true, Ordering::SeqCst);
            }
        });
    }

    /// Whether every tracked cache has synced.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }
}

/// Waits until `store` has its first complete list; `false` when its writer is gone first.
async fn wait_synced<K>(store: &Store<K>) -> bool
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    loop {
        match tokio::time::timeout(POLL, store.wait_until_ready()).await {
            Ok(Ok(())) => return true,
            Ok(Err(_)) => return false,
            Err(_) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::{reflector, watcher};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_flag_turns_true_only_when_every_tracked_cache_synced() {
        let flag = Arc::new(AtomicBool::new(false));
        let caches = CacheSync::new(flag.clone());
        let (first, mut first_writer) = reflector::store::<ConfigMap>();
        let (second, mut second_writer) = reflector::store::<ConfigMap>();
        caches.track(first);
        caches.track(second);
        first_writer.apply_watcher_event(&watcher::Event::Init);
        first_writer.apply_watcher_event(&watcher::Event::InitDone);
        tokio::time::sleep(POLL * 3).await;
        assert!(!caches.is_synced(), "one cache is still listing");
        second_writer.apply_watcher_event(&watcher::Event::Init);
        second_writer.apply_watcher_event(&watcher::Event::InitDone);
        tokio::time::sleep(POLL * 3).await;
        assert!(caches.is_synced());
    }

    #[tokio::test(start_paused = true)]
    async fn a_cache_whose_writer_is_dropped_never_counts_as_synced() {
        let flag = Arc::new(AtomicBool::new(false));
        let caches = CacheSync::new(flag);
        let (store, writer) = reflector::store::<ConfigMap>();
        caches.track(store);
        drop(writer);
        tokio::time::sleep(POLL * 3).await;
        assert!(!caches.is_synced());
    }
}
