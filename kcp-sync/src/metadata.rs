//! The link between a kcp object and its local copy: labels, annotations and the finalizer
//! of upstream's section 4.6, and the metadata that never travels between the two sides.
//!
//! The link lives only on the service-cluster side: the cluster name and SHA-1 hashes of the
//! remote namespace and name as labels (names can exceed the 63-character label limit), the
//! plain names as annotations.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::hash::sha1_hex;

/// Finalizer on kcp primaries and kcp-origin related objects.
pub const CLEANUP_FINALIZER: &str = "syncagent.kcp.io/cleanup";

/// Label on local copies: the kcp logical cluster name.
pub const REMOTE_OBJECT_CLUSTER_LABEL: &str = "syncagent.kcp.io/remote-object-cluster";
/// Label on local copies: SHA-1 (40 hex) of the remote namespace (namespaced objects only).
pub const REMOTE_OBJECT_NAMESPACE_HASH_LABEL: &str =
    "syncagent.kcp.io/remote-object-namespace-hash";
/// Label on local copies: SHA-1 (40 hex) of the remote name.
pub const REMOTE_OBJECT_NAME_HASH_LABEL: &str = "syncagent.kcp.io/remote-object-name-hash";
/// Annotation on local copies: the remote namespace.
pub const REMOTE_OBJECT_NAMESPACE_ANNOTATION: &str = "syncagent.kcp.io/remote-object-namespace";
/// Annotation on local copies: the remote name.
pub const REMOTE_OBJECT_NAME_ANNOTATION: &str = "syncagent.kcp.io/remote-object-name";
/// Annotation on local copies: the remote workspace path (with `enableWorkspacePaths`).
pub const REMOTE_OBJECT_WORKSPACE_PATH_ANNOTATION: &str =
    "syncagent.kcp.io/remote-object-workspace-path";
/// Label on local primary copies: the agent's name.
pub const AGENT_NAME_LABEL: &str = "syncagent.kcp.io/agent-name";
/// Label on last-known-state Secrets.
pub const OBJECT_STATE_LABEL: &str = "syncagent.kcp.io/object-state";
/// Value of [`OBJECT_STATE_LABEL`].
pub const OBJECT_STATE_LABEL_VALUE: &str = "true";
/// Prefix of the annotations on kcp primaries that point at service-origin related copies:
/// `related-resources.syncagent.kcp.io/<identifier>.<index>`.
pub const RELATED_OBJECT_ANNOTATION_PREFIX: &str = "related-resources.syncagent.kcp.io/";

/// Label prefix kcp puts on claimed objects; never copied.
const CLAIMED_LABEL_PREFIX: &str = "claimed.internal.apis.kcp.io/";

/// Labels never copied from one side to the other.
const UNSYNCABLE_LABELS: [&str; 3] = [
    REMOTE_OBJECT_CLUSTER_LABEL,
    REMOTE_OBJECT_NAMESPACE_HASH_LABEL,
    REMOTE_OBJECT_NAME_HASH_LABEL,
];

/// Annotations never copied from one side to the other.
const UNSYNCABLE_ANNOTATIONS: [&str; 5] = [
    "kcp.io/cluster",
    "kubectl.kubernetes.io/last-applied-configuration",
    REMOTE_OBJECT_NAMESPACE_ANNOTATION,
    REMOTE_OBJECT_NAME_ANNOTATION,
    REMOTE_OBJECT_WORKSPACE_PATH_ANNOTATION,
];

/// Metadata fields removed before an object is copied or stored.
const STRIPPED_METADATA: [&str; 8] = [
    "creationTimestamp",
    "finalizers",
    "generation",
    "ownerReferences",
    "resourceVersion",
    "managedFields",
    "uid",
    "selfLink",
];

/// Identifies a remote object: upstream's `objectKey` (cluster, path, namespace, name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RemoteObjectKey {
    /// The logical cluster name (empty for service-origin related objects).
    pub cluster: String,
    /// The workspace path, when known and wanted.
    pub workspace_path: Option<String>,
    /// The namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl RemoteObjectKey {
    /// The key of `object` (its `metadata.namespace` and `metadata.name`) in `cluster`.
    pub fn of(object: &Value, cluster: &str, workspace_path: Option<&str>) -> Self {
        Self {
            cluster: cluster.to_owned(),
            workspace_path: workspace_path.filter(|p| !p.is_empty()).map(str::to_owned),
            namespace: meta_str(object, "namespace").to_owned(),
            name: meta_str(object, "name").to_owned(),
        }
    }

    /// The link labels for the local copy.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (REMOTE_OBJECT_CLUSTER_LABEL.to_owned(), self.cluster.clone()),
            (
                REMOTE_OBJECT_NAME_HASH_LABEL.to_owned(),
                sha1_hex(&self.name),
            ),
        ]);
        if !self.namespace.is_empty() {
            labels.insert(
                REMOTE_OBJECT_NAMESPACE_HASH_LABEL.to_owned(),
                sha1_hex(&self.namespace),
            );
        }
        labels
    }

    /// The link annotations for the local copy.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations =
            BTreeMap::from([(REMOTE_OBJECT_NAME_ANNOTATION.to_owned(), self.name.clone())]);
        if !self.namespace.is_empty() {
            annotations.insert(
                REMOTE_OBJECT_NAMESPACE_ANNOTATION.to_owned(),
                self.namespace.clone(),
            );
        }
        if let Some(path) = &self.workspace_path {
            annotations.insert(
                REMOTE_OBJECT_WORKSPACE_PATH_ANNOTATION.to_owned(),
                path.clone(),
            );
        }
        annotations
    }

    /// The label selector (`k=v,...`) that finds the local copy: cluster, name hash and,
    /// for namespaced objects, namespace hash. The agent name is deliberately not part of it.
    pub fn local_selector(&self) -> String {
        self.labels()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The remote key a local copy links to, read from its labels and annotations; `None`
    /// when the cluster label or the name annotation is missing.
    pub fn from_local(local: &Value) -> Option<Self> {
        let cluster = meta_map_str(local, "labels", REMOTE_OBJECT_CLUSTER_LABEL)?;
        let name = meta_map_str(local, "annotations", REMOTE_OBJECT_NAME_ANNOTATION)?;
        if cluster.is_empty() || name.is_empty() {
            return None;
        }
        Some(Self {
            cluster: cluster.to_owned(),
            workspace_path: None,
            namespace: meta_map_str(local, "annotations", REMOTE_OBJECT_NAMESPACE_ANNOTATION)
                .unwrap_or_default()
                .to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for RemoteObjectKey {
    /// `cluster|namespace/name`, as upstream logs keys (the path is not part of it).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.cluster.is_empty() {
            write!(f, "{}|", self.cluster)?;
        }
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        f.write_str(&self.name)
    }
}

/// A string field of `metadata`, or `""`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// One entry of `metadata.labels` or `metadata.annotations`.
pub fn meta_map_str<'a>(object: &'a Value, map: &str, key: &str) -> Option<&'a str> {
    object.get("metadata")?.get(map)?.get(key)?.as_str()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(object: &Value) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// Whether `metadata.finalizers` contains `finalizer`.
pub fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    finalizers(object).iter().any(|f| f == finalizer)
}

/// `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<String> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes everything from `object` that never travels between the sides: server-owned
/// metadata (uid, resourceVersion, generation, timestamps, finalizers, owner references,
/// managed fields), the link labels and annotations, kcp's `kcp.io/cluster` annotation and
/// claim labels, `kubectl.kubernetes.io/last-applied-configuration`, and the related-object
/// annotations. Empty label and annotation maps are removed.
pub fn strip_metadata(object: &mut Value) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for field in STRIPPED_METADATA {
        metadata.remove(field);
    }
    filter_map_field(metadata, "labels", |k| {
        !UNSYNCABLE_LABELS.contains(&k) && !k.starts_with(CLAIMED_LABEL_PREFIX)
    });
    filter_map_field(metadata, "annotations", |k| {
        !UNSYNCABLE_ANNOTATIONS.contains(&k) && !k.starts_with(RELATED_OBJECT_ANNOTATION_PREFIX)
    });
}

fn filter_map_field(metadata: &mut Map<String, Value>, field: &str, keep: impl Fn(&str) -> bool) {
    let Some(map) = metadata.get_mut(field).and_then(Value::as_object_mut) else {
        return;
    };
    map.retain(|k, _| keep(k));
    if map.is_empty() {
        metadata.remove(field);
    }
}

/// Sets (adds or overwrites) `entries` in `metadata.<field>` (`labels` or `annotations`).
pub fn ensure_map_entries(object: &mut Value, field: &str, entries: &BTreeMap<String, String>) {
    if entries.is_empty() {
        return;
    }
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    let metadata = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let map = metadata
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    if let Some(map) = map.as_object_mut() {
        for (k, v) in entries {
            map.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(namespace: &str) -> RemoteObjectKey {
        RemoteObjectKey {
            cluster: "testcluster".into(),
            workspace_path: None,
            namespace: namespace.into(),
            name: "my-test-thing".into(),
        }
    }

    #[test]
    fn labels_carry_cluster_and_full_sha1_of_name_and_namespace() {
        let labels = key("default").labels();
        assert_eq!(labels[REMOTE_OBJECT_CLUSTER_LABEL], "testcluster");
        assert_eq!(
            labels[REMOTE_OBJECT_NAME_HASH_LABEL],
            "c346c8ceb5d104cc783d09b95e8ea7032c190948"
        );
        assert_eq!(
            labels[REMOTE_OBJECT_NAMESPACE_HASH_LABEL],
            sha1_hex("default")
        );
    }

    #[test]
    fn cluster_scoped_objects_get_no_namespace_label_or_annotation() {
        let key = key("");
        assert!(
            !key.labels()
                .contains_key(REMOTE_OBJECT_NAMESPACE_HASH_LABEL)
        );
        assert!(
            !key.annotations()
                .contains_key(REMOTE_OBJECT_NAMESPACE_ANNOTATION)
        );
    }

    #[test]
    fn workspace_path_annotation_only_when_a_path_is_known() {
        let mut key = key("ns");
        assert!(
            !key.annotations()
                .contains_key(REMOTE_OBJECT_WORKSPACE_PATH_ANNOTATION)
        );
        key.workspace_path = Some("root:org:team".into());
        assert_eq!(
            key.annotations()[REMOTE_OBJECT_WORKSPACE_PATH_ANNOTATION],
            "root:org:team"
        );
    }

    #[test]
    fn display_is_cluster_bar_namespace_slash_name_without_path() {
        let mut key = key("ns");
        key.workspace_path = Some("root:a".into());
        assert_eq!(key.to_string(), "testcluster|ns/my-test-thing");
        assert_eq!(self::key("").to_string(), "testcluster|my-test-thing");
    }

    #[test]
    fn remote_key_round_trips_through_local_labels_and_annotations() {
        let key = key("ns");
        let mut local = json!({"metadata": {"name": "x"}});
        ensure_map_entries(&mut local, "labels", &key.labels());
        ensure_map_entries(&mut local, "annotations", &key.annotations());
        assert_eq!(RemoteObjectKey::from_local(&local), Some(key));
    }

    #[test]
    fn local_objects_without_link_metadata_map_to_nothing() {
        assert_eq!(RemoteObjectKey::from_local(&json!({"metadata": {}})), None);
    }

    #[test]
    fn strip_metadata_removes_server_fields_and_sync_keys_only() {
        let mut obj = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "n", "namespace": "ns", "uid": "u", "resourceVersion": "1",
                "generation": 2, "creationTimestamp": "t", "finalizers": ["f"],
                "ownerReferences": [{}], "managedFields": [{}], "selfLink": "/x",
                "labels": {
                    "app": "a", REMOTE_OBJECT_CLUSTER_LABEL: "c",
                    "claimed.internal.apis.kcp.io/abc": "x", AGENT_NAME_LABEL: "agent",
                },
                "annotations": {
                    "kcp.io/cluster": "c", "keep": "me",
                    "related-resources.syncagent.kcp.io/creds.0": "{}",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                },
            },
            "data": {"k": "v"},
        });
        strip_metadata(&mut obj);
        assert_eq!(
            obj,
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": "n", "namespace": "ns",
                    "labels": {"app": "a", AGENT_NAME_LABEL: "agent"},
                    "annotations": {"keep": "me"},
                },
                "data": {"k": "v"},
            })
        );
    }

    #[test]
    fn strip_metadata_drops_label_maps_that_become_empty() {
        let mut obj =
            json!({"metadata": {"name": "n", "labels": {REMOTE_OBJECT_CLUSTER_LABEL: "c"}}});
        strip_metadata(&mut obj);
        assert_eq!(obj, json!({"metadata": {"name": "n"}}));
    }

    #[test]
    fn deletion_and_finalizers_are_read_from_metadata() {
        let obj =
            json!({"metadata": {"deletionTimestamp": "t", "finalizers": [CLEANUP_FINALIZER]}});
        assert!(is_deleting(&obj));
        assert!(has_finalizer(&obj, CLEANUP_FINALIZER));
        assert!(!is_deleting(&json!({"metadata": {}})));
    }
}
