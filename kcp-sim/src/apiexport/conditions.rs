//! Status conditions as kcp's controllers write them (kcp's `conditions` package): one entry per
//! type, sorted with `Ready` first and the others by type, whose `lastTransitionTime` changes
//! only when its state (status, reason, severity, message) does; `Ready` can summarise others.

use serde_json::{Value, json};

use crate::semantics::now;

/// The summary condition.
pub const READY: &str = "Ready";

/// A condition to set: type, status, and severity, reason and message when it is not `True`.
#[derive(Debug, Clone, Copy)]
pub struct Condition<'a> {
    /// The condition type, e.g. `Ready`.
    pub type_: &'a str,
    /// `True` or `False`.
    pub status: bool,
    /// The severity (for `False`): `Error`, `Warning` or `Info`.
    pub severity: &'a str,
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
            severity: "",
            reason: "",
            message: "",
        }
    }

    /// A `False` condition with severity `Error`.
    pub fn failed(type_: &'a str, reason: &'a str, message: &'a str) -> Self {
        Self {
            type_,
            status: false,
            severity: "Error",
            reason,
            message,
        }
    }

    /// A `False` condition with severity `Info` (something is still in progress).
    pub fn pending(type_: &'a str, reason: &'a str, message: &'a str) -> Self {
        Self {
            severity: "Info",
            ..Self::failed(type_, reason, message)
        }
    }

    fn to_json(self, time: &str) -> Value {
        let mut entry = json!({
            "type": self.type_,
            "status": if self.status { "True" } else { "False" },
            "lastTransitionTime": time,
        });
        if !self.status {
            entry["severity"] = json!(self.severity);
            entry["reason"] = json!(self.reason);
            entry["message"] = json!(self.message);
        }
        entry
    }
}

/// Whether two condition entries have the same state (everything but the time).
fn same_state(a: &Value, b: &Value) -> bool {
    ["type", "status", "reason", "severity", "message"]
        .iter()
        .all(|k| a.get(k) == b.get(k))
}

/// Sets a condition in `status.conditions` of `obj`, keeping the others, in kcp's order.
pub fn set(obj: &mut Value, c: Condition<'_>) {
    let list = &mut obj["status"]["conditions"];
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let mut entry = c.to_json("");
    let previous = list.iter().position(|x| x["type"] == c.type_);
    let time = previous
        .and_then(|i| list.get(i))
        .filter(|x| same_state(x, &entry))
        .and_then(|x| x["lastTransitionTime"].as_str())
        .map(String::from)
        .unwrap_or_else(now);
    entry["lastTransitionTime"] = json!(time);
    match previous {
        Some(i) => list[i] = entry,
        None => list.push(entry),
    }
    list.sort_by(|a, b| {
        let key = |c: &Value| {
            let t = c["type"].as_str().unwrap_or_default().to_string();
            (t != READY, t)
        };
        key(a).cmp(&key(b))
    });
}

/// Sets `Ready` from the conditions of `types` (all others when `None`), as kcp's
/// `conditions.SetSummary`: `False` with the reason, severity and message of the first of the
/// most severe `False` ones, else `True`; nothing when none of them is set.
pub fn set_summary(obj: &mut Value, types: Option<&[&str]>) {
    let in_scope: Vec<Value> = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter(|c| c["type"] != READY)
                .filter(|c| types.is_none_or(|t| t.iter().any(|t| c["type"].as_str() == Some(t))))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if in_scope.is_empty() {
        return;
    }
    let priority = |c: &Value| match (c["status"].as_str(), c["severity"].as_str()) {
        (Some("False"), Some("Error")) => 0,
        (Some("False"), Some("Warning")) => 1,
        (Some("False"), _) => 2,
        (Some("True"), _) => 3,
        _ => 4,
    };
    // The conditions are kept sorted by type, so the first of the top group comes first here.
    let Some(top) = in_scope.iter().min_by_key(|c| priority(c)) else {
        return;
    };
    let text = |k: &str| top[k].as_str().unwrap_or_default().to_string();
    let (reason, severity, message) = (text("reason"), text("severity"), text("message"));
    let summary = match priority(top) {
        3 => Condition::ok(READY),
        _ => Condition {
            type_: READY,
            status: false,
            severity: &severity,
            reason: &reason,
            message: &message,
        },
    };
    set(obj, summary);
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
