//! kubectl's client-side apply annotation (`kubectl.kubernetes.io/last-applied-configuration`)
//! kept in step with its server-side applies, as kube-apiserver's field manager keeps it
//! (`lastAppliedUpdater` and `lastAppliedManager`).
//!
//! Both rules hold only for the field manager `kubectl` (kubectl's own server-side applies) on
//! an object that carries the annotation, so an object moved from `kubectl apply` to `kubectl
//! apply --server-side` can be moved back:
//!
//! - after the apply, the annotation holds the applied configuration (without the annotation
//!   itself), encoded as Go encodes it, trailing newline included;
//! - an apply that conflicts only over fields whose values are still those of the annotation is
//!   forced: kubectl applied those values last, client-side, whoever owns them now.

use serde_json::{Map, Value};

use crate::managed_fields::{self, ApplyConflicts, FieldManager};

/// The annotation `kubectl apply` writes.
pub const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The field manager whose applies keep the annotation.
const KUBECTL: &str = "kubectl";

/// A server-side apply of `applied` over `live` (see [`managed_fields::apply`]), with the
/// annotation's rules when `who` is kubectl. `sent` is the configuration as the client sent it:
/// the annotation records that, not what the server added to it (a name taken from the URL).
pub fn apply(
    live: &Value,
    sent: &Value,
    applied: &Value,
    who: &FieldManager,
    force: bool,
) -> Result<Value, ApplyConflicts> {
    let mut merged = match managed_fields::apply(Some(live), applied, who, force) {
        Err(refused) if who.manager == KUBECTL => {
            forced_if_last_applied(live, applied, who, refused)?
        }
        other => other?,
    };
    if who.manager == KUBECTL && annotation(&merged).is_some_and(|text| !text.is_empty()) {
        set_annotation(&mut merged, encoded(&without_annotation(sent)));
    }
    Ok(merged)
}

/// The apply again, forced, when every conflict is over a field the annotation still holds;
/// otherwise the conflicts over the other fields.
fn forced_if_last_applied(
    live: &Value,
    applied: &Value,
    who: &FieldManager,
    refused: ApplyConflicts,
) -> Result<Value, ApplyConflicts> {
    let allowed = last_applied_of(live)
        .filter(|last| last.get("apiVersion") == live.get("apiVersion"))
        .map(|last| managed_fields::fields_unchanged_since(&last, live))
        .unwrap_or_default();
    let remaining: Vec<_> = refused
        .conflicts
        .into_iter()
        .filter(|conflict| !allowed.contains(&conflict.field))
        .collect();
    if remaining.is_empty() {
        return managed_fields::apply(Some(live), applied, who, true);
    }
    Err(ApplyConflicts {
        conflicts: remaining,
    })
}

fn annotation(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|annotations| annotations.get(ANNOTATION))
        .and_then(Value::as_str)
}

/// The configuration the annotation holds, when it is a JSON object.
fn last_applied_of(live: &Value) -> Option<Value> {
    let parsed: Value = serde_json::from_str(annotation(live)?).ok()?;
    parsed.is_object().then_some(parsed)
}

fn without_annotation(sent: &Value) -> Value {
    let mut configuration = sent.clone();
    if let Some(annotations) = configuration
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(ANNOTATION);
    }
    configuration
}

fn set_annotation(object: &mut Value, text: String) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(ANNOTATION.to_owned(), Value::String(text));
    }
}

/// `value` as Go's `json.Encoder` writes it: Go's JSON and a trailing newline.
fn encoded(value: &Value) -> String {
    let mut text = crate::schema::field::go_json(value);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kubectl() -> FieldManager<'static> {
        FieldManager {
            manager: KUBECTL,
            subresource: None,
            time: "2026-12-01T10:00:00Z",
            api_version: "v1",
        }
    }

    fn config_map(data: Value, last_applied: Option<&str>) -> Value {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "one", "namespace": "ns"}, "data": data});
        if let Some(text) = last_applied {
            set_annotation(&mut object, text.to_owned());
        }
        object
    }

    #[test]
    fn a_kubectl_apply_rewrites_the_annotation_it_finds() {
        let live = config_map(json!({"a": "1"}), Some("{}"));
        let sent = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "one"},
            "data": {"b": "<2>"}});
        let merged = apply(&live, &sent, &sent, &kubectl(), false).unwrap();
        assert_eq!(
            annotation(&merged),
            Some(
                "{\"apiVersion\":\"v1\",\"data\":{\"b\":\"\\u003c2\\u003e\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"one\"}}\n"
            )
        );
    }

    #[test]
    fn another_managers_apply_leaves_the_annotation() {
        let live = config_map(json!({"a": "1"}), Some("{}"));
        let sent = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "one"},
            "data": {"b": "2"}});
        let who = FieldManager {
            manager: "helm",
            ..kubectl()
        };
        let merged = apply(&live, &sent, &sent, &who, false).unwrap();
        assert_eq!(annotation(&merged), Some("{}"));
    }

    #[test]
    fn an_object_without_the_annotation_does_not_gain_it() {
        let live = config_map(json!({"a": "1"}), None);
        let sent = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "one"}});
        let merged = apply(&live, &sent, &sent, &kubectl(), false).unwrap();
        assert_eq!(annotation(&merged), None);
    }

    fn created_by(manager: &str, data: Value, last_applied: &str) -> Value {
        let mut object = config_map(data, None);
        let who = FieldManager {
            manager,
            ..kubectl()
        };
        managed_fields::record_update(None, &mut object, &who);
        set_annotation(&mut object, last_applied.to_owned());
        object
    }

    #[test]
    fn a_conflict_over_a_field_the_annotation_still_holds_is_forced() {
        let live = created_by(
            "creator",
            json!({"a": "1"}),
            r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"}}"#,
        );
        let sent = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "one"},
            "data": {"a": "2"}});
        let merged = apply(&live, &sent, &sent, &kubectl(), false).unwrap();
        assert_eq!(merged.pointer("/data/a"), Some(&json!("2")));
    }

    #[test]
    fn a_conflict_over_a_field_changed_since_the_annotation_stays() {
        let live = created_by(
            "creator",
            json!({"a": "1"}),
            r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"0"}}"#,
        );
        let sent = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "one"},
            "data": {"a": "2"}});
        let refused = apply(&live, &sent, &sent, &kubectl(), false).unwrap_err();
        let fields: Vec<&str> = refused.conflicts.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, [".data.a"]);
    }
}
