//! Permission claims as Go's `encoding/json` writes kcp's claim types, for the annotations kcp's
//! conversions keep claims in: members in struct field order, empty `omitempty` fields left out,
//! map keys (`matchLabels`) sorted.

use serde_json::Value;

/// The members of kcp's claim types (v1alpha1 and v1alpha2 claims, their selectors, label
/// selector requirements and resource selectors) in the order their Go structs declare them.
const FIELD_ORDER: &[&str] = &[
    "group",
    "resource",
    "verbs",
    "all",
    "resourceSelector",
    "identityHash",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "matchAll",
    "name",
    "namespace",
    "state",
];

/// Fields written only when set (`omitempty`).
fn omitted(key: &str, value: &Value) -> bool {
    let empty = match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    };
    empty
        && matches!(
            key,
            "group"
                | "identityHash"
                | "all"
                | "resourceSelector"
                | "matchAll"
                | "matchLabels"
                | "matchExpressions"
                | "values"
                | "name"
                | "namespace"
        )
}

/// A list of claims as Go writes it.
pub fn claims(claims: &[Value]) -> String {
    write(&Value::Array(claims.to_vec()), false)
}

/// One claim selector as Go writes it (`matchLabels`, `matchExpressions`, `matchAll`).
pub fn selector(selector: &Value) -> String {
    write(selector, false)
}

fn write(value: &Value, sorted: bool) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| write(i, false)).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            if !sorted {
                let rank = |k: &str| FIELD_ORDER.iter().position(|f| *f == k);
                keys.sort_by_key(|k| (rank(k).unwrap_or(usize::MAX), k.to_string()));
            }
            let members: Vec<String> = keys
                .into_iter()
                .filter_map(|k| {
                    let v = map.get(k)?;
                    (sorted || !omitted(k, v)).then(|| {
                        format!(
                            "{}:{}",
                            Value::from(k.as_str()),
                            write(v, k == "matchLabels")
                        )
                    })
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_follow_the_go_structs_and_empty_ones_are_left_out() {
        let claim = json!({"state": "Accepted", "selector": {"matchAll": true, "matchLabels": {"b": "1", "a": "2"}},
            "verbs": ["get"], "resource": "configmaps", "identityHash": "", "group": ""});
        assert_eq!(
            claims(&[claim]),
            "[{\"resource\":\"configmaps\",\"verbs\":[\"get\"],\"selector\":{\"matchLabels\":{\"a\":\"2\",\"b\":\"1\"},\"matchAll\":true},\"state\":\"Accepted\"}]"
        );
    }
}
