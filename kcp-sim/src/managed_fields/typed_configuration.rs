//! An applied configuration of a builtin kind checked against the kind's schema, as
//! structured-merge-diff converts it into a typed value before it merges anything: a value of
//! the wrong type is named by its path (`.spec.replicas`, `.spec.template.spec.containers[name="web"].image`)
//! in structured-merge-diff's words, which print the value as Go's `fmt` prints its own wrapper
//! of it (`expected string, got &value.valueUnstructured{Value:1}`).
//!
//! Unknown fields are not this check's business (field validation warns of them), nor are
//! nulls (they are left out of an apply). A quantity takes any scalar and an int-or-string
//! anything, as their schemas leave them untyped (Go's decoder refuses what they cannot hold
//! afterwards). Items of
//! the lists kube keys by `name` (containers, environment variables, volumes, ...) or `type`
//! (conditions) may not repeat a key.

use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Value};

use super::{PathElement, Place, Schema as ListSchema, Shape, canonical_json, declared};
use crate::builtin_decoding::field_of;
use crate::protobuf::schema::{FieldPlan, GoListType, Schema};
use crate::protobuf::special::Special;
use crate::schema::field::go_float;
use crate::schema::structural::{Additional, Node, Type};

/// What a position of the schema expects.
#[derive(Debug, Clone, Copy)]
enum Expected {
    Map,
    List,
    String,
    Numeric,
    Boolean,
    AnyScalar,
    Anything,
}

/// structured-merge-diff's errors for `configuration`, an object of the kind `desc` encodes,
/// joined as it joins them; `None` when the configuration is well typed.
pub fn errors(
    schema: &'static Schema,
    desc: &MessageDescriptor,
    configuration: &Value,
) -> Option<String> {
    let Value::Object(fields) = configuration else {
        return None;
    };
    let mut found = Vec::new();
    ListSchema::scope(configuration, || {
        message(schema, desc, fields, "", true, &mut found);
    });
    joined(&found)
}

/// The same for a custom resource, whose CRD's structural schema is `root`; its `metadata` is
/// typed as every object's.
pub fn custom_errors(
    schema: &'static Schema,
    root: &Node,
    configuration: &Value,
) -> Option<String> {
    let Value::Object(fields) = configuration else {
        return None;
    };
    let mut found = Vec::new();
    for (key, value) in fields {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                if let Some(meta) = schema.message(OBJECT_META) {
                    single(schema, &Kind::Message(meta), value, ".metadata", &mut found);
                }
            }
            _ => {
                if let Some(child) = root.properties.get(key) {
                    node(child, value, &format!(".{key}"), &mut found);
                }
            }
        }
    }
    joined(&found)
}

const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A value under a node of a CRD's schema: untyped nodes (`x-kubernetes-int-or-string`,
/// `x-kubernetes-preserve-unknown-fields` without a type) take anything, fields the schema does
/// not declare are pruning's business.
fn node(schema_node: &Node, value: &Value, path: &str, found: &mut Vec<String>) {
    let expected = match schema_node.type_ {
        _ if schema_node.int_or_string => return,
        None => return,
        Some(Type::Object) => {
            if let Some(Value::Object(fields)) = expect(value, Expected::Map, path, found) {
                for (key, child) in fields {
                    let child_node =
                        schema_node
                            .properties
                            .get(key)
                            .or(match &schema_node.additional {
                                Some(Additional::Schema(inner)) => Some(inner.as_ref()),
                                _ => None,
                            });
                    if let Some(child_node) = child_node {
                        node(child_node, child, &format!("{path}.{key}"), found);
                    }
                }
            }
            return;
        }
        Some(Type::Array) => {
            if let Some(Value::Array(items)) = expect(value, Expected::List, path, found) {
                list_items(schema_node, items, path, found);
            }
            return;
        }
        Some(Type::String) => Expected::String,
        Some(Type::Integer | Type::Number) => Expected::Numeric,
        Some(Type::Boolean) => Expected::Boolean,
    };
    expect(value, expected, path, found);
}

/// A CRD list's items, each named as structured-merge-diff names it: by its key in a
/// `map` list, by its value in a `set`, by its index otherwise; a repeated key or value is a
/// duplicate entry.
fn list_items(schema_node: &Node, items: &[Value], path: &str, found: &mut Vec<String>) {
    let mut seen: Vec<String> = Vec::new();
    for (position, item) in items.iter().enumerate() {
        let element = match schema_node.list_type.as_deref() {
            Some("map") => map_list_key(&schema_node.map_keys, item).map(PathElement::Key),
            Some("set") => Some(PathElement::Value(canonical_json(item))),
            _ => None,
        };
        let mut shown = String::new();
        element
            .unwrap_or(PathElement::Index(position))
            .write_display(&mut shown);
        if schema_node.list_type.is_some() && seen.contains(&shown) {
            found.push(format!("{path}: duplicate entries for key {shown}"));
        }
        if let Some(items_node) = &schema_node.items {
            node(items_node, item, &format!("{path}{shown}"), found);
        }
        seen.push(shown);
    }
}

/// The key of a `map` list's item: its key fields' values, when it has them all.
fn map_list_key(keys: &[String], item: &Value) -> Option<String> {
    let mut key = Map::new();
    for name in keys {
        key.insert(
            name.clone(),
            item.get(name).filter(|v| !v.is_null())?.clone(),
        );
    }
    Some(canonical_json(&Value::Object(key)))
}

fn joined(found: &[String]) -> Option<String> {
    match found {
        [] => None,
        [only] => Some(only.clone()),
        many => Some(
            std::iter::once("errors:".to_owned())
                .chain(many.iter().map(|error| format!("  {error}")))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

fn message(
    schema: &'static Schema,
    desc: &MessageDescriptor,
    fields: &Map<String, Value>,
    path: &str,
    top: bool,
    found: &mut Vec<String>,
) {
    for (key, value) in fields {
        if top && matches!(key.as_str(), "apiVersion" | "kind") {
            continue;
        }
        let Some(plan) = field_of(schema, desc, key) else {
            continue;
        };
        let here = format!("{path}.{key}");
        let field = &plan.field;
        if field.is_map() {
            let element = match field.kind() {
                Kind::Message(entry) => entry.map_entry_value_field().kind(),
                other => other,
            };
            let Some(entries) = expect(value, Expected::Map, &here, found) else {
                continue;
            };
            for (name, entry) in entries.as_object().into_iter().flatten() {
                single(schema, &element, entry, &format!("{here}.{name}"), found);
            }
        } else if field.is_list() {
            let Some(Value::Array(items)) = expect(value, Expected::List, &here, found) else {
                continue;
            };
            for duplicate in duplicate_keys(plan, items) {
                found.push(format!("{here}: duplicate entries for key {duplicate}"));
            }
            let parent = (desc.full_name() == OBJECT_META).then_some("metadata");
            let shape = Shape::of(
                Place {
                    field: Some(key),
                    parent,
                    declared: declared::go_field(plan),
                },
                items,
            );
            for (position, item) in items.iter().enumerate() {
                let mut element = String::new();
                shape.element(position).write_display(&mut element);
                single(
                    schema,
                    &field.kind(),
                    item,
                    &format!("{here}{element}"),
                    found,
                );
            }
        } else {
            single(schema, &field.kind(), value, &here, found);
        }
    }
}

/// Each key of a keyed list (declared so by `field`'s Go type) that repeats an earlier item's
/// (`[name="web"]`).
fn duplicate_keys(field: &'static FieldPlan, items: &[Value]) -> Vec<String> {
    let Some(GoListType::Map(names)) = &field.list_type else {
        return Vec::new();
    };
    let item = declared::go_field(field).item();
    let mut seen = Vec::new();
    let mut repeated = Vec::new();
    for key in items
        .iter()
        .filter_map(|value| declared::map_key(names, value, item))
    {
        if seen.contains(&key) {
            let mut shown = String::new();
            PathElement::Key(key.clone()).write_display(&mut shown);
            repeated.push(shown);
        }
        seen.push(key);
    }
    repeated
}

/// A field's value, a list item or a map entry of `kind`.
fn single(
    schema: &'static Schema,
    kind: &Kind,
    value: &Value,
    path: &str,
    found: &mut Vec<String>,
) {
    let expected = match kind {
        Kind::Message(m) => match Special::of(m.full_name()) {
            Some(Special::Time | Special::MicroTime) => Expected::String,
            // An untyped scalar in its schema; an int-or-string, and the rest, untyped
            // altogether: Go's decoder judges what they hold afterwards.
            Some(Special::Quantity) => Expected::AnyScalar,
            Some(_) => Expected::Anything,
            None if m.full_name() == "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => {
                Expected::String
            }
            None => {
                if let Some(Value::Object(fields)) = expect(value, Expected::Map, path, found) {
                    message(schema, m, fields, path, false, found);
                }
                return;
            }
        },
        Kind::String | Kind::Bytes => Expected::String,
        Kind::Bool => Expected::Boolean,
        Kind::Enum(_) => Expected::Anything,
        _ => Expected::Numeric,
    };
    expect(value, expected, path, found);
}

/// `value` when it is what `expected` asks for (or null); otherwise the error, noted in `found`.
fn expect<'v>(
    value: &'v Value,
    expected: Expected,
    path: &str,
    found: &mut Vec<String>,
) -> Option<&'v Value> {
    let why = match (expected, value) {
        (_, Value::Null) | (Expected::Anything, _) => return Some(value),
        (Expected::Map, Value::Object(_)) | (Expected::List, Value::Array(_)) => {
            return Some(value);
        }
        (Expected::String, Value::String(_)) | (Expected::Boolean, Value::Bool(_)) => {
            return Some(value);
        }
        (Expected::Numeric, Value::Number(_)) => return Some(value),
        (Expected::AnyScalar, _) if !value.is_object() && !value.is_array() => return Some(value),
        (Expected::Map, _) => format!("expected map, got &{{{}}}", go_plain(value)),
        (Expected::List, _) => format!("expected list, got &{{{}}}", go_plain(value)),
        (Expected::String, _) => format!(
            "expected string, got &value.valueUnstructured{{Value:{}}}",
            go_syntax(value)
        ),
        (Expected::Numeric, _) => {
            format!("expected numeric (int or float), got {}", go_type(value))
        }
        (Expected::Boolean, _) => format!("expected boolean, got &{{{}}}", go_plain(value)),
        (Expected::AnyScalar, _) => format!("expected any scalar, got &{{{}}}", go_plain(value)),
    };
    found.push(format!("{path}: {why}"));
    None
}

/// Go's `%T` of a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn go_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => go_float(f),
        _ => n.to_string(),
    }
}

/// Go's `%v` of a decoded JSON value: maps with sorted keys (`map[a:1 b:x]`), slices
/// space-separated (`[a b]`), strings bare.
fn go_plain(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let shown: Vec<String> = items.iter().map(go_plain).collect();
            format!("[{}]", shown.join(" "))
        }
        Value::Object(fields) => {
            let mut shown: Vec<(&String, String)> =
                fields.iter().map(|(k, v)| (k, go_plain(v))).collect();
            shown.sort();
            let shown: Vec<String> = shown.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
            format!("map[{}]", shown.join(" "))
        }
    }
}

/// Go's `%#v` of a decoded JSON value held in an `interface{}`.
fn go_syntax(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(items) => {
            let shown: Vec<String> = items.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", shown.join(", "))
        }
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            let shown: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), go_syntax(&fields[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(configuration: Value) -> Option<String> {
        let schema = Schema::get().unwrap();
        let api_version = configuration["apiVersion"].as_str().unwrap();
        let kind = configuration["kind"].as_str().unwrap();
        let desc = schema.message_for(api_version, kind).unwrap();
        errors(schema, &desc, &configuration)
    }

    #[test]
    fn a_number_where_a_string_belongs_is_shown_in_gos_syntax() {
        let found = check(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "one"}, "data": {"a": 1}}));
        assert_eq!(
            found.as_deref(),
            Some(".data.a: expected string, got &value.valueUnstructured{Value:1}")
        );
    }

    #[test]
    fn a_string_where_a_number_belongs_is_named_by_its_go_type() {
        let found = check(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"replicas": "3"}}));
        assert_eq!(
            found.as_deref(),
            Some(".spec.replicas: expected numeric (int or float), got string")
        );
    }

    #[test]
    fn a_container_is_named_by_its_key() {
        let found = check(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx", "tty": "yes"}]}}}}));
        assert_eq!(
            found.as_deref(),
            Some(".spec.template.spec.containers[name=\"web\"].tty: expected boolean, got &{yes}")
        );
    }

    #[test]
    fn quantities_and_nulls_pass_and_several_errors_are_listed() {
        let found = check(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p",
            "labels": {"a": null}}, "spec": {"containers": [{"name": "c",
            "resources": {"limits": {"cpu": 1}}, "ports": [{"containerPort": [80]}]}],
            "hostNetwork": 1, "hostname": true}}),
        );
        assert_eq!(
            found.as_deref(),
            Some(
                "errors:\n  .spec.containers[name=\"c\"].ports[0].containerPort: expected numeric (int or float), got []interface {}\n  .spec.hostNetwork: expected boolean, got &{1}\n  .spec.hostname: expected string, got &value.valueUnstructured{Value:true}"
            )
        );
    }

    #[test]
    fn a_repeated_environment_variable_is_a_duplicate_entry() {
        let found = check(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"},
            {"name": "A", "value": "2"}]}]}}),
        );
        assert_eq!(
            found.as_deref(),
            Some(".spec.containers[name=\"c\"].env: duplicate entries for key [name=\"A\"]")
        );
    }

    #[test]
    fn a_map_where_a_list_belongs_is_printed_as_go_prints_a_map() {
        let found = check(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "one", "finalizers": {"b": 2, "a": "x"}}}));
        assert_eq!(
            found.as_deref(),
            Some(".metadata.finalizers: expected list, got &{map[a:x b:2]}")
        );
    }
}
