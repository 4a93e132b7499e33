//! What a write through the status subresource keeps of what the client sent: kube-apiserver's
//! status strategies, as the conformance cases of `status-writes` found them on kube-apiserver
//! v1.34.
//!
//! A status write changes the status, never the spec. Of the metadata, a custom resource's
//! status write keeps nothing (its strategy copies the stored object and sets the status); a
//! Deployment's keeps all but the labels; a Pod's, Namespace's, ReplicaSet's, StatefulSet's,
//! DaemonSet's and Job's keep it all (their labels and annotations change). Other kinds keep
//! none of it, as kube's `ResetObjectMetaForStatus` does for many of them (not each is held to
//! kube-apiserver yet).
//!
//! The field manager sees a custom resource's status write before the strategy resets it, less
//! its reset fields (the spec): so the writer takes ownership of the labels it sent, although
//! they were not stored.

use serde_json::Value;

use crate::resource::ResourceType;

/// What a kind's status strategy keeps of the metadata a status write sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metadata {
    /// The stored metadata stays.
    Stored,
    /// The sent metadata is stored.
    Sent,
    /// The sent metadata is stored, but for the labels (kube's Deployment strategy).
    SentButLabels,
}

fn metadata_rule(rt: &ResourceType) -> Metadata {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "Deployment") => Metadata::SentButLabels,
        ("", "Pod" | "Namespace")
        | ("apps", "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => Metadata::Sent,
        _ => Metadata::Stored,
    }
}

/// The object a status write stores: `old` with `requested`'s status, and `requested`'s
/// metadata where the kind's status strategy lets it through (a custom resource's never).
pub fn stored(rt: &ResourceType, custom: bool, old: &Value, requested: &Value) -> Value {
    let rule = if custom {
        Metadata::Stored
    } else {
        metadata_rule(rt)
    };
    let mut stored = with_status_of(old, requested);
    if rule != Metadata::Stored
        && let Some(metadata) = requested.get("metadata")
    {
        stored["metadata"] = metadata.clone();
    }
    if rule == Metadata::SentButLabels {
        match old.pointer("/metadata/labels") {
            Some(labels) => stored["metadata"]["labels"] = labels.clone(),
            None => {
                if let Some(metadata) = stored.get_mut("metadata") {
                    remove(metadata, "labels");
                }
            }
        }
    }
    stored
}

/// The object the field manager records a custom resource's status write from: the object
/// about to be stored, with the labels, annotations, finalizers and owner references the write
/// sent (which its strategy did not store).
pub fn seen_by_field_manager(stored: &Value, requested: &Value) -> Value {
    let mut seen = stored.clone();
    crate::object_meta::take_metadata(
        &mut seen,
        requested,
        &["labels", "annotations", "finalizers", "ownerReferences"],
    );
    seen
}

/// `old` with the status of `requested` (none when it has none).
fn with_status_of(old: &Value, requested: &Value) -> Value {
    let mut object = old.clone();
    match requested.get("status") {
        Some(status) => object["status"] = status.clone(),
        None => remove(&mut object, "status"),
    }
    object
}

fn remove(value: &mut Value, key: &str) {
    if let Some(object) = value.as_object_mut() {
        object.remove(key);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::resource::{Flavor, builtin_types};

    fn kind(group: &str, kind: &str) -> ResourceType {
        builtin_types(Flavor::Kubernetes)
            .into_iter()
            .find(|rt| rt.group == group && rt.kind == kind)
            .unwrap()
    }

    fn old() -> Value {
        json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"size": 1}})
    }

    fn requested() -> Value {
        json!({"metadata": {"name": "x", "labels": {"a": "2"}, "annotations": {"n": "1"}},
               "spec": {"size": 2}, "status": {"ready": true}})
    }

    #[test]
    fn a_status_write_never_changes_the_spec() {
        let stored = stored(&kind("", "Pod"), false, &old(), &requested());
        assert_eq!(stored["spec"], json!({"size": 1}));
        assert_eq!(stored["status"], json!({"ready": true}));
    }

    #[test]
    fn a_builtin_kinds_status_write_changes_its_metadata() {
        let stored = stored(&kind("apps", "ReplicaSet"), false, &old(), &requested());
        assert_eq!(stored["metadata"], requested()["metadata"]);
    }

    #[test]
    fn a_deployments_status_write_keeps_its_labels_and_changes_its_annotations() {
        let stored = stored(&kind("apps", "Deployment"), false, &old(), &requested());
        assert_eq!(stored["metadata"]["labels"], json!({"a": "1"}));
        assert_eq!(stored["metadata"]["annotations"], json!({"n": "1"}));
    }

    #[test]
    fn a_custom_resources_status_write_keeps_its_metadata_but_its_writer_sees_it() {
        let rt = kind("", "ConfigMap");
        assert_eq!(
            stored(&rt, true, &old(), &requested())["metadata"],
            old()["metadata"]
        );
        let seen = seen_by_field_manager(&stored(&rt, true, &old(), &requested()), &requested());
        assert_eq!(seen["metadata"], requested()["metadata"]);
    }

    #[test]
    fn a_kind_not_held_to_kube_keeps_its_metadata_on_a_status_write() {
        let rt = kind("apiextensions.k8s.io", "CustomResourceDefinition");
        assert_eq!(
            stored(&rt, false, &old(), &requested())["metadata"],
            old()["metadata"]
        );
    }
}
