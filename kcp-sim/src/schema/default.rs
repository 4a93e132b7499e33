//! Defaulting as apiextensions-apiserver does it: `null` in a field that is neither nullable nor
//! defaulted is dropped (`PruneNonNullableNullsWithoutDefaults`), then every absent field with a
//! `default` (and every non-nullable `null` one) gets a copy of it, inside objects that are
//! present, recursively, so defaults inside a default apply too.

use serde_json::{Map, Value};

use super::structural::{Additional, Node};

/// Drops non-nullable nulls and applies defaults to `value`; returns whether anything changed.
pub fn apply(node: &Node, value: &mut Value) -> bool {
    match value {
        Value::Object(m) => object(node, m),
        Value::Array(a) => match node.items.as_deref() {
            Some(items) => {
                let mut changed = false;
                for v in a.iter_mut() {
                    if v.is_null()
                        && !items.nullable
                        && let Some(d) = &items.default
                    {
                        *v = d.clone();
                        changed = true;
                    }
                    changed |= apply(items, v);
                }
                changed
            }
            None => false,
        },
        _ => false,
    }
}

fn object(node: &Node, m: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    let additional = match &node.additional {
        Some(Additional::Schema(s)) => Some(s.as_ref()),
        _ => None,
    };
    // Non-nullable nulls without a default go.
    let before = m.len();
    m.retain(|k, v| {
        let schema = node.properties.get(k).or(additional);
        !(v.is_null() && schema.is_some_and(|s| !s.nullable && s.default.is_none()))
    });
    changed |= m.len() != before;
    for (k, child) in &node.properties {
        let Some(d) = &child.default else { continue };
        match m.get_mut(k) {
            None => {
                m.insert(k.clone(), d.clone());
                changed = true;
            }
            Some(v) if v.is_null() && !child.nullable => {
                *v = d.clone();
                changed = true;
            }
            Some(_) => {}
        }
    }
    for (k, v) in m.iter_mut() {
        let child = match node.properties.get(k) {
            Some(c) => c,
            None => match additional {
                Some(a) => {
                    if v.is_null()
                        && !a.nullable
                        && let Some(d) = &a.default
                    {
                        *v = d.clone();
                        changed = true;
                    }
                    a
                }
                None => continue,
            },
        };
        changed |= apply(child, v);
    }
    changed
}
