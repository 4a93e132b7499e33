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
    match value {
        Value::Object(m) => object(node, m, resource || node.embedded),
        Value::Array(a) => {
            if let Some(items) = node.items.as_deref() {
                for v in a {
                    prune(items, v, false);
                }
            }
        }
        _ => {}
    }
}

fn object(node: &Node, m: &mut Map<String, Value>, resource: bool) {
    if resource && let Some(Value::Object(meta)) = m.get_mut("metadata") {
        meta.retain(|k, _| OBJECT_META.contains(&k.as_str()));
    }
    let keep_unknown = node.preserve_unknown || matches!(node.additional, Some(Additional::Any));
    if let Some(Additional::Schema(values)) = &node.additional {
        for v in m.values_mut() {
            prune(values, v, false);
        }
        return;
    }
    if !keep_unknown {
        m.retain(|k, _| {
            node.properties.contains_key(k)
                || (resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
        });
    }
    for (k, v) in m.iter_mut() {
        if resource && k == "metadata" {
            continue;
        }
        if let Some(child) = node.properties.get(k) {
            prune(child, v, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural::parse;
    use serde_json::json;

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
