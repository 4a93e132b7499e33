//! Pruning of unknown fields, as apiextensions-apiserver does on every write: fields the schema
//! does not specify are dropped unless `x-kubernetes-preserve-unknown-fields` keeps them; maps
//! (`additionalProperties`) keep their keys and prune their values; the `apiVersion`, `kind` and
//! `metadata` of the resource and of embedded resources are kept, and their `metadata` is cut
//! down to the fields of ObjectMeta.

use serde_json::{Map, Value};

use super::structural::{Additional, Node};

/// The fields of ObjectMeta (what a resource's `metadata` keeps).
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes `value` by `node`; `resource` is true at the root of a resource (the object itself or
/// an embedded resource).
pub fn prune(node: &Node, value: &mut Value, resource: bool) {
    prune_at(node, value, resource, "", &mut Vec::new());
}

/// Prunes as [`prune`] does and tells the fields it dropped, sorted, as paths from `value`
/// (`spec.extra`, `spec.items[0].x`): the `unknown field` warnings of kube-apiserver.
pub fn prune_reporting(node: &Node, value: &mut Value, resource: bool) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_at(node, value, resource, "", &mut pruned);
    pruned.sort();
    pruned
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn prune_at(node: &Node, value: &mut Value, resource: bool, path: &str, pruned: &mut Vec<String>) {
    match value {
        Value::Object(m) => object(node, m, resource || node.embedded, path, pruned),
        Value::Array(a) => {
            if let Some(items) = node.items.as_deref() {
                for (i, v) in a.iter_mut().enumerate() {
                    prune_at(items, v, false, &format!("{path}[{i}]"), pruned);
                }
            }
        }
        _ => {}
    }
}

fn object(
    node: &Node,
    m: &mut Map<String, Value>,
    resource: bool,
    path: &str,
    pruned: &mut Vec<String>,
) {
    if resource && let Some(Value::Object(meta)) = m.get_mut("metadata") {
        let meta_path = child_path(path, "metadata");
        meta.retain(|k, _| {
            let known = OBJECT_META.contains(&k.as_str());
            if !known {
                pruned.push(child_path(&meta_path, k));
            }
            known
        });
    }
    let keep_unknown = node.preserve_unknown || matches!(node.additional, Some(Additional::Any));
    if let Some(Additional::Schema(values)) = &node.additional {
        for (k, v) in m.iter_mut() {
            prune_at(values, v, false, &child_path(path, k), pruned);
        }
        return;
    }
    if !keep_unknown {
        m.retain(|k, _| {
            let known = node.properties.contains_key(k)
                || (resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
            if !known {
                pruned.push(child_path(path, k));
            }
            known
        });
    }
    for (k, v) in m.iter_mut() {
        if resource && k == "metadata" {
            continue;
        }
        if let Some(child) = node.properties.get(k) {
            prune_at(child, v, false, &child_path(path, k), pruned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural::parse;
    use serde_json::json;

    #[test]
    fn pruned_fields_are_told_by_their_paths() {
        let node = parse(
            &json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "l": {"type": "array", "items": {"type": "object", "properties": {
                        "a": {"type": "string"}}}}}}}}),
            "s",
        )
        .unwrap();
        let mut obj = json!({"metadata": {"name": "n", "bogus": 1},
            "spec": {"extra": true, "l": [{"a": "x", "b": "y"}]}});
        assert_eq!(
            prune_reporting(&node, &mut obj, true),
            ["metadata.bogus", "spec.extra", "spec.l[0].b"]
        );
    }

    #[test]
    fn unknown_fields_go_and_preserved_subtrees_stay() {
        let node = parse(
            &json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "a": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}),
            "s",
        )
        .unwrap();
        let mut obj = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "bogus": 1},
            "spec": {"a": "x", "b": "y", "free": {"anything": 1}}, "extra": true});
        prune(&node, &mut obj, true);
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
                "spec": {"a": "x", "free": {"anything": 1}}})
        );
    }
}
