//! Who owns a workload's replicas, seen through its `/scale` subresource and back: kube's
//! `ScaleHandler`, which a server-side apply of a Scale runs.
//!
//! - [`to_subresource`]: the Scale's managedFields are the object's entries that own its
//!   replicas path, each owning the Scale's `.spec.replicas` at `autoscaling/v1`.
//! - [`before_first_apply`]: a Scale nobody owns anything of is first claimed by kube's
//!   `before-first-apply` manager (an update with subresource `scale`), so an apply that sets
//!   the replicas conflicts with it unless forced.
//! - [`to_parent`]: after the apply, an object's entry whose manager lost the replicas on the
//!   Scale loses the replicas path; a Scale entry that owns `.spec.replicas` owns the object's
//!   replicas path at the object's version; everything else is kept. An entry keeps its time
//!   only when it was the object's before.
//!
//! Entries are told apart as kube tells managers apart: by manager, operation and subresource,
//! and for an update also by version, so an update's entry, whose version the Scale changes,
//! is never the same manager on both sides.

use serde_json::{Map, Value, json};

use crate::managed_fields::BEFORE_FIRST_APPLY;

/// The version a Scale's entries are written at.
const SCALE_VERSION: &str = "autoscaling/v1";

/// The managedFields key path (`["f:spec", "f:replicas"]`) of a JSONPath such as
/// `.spec.replicas`.
pub fn field_keys(path: &str) -> Vec<String> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|part| !part.is_empty())
        .map(|part| format!("f:{part}"))
        .collect()
}

/// The Scale's managedFields: the entries of `parent_entries` that own `replicas` (keys from
/// [`field_keys`]) and are written at a version of the object's `group`, each owning
/// `.spec.replicas` at `autoscaling/v1`.
pub fn to_subresource(parent_entries: &[Value], replicas: &[String], group: &str) -> Vec<Value> {
    parent_entries
        .iter()
        .filter(|entry| of_group(entry, group) && owns(entry, replicas))
        .map(|entry| {
            let mut scale = entry.clone();
            if let Some(fields) = scale.as_object_mut() {
                fields.insert("apiVersion".into(), json!(SCALE_VERSION));
                fields.insert("fieldsV1".into(), scale_replicas_fields());
            }
            scale
        })
        .collect()
}

/// The entry kube's `before-first-apply` manager gets on a Scale nobody owns anything of: an
/// update through `scale` owning the replicas the Scale shows (none when it shows 0).
pub fn before_first_apply(scale: &Value) -> Option<Value> {
    scale.pointer("/spec/replicas")?;
    Some(json!({
        "apiVersion": SCALE_VERSION,
        "fieldsType": "FieldsV1",
        "fieldsV1": scale_replicas_fields(),
        "manager": BEFORE_FIRST_APPLY,
        "operation": "Update",
        "subresource": "scale",
    }))
}

/// The object's managedFields after a write through its Scale: `parent_entries` as they were,
/// `scale_entries` as the write left them, the object's `replicas` keys, its `api_version`
/// (entries at another group's version are dropped, as kube drops entries of versions it cannot
/// map).
pub fn to_parent(
    parent_entries: &[Value],
    scale_entries: &[Value],
    replicas: &[String],
    api_version: &str,
) -> Vec<Value> {
    let group = group_of(api_version);
    let mut remaining: Vec<&Value> = scale_entries.iter().collect();
    let mut out = Vec::new();
    for entry in parent_entries.iter().filter(|e| of_group(e, group)) {
        if !owns(entry, replicas) {
            out.push(entry.clone());
            continue;
        }
        match remaining
            .iter()
            .position(|scale| identity(scale) == identity(entry))
        {
            Some(index) => {
                remaining.remove(index);
                out.push(entry.clone());
            }
            None => out.extend(without(entry, replicas)),
        }
    }
    for scale in remaining {
        if !owns(scale, &field_keys(".spec.replicas")) {
            continue;
        }
        let mut moved = scale.clone();
        if let Some(fields) = moved.as_object_mut() {
            fields.insert("apiVersion".into(), json!(api_version));
            fields.insert("fieldsV1".into(), nested(replicas));
            fields.remove("time");
        }
        out.push(moved);
    }
    out.sort_by_key(|entry| {
        let text = |key: &str| {
            entry
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        // kube's order of stored entries: by operation, time (none first), manager, version,
        // subresource.
        ["operation", "time", "manager", "apiVersion", "subresource"].map(text)
    });
    out
}

/// How kube tells the managers of two entries apart.
fn identity(entry: &Value) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    let text = |key: &str| entry.get(key).and_then(Value::as_str);
    let operation = text("operation");
    let version = (operation != Some("Apply"))
        .then(|| text("apiVersion"))
        .flatten();
    (text("manager"), operation, text("subresource"), version)
}

fn of_group(entry: &Value, group: &str) -> bool {
    entry
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|version| group_of(version) == group)
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Whether the entry owns the field at `keys`.
fn owns(entry: &Value, keys: &[String]) -> bool {
    let mut node = entry.get("fieldsV1");
    for key in keys {
        node = node.and_then(|n| n.get(key));
    }
    node.is_some()
}

/// The entry without the field at `keys` (and the maps left empty above it); `None` when it
/// then owns nothing.
fn without(entry: &Value, keys: &[String]) -> Option<Value> {
    let mut entry = entry.clone();
    let fields = entry.get_mut("fieldsV1")?;
    remove_path(fields, keys);
    if fields.as_object().is_some_and(Map::is_empty) {
        return None;
    }
    Some(entry)
}

fn remove_path(node: &mut Value, keys: &[String]) {
    let Some((first, rest)) = keys.split_first() else {
        return;
    };
    let Some(map) = node.as_object_mut() else {
        return;
    };
    if rest.is_empty() {
        map.remove(first);
        return;
    }
    if let Some(child) = map.get_mut(first) {
        remove_path(child, rest);
        // A field that was owned itself (`.`) stays owned, now without children: `{}`.
        if child
            .as_object()
            .is_some_and(|c| c.len() == 1 && c.contains_key("."))
        {
            *child = json!({});
        } else if child.as_object().is_some_and(Map::is_empty) {
            map.remove(first);
        }
    }
}

/// `{"f:a": {"f:b": {}}}` for the keys `f:a`, `f:b`.
fn nested(keys: &[String]) -> Value {
    keys.iter()
        .rev()
        .fold(json!({}), |inner, key| json!({ key.as_str(): inner }))
}

fn scale_replicas_fields() -> Value {
    nested(&field_keys(".spec.replicas"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas() -> Vec<String> {
        field_keys(".spec.replicas")
    }

    fn creator() -> Value {
        json!({"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": "creator",
            "operation": "Update", "time": "2026-01-01T00:00:00Z",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}})
    }

    #[test]
    fn the_scale_sees_the_owners_of_the_replicas_at_autoscaling_v1() {
        let other = json!({"apiVersion": "apps/v1", "manager": "labeler", "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:labels": {}}}});
        let scale = to_subresource(&[creator(), other], &replicas(), "apps");
        assert_eq!(scale.len(), 1);
        assert_eq!(scale[0]["apiVersion"], "autoscaling/v1");
        assert_eq!(scale[0]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(scale[0]["time"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn a_forced_scale_apply_takes_the_replicas_from_their_owner() {
        // As kube-apiserver v1.34.2 left it (scale-apply/a-forced-apply-to-a-scale-takes-the-replicas).
        let scaler = json!({"apiVersion": "autoscaling/v1", "fieldsType": "FieldsV1",
            "manager": "scaler", "operation": "Apply", "subresource": "scale",
            "time": "2026-01-02T00:00:00Z", "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        let parent = to_parent(&[creator()], &[scaler], &replicas(), "apps/v1");
        assert_eq!(parent.len(), 2);
        assert_eq!(parent[0]["manager"], "scaler");
        assert_eq!(parent[0]["apiVersion"], "apps/v1");
        assert_eq!(parent[0]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(parent[0].get("time"), None);
        assert_eq!(parent[1]["fieldsV1"], json!({"f:spec": {"f:paused": {}}}));
        assert_eq!(parent[1]["time"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn an_update_entry_kept_on_the_scale_comes_back_split_from_the_rest() {
        // As kube-apiserver v1.34.2 left it
        // (scale-apply/a-merge-patch-of-a-scale-to-the-same-replicas-splits-the-owners-entry):
        // an update's entry is another manager on the Scale, whose version differs.
        let scale = to_subresource(&[creator()], &replicas(), "apps");
        let parent = to_parent(&[creator()], &scale, &replicas(), "apps/v1");
        assert_eq!(parent.len(), 2);
        assert_eq!(parent[0]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(parent[0].get("time"), None);
        assert_eq!(parent[1]["fieldsV1"], json!({"f:spec": {"f:paused": {}}}));
    }

    #[test]
    fn a_map_owned_itself_stays_owned_when_its_replicas_go() {
        // As kube-apiserver v1.34.2 left it (scale/a-custom-resource-scale-follows-its-crd-paths).
        let creator = json!({"apiVersion": "example.com/v1", "manager": "unknown",
            "operation": "Update", "fieldsV1": {"f:spec": {".": {}, "f:size": {}}}});
        let parent = to_parent(&[creator], &[], &field_keys(".spec.size"), "example.com/v1");
        assert_eq!(parent[0]["fieldsV1"], json!({"f:spec": {}}));
    }

    #[test]
    fn an_owner_left_with_nothing_loses_its_entry() {
        let only = json!({"apiVersion": "apps/v1", "manager": "sizer", "operation": "Update",
            "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        assert!(to_parent(&[only], &[], &replicas(), "apps/v1").is_empty());
    }

    #[test]
    fn an_applier_that_keeps_the_replicas_keeps_its_entry() {
        let applier = json!({"apiVersion": "apps/v1", "manager": "deployer", "operation": "Apply",
            "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        let scale = to_subresource(std::slice::from_ref(&applier), &replicas(), "apps");
        assert_eq!(
            to_parent(
                std::slice::from_ref(&applier),
                &scale,
                &replicas(),
                "apps/v1"
            ),
            [applier]
        );
    }

    #[test]
    fn a_custom_resource_keeps_its_replicas_at_its_own_path() {
        let size = field_keys(".spec.size");
        let scaler = json!({"apiVersion": "autoscaling/v1", "manager": "scaler",
            "operation": "Apply", "subresource": "scale",
            "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        let parent = to_parent(&[], &[scaler], &size, "example.com/v1");
        assert_eq!(parent[0]["fieldsV1"], json!({"f:spec": {"f:size": {}}}));
        assert_eq!(parent[0]["apiVersion"], "example.com/v1");
    }

    #[test]
    fn before_first_apply_owns_the_replicas_the_scale_shows() {
        let entry = before_first_apply(&json!({"spec": {"replicas": 2}})).unwrap_or_default();
        assert_eq!(entry["manager"], BEFORE_FIRST_APPLY);
        assert_eq!(entry["subresource"], "scale");
        assert_eq!(before_first_apply(&json!({"spec": {}})), None);
    }
}
