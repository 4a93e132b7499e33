//! A cache of objects fed by a watch and written through by the reconcile's own writes, so a
//! sync step reads what the watch already delivered instead of GETting it again.
//!
//! Ordering: an object replaces the cached one only when its `resourceVersion` is not older.
//! resourceVersions are compared as integers when both are integers (etcd revisions, and
//! kcp-sim's counter); otherwise the latest arrival wins. A deletion leaves a tombstone with
//! its resourceVersion, so a late write-through of an older version cannot bring a deleted
//! object back. Tombstones are dropped when the watch relists (see [`ObjectCache::retain`])
//! and when they outnumber the live entries by [`MAX_EXTRA_TOMBSTONES`].
//!
//! Objects are kept as compact JSON text and parsed on each read: a parsed `serde_json::Value`
//! takes several times the memory of its text, and with 10,000 objects cached twice (kcp
//! object and local copy) the agent's memory grew from 38 MiB to 222 MiB.
//!
//! A reader that finds nothing ([`Cached::Unknown`]) asks the server; a write conflict
//! (someone wrote after the cached version) makes the reconcile [`ObjectCache::forget`] the
//! entry, so the next step reads the server's version.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

/// Tombstones kept beyond the number of live entries before all of them are dropped.
pub const MAX_EXTRA_TOMBSTONES: usize = 10_000;

/// What the cache knows about a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Cached {
    /// The object as last seen.
    Live(Arc<Value>),
    /// Deleted, as last seen.
    Deleted,
    /// Never seen (or forgotten): ask the server.
    Unknown,
}

#[derive(Debug)]
struct Entry {
    rv: Option<u64>,
    /// The object as compact JSON; `None` for a tombstone.
    object: Option<Box<str>>,
}

fn encode(object: &Value) -> Option<Box<str>> {
    serde_json::to_string(object)
        .ok()
        .map(String::into_boxed_str)
}

/// Objects by key, ordered by resourceVersion.
#[derive(Debug)]
pub struct ObjectCache<K> {
    entries: RwLock<HashMap<K, Entry>>,
}

impl<K> Default for ObjectCache<K> {
    fn default() -> Self {
        Self {
            entries: RwLock::new(HashMap::new()),
        }
    }
}

/// The resourceVersion of `object` as an integer, when it is one.
pub fn resource_version(object: &Value) -> Option<u64> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|rv| rv.parse().ok())
}

fn newer(incoming: Option<u64>, cached: Option<u64>) -> bool {
    match (incoming, cached) {
        (Some(a), Some(b)) => a >= b,
        _ => true,
    }
}

impl<K: Hash + Eq + Clone> ObjectCache<K> {
    /// Stores `object` under `key` unless a newer version (or a newer deletion) is cached;
    /// whether it was stored.
    pub fn upsert(&self, key: &K, object: Value) -> bool {
        let rv = resource_version(&object);
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        match entries.get_mut(key) {
            Some(entry) if !newer(rv, entry.rv) => false,
            Some(entry) => {
                entry.rv = rv;
                entry.object = encode(&object);
                true
            }
            None => {
                entries.insert(
                    key.clone(),
                    Entry {
                        rv,
                        object: encode(&object),
                    },
                );
                true
            }
        }
    }

    /// Records that `key` was deleted at `object`'s resourceVersion (the watch's last state).
    pub fn delete(&self, key: &K, object: &Value) {
        let rv = resource_version(object);
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        let stale = entries.get(key).is_some_and(|e| !newer(rv, e.rv));
        if !stale {
            entries.insert(key.clone(), Entry { rv, object: None });
        }
        let live = entries.values().filter(|e| e.object.is_some()).count();
        if entries.len() - live > live + MAX_EXTRA_TOMBSTONES {
            entries.retain(|_, e| e.object.is_some());
        }
    }

    /// Forgets `key` entirely (its next read asks the server).
    pub fn forget(&self, key: &K) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.remove(key);
    }

    /// What is known about `key`.
    pub fn get(&self, key: &K) -> Cached {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        match entries.get(key) {
            Some(Entry {
                object: Some(text), ..
            }) => serde_json::from_str(text)
                .map(|v| Cached::Live(Arc::new(v)))
                .unwrap_or(Cached::Unknown),
            Some(Entry { object: None, .. }) => Cached::Deleted,
            None => Cached::Unknown,
        }
    }

    /// Keeps only the entries `keep` accepts (a relist drops what it no longer lists, and
    /// every tombstone it covers).
    pub fn retain(&self, mut keep: impl FnMut(&K, bool) -> bool) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|k, e| keep(k, e.object.is_some()));
    }

    /// The keys of the live objects `wanted` accepts.
    pub fn live_keys(&self, mut wanted: impl FnMut(&K) -> bool) -> Vec<K>
    where
        K: Clone,
    {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries
            .iter()
            .filter(|(k, e)| e.object.is_some() && wanted(k))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// How many live objects are cached.
    pub fn len(&self) -> usize {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.values().filter(|e| e.object.is_some()).count()
    }

    /// Whether no live object is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(rv: &str, n: u32) -> Value {
        json!({"metadata": {"name": "a", "resourceVersion": rv}, "spec": {"n": n}})
    }

    fn live(cache: &ObjectCache<&'static str>) -> Option<Value> {
        match cache.get(&"a") {
            Cached::Live(v) => Some((*v).clone()),
            _ => None,
        }
    }

    #[test]
    fn a_newer_version_replaces_the_cached_one() {
        let cache = ObjectCache::default();
        cache.upsert(&"a", obj("5", 1));
        assert!(cache.upsert(&"a", obj("7", 2)));
        assert_eq!(live(&cache), Some(obj("7", 2)));
    }

    #[test]
    fn an_older_version_arriving_late_is_ignored() {
        let cache = ObjectCache::default();
        cache.upsert(&"a", obj("7", 2));
        assert!(!cache.upsert(&"a", obj("5", 1)));
        assert_eq!(live(&cache), Some(obj("7", 2)));
    }

    #[test]
    fn non_integer_versions_take_the_latest_arrival() {
        let cache = ObjectCache::default();
        cache.upsert(&"a", obj("b", 2));
        assert!(cache.upsert(&"a", obj("a", 1)));
        assert_eq!(live(&cache), Some(obj("a", 1)));
    }

    #[test]
    fn a_deletion_is_not_undone_by_an_older_write_through() {
        let cache = ObjectCache::default();
        cache.upsert(&"a", obj("5", 1));
        cache.delete(&"a", &obj("8", 1));
        assert!(!cache.upsert(&"a", obj("6", 2)));
        assert_eq!(cache.get(&"a"), Cached::Deleted);
        assert!(cache.upsert(&"a", obj("9", 3)), "recreated later");
    }

    #[test]
    fn forgotten_and_unseen_keys_are_unknown() {
        let cache = ObjectCache::default();
        assert_eq!(cache.get(&"a"), Cached::Unknown);
        cache.upsert(&"a", obj("5", 1));
        cache.forget(&"a");
        assert_eq!(cache.get(&"a"), Cached::Unknown);
    }

    #[test]
    fn retain_drops_what_a_relist_no_longer_lists() {
        let cache = ObjectCache::default();
        cache.upsert(&"a", obj("5", 1));
        cache.upsert(&"b", obj("6", 1));
        cache.retain(|k, _| *k == "b");
        assert_eq!(cache.get(&"a"), Cached::Unknown);
        assert_eq!(cache.len(), 1);
    }
}
