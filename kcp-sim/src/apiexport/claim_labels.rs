//! The permission claim labels kcp's admission writes on every object of a claimed resource:
//! for each binding of the object's cluster that accepted a claim on its resource (the claim's
//! selector matching the object's labels) and whose export exists,
//! `claimed.internal.apis.kcp.io/<export hash>: <claim hash>` (see [`super::labels`]); claim
//! labels no binding asks for any more are removed. Events of both groups count as core Events.
//! APIBindings are left to [`super::binding`] (the reflexive label).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::export::Export;
use super::labels::{CLAIM_LABEL_PREFIX, claim_label_key, claim_label_value};
use super::{bindings, objects_of, str_at};
use crate::resource::GroupResource;
use crate::store::State;

/// Core and `events.k8s.io` Events are claimed as core Events.
fn normalized(gr: &GroupResource) -> GroupResource {
    match super::view::event_twin(gr) {
        Some(core) if gr.group == "events.k8s.io" => core,
        _ => gr.clone(),
    }
}

/// The claim labels an object of `gr` in `cluster` with these labels is to carry.
pub fn expected(
    state: &State,
    cluster: &str,
    gr: &GroupResource,
    labels: &Map<String, Value>,
) -> BTreeMap<String, String> {
    let gr = normalized(gr);
    let mut out = BTreeMap::new();
    for binding in objects_of(state, cluster, &bindings()) {
        let path = match str_at(&binding, "/spec/reference/export/path") {
            "" => cluster,
            path => path,
        };
        let Some(export) =
            Export::find(state, path, str_at(&binding, "/spec/reference/export/name"))
        else {
            continue;
        };
        let claims = binding
            .pointer("/spec/permissionClaims")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for claim in claims.iter().filter(|c| {
            str_at(c, "/state") == "Accepted"
                && str_at(c, "/group") == gr.group
                && str_at(c, "/resource") == gr.resource
                && selects(c.get("selector").unwrap_or(&Value::Null), labels)
        }) {
            out.insert(
                claim_label_key(&export.cluster, &export.name),
                claim_label_value(&gr.group, &gr.resource, str_at(claim, "/identityHash")),
            );
        }
    }
    out
}

/// Sets the claim labels of an object of `gr` in `cluster`.
pub fn apply(state: &State, cluster: &str, gr: &GroupResource, obj: &mut Value) {
    if *gr == bindings() {
        return;
    }
    let current = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let wanted = expected(state, cluster, gr, &current);
    let mut labels = current.clone();
    labels.retain(|k, _| !k.starts_with(CLAIM_LABEL_PREFIX) || wanted.contains_key(k));
    for (k, v) in wanted {
        labels.insert(k, json!(v));
    }
    if labels == current {
        return;
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if labels.is_empty() {
            meta.remove("labels");
        } else {
            meta.insert("labels".into(), Value::Object(labels));
        }
    }
}

/// Whether a claim's selector (`matchAll`, or a label selector) selects objects with these
/// labels.
fn selects(selector: &Value, labels: &Map<String, Value>) -> bool {
    if selector.get("matchAll") == Some(&json!(true)) {
        return true;
    }
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_label = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let by_expression = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let value = label(str_at(e, "/key"));
            match str_at(e, "/operator") {
                "In" => value.is_some_and(|v| values.contains(&v)),
                "NotIn" => value.is_none_or(|v| !values.contains(&v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        });
    by_label && by_expression
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_selector_selects_by_labels_and_expressions() {
        let selector = json!({"matchLabels": {"app": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]});
        assert!(selects(
            &selector,
            &labels(json!({"app": "a", "tier": "web"}))
        ));
        assert!(!selects(&selector, &labels(json!({"app": "a"}))));
        assert!(selects(&json!({"matchAll": true}), &labels(json!({}))));
    }
}
