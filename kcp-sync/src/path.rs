//! The gjson/sjson path syntax upstream uses in mutations and related-object references.
//!
//! Reading takes gjson's whole syntax (`spec.items.#.name`, `spec.items.#`, wildcards `*` and
//! `?`, queries `#(name=="web")` and `#(...)#`, `@modifiers`, `|` pipes, multipaths), through the
//! `gjson` crate: tidwall's own Rust port of the Go library upstream reads paths with, so a path
//! finds here what it finds there (kcp-sync's `tests/gjson_paths.rs` compares both with Go's
//! gjson v1.18.0, upstream's version). Writing takes sjson's syntax, which is the plain one:
//! dot-separated keys, `\.` escaping a dot inside a key, a numeric segment indexing an array
//! (the index equal to the length, or `-1`, appends); missing intermediate objects are created.

use serde_json::{Map, Value, json};

/// Splits a path into its segments, resolving `\.` escapes.
pub fn parse(path: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '.' => segments.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    segments.push(current);
    segments
}

/// Looks `path` up in `value` with gjson and reads the result with `read`.
fn lookup<T>(value: &Value, path: &str, read: impl FnOnce(&gjson::Value<'_>) -> T) -> Option<T> {
    let document = serde_json::to_string(value).ok()?;
    Some(read(&gjson::get(&document, path)))
}

/// The value at `path` (gjson's syntax), `None` when it does not exist.
pub fn get(value: &Value, path: &str) -> Option<Value> {
    lookup(value, path, |found| {
        found
            .exists()
            .then(|| serde_json::from_str(found.json()).ok())
            .flatten()
    })
    .flatten()
}

/// The value at `path` as gjson's `Result.String()`: strings unescaped, integers as written,
/// other numbers in their shortest decimal form, `true`/`false`, objects and arrays as their
/// JSON text exactly as the path produced it (a `@pretty` modifier's indentation included),
/// `null` and missing values as `""`.
pub fn get_string(value: &Value, path: &str) -> String {
    lookup(value, path, string_of).unwrap_or_default()
}

/// The result at `path` as the fields of Go's gjson `Result` a template can use (`String`,
/// `Raw`, `Exists`, `Int`, `Float`, `Bool`) and the value itself (`Value`).
pub fn result(value: &Value, path: &str) -> Value {
    lookup(value, path, |found| {
        json!({
            "String": string_of(found),
            "Raw": found.json(),
            "Exists": found.exists(),
            "Int": found.i64(),
            "Float": found.f64(),
            "Bool": found.bool(),
            "Value": serde_json::from_str::<Value>(found.json()).unwrap_or(Value::Null),
        })
    })
    .unwrap_or(Value::Null)
}

fn string_of(found: &gjson::Value<'_>) -> String {
    match found.kind() {
        gjson::Kind::Null => String::new(),
        gjson::Kind::String => found.str().to_owned(),
        gjson::Kind::Number => number_string(found.json(), found.f64()),
        _ => found.json().to_owned(),
    }
}

/// gjson's text of a number: the raw text when it is an integer, else the shortest decimal.
fn number_string(raw: &str, number: f64) -> String {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        raw.to_owned()
    } else {
        number.to_string()
    }
}

/// Sets the value at `path`, creating missing objects on the way. Fails (returning the
/// reason) when a segment runs into a scalar or an array index is out of range.
pub fn set(value: &mut Value, path: &str, new: Value) -> Result<(), String> {
    set_segments(value, &parse(path), new)
}

fn set_segments(value: &mut Value, segments: &[String], new: Value) -> Result<(), String> {
    let Some((first, rest)) = segments.split_first() else {
        *value = new;
        return Ok(());
    };
    if value.is_null() {
        *value = Value::Object(Map::new());
    }
    let slot = match value {
        Value::Object(map) => map.entry(first.clone()).or_insert(Value::Null),
        Value::Array(items) => {
            let len = items.len();
            let index = match first.as_str() {
                "-1" => len,
                s => s
                    .parse::<usize>()
                    .map_err(|_| format!("{first:?} is not an array index"))?,
            };
            if index > len {
                return Err(format!("index {index} is out of range (length {len})"));
            }
            if index == len {
                items.push(Value::Null);
            }
            &mut items[index]
        }
        _ => return Err(format!("cannot descend into a scalar at {first:?}")),
    };
    if rest.is_empty() {
        *slot = new;
        Ok(())
    } else {
        set_segments(slot, rest, new)
    }
}

/// Removes the value at `path` (an object key or an array element); a missing path is not
/// an error.
pub fn delete(value: &mut Value, path: &str) {
    let segments = parse(path);
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut current = value;
    for segment in parents {
        let next = match current {
            Value::Object(map) => map.get_mut(segment.as_str()),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None => return,
        }
    }
    match current {
        Value::Object(map) => {
            map.remove(last.as_str());
        }
        Value::Array(items) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaped_dots_stay_inside_a_key() {
        assert_eq!(
            parse(r"metadata.labels.app\.kubernetes\.io/name"),
            ["metadata", "labels", "app.kubernetes.io/name"]
        );
    }

    #[test]
    fn get_reads_keys_and_array_indexes() {
        let v = json!({"spec": {"list": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(get(&v, "spec.list.1.name"), Some(json!("b")));
        assert_eq!(get(&v, "spec.missing"), None);
    }

    #[test]
    fn hash_maps_over_arrays_and_counts_when_last() {
        let v = json!({"items": [{"name": "a"}, {"other": 1}, {"name": "c"}]});
        assert_eq!(get(&v, "items.#.name"), Some(json!(["a", "c"])));
        assert_eq!(get(&v, "items.#"), Some(json!(3)));
    }

    #[test]
    fn get_string_stringifies_like_gjson() {
        let v = json!({"n": 24, "s": "x", "o": {"a": 1}});
        assert_eq!(get_string(&v, "n"), "24");
        assert_eq!(get_string(&v, "s"), "x");
        assert_eq!(get_string(&v, "o"), r#"{"a":1}"#);
        assert_eq!(get_string(&v, "missing"), "");
    }

    #[test]
    fn set_creates_missing_objects() {
        let mut v = json!({});
        set(&mut v, "spec.a.b", json!(1)).unwrap();
        assert_eq!(v, json!({"spec": {"a": {"b": 1}}}));
    }

    #[test]
    fn set_replaces_and_appends_array_elements() {
        let mut v = json!({"l": [1, 2]});
        set(&mut v, "l.0", json!(9)).unwrap();
        set(&mut v, "l.-1", json!(3)).unwrap();
        set(&mut v, "l.3", json!(4)).unwrap();
        assert_eq!(v, json!({"l": [9, 2, 3, 4]}));
    }

    #[test]
    fn set_into_a_scalar_is_an_error() {
        let mut v = json!({"a": "x"});
        assert!(set(&mut v, "a.b", json!(1)).is_err());
    }

    #[test]
    fn delete_removes_keys_and_array_elements_and_ignores_missing_paths() {
        let mut v = json!({"a": {"b": 1, "c": 2}, "l": [1, 2, 3]});
        delete(&mut v, "a.b");
        delete(&mut v, "l.1");
        delete(&mut v, "x.y");
        assert_eq!(v, json!({"a": {"c": 2}, "l": [1, 3]}));
    }
}
