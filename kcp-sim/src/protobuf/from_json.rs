//! JSON to protobuf: the stored JSON of an object as the message a Go client decodes, the inverse
//! of [`super::to_json`]. A JSON key the message has no field for, or a value of the wrong type,
//! is an error naming its path: an answer never loses data silently.

use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value as Proto,
};
use serde_json::{Map, Value};

use super::schema::{MessagePlan, Schema};
use super::special::{self, Special};
use super::to_json::PathError;

/// The message of `desc` holding `value`, a JSON object (or a special type's JSON form).
pub fn message(
    schema: &Schema,
    desc: &MessageDescriptor,
    value: &Value,
    path: &str,
) -> Result<DynamicMessage, PathError> {
    if let Some(special) = Special::of(desc.full_name()) {
        return special::from_json(special, desc, value, path, |d, v, p| {
            message(schema, d, v, p)
        });
    }
    let object = value.as_object().ok_or_else(|| {
        (
            path.to_string(),
            format!("expected an object, found {value}"),
        )
    })?;
    let mut msg = DynamicMessage::new(desc.clone());
    let plan = schema.plan(desc).ok_or_else(|| {
        (
            path.to_string(),
            format!("unknown message {}", desc.full_name()),
        )
    })?;
    let mut inline: Vec<(FieldDescriptor, Map<String, Value>)> = Vec::new();
    for (key, v) in object {
        if v.is_null() {
            continue;
        }
        let here = format!("{path}.{key}");
        if let Some(fp) = plan.field(key).filter(|f| !f.inline) {
            let proto = field_value(schema, &fp.field, v, &here)?;
            set(&mut msg, &fp.field, proto, &here)?;
        } else if let Some(owner) = inline_owner(schema, plan, key) {
            match inline.iter_mut().find(|(f, _)| *f == owner) {
                Some((_, fields)) => {
                    fields.insert(key.clone(), v.clone());
                }
                None => inline.push((owner, Map::from_iter([(key.clone(), v.clone())]))),
            }
        } else if !matches!(key.as_str(), "apiVersion" | "kind") {
            return Err((here, format!("unknown field of {}", desc.name())));
        }
        // apiVersion and kind (TypeMeta) are no fields of the messages: the envelope carries
        // them for the top object, and list items go without.
    }
    for (field, fields) in inline {
        if let Kind::Message(m) = field.kind() {
            let inner = message(schema, &m, &Value::Object(fields), path)?;
            set(&mut msg, &field, Proto::Message(inner), path)?;
        }
    }
    Ok(msg)
}

/// The inline field whose message has a field named `key`.
fn inline_owner(schema: &Schema, plan: &MessagePlan, key: &str) -> Option<FieldDescriptor> {
    plan.inline_fields().find_map(|f| {
        let Kind::Message(m) = f.field.kind() else {
            return None;
        };
        let inner = schema.plan(&m)?;
        (inner.field(key).is_some() || inline_owner(schema, inner, key).is_some())
            .then(|| f.field.clone())
    })
}

fn set(
    msg: &mut DynamicMessage,
    field: &FieldDescriptor,
    v: Proto,
    path: &str,
) -> Result<(), PathError> {
    msg.try_set_field(field, v)
        .map_err(|e| (path.to_string(), e.to_string()))
}

fn field_value(
    schema: &Schema,
    field: &FieldDescriptor,
    value: &Value,
    path: &str,
) -> Result<Proto, PathError> {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            return Err((path.to_string(), "malformed map field".into()));
        };
        let value_kind = entry.map_entry_value_field().kind();
        let object = value.as_object().ok_or_else(|| {
            (
                path.to_string(),
                format!("expected an object, found {value}"),
            )
        })?;
        let mut out = std::collections::HashMap::new();
        for (k, v) in object {
            let item = single(schema, &value_kind, v, &format!("{path}[{k}]"))?;
            out.insert(MapKey::String(k.clone()), item);
        }
        return Ok(Proto::Map(out));
    }
    if field.is_list() {
        let items = value
            .as_array()
            .ok_or_else(|| (path.to_string(), format!("expected a list, found {value}")))?;
        let list = items
            .iter()
            .enumerate()
            .map(|(i, v)| single(schema, &field.kind(), v, &format!("{path}[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Proto::List(list));
    }
    single(schema, &field.kind(), value, path)
}

fn single(schema: &Schema, kind: &Kind, value: &Value, path: &str) -> Result<Proto, PathError> {
    let wrong = |what: &str| (path.to_string(), format!("expected {what}, found {value}"));
    let int = || value.as_i64().ok_or_else(|| wrong("an integer"));
    Ok(match kind {
        Kind::Message(m) => Proto::Message(message(schema, m, value, path)?),
        Kind::String => Proto::String(value.as_str().ok_or_else(|| wrong("a string"))?.to_string()),
        Kind::Bool => Proto::Bool(value.as_bool().ok_or_else(|| wrong("a boolean"))?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Proto::I32(i32::try_from(int()?).map_err(|_| wrong("a 32-bit integer"))?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Proto::I64(int()?),
        Kind::Uint32 | Kind::Fixed32 => {
            Proto::U32(u32::try_from(int()?).map_err(|_| wrong("an unsigned 32-bit integer"))?)
        }
        Kind::Uint64 | Kind::Fixed64 => {
            Proto::U64(value.as_u64().ok_or_else(|| wrong("an unsigned integer"))?)
        }
        Kind::Double => Proto::F64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Kind::Float => Proto::F32(value.as_f64().ok_or_else(|| wrong("a number"))? as f32),
        Kind::Bytes => {
            let text = value.as_str().ok_or_else(|| wrong("a base64 string"))?;
            Proto::Bytes(
                special::base64_decode(text)
                    .ok_or_else(|| wrong("base64 data"))?
                    .into(),
            )
        }
        Kind::Enum(_) => {
            Proto::EnumNumber(i32::try_from(int()?).map_err(|_| wrong("a 32-bit enum number"))?)
        }
    })
}
