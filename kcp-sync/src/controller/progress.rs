//! What each kcp object of one PublishedResource last did, summed up into the status counts
//! (`objects.{synced,failing,pending}`) and the `Ready` condition, which carries the real
//! error (kcp-side Events stay generic).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kcp_core::runtime::ObjectKey;

use crate::api::ObjectCounts;

/// The last result of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Synced,
    Pending,
    Failing(String),
}

/// Per-object results of one sync controller.
#[derive(Debug, Default)]
pub struct Progress {
    states: Mutex<HashMap<ObjectKey, State>>,
}

/// A summary for the status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// The counts.
    pub counts: ObjectCounts,
    /// One failing object and its error, when any fails (the smallest key, for stability).
    pub failure: Option<(String, String)>,
}

impl Progress {
    fn set(&self, key: &ObjectKey, state: Option<State>) {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        match state {
            Some(s) => {
                states.insert(key.clone(), s);
            }
            None => {
                states.remove(key);
            }
        }
    }

    /// The object is in sync.
    pub fn synced(&self, key: &ObjectKey) {
        self.set(key, Some(State::Synced));
    }

    /// The object needs more steps.
    pub fn pending(&self, key: &ObjectKey) {
        self.set(key, Some(State::Pending));
    }

    /// The object's last step failed with `error`.
    pub fn failing(&self, key: &ObjectKey, error: String) {
        self.set(key, Some(State::Failing(error)));
    }

    /// The object is gone (or released); it no longer counts.
    pub fn gone(&self, key: &ObjectKey) {
        self.set(key, None);
    }

    /// The counts and one failure.
    pub fn summary(&self) -> Summary {
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let mut summary = Summary::default();
        let mut failures: Vec<(String, String)> = Vec::new();
        for (key, state) in states.iter() {
            match state {
                State::Synced => summary.counts.synced += 1,
                State::Pending => summary.counts.pending += 1,
                State::Failing(e) => {
                    summary.counts.failing += 1;
                    failures.push((key.to_string(), e.clone()));
                }
            }
        }
        failures.sort();
        summary.failure = failures.into_iter().next();
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::namespaced("c", "ns", name)
    }

    #[test]
    fn counts_follow_the_last_result_of_each_object() {
        let p = Progress::default();
        p.pending(&key("a"));
        p.synced(&key("a"));
        p.pending(&key("b"));
        p.failing(&key("c"), "boom".into());
        let s = p.summary();
        assert_eq!(
            (s.counts.synced, s.counts.pending, s.counts.failing),
            (1, 1, 1)
        );
        assert_eq!(s.failure, Some(("c|ns/c".to_owned(), "boom".to_owned())));
    }

    #[test]
    fn gone_objects_no_longer_count() {
        let p = Progress::default();
        p.synced(&key("a"));
        p.gone(&key("a"));
        assert!(p.summary().counts.is_zero());
    }
}
