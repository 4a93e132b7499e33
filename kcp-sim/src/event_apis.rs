//! The two Event APIs over one store, as kube-apiserver keeps them: `events.k8s.io/v1` Events
//! are core Events written and read under other field names, so what a controller records
//! through one (kube-rs's `Recorder` writes `events.k8s.io`) is what the other lists
//! (`kubectl describe` and `kubectl get events` read core Events).
//!
//! - [`to_core`] and [`to_events`] rename the fields as `Convert_v1_Event_To_core_Event` and
//!   its converse do (`regarding` is `involvedObject`, `note` is `message`,
//!   `reportingController` is `reportingComponent`, the `deprecated*` fields are the core's
//!   `source`, `firstTimestamp`, `lastTimestamp` and `count`);
//! - [`stored_field`] maps an `events.k8s.io` field selector onto the stored core fields;
//! - [`create_errors`] and [`update_errors`] are `ValidateEventCreate` and
//!   `ValidateEventUpdate`: every Event gets the legacy checks, one written through
//!   `events.k8s.io` the strict ones too.

use serde_json::{Map, Value, json};

use crate::resource::ResourceType;
use crate::schema::field::{FieldError, go_json};

/// The group of the newer API.
pub const GROUP: &str = "events.k8s.io";

/// `events.k8s.io` field name, core field name.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Fields the core type always writes and `events.k8s.io` leaves out when empty.
const EMPTY_LEFT_OUT: [&str; 2] = ["reportingController", "reportingInstance"];

/// Whether `rt` is the `events.k8s.io` Event, stored as a core Event.
pub fn converts(rt: &ResourceType) -> bool {
    rt.group == GROUP && rt.kind == "Event"
}

/// An `events.k8s.io/v1` Event as the core Event it is stored as.
pub fn to_core(obj: &mut Value) {
    let Some(fields) = obj.as_object_mut() else {
        return;
    };
    rename(fields, false);
    fields.insert("apiVersion".into(), json!("v1"));
}

/// A stored core Event as `events.k8s.io/v1` serves it.
pub fn to_events(obj: &mut Value) {
    let Some(fields) = obj.as_object_mut() else {
        return;
    };
    rename(fields, true);
    for field in EMPTY_LEFT_OUT {
        if fields.get(field).is_some_and(|v| v == "") {
            fields.remove(field);
        }
    }
    fields.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
}

/// A stored Event as read at `api_version` when that is the other Event API's (`None` for
/// any other object or version).
pub fn as_read_at(obj: &Value, api_version: &str) -> Option<Value> {
    if obj.get("kind").and_then(Value::as_str) != Some("Event") {
        return None;
    }
    let stored = obj.get("apiVersion").and_then(Value::as_str)?;
    let mut view = obj.clone();
    match (stored, api_version) {
        ("v1", "events.k8s.io/v1") => to_events(&mut view),
        ("events.k8s.io/v1", "v1") => to_core(&mut view),
        _ => return None,
    }
    Some(view)
}

/// Moves each field of [`RENAMED`] from its `events.k8s.io` name to its core one, or back
/// (`to_events`); a field missing under the one name is missing under the other too.
fn rename(fields: &mut Map<String, Value>, to_events: bool) {
    for (events, core) in RENAMED {
        let (from, to) = if to_events {
            (core, events)
        } else {
            (events, core)
        };
        match fields.remove(from) {
            Some(value) => {
                fields.insert(to.to_string(), value);
            }
            None => {
                fields.remove(to);
            }
        }
    }
}

/// The stored core field an `events.k8s.io` field selector's label selects
/// (`AddFieldLabelConversionsForEvent`); the label itself for the fields of the same name.
pub fn stored_field(label: &str) -> String {
    if let Some(rest) = label.strip_prefix("regarding.") {
        return format!("involvedObject.{rest}");
    }
    match label {
        "reportingController" => "reportingComponent".into(),
        other => other.into(),
    }
}

/// A stored Event as its field selectors read it: `source` is the reporting component,
/// `source.component` or else `reportingComponent` (kube's `ToSelectableFields`); every other
/// field label is read from the field of its name.
pub fn selectable(event: &Value) -> Value {
    let text = |pointer: &str| {
        event
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let source = match text("/source/component") {
        "" => text("/reportingComponent"),
        component => component,
    };
    let mut selectable = event.clone();
    selectable["source"] = Value::from(source);
    selectable
}

/// `ValidateEventCreate` of a stored-shape Event written through `group` (`""` or
/// [`GROUP`]).
pub fn create_errors(group: &str, event: &Value) -> Vec<FieldError> {
    let mut errors = legacy_errors(group, event);
    if group == GROUP {
        errors.extend(series_errors(event));
        errors.extend(strict_create_errors(event));
    }
    errors
}

/// `ValidateEventUpdate` of a stored-shape Event written through [`GROUP`]: the legacy
/// checks, the series, and the fields an Event may not change.
pub fn update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = legacy_errors(GROUP, new);
    if old.get("series") != new.get("series") {
        errors.extend(series_errors(new));
    }
    for field in IMMUTABLE {
        let (before, after) = (old.get(field), new.get(field));
        if !(before == after || before.is_none_or(is_zero) && after.is_none_or(is_zero)) {
            let error = match go_struct(field, after) {
                Some(go_json) => FieldError::invalid_struct(field, go_json, "field is immutable"),
                None => FieldError::invalid(
                    field,
                    after.cloned().unwrap_or(Value::Null),
                    "field is immutable",
                ),
            };
            errors.push(error);
        }
    }
    errors
}

/// The internal Go struct a stored Event field holds, as `encoding/json` writes it (Go's field
/// names, every field, as the struct has no JSON tags): how kube prints the value of an
/// immutable field that changed. `None` for the fields that are no such struct.
fn go_struct(field: &str, value: Option<&Value>) -> Option<String> {
    const OBJECT_REFERENCE: &[(&str, &str)] = &[
        ("Kind", "kind"),
        ("Namespace", "namespace"),
        ("Name", "name"),
        ("UID", "uid"),
        ("APIVersion", "apiVersion"),
        ("ResourceVersion", "resourceVersion"),
        ("FieldPath", "fieldPath"),
    ];
    const EVENT_SOURCE: &[(&str, &str)] = &[("Component", "component"), ("Host", "host")];
    let members = match field {
        "involvedObject" | "related" => OBJECT_REFERENCE,
        "source" => EVENT_SOURCE,
        _ => return None,
    };
    // `related` is a pointer: a removed one prints as JSON's null.
    if field == "related" && value.is_none_or(Value::is_null) {
        return Some("null".into());
    }
    let text = |json: &str| {
        value
            .and_then(|v| v.get(json))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let written: Vec<String> = members
        .iter()
        .map(|(go, json)| {
            format!(
                "{}:{}",
                go_json(&Value::from(*go)),
                go_json(&Value::from(text(json)))
            )
        })
        .collect();
    Some(format!("{{{}}}", written.join(",")))
}

/// The stored fields an Event written through `events.k8s.io` may not change, in
/// `ValidateEventUpdate`'s order (`eventTime` is compared to the microsecond, as stored;
/// `reason` is checked twice, and so listed twice among the causes).
const IMMUTABLE: [&str; 14] = [
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];

/// `legacyValidateEvent`: an Event without `eventTime` must be about an object of its own
/// namespace; one with it must name its reporter, instance, action and reason, within kube's
/// lengths.
fn legacy_errors(group: &str, event: &Value) -> Vec<FieldError> {
    let text = |pointer: &str| event.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let namespace = text("/metadata/namespace");
    let involved = text("/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            json!(involved),
            "does not match event.namespace",
        )
    };
    let mut errors = Vec::new();
    if !has_time(event, "eventTime") {
        let agrees = if involved.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved
        };
        if !agrees {
            errors.push(mismatch());
        }
        return errors;
    }
    if involved.is_empty() && !matches!(namespace, "default" | "kube-system") {
        errors.push(mismatch());
    }
    let reporter_field = if group.is_empty() {
        "reportingComponent"
    } else {
        "reportingController"
    };
    let reporter = text("/reportingComponent");
    if reporter.is_empty() {
        errors.push(FieldError::required(reporter_field, ""));
    }
    for message in crate::object_meta::qualified_name_errors(reporter) {
        errors.push(FieldError::invalid(
            reporter_field,
            json!(reporter),
            message,
        ));
    }
    errors.extend(named_within(
        "reportingInstance",
        text("/reportingInstance"),
        128,
    ));
    errors.extend(named_within("action", text("/action"), 128));
    errors.extend(named_within("reason", text("/reason"), 128));
    if text("/message").len() > 1024 {
        errors.push(FieldError::invalid(
            "message",
            json!(""),
            "can have at most 1024 characters",
        ));
    }
    errors
}

/// A field that must be set and at most `limit` bytes long.
fn named_within(field: &str, value: &str, limit: usize) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    if value.len() > limit {
        return vec![FieldError::invalid(
            field,
            json!(""),
            format!("can have at most {limit} characters"),
        )];
    }
    Vec::new()
}

/// `validateV1EventSeries`: a series has counted at least two and says when it last saw one.
fn series_errors(event: &Value) -> Vec<FieldError> {
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errors.push(FieldError::invalid(
            "series.count",
            json!(""),
            "should be at least 2",
        ));
    }
    if !has_time(series, "lastObservedTime") {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

/// The strict checks of an Event created through `events.k8s.io`: a time and a known type,
/// and none of the deprecated fields.
fn strict_create_errors(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !has_time(event, "eventTime") {
        errors.push(FieldError::required("eventTime", ""));
    }
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
    if !matches!(kind, "Normal" | "Warning") {
        errors.push(FieldError::invalid(
            "type",
            json!(""),
            format!("has invalid value: {kind}"),
        ));
    }
    let unset = |field: &str| FieldError::invalid(field, json!(""), "needs to be unset");
    for field in ["firstTimestamp", "lastTimestamp"] {
        if has_time(event, field) {
            errors.push(unset(field));
        }
    }
    if event.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
        errors.push(unset("count"));
    }
    let source = |field: &str| {
        event
            .pointer(&format!("/source/{field}"))
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    if source("component") || source("host") {
        errors.push(unset("source"));
    }
    errors
}

/// Whether `value` is what Go writes for a zero value (so a field left out equals it).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.values().all(is_zero),
    }
}

/// Whether `field` of `obj` holds a time (Go's zero time is written `null`).
fn has_time(obj: &Value, field: &str) -> bool {
    obj.get(field)
        .is_some_and(|t| !t.is_null() && t.as_str() != Some(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn an_events_api_event_is_stored_under_the_core_names() {
        let mut event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "regarding": {"kind": "Pod", "name": "p"}, "note": "hello",
            "reportingController": "example.com/c", "deprecatedSource": {}});
        to_core(&mut event);
        assert_eq!(
            event,
            json!({"apiVersion": "v1", "kind": "Event",
                "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hello",
                "reportingComponent": "example.com/c", "source": {}})
        );
    }

    #[test]
    fn a_core_event_read_as_events_api_leaves_out_an_empty_reporter() {
        let mut event = json!({"apiVersion": "v1", "kind": "Event", "message": "m",
            "reportingComponent": "", "reportingInstance": "", "count": 3});
        to_events(&mut event);
        assert_eq!(
            event,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "m",
                "deprecatedCount": 3})
        );
    }

    #[test]
    fn an_events_api_selector_on_regarding_selects_the_involved_object() {
        assert_eq!(stored_field("regarding.name"), "involvedObject.name");
        assert_eq!(stored_field("reportingController"), "reportingComponent");
        assert_eq!(stored_field("reason"), "reason");
    }

    #[test]
    fn a_timed_event_must_name_its_reporter_action_and_reason() {
        let event = json!({"metadata": {"namespace": "a"}, "eventTime": "2026-11-30T10:00:00.000000Z",
            "involvedObject": {"namespace": "a"}});
        let errors = create_errors("", &event);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        // The empty reporter is also no qualified name (twice, as kube says it).
        assert_eq!(
            fields,
            [
                "reportingComponent",
                "reportingComponent",
                "reportingComponent",
                "reportingInstance",
                "action",
                "reason",
            ]
        );
        assert_eq!(
            messages(&errors[..1]),
            ["reportingComponent: Required value"]
        );
    }

    #[test]
    fn an_events_api_event_needs_a_time_and_a_known_type() {
        let event = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"},
            "type": "Odd"});
        assert_eq!(
            messages(&create_errors(GROUP, &event)),
            [
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
            ]
        );
    }

    #[test]
    fn an_events_api_update_may_not_change_the_note() {
        let old = json!({"message": "a", "metadata": {"namespace": "default"}});
        let new = json!({"message": "b", "metadata": {"namespace": "default"}});
        assert_eq!(
            messages(&update_errors(&old, &new)),
            ["message: Invalid value: \"b\": field is immutable"]
        );
    }

    #[test]
    fn the_source_field_label_falls_back_to_the_reporting_component() {
        let kubelet = json!({"source": {"component": "kubelet"}, "reportingComponent": "x"});
        assert_eq!(selectable(&kubelet)["source"], "kubelet");
        let reporter = json!({"source": {}, "reportingComponent": "example.com/c"});
        assert_eq!(selectable(&reporter)["source"], "example.com/c");
    }

    #[test]
    fn a_changed_involved_object_prints_as_the_internal_go_struct_and_reason_twice() {
        let old = json!({"eventTime": "2026-11-30T10:00:00.000000Z", "reason": "A",
            "reportingComponent": "example.com/c", "reportingInstance": "i", "action": "a",
            "involvedObject": {"kind": "Pod", "name": "p"}, "metadata": {"namespace": "default"}});
        let mut new = old.clone();
        new["involvedObject"]["name"] = json!("q");
        new["reason"] = json!("B");
        assert_eq!(
            messages(&update_errors(&old, &new)),
            [
                "involvedObject: Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"\",\"Name\":\"q\",\"UID\":\"\",\"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable",
                "reason: Invalid value: \"B\": field is immutable",
                "reason: Invalid value: \"B\": field is immutable",
            ]
        );
    }
}
