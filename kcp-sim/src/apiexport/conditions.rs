//! Status conditions as kcp's controllers write them: one entry per type, whose
//! `lastTransitionTime` changes only when its status does.

use serde_json::{Value, json};

use crate::semantics::now;

/// A condition to set: type, status, and reason and message when it is not `True`.
#[derive(Debug, Clone, Copy)]
pub struct Condition<'a> {
    /// The condition type, e.g. `Ready`.
    pub type_: &'a str,
    /// `True` or `False`.
    pub status: bool,
    /// The reason (for `False`).
    pub reason: &'a str,
    /// The message (for `False`).
    pub message: &'a str,
}

impl<'a> Condition<'a> {
    /// A `True` condition.
    pub fn ok(type_: &'a str) -> Self {
        Self {
            type_,
            status: true,
            reason: "",
            message: "",
        }
    }

    /// A `False` condition with severity `Error`.
    pub fn failed(type_: &'a str, reason: &'a str, message: &'a str) -> Self {
        Self {
            type_,
            status: false,
            reason,
            message,
        }
    }
}

/// Sets a condition in `status.conditions` of `obj`, keeping the others.
pub fn set(obj: &mut Value, c: Condition<'_>) {
    let status = if c.status { "True" } else { "False" };
    let list = &mut obj["status"]["conditions"];
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let previous = list.iter().position(|x| x["type"] == c.type_);
    let time = previous
        .and_then(|i| list.get(i))
        .filter(|x| x["status"] == status)
        .and_then(|x| x["lastTransitionTime"].as_str())
        .map(String::from)
        .unwrap_or_else(now);
    let mut entry = json!({"type": c.type_, "status": status, "lastTransitionTime": time});
    if !c.status {
        entry["severity"] = json!("Error");
        entry["reason"] = json!(c.reason);
        entry["message"] = json!(c.message);
    }
    match previous {
        Some(i) => list[i] = entry,
        None => list.push(entry),
    }
}

/// Whether `obj` has a condition of this type with status `True`.
pub fn is_true(obj: &Value, type_: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|l| {
            l.iter()
                .any(|c| c["type"] == type_ && c["status"] == "True")
        })
}
