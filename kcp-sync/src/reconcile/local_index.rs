//! An index of local copies by the kcp object they link to, fed by the sync controller's watch
//! on the service cluster and written through by the reconcile's own writes. With it, finding
//! a local copy is a lookup instead of a label-selector list over every object of the kind
//! (which the API server answers by scanning, so a list per reconcile makes a sync of n
//! objects cost O(n²)) or a GET.
//!
//! The index is authoritative only once the watch has listed everything
//! ([`LocalIndex::is_synced`]); before that, and whenever it is not, the reconcile lists as
//! upstream does. The reconcile writes through its own creations, so a step right after a
//! create never misses the copy it just made.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::object_cache::{Cached, ObjectCache};
use crate::metadata::RemoteObjectKey;

/// (cluster, namespace, name) of a kcp object.
pub type RemoteId = (String, String, String);

/// Local copies by (cluster, namespace, name) of their kcp object, with their content as the
/// watch (or the reconcile's own writes) last saw it.
#[derive(Debug, Default)]
pub struct LocalIndex {
    entries: ObjectCache<RemoteId>,
    synced: AtomicBool,
}

/// The index key of `key` (the workspace path is not part of it).
pub fn index_key(key: &RemoteObjectKey) -> RemoteId {
    (key.cluster.clone(), key.namespace.clone(), key.name.clone())
}

impl LocalIndex {
    /// Records `object` as the local copy of `key` (unless a newer version is known).
    pub fn insert(&self, key: &RemoteObjectKey, object: Value) {
        self.entries.upsert(&index_key(key), object);
    }

    /// Records that the local copy of `key` was deleted (`object`: its last state).
    pub fn remove(&self, key: &RemoteObjectKey, object: &Value) {
        self.entries.delete(&index_key(key), object);
    }

    /// Forgets what is known about the copy of `key` (the next lookup asks the server).
    pub fn forget(&self, key: &RemoteObjectKey) {
        self.entries.forget(&index_key(key));
    }

    /// The local copy of `key`, as last seen.
    pub fn get(&self, key: &RemoteObjectKey) -> Cached {
        self.entries.get(&index_key(key))
    }

    /// Ends a relist: copies it did not list are gone.
    pub fn retain_listed(&self, listed: &HashSet<RemoteId>) {
        self.entries.retain(|k, _| listed.contains(k));
    }

    /// Starts a relist: entries are kept but the index is not authoritative until
    /// [`LocalIndex::set_synced`].
    pub fn set_unsynced(&self) {
        self.synced.store(false, Ordering::SeqCst);
    }

    /// The watch listed everything: misses now mean "no local copy".
    pub fn set_synced(&self) {
        self.synced.store(true, Ordering::SeqCst);
    }

    /// Whether misses are authoritative.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(name: &str) -> RemoteObjectKey {
        RemoteObjectKey {
            cluster: "c".into(),
            workspace_path: Some("root:x".into()),
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    fn copy(rv: &str) -> Value {
        json!({"metadata": {"namespace": "local", "name": "copy", "resourceVersion": rv}})
    }

    #[test]
    fn lookups_ignore_the_workspace_path() {
        let index = LocalIndex::default();
        index.insert(&key("a"), copy("1"));
        let mut without_path = key("a");
        without_path.workspace_path = None;
        assert_eq!(index.get(&without_path), Cached::Live(copy("1").into()));
    }

    #[test]
    fn an_index_is_authoritative_only_once_synced() {
        let index = LocalIndex::default();
        assert!(!index.is_synced());
        index.set_synced();
        assert!(index.is_synced());
        index.set_unsynced();
        assert!(!index.is_synced());
    }

    #[test]
    fn removed_entries_are_deleted() {
        let index = LocalIndex::default();
        index.insert(&key("a"), copy("1"));
        index.remove(&key("a"), &copy("2"));
        assert_eq!(index.get(&key("a")), Cached::Deleted);
    }

    #[test]
    fn a_relist_drops_copies_it_did_not_list() {
        let index = LocalIndex::default();
        index.insert(&key("a"), copy("1"));
        index.insert(&key("b"), copy("2"));
        index.retain_listed(&HashSet::from([index_key(&key("b"))]));
        assert_eq!(index.get(&key("a")), Cached::Unknown);
        assert_eq!(index.get(&key("b")), Cached::Live(copy("2").into()));
    }
}
