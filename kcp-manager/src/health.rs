//! Readiness: `/readyz` answers 200 once the process is healthy and its caches synced, and a
//! standby replica that waits for the Lease counts as Ready (it would otherwise stall every
//! rolling update of a Deployment with two replicas).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared readiness flags; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    synced: Arc<AtomicBool>,
    standby: Arc<AtomicBool>,
}

impl Readiness {
    /// Not ready, not standing by.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set by the component once its watches have synced (and cleared when it stops).
    pub fn set_synced(&self, synced: bool) {
        self.synced.store(synced, Ordering::SeqCst);
    }

    /// The flag the component sets, for components that take an `Arc<AtomicBool>`.
    pub fn synced_flag(&self) -> Arc<AtomicBool> {
        self.synced.clone()
    }

    /// Set by the lifecycle while the process waits for the Lease.
    pub fn set_standby(&self, standby: bool) {
        self.standby.store(standby, Ordering::SeqCst);
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.standby.load(Ordering::SeqCst) || self.synced.load(Ordering::SeqCst)
    }

    /// Why the process is not ready (for the `/readyz` body).
    pub fn describe(&self) -> &'static str {
        if self.standby.load(Ordering::SeqCst) {
            "standby: waiting for the leader-election Lease"
        } else if self.synced.load(Ordering::SeqCst) {
            "ok"
        } else {
            "caches not synced"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_not_ready_before_its_caches_sync() {
        assert!(!Readiness::new().is_ready());
    }

    #[test]
    fn synced_caches_make_it_ready() {
        let r = Readiness::new();
        r.set_synced(true);
        assert!(r.is_ready());
    }

    #[test]
    fn a_standby_replica_is_ready() {
        let r = Readiness::new();
        r.set_standby(true);
        assert!(r.is_ready());
        assert!(r.describe().starts_with("standby"));
    }
}
