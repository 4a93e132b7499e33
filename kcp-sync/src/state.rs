//! The last-known-state store's names and keys, exactly as upstream writes them.
//!
//! Every primary object has one Secret in the agent's namespace,
//! `obj-state-<cluster>-<h>`, where `h` is the first 20 hex characters of SHA-1 over the Go
//! JSON of `{"apiVersion","kind","name","namespace"}` of the remote primary. Each synced
//! object (the primary and its related objects) has one data key in it: the SHA-1 of
//! `{"ClusterName":..,"WorkspacePath":"","Namespace":..,"Name":..}` plus a newline. The value
//! is the compact (Go) JSON of the object after metadata stripping, without its
//! subresources. With the same names and keys, kcp-sync reads the state the Go agent wrote.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::hash::{go_json, go_json_sha1, sha1_hex, write_string};
use crate::metadata::{
    OBJECT_STATE_LABEL, OBJECT_STATE_LABEL_VALUE, RemoteObjectKey, meta_str, strip_metadata,
};

/// Prefix of the state Secrets' names.
pub const SECRET_NAME_PREFIX: &str = "obj-state-";

/// The name of the state Secret of the remote primary `object` in `cluster`.
pub fn secret_name(object: &Value, cluster: &str) -> String {
    let identity = json!({
        "apiVersion": object.get("apiVersion").and_then(Value::as_str).unwrap_or_default(),
        "kind": object.get("kind").and_then(Value::as_str).unwrap_or_default(),
        "name": meta_str(object, "name"),
        "namespace": meta_str(object, "namespace"),
    });
    let mut hash = go_json_sha1(&identity);
    hash.truncate(20);
    format!("{SECRET_NAME_PREFIX}{cluster}-{hash}")
}

/// The labels of the state Secret of a primary: its link labels plus
/// `syncagent.kcp.io/object-state=true`.
pub fn secret_labels(primary: &RemoteObjectKey) -> BTreeMap<String, String> {
    let mut labels = primary.labels();
    labels.insert(
        OBJECT_STATE_LABEL.to_owned(),
        OBJECT_STATE_LABEL_VALUE.to_owned(),
    );
    labels
}

/// The data key of one synced object: SHA-1 of upstream's `objectKey` struct as Go JSON
/// (fields in declaration order, the path always empty). `cluster` is empty for
/// service-origin related objects.
pub fn object_key(cluster: &str, namespace: &str, name: &str) -> String {
    let mut text = String::from("{\"ClusterName\":");
    write_string(&mut text, cluster);
    text.push_str(",\"WorkspacePath\":\"\",\"Namespace\":");
    write_string(&mut text, namespace);
    text.push_str(",\"Name\":");
    write_string(&mut text, name);
    text.push_str("}\n");
    sha1_hex(text)
}

/// The stored value for `object`: metadata stripped, the `subresources` keys (`status`,
/// `scale`) removed, as compact Go JSON.
pub fn snapshot(object: &Value, subresources: &[&str]) -> String {
    let mut copy = object.clone();
    strip_metadata(&mut copy);
    if let Some(map) = copy.as_object_mut() {
        for key in subresources {
            map.remove(*key);
        }
    }
    go_json(&copy)
}

/// Parses a stored value; `None` when it is not a JSON object (upstream then falls back to
/// a full update).
pub fn parse_snapshot(data: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(data)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote_thing() -> Value {
        json!({
            "apiVersion": "remote.example.corp/v1alpha1",
            "kind": "RemoteThing",
            "metadata": {"name": "my-test-thing", "uid": "u", "resourceVersion": "7"},
            "spec": {"username": "Colonel Mustard"},
            "status": {"phase": "Ready"},
        })
    }

    #[test]
    fn secret_name_matches_the_upstream_worked_example() {
        assert_eq!(
            secret_name(&remote_thing(), "testcluster"),
            "obj-state-testcluster-3d0c059b55bd46ca57a3"
        );
    }

    #[test]
    fn object_key_matches_the_upstream_worked_example() {
        assert_eq!(
            object_key("testcluster", "", "my-test-thing"),
            "a16ba5bed9c69c6ab2bd4e6d9b41b501ba9e5f56"
        );
    }

    #[test]
    fn snapshot_strips_metadata_and_subresources_and_sorts_keys() {
        assert_eq!(
            snapshot(&remote_thing(), &["status"]),
            r#"{"apiVersion":"remote.example.corp/v1alpha1","kind":"RemoteThing","metadata":{"name":"my-test-thing"},"spec":{"username":"Colonel Mustard"}}"#
        );
    }

    #[test]
    fn snapshot_keeps_status_when_it_is_no_subresource() {
        assert!(snapshot(&remote_thing(), &[]).contains(r#""status":{"phase":"Ready"}"#));
    }

    #[test]
    fn secret_labels_are_the_link_labels_plus_object_state() {
        let key = RemoteObjectKey::of(&remote_thing(), "testcluster", None);
        let labels = secret_labels(&key);
        assert_eq!(labels[OBJECT_STATE_LABEL], "true");
        assert_eq!(
            labels["syncagent.kcp.io/remote-object-cluster"],
            "testcluster"
        );
        assert_eq!(labels.len(), 3);
    }

    #[test]
    fn unparseable_snapshots_read_as_missing() {
        assert_eq!(parse_snapshot(b"not json"), None);
        assert_eq!(parse_snapshot(b"[1]"), None);
        assert!(parse_snapshot(br#"{"a":1}"#).is_some());
    }
}
