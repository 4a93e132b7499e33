//! Protobuf to JSON, the way kube-apiserver's Go types would marshal what they decoded: field
//! names and inlined structs from the Go types, zero scalars left out unless the Go field is a
//! pointer or has no `omitempty`, and the Kubernetes types whose JSON form is not their message
//! (`Time`, `MicroTime`, `Duration`, `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1`,
//! apiextensions' `JSON` and the `JSONSchemaProps` either-or wrappers).

use base64::Engine;
use prost_reflect::{DynamicMessage, MapKey, ReflectMessage, Value as Proto};
use serde_json::{Map, Value, json};

use super::schema::Schema;
use super::special::{self, Special};

/// Why a message could not be shown as JSON: the JSON path and the reason.
pub type PathError = (String, String);

/// The JSON object of a decoded message.
pub fn message(schema: &Schema, msg: &DynamicMessage, path: &str) -> Result<Value, PathError> {
    if let Some(special) = Special::of(msg.descriptor().full_name()) {
        return special::to_json(special, msg, path, |m, p| message(schema, m, p));
    }
    let mut out = Map::new();
    fields_into(schema, msg, path, &mut out)?;
    Ok(Value::Object(out))
}

fn fields_into(
    schema: &Schema,
    msg: &DynamicMessage,
    path: &str,
    out: &mut Map<String, Value>,
) -> Result<(), PathError> {
    let desc = msg.descriptor();
    let plan = schema.plan(&desc).ok_or_else(|| {
        (
            path.to_string(),
            format!("unknown message {}", desc.full_name()),
        )
    })?;
    for (field, value) in msg.fields() {
        let Some(fp) = plan.field_by_number(field.number()) else {
            continue;
        };
        let here = format!("{path}.{}", fp.json);
        if fp.inline {
            if let Proto::Message(inner) = value {
                fields_into(schema, inner, path, out)?;
            }
            continue;
        }
        if let Some(v) = field_value(schema, value, fp.keep_zero, &here)? {
            out.insert(fp.json.clone(), v);
        }
    }
    Ok(())
}

/// The JSON value of one field; `None` when JSON leaves it out.
fn field_value(
    schema: &Schema,
    value: &Proto,
    keep_zero: bool,
    path: &str,
) -> Result<Option<Value>, PathError> {
    match value {
        Proto::List(items) if items.is_empty() => Ok(None),
        Proto::List(items) => {
            let values = items
                .iter()
                .enumerate()
                .map(|(i, item)| single(schema, item, &format!("{path}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(Value::Array(values)))
        }
        Proto::Map(entries) if entries.is_empty() => Ok(None),
        Proto::Map(entries) => {
            let mut out = Map::new();
            for (key, item) in entries {
                let key = map_key(key);
                let v = single(schema, item, &format!("{path}[{key}]"))?;
                out.insert(key, v);
            }
            Ok(Some(Value::Object(out)))
        }
        // A zero Time or empty raw JSON is `null`, which Go leaves out of the stored object.
        Proto::Message(_) => Ok(Some(single(schema, value, path)?).filter(|v| !v.is_null())),
        scalar => {
            let v = single(schema, scalar, path)?;
            Ok((keep_zero || !is_zero(scalar)).then_some(v))
        }
    }
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

fn is_zero(value: &Proto) -> bool {
    match value {
        Proto::Bool(b) => !b,
        Proto::I32(n) | Proto::EnumNumber(n) => *n == 0,
        Proto::I64(n) => *n == 0,
        Proto::U32(n) => *n == 0,
        Proto::U64(n) => *n == 0,
        Proto::F32(n) => *n == 0.0,
        Proto::F64(n) => *n == 0.0,
        Proto::String(s) => s.is_empty(),
        Proto::Bytes(b) => b.is_empty(),
        Proto::Message(_) | Proto::List(_) | Proto::Map(_) => false,
    }
}

/// One value: a scalar, a message, or an element of a list or map.
fn single(schema: &Schema, value: &Proto, path: &str) -> Result<Value, PathError> {
    Ok(match value {
        Proto::Bool(b) => json!(b),
        Proto::I32(n) | Proto::EnumNumber(n) => json!(n),
        Proto::I64(n) => json!(n),
        Proto::U32(n) => json!(n),
        Proto::U64(n) => json!(n),
        Proto::F32(n) => json!(n),
        Proto::F64(n) => json!(n),
        Proto::String(s) => json!(s),
        Proto::Bytes(b) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
        Proto::Message(m) => message(schema, m, path)?,
        Proto::List(_) | Proto::Map(_) => {
            return Err((path.to_string(), "a list or map nested in a list".into()));
        }
    })
}
