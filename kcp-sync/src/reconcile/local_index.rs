//! An index of local copies by the kcp object they link to, fed by the sync controller's watch
//! on the service cluster. With it, finding a local copy is a lookup and one GET instead of a
//! label-selector list over every object of the kind (which the API server answers by scanning,
//! so a list per reconcile makes a sync of n objects cost O(n²)).
//!
//! The index is authoritative only once the watch has listed everything
//! ([`LocalIndex::is_synced`]); before that, and whenever it is not, the reconcile lists as
//! upstream does. The reconcile writes through its own creations, so a step right after a
//! create never misses the copy it just made.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::metadata::RemoteObjectKey;

/// (cluster, namespace, name) of a kcp object.
type RemoteId = (String, String, String);

/// (namespace, name) of a local copy.
type LocalId = (Option<String>, String);

/// Local copies by (cluster, namespace, name) of their kcp object.
#[derive(Debug, Default)]
pub struct LocalIndex {
    entries: RwLock<HashMap<RemoteId, LocalId>>,
    synced: AtomicBool,
}

fn index_key(key: &RemoteObjectKey) -> RemoteId {
    (key.cluster.clone(), key.namespace.clone(), key.name.clone())
}

impl LocalIndex {
    /// Records that the local copy of `key` is `namespace/name`.
    pub fn insert(&self, key: &RemoteObjectKey, namespace: Option<String>, name: String) {
        if let Ok(mut entries) = self.entries.write() {
            entries.insert(index_key(key), (namespace, name));
        }
    }

    /// Forgets the local copy of `key`.
    pub fn remove(&self, key: &RemoteObjectKey) {
        if let Ok(mut entries) = self.entries.write() {
            entries.remove(&index_key(key));
        }
    }

    /// The local copy of `key`, as last seen.
    pub fn get(&self, key: &RemoteObjectKey) -> Option<LocalId> {
        self.entries.read().ok()?.get(&index_key(key)).cloned()
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
    use super::*;

    fn key(name: &str) -> RemoteObjectKey {
        RemoteObjectKey {
            cluster: "c".into(),
            workspace_path: Some("root:x".into()),
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[test]
    fn lookups_ignore_the_workspace_path() {
        let index = LocalIndex::default();
        index.insert(&key("a"), Some("local".into()), "copy".into());
        let mut without_path = key("a");
        without_path.workspace_path = None;
        assert_eq!(
            index.get(&without_path),
            Some((Some("local".into()), "copy".into()))
        );
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
    fn removed_entries_are_gone() {
        let index = LocalIndex::default();
        index.insert(&key("a"), None, "copy".into());
        index.remove(&key("a"));
        assert_eq!(index.get(&key("a")), None);
    }
}
