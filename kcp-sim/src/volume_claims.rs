//! What kube-apiserver sets on a new PersistentVolumeClaim beyond its decode defaults
//! ([`crate::defaults::persistent_volume_claim`]): the `DefaultStorageClass` admission plugin's
//! class, the `StorageObjectInUseProtection` admission plugin's `kubernetes.io/pvc-protection`
//! finalizer, and the `Pending` phase of a claim no
//! volume is bound to. kcp-sim binds no volume and runs no protection controller, so a deleted
//! claim waits on its finalizer, as on a kube-apiserver without kube-controller-manager.

use serde_json::{Value, json};

/// The finalizer that keeps a claim in use from going away.
pub const PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The annotation that makes a StorageClass the default, and its beta spelling.
const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The beta annotation naming a claim's class.
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// `GetDefaultClass`: of the StorageClasses marked default, the newest (the first by name
/// among equally new ones).
pub fn default_class(classes: &[Value]) -> Option<String> {
    let marked = |class: &&Value| {
        DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
            class
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(*key))
                .and_then(Value::as_str)
                == Some("true")
        })
    };
    let text = |class: &Value, key: &str| {
        class
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    classes
        .iter()
        .filter(marked)
        .map(|c| (text(c, "creationTimestamp"), text(c, "name")))
        .max_by(|(t1, n1), (t2, n2)| t1.cmp(t2).then(n2.cmp(n1)))
        .map(|(_, name)| name)
}

/// The `DefaultStorageClass` admission plugin: a claim that asks for no class (neither
/// `spec.storageClassName`, not even empty, nor the beta annotation) gets the default one.
fn assign_default_class(obj: &mut Value, default: Option<&str>) {
    let Some(default) = default else {
        return;
    };
    let asked = obj
        .pointer("/spec/storageClassName")
        .is_some_and(|c| !c.is_null())
        || obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
            .is_some();
    if !asked && obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"]["storageClassName"] = json!(default);
    }
}

/// Admits a new claim: the default StorageClass when it asks for none, its protection
/// finalizer and its first status.
pub fn admit_new(obj: &mut Value, default: Option<&str>) {
    assign_default_class(obj, default);
    obj["status"] = json!({"phase": "Pending"});
    crate::object_meta::add_finalizer(obj, PROTECTION_FINALIZER);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, created: &str, default: bool) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": created,
            "annotations": {DEFAULT_CLASS_ANNOTATIONS[0]: default.to_string()}}})
    }

    #[test]
    fn the_newest_default_class_is_the_default() {
        let classes = [
            class("old", "2026-11-29T10:00:00Z", true),
            class("new", "2026-11-29T11:00:00Z", true),
            class("newest", "2026-11-29T12:00:00Z", false),
        ];
        assert_eq!(default_class(&classes).as_deref(), Some("new"));
        assert_eq!(default_class(&classes[2..]), None);
    }

    #[test]
    fn equally_new_default_classes_are_taken_by_name() {
        let classes = [
            class("b", "2026-11-29T10:00:00Z", true),
            class("a", "2026-11-29T10:00:00Z", true),
        ];
        assert_eq!(default_class(&classes).as_deref(), Some("a"));
    }

    #[test]
    fn a_claim_asking_for_no_class_gets_the_default_and_an_empty_class_stays_empty() {
        let mut claim = json!({"metadata": {"name": "data"}, "spec": {}});
        admit_new(&mut claim, Some("fast"));
        assert_eq!(claim["spec"]["storageClassName"], "fast");
        let mut empty = json!({"metadata": {"name": "data"}, "spec": {"storageClassName": ""}});
        admit_new(&mut empty, Some("fast"));
        assert_eq!(empty["spec"]["storageClassName"], "");
    }

    #[test]
    fn a_new_claim_is_protected_and_pending() {
        let mut claim = json!({"metadata": {"name": "data"}});
        admit_new(&mut claim, None);
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!([PROTECTION_FINALIZER])
        );
        assert_eq!(claim["status"], json!({"phase": "Pending"}));
    }

    #[test]
    fn a_claim_keeps_its_own_finalizers_and_gets_one_protection() {
        let mut claim = json!({"metadata": {"finalizers": ["a/b", PROTECTION_FINALIZER]}});
        admit_new(&mut claim, None);
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!(["a/b", PROTECTION_FINALIZER])
        );
    }
}
