//! Which Certificates each owner still waits for, so that a Certificate event is handed to its
//! owner only once every Certificate of that owner is ready (see `certificates` in the
//! controller module).
//!
//! Answering that with a scan of the Certificate store on every event costs O(Certificates)
//! per event, and six controllers each see every event: at 100 installations (2,600
//! Certificates) it was a twentieth of the operator's CPU while converging. [`UnreadyByOwner`]
//! keeps the unready Certificates per owner uid from the events instead, and checks the few it
//! holds for an owner against the store before answering, so an entry the events have not
//! corrected yet (a Certificate ready or deleted since) is dropped rather than believed. A
//! Certificate the store holds unready whose event has not arrived yet is not counted: its
//! owner may be woken once early, and its pass then finds the Certificate not ready.

use std::collections::{HashMap, HashSet};

use kube::runtime::reflector::{ObjectRef, Store};

use crate::render::certmanager::Certificate;

/// The unready Certificates of each owner (by the owner's uid), as events showed them.
#[derive(Default)]
pub(super) struct UnreadyByOwner {
    by_owner: HashMap<String, HashSet<ObjectRef<Certificate>>>,
    owner_of: HashMap<ObjectRef<Certificate>, String>,
}

impl UnreadyByOwner {
    /// Notes the Certificate `key` as the store holds it now: owned by `owner`, ready or not.
    pub(super) fn note(&mut self, key: &ObjectRef<Certificate>, owner: &str, ready: bool) {
        self.forget(key);
        if !ready {
            self.by_owner
                .entry(owner.to_owned())
                .or_default()
                .insert(key.clone());
            self.owner_of.insert(key.clone(), owner.to_owned());
        }
    }

    /// Drops the Certificate `key` (deleted, or no longer unready).
    pub(super) fn forget(&mut self, key: &ObjectRef<Certificate>) {
        let Some(owner) = self.owner_of.remove(key) else {
            return;
        };
        if let Some(keys) = self.by_owner.get_mut(&owner) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// Whether no Certificate of `owner` is unready, after dropping the entries `store` shows
    /// to be out of date.
    pub(super) fn all_ready(&mut self, owner: &str, store: &Store<Certificate>) -> bool {
        let Some(keys) = self.by_owner.get(owner) else {
            return true;
        };
        let stale: Vec<ObjectRef<Certificate>> = keys
            .iter()
            .filter(|key| {
                store
                    .get(key)
                    .is_none_or(|c| c.is_ready() || super::controller_uid(&c) != Some(owner))
            })
            .cloned()
            .collect();
        for key in &stale {
            self.forget(key);
        }
        !self.by_owner.contains_key(owner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use kube::runtime::{reflector, watcher};

    use super::*;

    fn cert(name: &str, owner: &str, ready: bool) -> Certificate {
        let status = if ready { "True" } else { "False" };
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {
                "name": name, "namespace": "kcp",
                "ownerReferences": [{
                    "apiVersion": "operator.kcp.io/v1alpha1", "kind": "RootShard",
                    "name": owner, "uid": owner, "controller": true,
                }],
            },
            "spec": {"secretName": name, "issuerRef": {"name": "ca"}},
            "status": {"conditions": [{
                "type": "Ready", "status": status, "reason": "Issuing", "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }]},
        }))
        .unwrap()
    }

    fn store_of(
        certs: Vec<Certificate>,
    ) -> (Store<Certificate>, reflector::store::Writer<Certificate>) {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        for c in certs {
            writer.apply_watcher_event(&watcher::Event::InitApply(c));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        (store, writer)
    }

    #[test]
    fn an_owner_with_an_unready_certificate_is_not_all_ready() {
        let (store, _writer) = store_of(vec![cert("a", "rs", false), cert("b", "rs", true)]);
        let mut unready = UnreadyByOwner::default();
        unready.note(&ObjectRef::new("a").within("kcp"), "rs", false);
        unready.note(&ObjectRef::new("b").within("kcp"), "rs", true);
        assert!(!unready.all_ready("rs", &store));
        assert!(unready.all_ready("another", &store));
    }

    #[test]
    fn a_certificate_noted_ready_releases_its_owner() {
        let (store, _writer) = store_of(vec![cert("a", "rs", true)]);
        let mut unready = UnreadyByOwner::default();
        let key = ObjectRef::new("a").within("kcp");
        unready.note(&key, "rs", false);
        unready.note(&key, "rs", true);
        assert!(unready.all_ready("rs", &store));
    }

    #[test]
    fn an_entry_the_store_shows_ready_or_gone_is_dropped_not_believed() {
        let (store, mut writer) = store_of(vec![cert("a", "rs", false), cert("b", "rs", false)]);
        let mut unready = UnreadyByOwner::default();
        unready.note(&ObjectRef::new("a").within("kcp"), "rs", false);
        unready.note(&ObjectRef::new("b").within("kcp"), "rs", false);
        writer.apply_watcher_event(&watcher::Event::Apply(cert("a", "rs", true)));
        writer.apply_watcher_event(&watcher::Event::Delete(cert("b", "rs", false)));
        assert!(unready.all_ready("rs", &store));
        assert!(unready.by_owner.is_empty() && unready.owner_of.is_empty());
    }

    #[test]
    fn a_forgotten_certificate_leaves_nothing_behind() {
        let mut unready = UnreadyByOwner::default();
        let key = ObjectRef::new("a").within("kcp");
        unready.note(&key, "rs", false);
        unready.forget(&key);
        assert!(unready.by_owner.is_empty() && unready.owner_of.is_empty());
    }
}
