//! Children made equal to what is rendered, for the fields the controller owns.
//!
//! A controller renders each child object from its source and hands it to [`apply_child`]. The
//! child is written by server-side apply under the controller's field manager (forced), so:
//! - a field that is rendered is set, whoever set it before;
//! - a field the controller rendered before and renders no more is removed, unless another
//!   manager also owns it (server-side apply's rule);
//! - fields only others own (a Service's `clusterIP`, a `kubectl annotate`, a defaulted field)
//!   are left alone.
//!
//! Most passes change nothing, and sending an apply for every child of every pass would cost a
//! request each. So the apply is skipped when the live object (usually from a cache) already
//! holds everything rendered ([`contained_in`]) *and* every field the manager's last apply owned
//! is still rendered ([`renders_every_owned_field`], read from the live object's
//! `metadata.managedFields`). When the manager has no apply entry yet, the apply is sent. Both
//! checks are conservative: a wrong guess costs one apply that the server answers without a
//! write, never a skipped change.

use kube::api::DynamicObject;
use serde_json::{Map, Value};

use crate::client::{ObjectClient, ObjectRef, PatchOptions, to_value};
use crate::error::Result;

/// What [`apply_child`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The child did not exist and was created.
    Created,
    /// The child was written and the server changed it.
    Updated,
    /// Nothing changed: the apply was skipped, or the server found nothing to change.
    Unchanged,
}

/// Makes `desired` exist with exactly the rendered fields of `manager`, given `live`, the child
/// as last read (from a cache or the server; `None` when it does not exist). Returns what was
/// done and the child as it now is.
pub async fn apply_child(
    client: &dyn ObjectClient,
    desired: &DynamicObject,
    live: Option<DynamicObject>,
    manager: &str,
) -> Result<(Applied, DynamicObject)> {
    let target = ObjectRef::from_object(desired)?;
    let mut want = to_value(desired, &target)?;
    strip_server_fields(&mut want);
    if let Some(live) = live {
        let have = to_value(&live, &target)?;
        if !apply_needed(&want, &have, manager) {
            return Ok((Applied::Unchanged, live));
        }
        let written = client.apply(desired, &PatchOptions::apply(manager)).await?;
        let changed = written.metadata.resource_version != live.metadata.resource_version;
        let applied = if changed {
            Applied::Updated
        } else {
            Applied::Unchanged
        };
        return Ok((applied, written));
    }
    let written = client.apply(desired, &PatchOptions::apply(manager)).await?;
    Ok((Applied::Created, written))
}

/// Whether an apply of `desired` (as rendered: no status, no server metadata) by `manager` could
/// change `live`: something rendered is not in the live object, or something the manager's last
/// apply owned is no longer rendered (or the manager never applied this object).
pub fn apply_needed(desired: &Value, live: &Value, manager: &str) -> bool {
    let Some(owned) = applied_fields(live, manager) else {
        return true;
    };
    !(contained_in(desired, live) && renders_every_owned_field(owned, desired))
}

/// The field set (FieldsV1) `manager` owns through server-side apply of the object itself (not
/// a subresource), from `metadata.managedFields`.
pub fn applied_fields<'a>(live: &'a Value, manager: &str) -> Option<&'a Value> {
    live.pointer("/metadata/managedFields")?
        .as_array()?
        .iter()
        .find(|entry| {
            entry.get("manager").and_then(Value::as_str) == Some(manager)
                && entry.get("operation").and_then(Value::as_str) == Some("Apply")
                && entry
                    .get("subresource")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
        })
        .map(|entry| entry.get("fieldsV1").unwrap_or(&Value::Null))
}

/// Whether every field of `desired` is present with the same value in `live`: objects compared
/// key by key (keys only `live` has are ignored), lists element by element with equal length.
/// A `null`, `{}` or `[]` in `desired` matches a missing field.
pub fn contained_in(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, v)| match l.get(k) {
            Some(lv) => contained_in(v, lv),
            None => is_empty(v),
        }),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| contained_in(a, b))
        }
        (d, l) => d == l,
    }
}

/// Whether every field in the FieldsV1 set `owned` is still present in `desired`: `f:<name>`
/// is an object key, `k:<json>` a list element with those key fields, `v:<json>` a set element
/// and `i:<n>` a list index. A field that is missing would be removed by the next apply.
pub fn renders_every_owned_field(owned: &Value, desired: &Value) -> bool {
    let Some(fields) = owned.as_object() else {
        return true;
    };
    covers(fields, desired)
}

fn covers(fields: &Map<String, Value>, desired: &Value) -> bool {
    fields.iter().all(|(key, nested)| {
        if key == "." {
            return true;
        }
        match element(key, desired) {
            Some(child) => nested.as_object().is_none_or(|n| covers(n, child)),
            None => false,
        }
    })
}

/// The part of `desired` a FieldsV1 key names, if it is rendered.
fn element<'a>(key: &str, desired: &'a Value) -> Option<&'a Value> {
    if let Some(name) = key.strip_prefix("f:") {
        return desired.get(name).filter(|v| !v.is_null());
    }
    let items = desired.as_array()?;
    if let Some(keys) = key.strip_prefix("k:") {
        let keys: Map<String, Value> = serde_json::from_str(keys).ok()?;
        return items.iter().find(|item| has_keys(item, &keys));
    }
    if let Some(value) = key.strip_prefix("v:") {
        let value: Value = serde_json::from_str(value).ok()?;
        return items.iter().find(|item| **item == value);
    }
    let index: usize = key.strip_prefix("i:")?.parse().ok()?;
    items.get(index)
}

/// Whether a list element carries the key fields of a FieldsV1 `k:` entry. A key field the
/// element leaves out counts as the server's default (a port's `protocol`), as long as at least
/// one key field is given.
fn has_keys(item: &Value, keys: &Map<String, Value>) -> bool {
    let mut given = 0;
    for (name, value) in keys {
        match item.get(name) {
            Some(v) if v == value => given += 1,
            Some(_) => return false,
            None => {}
        }
    }
    given > 0
}

fn is_empty(value: &Value) -> bool {
    value.is_null()
        || value.as_object().is_some_and(Map::is_empty)
        || value.as_array().is_some_and(Vec::is_empty)
}

/// Drops what a rendered object never decides: status and the server's metadata.
fn strip_server_fields(value: &mut Value) {
    let Some(obj) = value.as_object_mut() else {
        return;
    };
    obj.remove("status");
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            meta.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live_with(fields: Value, body: Value) -> Value {
        let mut live = body;
        live["metadata"]["managedFields"] = json!([
            {"manager": "other", "operation": "Update", "fieldsV1": {"f:spec": {"f:x": {}}}},
            {"manager": "ctl", "operation": "Apply", "fieldsV1": fields},
        ]);
        live
    }

    #[test]
    fn a_rendered_state_the_live_object_holds_and_owns_needs_no_apply() {
        let desired = json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 1}]}});
        let live = live_with(
            json!({"f:spec": {"f:ports": {}}}),
            json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 1, "nodePort": 3}], "clusterIP": "10.0.0.1"}}),
        );
        assert!(!apply_needed(&desired, &live, "ctl"));
    }

    #[test]
    fn a_field_no_longer_rendered_needs_an_apply_to_remove_it() {
        let desired = json!({"spec": {"a": 1}});
        let live = live_with(
            json!({"f:spec": {"f:a": {}, "f:b": {}}}),
            json!({"spec": {"a": 1, "b": 2}}),
        );
        assert!(apply_needed(&desired, &live, "ctl"));
    }

    #[test]
    fn a_field_another_manager_owns_is_not_a_reason_to_apply() {
        let desired = json!({"spec": {"a": 1}});
        let live = live_with(
            json!({"f:spec": {"f:a": {}}}),
            json!({"spec": {"a": 1, "x": 9}}),
        );
        assert!(!apply_needed(&desired, &live, "ctl"));
    }

    #[test]
    fn an_object_the_manager_never_applied_gets_an_apply() {
        let desired = json!({"spec": {"a": 1}});
        let live = json!({"spec": {"a": 1}});
        assert!(apply_needed(&desired, &live, "ctl"));
    }

    #[test]
    fn a_changed_or_missing_value_needs_an_apply() {
        assert!(!contained_in(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!contained_in(&json!({"a": [1, 2]}), &json!({"a": [1]})));
        assert!(!contained_in(&json!({"a": "x"}), &json!({})));
        assert!(contained_in(&json!({"a": []}), &json!({})));
    }

    #[test]
    fn keyed_list_elements_are_matched_by_their_keys() {
        let desired = json!({"containers": [{"name": "kcp", "ports": [{"containerPort": 6443}]}]});
        let owned = json!({"f:containers": {"k:{\"name\":\"kcp\"}": {
            "f:ports": {"k:{\"containerPort\":6443,\"protocol\":\"TCP\"}": {".": {}}}}}});
        assert!(renders_every_owned_field(&owned, &desired));
        let gone = json!({"f:containers": {"k:{\"name\":\"proxy\"}": {}}});
        assert!(!renders_every_owned_field(&gone, &desired));
    }

    #[test]
    fn set_elements_and_indexes_are_matched_by_value_and_position() {
        let desired = json!({"finalizers": ["a"], "list": [1]});
        assert!(renders_every_owned_field(
            &json!({"f:finalizers": {"v:\"a\"": {}}, "f:list": {"i:0": {}}}),
            &desired
        ));
        assert!(!renders_every_owned_field(
            &json!({"f:finalizers": {"v:\"b\"": {}}}),
            &desired
        ));
        assert!(!renders_every_owned_field(
            &json!({"f:list": {"i:1": {}}}),
            &desired
        ));
    }

    #[test]
    fn only_the_managers_apply_entry_of_the_object_itself_counts() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "ctl", "operation": "Update", "fieldsV1": {"f:a": {}}},
            {"manager": "ctl", "operation": "Apply", "subresource": "status", "fieldsV1": {"f:b": {}}},
            {"manager": "ctl", "operation": "Apply", "fieldsV1": {"f:c": {}}},
        ]}});
        assert_eq!(applied_fields(&live, "ctl"), Some(&json!({"f:c": {}})));
        assert_eq!(applied_fields(&live, "nobody"), None);
    }
}
