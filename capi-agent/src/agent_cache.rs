//! The controller's cache of Agents, read by selection instead of listing every free Agent from
//! the server on each claim.

use futures::FutureExt as _;
use kube::runtime::reflector::Store;

use crate::foreign::Agent;

/// A reflector store of the Agents the provider may bind (`--agent-namespace` or all).
#[derive(Clone)]
pub struct AgentCache {
    store: Store<Agent>,
}

impl AgentCache {
    /// A cache over `store`, which a reflector of the Agent watch fills.
    pub fn new(store: Store<Agent>) -> Self {
        AgentCache { store }
    }

    /// The store once its first list completed; `None` before (the caller then lists).
    pub fn synced(&self) -> Option<&Store<Agent>> {
        // Nothing else waits on this store, so polling its readiness once steals no wake-up.
        match self.store.wait_until_ready().now_or_never() {
            Some(Ok(())) => Some(&self.store),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::{reflector, watcher};

    use super::*;

    #[test]
    fn the_cache_is_used_only_after_its_first_complete_list() {
        let (store, mut writer) = reflector::store::<Agent>();
        let cache = AgentCache::new(store);
        assert!(cache.synced().is_none());
        writer.apply_watcher_event(&watcher::Event::Init);
        assert!(
            cache.synced().is_none(),
            "a list in progress is not complete"
        );
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert!(cache.synced().is_some());
    }
}
