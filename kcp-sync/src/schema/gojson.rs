//! A `CustomResourceDefinitionSpec` as Go's `encoding/json` writes the apiextensions/v1
//! struct: fields in Go declaration order, Go's `omitempty` rules, pointer fields written
//! whenever present, map keys sorted.
//!
//! This is what upstream hashes to name an APIResourceSchema. The canonical form, stated so
//! another implementation can reproduce it: the spec's JSON as read from the API server,
//! `conversion` removed, each struct written field by field in the order of
//! `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1` (tables below), maps with
//! sorted keys, Go string escaping with HTML escaping on, numbers as Go prints an `int64` or
//! `float64`, then a newline. One place can differ from Go: free-form JSON values (`default`,
//! `example`, `enum` items) are written from their parsed value (keys sorted, numbers
//! normalised) where Go copies the raw bytes it received; with kubectl-written CRDs those are
//! the same. A difference only yields a different (new) schema name, never wrong data.

use serde_json::{Map, Value};

use crate::hash::{write_string, write_value};

/// How one field is written.
#[derive(Clone, Copy)]
enum Field {
    /// Always written; a missing value is written as the type's zero value.
    Always(Ty),
    /// Left out when missing or the zero value (`omitempty` on a non-pointer).
    OmitEmpty(Ty),
    /// Written whenever present and not null (a pointer with `omitempty`).
    Ptr(Ty),
}

/// The Go type of a field.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Bool,
    Num,
    /// Free-form JSON (`apiextensionsv1.JSON`) or a list of strings.
    Raw,
    /// A `[]JSON` or `[]string`.
    List,
    Struct(&'static [(&'static str, Field)]),
    /// A slice of structs.
    StructList(&'static [(&'static str, Field)]),
    /// A `JSONSchemaProps`.
    Schema,
    /// A `[]JSONSchemaProps`.
    SchemaList,
    /// A `map[string]JSONSchemaProps`.
    SchemaMap,
    /// `JSONSchemaPropsOrArray`.
    OrArray,
    /// `JSONSchemaPropsOrBool`.
    OrBool,
    /// `JSONSchemaDependencies`.
    Deps,
}

const SCHEMA: &[(&str, Field)] = &[
    ("id", Field::OmitEmpty(Ty::Str)),
    ("$schema", Field::OmitEmpty(Ty::Str)),
    ("$ref", Field::Ptr(Ty::Str)),
    ("description", Field::OmitEmpty(Ty::Str)),
    ("type", Field::OmitEmpty(Ty::Str)),
    ("format", Field::OmitEmpty(Ty::Str)),
    ("title", Field::OmitEmpty(Ty::Str)),
    ("default", Field::Ptr(Ty::Raw)),
    ("maximum", Field::Ptr(Ty::Num)),
    ("exclusiveMaximum", Field::OmitEmpty(Ty::Bool)),
    ("minimum", Field::Ptr(Ty::Num)),
    ("exclusiveMinimum", Field::OmitEmpty(Ty::Bool)),
    ("maxLength", Field::Ptr(Ty::Num)),
    ("minLength", Field::Ptr(Ty::Num)),
    ("pattern", Field::OmitEmpty(Ty::Str)),
    ("maxItems", Field::Ptr(Ty::Num)),
    ("minItems", Field::Ptr(Ty::Num)),
    ("uniqueItems", Field::OmitEmpty(Ty::Bool)),
    ("multipleOf", Field::Ptr(Ty::Num)),
    ("enum", Field::OmitEmpty(Ty::List)),
    ("maxProperties", Field::Ptr(Ty::Num)),
    ("minProperties", Field::Ptr(Ty::Num)),
    ("required", Field::OmitEmpty(Ty::List)),
    ("items", Field::Ptr(Ty::OrArray)),
    ("allOf", Field::OmitEmpty(Ty::SchemaList)),
    ("oneOf", Field::OmitEmpty(Ty::SchemaList)),
    ("anyOf", Field::OmitEmpty(Ty::SchemaList)),
    ("not", Field::Ptr(Ty::Schema)),
    ("properties", Field::OmitEmpty(Ty::SchemaMap)),
    ("additionalProperties", Field::Ptr(Ty::OrBool)),
    ("patternProperties", Field::OmitEmpty(Ty::SchemaMap)),
    ("dependencies", Field::OmitEmpty(Ty::Deps)),
    ("additionalItems", Field::Ptr(Ty::OrBool)),
    ("definitions", Field::OmitEmpty(Ty::SchemaMap)),
    ("externalDocs", Field::Ptr(Ty::Struct(EXTERNAL_DOCS))),
    ("example", Field::Ptr(Ty::Raw)),
    ("nullable", Field::OmitEmpty(Ty::Bool)),
    ("x-kubernetes-preserve-unknown-fields", Field::Ptr(Ty::Bool)),
    ("x-kubernetes-embedded-resource", Field::OmitEmpty(Ty::Bool)),
    ("x-kubernetes-int-or-string", Field::OmitEmpty(Ty::Bool)),
    ("x-kubernetes-list-map-keys", Field::OmitEmpty(Ty::List)),
    ("x-kubernetes-list-type", Field::Ptr(Ty::Str)),
    ("x-kubernetes-map-type", Field::Ptr(Ty::Str)),
    (
        "x-kubernetes-validations",
        Field::OmitEmpty(Ty::StructList(VALIDATION_RULE)),
    ),
];

const EXTERNAL_DOCS: &[(&str, Field)] = &[
    ("description", Field::OmitEmpty(Ty::Str)),
    ("url", Field::OmitEmpty(Ty::Str)),
];

const VALIDATION_RULE: &[(&str, Field)] = &[
    ("rule", Field::Always(Ty::Str)),
    ("message", Field::OmitEmpty(Ty::Str)),
    ("messageExpression", Field::OmitEmpty(Ty::Str)),
    ("reason", Field::Ptr(Ty::Str)),
    ("fieldPath", Field::OmitEmpty(Ty::Str)),
    ("optionalOldSelf", Field::Ptr(Ty::Bool)),
];

const NAMES: &[(&str, Field)] = &[
    ("plural", Field::Always(Ty::Str)),
    ("singular", Field::OmitEmpty(Ty::Str)),
    ("shortNames", Field::OmitEmpty(Ty::List)),
    ("kind", Field::Always(Ty::Str)),
    ("listKind", Field::OmitEmpty(Ty::Str)),
    ("categories", Field::OmitEmpty(Ty::List)),
];

const VALIDATION: &[(&str, Field)] = &[("openAPIV3Schema", Field::Ptr(Ty::Schema))];

const SCALE: &[(&str, Field)] = &[
    ("specReplicasPath", Field::Always(Ty::Str)),
    ("statusReplicasPath", Field::Always(Ty::Str)),
    ("labelSelectorPath", Field::Ptr(Ty::Str)),
];

const EMPTY: &[(&str, Field)] = &[];

const SUBRESOURCES: &[(&str, Field)] = &[
    ("status", Field::Ptr(Ty::Struct(EMPTY))),
    ("scale", Field::Ptr(Ty::Struct(SCALE))),
];

const PRINTER_COLUMN: &[(&str, Field)] = &[
    ("name", Field::Always(Ty::Str)),
    ("type", Field::Always(Ty::Str)),
    ("format", Field::OmitEmpty(Ty::Str)),
    ("description", Field::OmitEmpty(Ty::Str)),
    ("priority", Field::OmitEmpty(Ty::Num)),
    ("jsonPath", Field::Always(Ty::Str)),
];

const SELECTABLE_FIELD: &[(&str, Field)] = &[("jsonPath", Field::Always(Ty::Str))];

const VERSION: &[(&str, Field)] = &[
    ("name", Field::Always(Ty::Str)),
    ("served", Field::Always(Ty::Bool)),
    ("storage", Field::Always(Ty::Bool)),
    ("deprecated", Field::OmitEmpty(Ty::Bool)),
    ("deprecationWarning", Field::Ptr(Ty::Str)),
    ("schema", Field::Ptr(Ty::Struct(VALIDATION))),
    ("subresources", Field::Ptr(Ty::Struct(SUBRESOURCES))),
    (
        "additionalPrinterColumns",
        Field::OmitEmpty(Ty::StructList(PRINTER_COLUMN)),
    ),
    (
        "selectableFields",
        Field::OmitEmpty(Ty::StructList(SELECTABLE_FIELD)),
    ),
];

const CONVERSION: &[(&str, Field)] = &[
    ("strategy", Field::Always(Ty::Str)),
    ("webhook", Field::Ptr(Ty::Raw)),
];

const CRD_SPEC: &[(&str, Field)] = &[
    ("group", Field::Always(Ty::Str)),
    ("names", Field::Always(Ty::Struct(NAMES))),
    ("scope", Field::Always(Ty::Str)),
    ("versions", Field::Always(Ty::StructList(VERSION))),
    ("conversion", Field::Ptr(Ty::Struct(CONVERSION))),
    ("preserveUnknownFields", Field::OmitEmpty(Ty::Bool)),
];

/// `spec` (a CRD's `spec` as JSON) as Go's `json.Marshal` of the apiextensions/v1
/// `CustomResourceDefinitionSpec` writes it.
pub fn crd_spec_json(spec: &Value) -> String {
    let mut out = String::new();
    write_struct(&mut out, spec.as_object(), CRD_SPEC);
    out
}

fn write_struct(out: &mut String, obj: Option<&Map<String, Value>>, fields: &[(&str, Field)]) {
    out.push('{');
    let mut first = true;
    for (name, field) in fields {
        let value = obj.and_then(|o| o.get(*name)).filter(|v| !v.is_null());
        let (ty, value) = match (field, value) {
            (Field::Always(ty), v) => (*ty, v),
            (Field::OmitEmpty(ty), Some(v)) if !is_empty(v) => (*ty, Some(v)),
            (Field::Ptr(ty), Some(v)) => (*ty, Some(v)),
            _ => continue,
        };
        if !first {
            out.push(',');
        }
        first = false;
        write_string(out, name);
        out.push(':');
        write_typed(out, ty, value);
    }
    out.push('}');
}

fn write_typed(out: &mut String, ty: Ty, value: Option<&Value>) {
    match (ty, value) {
        (Ty::Str, v) => write_string(out, v.and_then(Value::as_str).unwrap_or_default()),
        (Ty::Bool, v) => out.push_str(if v.and_then(Value::as_bool).unwrap_or(false) {
            "true"
        } else {
            "false"
        }),
        (Ty::Num, None) => out.push('0'),
        (Ty::List, None) | (Ty::StructList(_), None) => out.push_str("null"),
        (Ty::Raw | Ty::Num | Ty::List, Some(v)) => write_value(out, v),
        (Ty::Struct(fields), v) => write_struct(out, v.and_then(Value::as_object), fields),
        (Ty::Schema, v) => write_struct(out, v.and_then(Value::as_object), SCHEMA),
        (Ty::SchemaList, None) => out.push_str("null"),
        (Ty::SchemaList, Some(v)) => write_list(out, v, |out, item| {
            write_struct(out, item.as_object(), SCHEMA)
        }),
        (Ty::StructList(fields), Some(v)) => write_list(out, v, |out, item| {
            write_struct(out, item.as_object(), fields)
        }),
        (Ty::SchemaMap, v) => write_map(out, v, |out, item| {
            write_struct(out, item.as_object(), SCHEMA)
        }),
        (Ty::OrArray, v) => write_or_array(out, v),
        (Ty::OrBool, v) => match v {
            Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Some(schema @ Value::Object(_)) => write_struct(out, schema.as_object(), SCHEMA),
            _ => out.push_str("false"),
        },
        (Ty::Deps, v) => write_map(out, v, |out, item| match item {
            Value::Array(_) => write_value(out, item),
            _ => write_struct(out, item.as_object(), SCHEMA),
        }),
        (Ty::Raw, None) => out.push_str("null"),
    }
}

fn write_or_array(out: &mut String, value: Option<&Value>) {
    match value {
        Some(Value::Array(items)) if !items.is_empty() => {
            write_list(out, &Value::Array(items.clone()), |out, item| {
                write_struct(out, item.as_object(), SCHEMA)
            })
        }
        Some(schema @ Value::Object(_)) => write_struct(out, schema.as_object(), SCHEMA),
        _ => out.push_str("null"),
    }
}

fn write_list(out: &mut String, value: &Value, item: impl Fn(&mut String, &Value)) {
    let Some(items) = value.as_array() else {
        out.push_str("null");
        return;
    };
    out.push('[');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(out, v);
    }
    out.push(']');
}

fn write_map(out: &mut String, value: Option<&Value>, item: impl Fn(&mut String, &Value)) {
    let Some(map) = value.and_then(Value::as_object) else {
        out.push_str("null");
        return;
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        item(out, &map[key]);
    }
    out.push('}');
}

/// Go's zero-value test for `omitempty`: false, 0, "", empty slices and maps.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_spec_fields_come_in_go_order_with_zero_values_for_required_ones() {
        let spec = json!({
            "versions": [{"storage": true, "name": "v1", "served": true}],
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "group": "example.com",
        });
        assert_eq!(
            crd_spec_json(&spec),
            r#"{"group":"example.com","names":{"plural":"things","kind":"Thing"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}]}"#
        );
    }

    #[test]
    fn schema_props_follow_go_field_order_and_sort_properties() {
        let spec = json!({
            "group": "g", "scope": "Cluster", "names": {"plural": "p", "kind": "K"},
            "versions": [{"name": "v1", "served": true, "storage": false,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "x-kubernetes-preserve-unknown-fields": false,
                    "type": "object",
                    "properties": {"b": {"type": "string", "nullable": false}, "a": {"type": "integer", "minimum": 1}},
                    "description": "d",
                }}}],
        });
        assert_eq!(
            crd_spec_json(&spec),
            concat!(
                r#"{"group":"g","names":{"plural":"p","kind":"K"},"scope":"Cluster","versions":[{"name":"v1","served":true,"storage":false,"#,
                r#""schema":{"openAPIV3Schema":{"description":"d","type":"object","properties":{"a":{"type":"integer","minimum":1},"b":{"type":"string"}},"x-kubernetes-preserve-unknown-fields":false}},"#,
                r#""subresources":{"status":{}}}]}"#
            )
        );
    }

    #[test]
    fn additional_properties_false_and_items_schema_are_written_like_go() {
        let spec = json!({"group": "g", "scope": "Cluster", "names": {"plural": "p", "kind": "K"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "additionalProperties": false,
                "properties": {"l": {"type": "array", "items": {"type": "string"}}}}}}]});
        let out = crd_spec_json(&spec);
        assert!(out.contains(r#""additionalProperties":false"#), "{out}");
        assert!(out.contains(r#""items":{"type":"string"}"#), "{out}");
    }
}
