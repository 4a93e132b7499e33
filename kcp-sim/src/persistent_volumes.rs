//! What kube-apiserver sets on a new PersistentVolume beyond its decode defaults
//! ([`crate::defaults::persistent_volume`]): the strategy's first status (`Pending`, since the
//! moment it was created) and the `StorageObjectInUseProtection` admission plugin's
//! `kubernetes.io/pv-protection` finalizer. kcp-sim runs no volume controller, so a volume stays
//! `Pending` and a deleted one waits on its finalizer, as on a kube-apiserver without
//! kube-controller-manager.

use serde_json::{Value, json};

/// The finalizer that keeps a volume in use from going away.
pub const PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// Admits a new volume created at `now`: its first status and its protection finalizer.
pub fn admit_new(obj: &mut Value, now: &str) {
    obj["status"] = json!({"phase": "Pending", "lastPhaseTransitionTime": now});
    crate::object_meta::add_finalizer(obj, PROTECTION_FINALIZER);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_volume_is_protected_and_pending_since_its_creation() {
        let mut volume = json!({"metadata": {"name": "pv1"}, "status": {"phase": "Bound"}});
        admit_new(&mut volume, "2026-11-29T18:36:06Z");
        assert_eq!(
            volume["metadata"]["finalizers"],
            json!([PROTECTION_FINALIZER])
        );
        assert_eq!(
            volume["status"],
            json!({"phase": "Pending", "lastPhaseTransitionTime": "2026-11-29T18:36:06Z"})
        );
    }
}
