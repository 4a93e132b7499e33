//! JSON merge patches (RFC 7386) between a last-known state and the current source: the
//! fields kcp changed, and only those, so changes made on the service cluster survive until
//! kcp changes the same field.

use serde_json::{Map, Value};

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
}
