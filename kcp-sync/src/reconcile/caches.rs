//! What one sync controller remembers between steps, so that a step sends only the writes it
//! needs: the kcp objects as the watch delivered them ([`ObjectCache`]), the local copies
//! ([`LocalIndex`]), the state Secrets ([`StateCache`]) and the local Namespaces known to
//! exist, and the Events it recorded (a repeat is bumped with a read and an update, a first
//! one created without a read). Every cache is written through by the step's own writes (the server's answer is
//! stored), so a step right after a write reads what it wrote.
//!
//! Without caches ([`super::sync::SyncContext::caches`] `None`) every step reads the server,
//! as upstream does.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use kcp_core::runtime::ObjectKey;

use super::local_index::LocalIndex;
use super::object_cache::ObjectCache;
use super::state_store::StateCache;
use crate::metadata::RemoteObjectKey;

/// The caches of one sync controller.
#[derive(Debug, Default)]
pub struct SyncCaches {
    /// kcp objects by (cluster, namespace, name), fed by the controller's watches.
    pub remote: ObjectCache<ObjectKey>,
    /// Local copies by their kcp object, fed by the local watch.
    pub local: LocalIndex,
    /// State Secrets as last read or written.
    pub state: StateCache,
    /// Local Namespaces known to exist (created or seen by this controller).
    namespaces: Mutex<HashSet<String>>,
    /// Events this controller recorded, by `<cluster>/<namespace>/<event name>`.
    events: Mutex<HashSet<String>>,
}

/// Recorded Events remembered before the memory is cleared (a forgotten Event is only
/// created once more, which fails and falls back to the bump).
pub const MAX_REMEMBERED_EVENTS: usize = 100_000;

impl SyncCaches {
    /// Whether Namespace `name` is known to exist on the service cluster.
    pub fn has_namespace(&self, name: &str) -> bool {
        self.namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    /// Records that Namespace `name` exists.
    pub fn add_namespace(&self, name: &str) {
        let mut namespaces = self
            .namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        namespaces.insert(name.to_owned());
    }

    /// Forgets Namespace `name` (a write said it is missing).
    pub fn forget_namespace(&self, name: &str) {
        let mut namespaces = self
            .namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        namespaces.remove(name);
    }

    /// Whether this controller recorded the Event `key` before.
    pub fn has_event(&self, key: &str) -> bool {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    }

    /// Remembers that the Event `key` exists.
    pub fn add_event(&self, key: String) {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if events.len() >= MAX_REMEMBERED_EVENTS {
            events.clear();
        }
        events.insert(key);
    }

    /// Forgets the kcp object `key` and its local copy: a write conflicted, so the next step
    /// reads both from the server.
    pub fn forget(&self, key: &ObjectKey) {
        self.remote.forget(key);
        self.local.forget(&RemoteObjectKey {
            cluster: key.cluster.clone(),
            workspace_path: None,
            namespace: key.namespace.clone().unwrap_or_default(),
            name: key.name.clone(),
        });
    }
}

/// The work-queue key of a kcp object.
pub fn object_key(cluster: &str, namespace: Option<&str>, name: &str) -> ObjectKey {
    match namespace.filter(|n| !n.is_empty()) {
        Some(ns) => ObjectKey::namespaced(cluster, ns, name),
        None => ObjectKey::cluster_scoped(cluster, name),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::reconcile::object_cache::Cached;

    #[test]
    fn forgetting_a_key_forgets_the_kcp_object_and_its_local_copy() {
        let caches = SyncCaches::default();
        let key = object_key("c", Some("ns"), "a");
        let remote = RemoteObjectKey {
            cluster: "c".into(),
            workspace_path: None,
            namespace: "ns".into(),
            name: "a".into(),
        };
        caches
            .remote
            .upsert(&key, json!({"metadata": {"name": "a"}}));
        caches
            .local
            .insert(&remote, json!({"metadata": {"name": "copy"}}));
        caches.forget(&key);
        assert_eq!(caches.remote.get(&key), Cached::Unknown);
        assert_eq!(caches.local.get(&remote), Cached::Unknown);
    }

    #[test]
    fn recorded_events_are_remembered() {
        let caches = SyncCaches::default();
        assert!(!caches.has_event("c/ns/e"));
        caches.add_event("c/ns/e".into());
        assert!(caches.has_event("c/ns/e"));
    }

    #[test]
    fn namespaces_are_known_until_forgotten() {
        let caches = SyncCaches::default();
        caches.add_namespace("a");
        assert!(caches.has_namespace("a"));
        caches.forget_namespace("a");
        assert!(!caches.has_namespace("a"));
    }
}
