//! The Kubernetes types whose JSON form is not the generic mapping of their message: Go types
//! with their own `MarshalJSON`/`UnmarshalJSON` (timestamps, quantities, int-or-string, raw
//! embedded JSON, apiextensions' either-or schema wrappers) and named slices (`Verbs`).

use base64::Engine;
use prost_reflect::{DynamicMessage, MessageDescriptor, ReflectMessage, Value as Proto};
use serde_json::{Value, json};

use super::to_json::PathError;

/// A message with its own JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// `meta.v1.Time`: RFC 3339 in whole seconds, `null` when zero.
    Time,
    /// `meta.v1.MicroTime`: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// `resource.Quantity`: its canonical string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`, `meta.v1.FieldsV1`, apiextensions' `JSON`: embedded JSON bytes.
    Raw,
    /// `meta.v1.Verbs` and the `ExtraValue`s of user info: a named slice of strings (a message
    /// with one repeated `items` field), whose JSON is the list.
    Verbs,
    /// `JSONSchemaPropsOrArray`: one schema or a list of them.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool`: a schema or a boolean.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray`: a schema or a list of property names.
    SchemaOrStringArray,
}

const EXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";

impl Special {
    /// The special form of a message, by its full name.
    pub fn of(full_name: &str) -> Option<Special> {
        let (package, name) = full_name.rsplit_once('.')?;
        Some(match (package, name) {
            (super::schema::META, "Time") => Special::Time,
            (super::schema::META, "MicroTime") => Special::MicroTime,
            (super::schema::META, "FieldsV1") => Special::Raw,
            (super::schema::META, "Verbs") => Special::Verbs,
            (
                "k8s.io.api.authentication.v1"
                | "k8s.io.api.authorization.v1"
                | "k8s.io.api.certificates.v1",
                "ExtraValue",
            ) => Special::Verbs,
            ("k8s.io.apimachinery.pkg.api.resource", "Quantity") => Special::Quantity,
            ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => Special::IntOrString,
            ("k8s.io.apimachinery.pkg.runtime", "RawExtension") => Special::Raw,
            (EXT, "JSON") => Special::Raw,
            (EXT, "JSONSchemaPropsOrArray") => Special::SchemaOrArray,
            (EXT, "JSONSchemaPropsOrBool") => Special::SchemaOrBool,
            (EXT, "JSONSchemaPropsOrStringArray") => Special::SchemaOrStringArray,
            _ => return None,
        })
    }
}

fn get<'a>(msg: &'a DynamicMessage, name: &str) -> Option<std::borrow::Cow<'a, Proto>> {
    msg.has_field_by_name(name)
        .then(|| msg.get_field_by_name(name))
        .flatten()
}

fn int(msg: &DynamicMessage, name: &str) -> i64 {
    match get(msg, name).as_deref() {
        Some(Proto::I64(n)) => *n,
        Some(Proto::I32(n)) => i64::from(*n),
        _ => 0,
    }
}

fn text(msg: &DynamicMessage, name: &str) -> String {
    match get(msg, name).as_deref() {
        Some(Proto::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn bytes(msg: &DynamicMessage, name: &str) -> Vec<u8> {
    match get(msg, name).as_deref() {
        Some(Proto::Bytes(b)) => b.to_vec(),
        _ => Vec::new(),
    }
}

fn timestamp(msg: &DynamicMessage, micros: bool, path: &str) -> Result<Value, PathError> {
    let (seconds, nanos) = (int(msg, "seconds"), int(msg, "nanos"));
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    // Like the Go type: Time keeps whole seconds, MicroTime microseconds.
    let nanos = if micros { nanos - nanos % 1000 } else { 0 };
    let ts = i32::try_from(nanos)
        .ok()
        .and_then(|n| jiff::Timestamp::new(seconds, n).ok())
        .ok_or_else(|| {
            (
                path.to_string(),
                format!("timestamp out of range: {seconds}s {nanos}ns"),
            )
        })?;
    let format = if micros {
        "%Y-%m-%dT%H:%M:%S.%6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(json!(ts.strftime(format).to_string()))
}

/// Raw bytes as JSON: embedded JSON as is, a nested protobuf envelope decoded.
fn raw(data: &[u8], path: &str) -> Result<Value, PathError> {
    if data.is_empty() {
        return Ok(Value::Null);
    }
    if data.starts_with(super::MAGIC) {
        return super::decode_envelope(data).map_err(|e| (path.to_string(), e.message));
    }
    serde_json::from_slice(data).map_err(|e| {
        (
            path.to_string(),
            format!("embedded bytes are not JSON: {e}"),
        )
    })
}

/// The JSON of a special message; `nested` converts the generic messages inside it.
pub fn to_json(
    special: Special,
    msg: &DynamicMessage,
    path: &str,
    nested: impl Fn(&DynamicMessage, &str) -> Result<Value, PathError>,
) -> Result<Value, PathError> {
    let message_at = |name: &str| match get(msg, name).as_deref() {
        Some(Proto::Message(m)) => nested(m, path).map(Some),
        _ => Ok(None),
    };
    let list_at = |name: &str| -> Result<Vec<Value>, PathError> {
        match get(msg, name).as_deref() {
            Some(Proto::List(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Proto::Message(m) => nested(m, &format!("{path}[{i}]")),
                    Proto::String(s) => Ok(json!(s)),
                    other => Err((format!("{path}[{i}]"), format!("unexpected {other:?}"))),
                })
                .collect(),
            _ => Ok(Vec::new()),
        }
    };
    match special {
        Special::Time => timestamp(msg, false, path),
        Special::MicroTime => timestamp(msg, true, path),
        Special::Quantity => Ok(json!(text(msg, "string"))),
        Special::IntOrString => Ok(if int(msg, "type") == 1 {
            json!(text(msg, "strVal"))
        } else {
            json!(int(msg, "intVal"))
        }),
        Special::Raw => raw(&bytes(msg, raw_field(&msg.descriptor())), path),
        Special::Verbs => Ok(Value::Array(list_at("items")?)),
        Special::SchemaOrArray => {
            let many = list_at("jSONSchemas")?;
            if many.is_empty() {
                Ok(message_at("schema")?.unwrap_or(Value::Null))
            } else {
                Ok(Value::Array(many))
            }
        }
        Special::SchemaOrBool => Ok(match message_at("schema")? {
            Some(schema) => schema,
            None => json!(matches!(
                get(msg, "allows").as_deref(),
                Some(Proto::Bool(true))
            )),
        }),
        Special::SchemaOrStringArray => {
            let names = list_at("property")?;
            if names.is_empty() {
                Ok(message_at("schema")?.unwrap_or(Value::Null))
            } else {
                Ok(Value::Array(names))
            }
        }
    }
}

/// Builds the message of a special type from its JSON: its fields are set through `set`, and
/// `nested` builds the generic messages inside it (the schemas of the either-or wrappers).
struct Builder<'a, F> {
    msg: DynamicMessage,
    value: &'a Value,
    path: &'a str,
    nested: F,
}

impl<F> Builder<'_, F>
where
    F: Fn(&MessageDescriptor, &Value, &str) -> Result<DynamicMessage, PathError>,
{
    fn wrong(&self, what: &str) -> PathError {
        (
            self.path.to_string(),
            format!("expected {what}, found {}", self.value),
        )
    }

    fn set(&mut self, name: &str, v: Proto) -> Result<(), PathError> {
        self.msg
            .try_set_field_by_name(name, v)
            .map_err(|e| (self.path.to_string(), e.to_string()))
    }

    /// The message of the wrapper's `schema` field holding `v`.
    fn schema(&self, v: &Value) -> Result<Proto, PathError> {
        let desc = self.msg.descriptor();
        match desc.get_field_by_name("schema").map(|f| f.kind()) {
            Some(prost_reflect::Kind::Message(m)) => {
                Ok(Proto::Message((self.nested)(&m, v, self.path)?))
            }
            _ => Err((self.path.to_string(), "no schema field".into())),
        }
    }

    fn time(&mut self, micros: bool) -> Result<(), PathError> {
        let text = self
            .value
            .as_str()
            .ok_or_else(|| self.wrong("an RFC 3339 time"))?;
        let ts: jiff::Timestamp = text
            .parse()
            .map_err(|e| (self.path.to_string(), format!("invalid time {text:?}: {e}")))?;
        self.set("seconds", Proto::I64(ts.as_second()))?;
        if micros {
            self.set("nanos", Proto::I32(ts.subsec_nanosecond() / 1000 * 1000))?;
        }
        Ok(())
    }

    fn quantity(&mut self) -> Result<(), PathError> {
        let text = match self.value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(self.wrong("a quantity")),
        };
        self.set("string", Proto::String(text))
    }

    fn int_or_string(&mut self) -> Result<(), PathError> {
        match self.value {
            Value::String(s) => {
                self.set("type", Proto::I64(1))?;
                self.set("strVal", Proto::String(s.clone()))
            }
            Value::Number(n) => {
                let n = n
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| self.wrong("a 32-bit integer or a string"))?;
                self.set("type", Proto::I64(0))?;
                self.set("intVal", Proto::I32(n))
            }
            _ => Err(self.wrong("an integer or a string")),
        }
    }

    fn raw(&mut self) -> Result<(), PathError> {
        let field = raw_field(&self.msg.descriptor());
        let data =
            serde_json::to_vec(self.value).map_err(|e| (self.path.to_string(), e.to_string()))?;
        self.set(field, Proto::Bytes(data.into()))
    }

    fn strings(&mut self, field: &str) -> Result<(), PathError> {
        let items = strings(self.value).ok_or_else(|| self.wrong("a list of strings"))?;
        self.set(field, Proto::List(items))
    }

    fn schema_or_array(&mut self) -> Result<(), PathError> {
        let value = self.value;
        match value {
            Value::Array(items) => {
                let list = items
                    .iter()
                    .map(|v| self.schema(v))
                    .collect::<Result<Vec<_>, _>>()?;
                self.set("jSONSchemas", Proto::List(list))
            }
            other => {
                let schema = self.schema(other)?;
                self.set("schema", schema)
            }
        }
    }

    fn schema_or_bool(&mut self) -> Result<(), PathError> {
        let value = self.value;
        match value {
            Value::Bool(b) => self.set("allows", Proto::Bool(*b)),
            other => {
                let schema = self.schema(other)?;
                self.set("allows", Proto::Bool(true))?;
                self.set("schema", schema)
            }
        }
    }

    fn schema_or_string_array(&mut self) -> Result<(), PathError> {
        let value = self.value;
        match value {
            Value::Array(_) => self.strings("property"),
            other => {
                let schema = self.schema(other)?;
                self.set("schema", schema)
            }
        }
    }
}

/// `Raw` in `FieldsV1`, `raw` in `RawExtension` and apiextensions' `JSON`.
fn raw_field(desc: &MessageDescriptor) -> &'static str {
    if desc.get_field_by_name("Raw").is_some() {
        "Raw"
    } else {
        "raw"
    }
}

/// The message of a special type from its JSON; `nested` builds the generic messages inside it.
pub fn from_json(
    special: Special,
    desc: &MessageDescriptor,
    value: &Value,
    path: &str,
    nested: impl Fn(&MessageDescriptor, &Value, &str) -> Result<DynamicMessage, PathError>,
) -> Result<DynamicMessage, PathError> {
    let mut b = Builder {
        msg: DynamicMessage::new(desc.clone()),
        value,
        path,
        nested,
    };
    match special {
        Special::Time => b.time(false)?,
        Special::MicroTime => b.time(true)?,
        Special::Quantity => b.quantity()?,
        Special::IntOrString => b.int_or_string()?,
        Special::Raw => b.raw()?,
        Special::Verbs => b.strings("items")?,
        Special::SchemaOrArray => b.schema_or_array()?,
        Special::SchemaOrBool => b.schema_or_bool()?,
        Special::SchemaOrStringArray => b.schema_or_string_array()?,
    }
    Ok(b.msg)
}

fn strings(value: &Value) -> Option<Vec<Proto>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(|s| Proto::String(s.to_string())))
        .collect()
}

/// Bytes fields are base64 in JSON.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}
