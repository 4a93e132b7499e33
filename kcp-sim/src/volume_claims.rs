//! What kube-apiserver sets on a new PersistentVolumeClaim beyond its decode defaults
//! ([`crate::defaults::persistent_volume_claim`]): the `StorageObjectInUseProtection` admission
//! plugin's `kubernetes.io/pvc-protection` finalizer, and the `Pending` phase of a claim no
//! volume is bound to. kcp-sim binds no volume and runs no protection controller, so a deleted
//! claim waits on its finalizer, as on a kube-apiserver without kube-controller-manager.

use serde_json::{Value, json};

/// The finalizer that keeps a claim in use from going away.
pub const PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// Admits a new claim: its protection finalizer and its first status.
pub fn admit_new(obj: &mut Value) {
    obj["status"] = json!({"phase": "Pending"});
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == PROTECTION_FINALIZER)
    {
        list.push(json!(PROTECTION_FINALIZER));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_claim_is_protected_and_pending() {
        let mut claim = json!({"metadata": {"name": "data"}});
        admit_new(&mut claim);
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!([PROTECTION_FINALIZER])
        );
        assert_eq!(claim["status"], json!({"phase": "Pending"}));
    }

    #[test]
    fn a_claim_keeps_its_own_finalizers_and_gets_one_protection() {
        let mut claim = json!({"metadata": {"finalizers": ["a/b", PROTECTION_FINALIZER]}});
        admit_new(&mut claim);
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!(["a/b", PROTECTION_FINALIZER])
        );
    }
}
