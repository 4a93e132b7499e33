//! JSON merge patches (RFC 7386) between a last-known state and the current source: the
//! fields kcp changed, and only those, so changes made on the service cluster survive until
//! kcp changes the same field.
//!
//! [`plan_spec_write`] is the three-way merge itself, shared by primaries and related
//! objects: from the last-known state, the source and the destination to what is written.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::metadata::ensure_map_entries;

/// The merge patch that turns `base` into `revision`: changed and new keys with their new
/// values, removed keys as `null`, nested objects diffed recursively, everything else
/// (arrays, scalars) replaced whole. `{}` when nothing changed.
pub fn create_merge_patch(base: &Value, revision: &Value) -> Value {
    match (base, revision) {
        (Value::Object(b), Value::Object(r)) => Value::Object(diff_objects(b, r)),
        (_, r) => r.clone(),
    }
}

fn diff_objects(base: &Map<String, Value>, revision: &Map<String, Value>) -> Map<String, Value> {
    let mut patch = Map::new();
    for (key, old) in base {
        match revision.get(key) {
            None => {
                patch.insert(key.clone(), Value::Null);
            }
            Some(new) if new != old => {
                let value = match (old, new) {
                    (Value::Object(o), Value::Object(n)) => Value::Object(diff_objects(o, n)),
                    _ => new.clone(),
                };
                patch.insert(key.clone(), value);
            }
            Some(_) => {}
        }
    }
    for (key, new) in revision {
        if !base.contains_key(key) {
            patch.insert(key.clone(), new.clone());
        }
    }
    patch
}

/// Whether a patch changes nothing.
pub fn is_empty_patch(patch: &Value) -> bool {
    patch.as_object().is_some_and(Map::is_empty)
}

/// What the spec sync writes to a destination object (a primary's local copy, a related
/// object's copy).
#[derive(Debug, Clone, PartialEq)]
pub enum SpecWrite {
    /// Nothing: the source did not change since the last-known state.
    Nothing,
    /// A merge patch from the last-known state to the source: only what changed on the
    /// origin side, so changes made on the destination survive.
    Patch(Value),
    /// There is no last-known state: the destination with the source's fields put over it,
    /// written whole (upstream's full update).
    Replace(Value),
}

/// The three-way spec merge (upstream §4.3). `current` is the source as the destination should
/// hold it (metadata stripped), `last` the last-known state of the source (from the state
/// Secret), `live` the destination as read. The keys in `subresources` (`status`, `scale`)
/// never take part.
///
/// Without a last-known state every top-level field of `current` but `apiVersion`, `kind` and
/// `metadata` replaces the destination's; with `carry_labels` the source's labels and
/// annotations are added to the destination's too (primaries do, related objects do not).
pub fn plan_spec_write(
    last: Option<Value>,
    current: &Value,
    live: &Value,
    subresources: &[&str],
    carry_labels: bool,
) -> SpecWrite {
    let Some(mut base) = last else {
        return SpecWrite::Replace(full_update(current, live, subresources, carry_labels));
    };
    let mut revision = current.clone();
    if let Some(base) = base.as_object_mut() {
        // The kind is the destination's, whatever the state was written with.
        for key in ["apiVersion", "kind"] {
            base.insert(key.to_owned(), current[key].clone());
        }
    }
    for sub in subresources {
        for side in [&mut base, &mut revision] {
            if let Some(map) = side.as_object_mut() {
                map.remove(*sub);
            }
        }
    }
    let patch = create_merge_patch(&base, &revision);
    if is_empty_patch(&patch) {
        SpecWrite::Nothing
    } else {
        SpecWrite::Patch(patch)
    }
}

/// `live` with the fields of `current` put over it (see [`plan_spec_write`]).
fn full_update(current: &Value, live: &Value, subresources: &[&str], carry_labels: bool) -> Value {
    let mut updated = live.clone();
    if let (Some(src), Some(dst)) = (current.as_object(), updated.as_object_mut()) {
        for (key, value) in src {
            let irrelevant = ["kind", "apiVersion", "metadata"].contains(&key.as_str())
                || subresources.contains(&key.as_str());
            if !irrelevant {
                dst.insert(key.clone(), value.clone());
            }
        }
    }
    if carry_labels {
        for field in ["labels", "annotations"] {
            let entries: BTreeMap<String, String> = current
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            ensure_map_entries(&mut updated, field, &entries);
        }
    }
    updated
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_objects_give_an_empty_patch() {
        let v = json!({"a": {"b": 1}});
        assert!(is_empty_patch(&create_merge_patch(&v, &v)));
    }

    #[test]
    fn changed_nested_fields_are_patched_alone() {
        let patch = create_merge_patch(
            &json!({"spec": {"a": 1, "b": 2}}),
            &json!({"spec": {"a": 1, "b": 3}}),
        );
        assert_eq!(patch, json!({"spec": {"b": 3}}));
    }

    #[test]
    fn removed_keys_become_null_and_new_keys_appear() {
        let patch = create_merge_patch(&json!({"a": 1}), &json!({"b": 2}));
        assert_eq!(patch, json!({"a": null, "b": 2}));
    }

    #[test]
    fn arrays_are_replaced_whole() {
        let patch = create_merge_patch(&json!({"l": [1, 2]}), &json!({"l": [1]}));
        assert_eq!(patch, json!({"l": [1]}));
    }

    fn source() -> Value {
        json!({
            "apiVersion": "example.corp/v1",
            "kind": "Thing",
            "metadata": {"name": "a", "labels": {"team": "x"}},
            "spec": {"size": 2, "color": "blue"},
            "status": {"ready": true},
        })
    }

    #[test]
    fn an_unchanged_source_writes_nothing() {
        let mut last = source();
        last["kind"] = json!("OldKind");
        last["status"] = json!({"ready": false});
        let write = plan_spec_write(Some(last), &source(), &json!({}), &["status"], true);
        assert_eq!(write, SpecWrite::Nothing);
    }

    #[test]
    fn a_changed_source_patches_only_what_changed_since_the_last_state() {
        let mut last = source();
        last["spec"]["size"] = json!(1);
        let live = json!({"spec": {"size": 1, "color": "red"}});
        let write = plan_spec_write(Some(last), &source(), &live, &["status"], true);
        assert_eq!(write, SpecWrite::Patch(json!({"spec": {"size": 2}})));
    }

    #[test]
    fn without_a_last_state_the_source_fields_replace_the_destinations() {
        let live = json!({
            "apiVersion": "example.corp/v1",
            "kind": "Thing",
            "metadata": {"name": "copy", "labels": {"own": "y"}},
            "spec": {"size": 1, "extra": true},
            "status": {"ready": false},
        });
        let SpecWrite::Replace(updated) =
            plan_spec_write(None, &source(), &live, &["status"], false)
        else {
            panic!("expected a full update");
        };
        assert_eq!(
            updated["metadata"],
            json!({"name": "copy", "labels": {"own": "y"}})
        );
        assert_eq!(updated["spec"], json!({"size": 2, "color": "blue"}));
        assert_eq!(updated["status"], json!({"ready": false}));
    }

    #[test]
    fn a_full_update_carries_the_source_labels_when_asked() {
        let live = json!({"metadata": {"name": "copy", "labels": {"own": "y"}}});
        let SpecWrite::Replace(updated) = plan_spec_write(None, &source(), &live, &[], true) else {
            panic!("expected a full update");
        };
        assert_eq!(
            updated["metadata"]["labels"],
            json!({"own": "y", "team": "x"})
        );
    }
}
