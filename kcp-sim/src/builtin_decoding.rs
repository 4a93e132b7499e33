//! A builtin kind's JSON body read as kube-apiserver reads it: decoded into the kind's Go type
//! and marshalled back. What that round trip does, this does to the JSON in place:
//! - a key the Go type has no field for is dropped and named (`spec.replica`,
//!   `spec.template.spec.containers[0].extra`): the `unknown field` of field validation;
//! - a value of the wrong JSON type fails the whole body with Go's decoder's words
//!   (`json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type
//!   int32`), and so do a malformed timestamp or quantity (their own parsers' words);
//! - a quantity is stored as Go writes it back (`0.5` as `500m`);
//! - a zero scalar of an `omitempty` field that is no pointer (`""`, `0`, `false`), an empty
//!   slice or map of an `omitempty` field, and `null` for an `omitempty` field are dropped, as
//!   Go's encoder leaves them out.
//!
//! The Go types are read from the protobuf descriptors and `proto/fields.txt` (JSON names,
//! `omitempty`, Go type names), see [`crate::protobuf::schema`]. Quantities are written as
//! Go writes them ([`crate::quantity`]). What Go's encoder writes of fields a body left out
//! is added when the object is stored ([`add_zero_fields`]), after its writer's fields are
//! recorded.

use std::borrow::Cow;

use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value};

use crate::protobuf::schema::{FieldPlan, MessagePlan, Schema};
use crate::protobuf::special::Special;

/// Decodes `obj`, the JSON of a builtin kind whose message is `desc`, in place; answers the
/// unknown fields it dropped (in the order they were met), or Go's error for the first value
/// of a wrong type.
pub fn decode(
    schema: &Schema,
    desc: &MessageDescriptor,
    obj: &mut Value,
) -> Result<Vec<String>, String> {
    let Some(object) = obj.as_object_mut() else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type {}",
            json_type(obj),
            go_name(desc)
        ));
    };
    let mut walk = Walk {
        schema,
        unknown: Vec::new(),
    };
    walk.message(desc, object, "", true)?;
    Ok(walk.unknown)
}

struct Walk<'s> {
    schema: &'s Schema,
    /// The unknown fields met so far, by path.
    unknown: Vec<String>,
}

/// Where a value sits, for the errors of Go's decoder: the struct that holds the field, the
/// field's path and its Go type.
struct Site<'a> {
    owner: &'a str,
    /// The path of the object holding the field (`spec.containers[0]`) and the field's key.
    parent: &'a str,
    key: &'a str,
    go_type: Cow<'a, str>,
    /// Whether the value is an entry of a `ResourceList`, whose quantities are rounded up to
    /// milli-units.
    resource_list: bool,
}

impl Site<'_> {
    /// The same field, as the site of one of its elements (of type `go_type`).
    fn element(&self, go_type: String, resource_list: bool) -> Site<'_> {
        Site {
            owner: self.owner,
            parent: self.parent,
            key: self.key,
            go_type: Cow::Owned(go_type),
            resource_list,
        }
    }

    /// As Go's decoder names the field: the JSON names from the root, without indices or map
    /// keys (`spec.containers.ports.containerPort`).
    fn go_path(&self) -> String {
        let mut out = String::new();
        let mut depth = 0;
        for c in join(self.parent, self.key).chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out
    }
}

impl Walk<'_> {
    fn message(
        &mut self,
        desc: &MessageDescriptor,
        object: &mut Map<String, Value>,
        path: &str,
        top: bool,
    ) -> Result<(), String> {
        let Some(plan) = self.schema.plan(desc) else {
            return Ok(());
        };
        let schema = self.schema;
        let mut dropped: Vec<String> = Vec::new();
        for (key, value) in object.iter_mut() {
            if top && matches!(key.as_str(), "apiVersion" | "kind") {
                continue;
            }
            let Some((owner, fp)) = field(schema, desc, plan, key) else {
                self.unknown.push(join(path, key));
                dropped.push(key.clone());
                continue;
            };
            let site = Site {
                owner: owner.name(),
                parent: path,
                key,
                go_type: field_go_type(fp),
                resource_list: false,
            };
            if !self.field_value(fp, value, &site)? {
                dropped.push(key.clone());
            }
        }
        for key in dropped {
            object.remove(&key);
        }
        Ok(())
    }

    /// Checks one field's value; `false` when Go's encoder would leave it out.
    fn field_value(
        &mut self,
        fp: &FieldPlan,
        value: &mut Value,
        site: &Site,
    ) -> Result<bool, String> {
        let omitempty = !fp.keep_zero && !fp.keep_empty;
        if value.is_null() {
            return Ok(!omitempty);
        }
        let field = &fp.field;
        if field.is_map() {
            let Value::Object(entries) = value else {
                return Err(self.type_error(value, site));
            };
            let element = map_value_kind(field);
            let element_site = site.element(
                element_go_type(&site.go_type, element.as_ref()),
                site.go_type == "v1.ResourceList",
            );
            if let Some(kind) = &element {
                let nested = matches!(kind, Kind::Message(_));
                for (k, v) in entries.iter_mut() {
                    let here = if nested {
                        format!("{}[{k}]", join(site.parent, site.key))
                    } else {
                        String::new()
                    };
                    self.single(kind, v, &here, &element_site)?;
                }
            }
            return Ok(!(omitempty && entries.is_empty()));
        }
        if field.is_list() {
            let Value::Array(items) = value else {
                return Err(self.type_error(value, site));
            };
            let kind = field.kind();
            let element_site = site.element(element_go_type(&site.go_type, Some(&kind)), false);
            let nested = matches!(kind, Kind::Message(_));
            for (i, v) in items.iter_mut().enumerate() {
                let here = if nested {
                    format!("{}[{i}]", join(site.parent, site.key))
                } else {
                    String::new()
                };
                self.single(&kind, v, &here, &element_site)?;
            }
            return Ok(!(omitempty && items.is_empty()));
        }
        let kind = field.kind();
        let here = if matches!(kind, Kind::Message(_)) {
            join(site.parent, site.key)
        } else {
            String::new()
        };
        self.single(&kind, value, &here, site)?;
        Ok(fp.keep_zero || !is_zero_scalar(&kind, value))
    }

    /// Checks a single value (a field, a list item or a map value) of `kind`.
    fn single(
        &mut self,
        kind: &Kind,
        value: &mut Value,
        path: &str,
        site: &Site,
    ) -> Result<(), String> {
        if value.is_null() {
            return Ok(());
        }
        match kind {
            Kind::Message(m) => match Special::of(m.full_name()) {
                Some(special) => self.special(special, m, value, path, site),
                None => match value {
                    Value::Object(object) => self.message(m, object, path, false),
                    _ => Err(self.type_error(value, site)),
                },
            },
            Kind::String => match value {
                Value::String(_) => Ok(()),
                _ => Err(self.type_error(value, site)),
            },
            Kind::Bool => match value {
                Value::Bool(_) => Ok(()),
                _ => Err(self.type_error(value, site)),
            },
            Kind::Bytes => match value {
                Value::String(_) => Ok(()),
                _ => Err(self.type_error(value, site)),
            },
            Kind::Double | Kind::Float => match value {
                Value::Number(_) => Ok(()),
                _ => Err(self.type_error(value, site)),
            },
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Enum(_) => {
                self.integer(value, site, i64::from(i32::MIN), i64::from(i32::MAX))
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                self.integer(value, site, i64::MIN, i64::MAX)
            }
            Kind::Uint32 | Kind::Fixed32 => self.integer(value, site, 0, i64::from(u32::MAX)),
            Kind::Uint64 | Kind::Fixed64 => match value.as_u64() {
                Some(_) => Ok(()),
                None => Err(self.number_error(value, site)),
            },
        }
    }

    /// An integer in `min..=max`; Go names a number that is not one by its text.
    fn integer(&self, value: &Value, site: &Site, min: i64, max: i64) -> Result<(), String> {
        match value.as_i64() {
            Some(n) if (min..=max).contains(&n) => Ok(()),
            _ => Err(self.number_error(value, site)),
        }
    }

    fn number_error(&self, value: &Value, site: &Site) -> String {
        match value {
            Value::Number(n) => self.error_as(&format!("number {n}"), site),
            other => self.type_error(other, site),
        }
    }

    /// The types whose JSON is their own: each reads its value with its own parser.
    fn special(
        &mut self,
        special: Special,
        desc: &MessageDescriptor,
        value: &mut Value,
        path: &str,
        site: &Site,
    ) -> Result<(), String> {
        let as_string = site.element("string".to_string(), false);
        match special {
            Special::Time => match value {
                Value::String(text) => go_time::check(text, go_time::RFC3339),
                _ => Err(self.type_error(value, &as_string)),
            },
            Special::MicroTime => match value {
                Value::String(text) => go_time::check(text, go_time::RFC3339_MICRO),
                _ => Err(self.type_error(value, &as_string)),
            },
            Special::Quantity => {
                let text = match value {
                    Value::String(text) => text.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(crate::quantity::FORMAT.to_string()),
                };
                let stored = crate::quantity::stored_text(&text, site.resource_list)?;
                *value = Value::String(stored);
                Ok(())
            }
            Special::IntOrString => match value {
                Value::String(_) => Ok(()),
                other => {
                    let int32 = site.element("int32".to_string(), false);
                    self.integer(other, &int32, i64::from(i32::MIN), i64::from(i32::MAX))
                }
            },
            Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
                self.schema_props(special, desc, value, path)
            }
            Special::Raw | Special::Verbs => Ok(()),
        }
    }

    /// apiextensions' either-or wrappers: a schema (an object) is read as `JSONSchemaProps`.
    fn schema_props(
        &mut self,
        special: Special,
        desc: &MessageDescriptor,
        value: &mut Value,
        path: &str,
    ) -> Result<(), String> {
        let Some(props) = desc.fields().find_map(|f| match f.kind() {
            Kind::Message(m) if m.name() == "JSONSchemaProps" => Some(m),
            _ => None,
        }) else {
            return Ok(());
        };
        match value {
            Value::Object(object) => self.message(&props, object, path, false),
            Value::Array(items) if special == Special::SchemaOrArray => {
                for (i, item) in items.iter_mut().enumerate() {
                    if let Value::Object(object) = item {
                        self.message(&props, object, &format!("{path}[{i}]"), false)?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn type_error(&self, value: &Value, site: &Site) -> String {
        self.error_as(json_type(value), site)
    }

    fn error_as(&self, what: &str, site: &Site) -> String {
        format!(
            "json: cannot unmarshal {what} into Go struct field {}.{} of type {}",
            site.owner,
            site.go_path(),
            site.go_type
        )
    }
}

/// The field a key names, in the message or in a struct it embeds (`Volume`'s
/// `VolumeSource`), with the message that declares it.
fn field<'p>(
    schema: &'p Schema,
    desc: &MessageDescriptor,
    plan: &'p MessagePlan,
    key: &str,
) -> Option<(MessageDescriptor, &'p FieldPlan)> {
    if let Some(fp) = plan.field(key).filter(|f| !f.inline) {
        return Some((desc.clone(), fp));
    }
    plan.inline_fields().find_map(|inline| {
        let Kind::Message(inner) = inline.field.kind() else {
            return None;
        };
        let inner_plan = schema.plan(&inner)?;
        field(schema, &inner, inner_plan, key)
    })
}

/// `a.b`, or `b` at the root.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// How Go's decoder names a JSON value's type.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether Go's encoder leaves a scalar out as zero under `omitempty`.
fn is_zero_scalar(kind: &Kind, value: &Value) -> bool {
    match (kind, value) {
        (Kind::Message(_), _) => false,
        (_, Value::String(s)) => s.is_empty(),
        (_, Value::Bool(b)) => !b,
        (_, Value::Number(n)) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn map_value_kind(field: &FieldDescriptor) -> Option<Kind> {
    match field.kind() {
        Kind::Message(entry) => Some(entry.map_entry_value_field().kind()),
        _ => None,
    }
}

/// The Go type the field list of `fields.txt` names, or one derived from the descriptor.
fn field_go_type(fp: &FieldPlan) -> Cow<'_, str> {
    if !fp.go_type.is_empty() {
        return Cow::Borrowed(&fp.go_type);
    }
    let single = kind_go_type(&fp.field.kind());
    Cow::Owned(if fp.field.is_list() {
        format!("[]{single}")
    } else {
        single
    })
}

/// The Go type of an element of a slice or map whose own type is `collection`: what follows
/// `[]` or `map[K]`; for a named collection (`v1.ResourceList`), from the element's kind.
fn element_go_type(collection: &str, element: Option<&Kind>) -> String {
    if let Some(rest) = collection.strip_prefix("[]") {
        return rest.to_string();
    }
    if let Some(rest) = collection.strip_prefix("map[")
        && let Some((_, value)) = rest.split_once(']')
    {
        return value.to_string();
    }
    element.map(kind_go_type).unwrap_or_default()
}

fn kind_go_type(kind: &Kind) -> String {
    match kind {
        Kind::Message(m) => go_name(m),
        Kind::String => "string".into(),
        Kind::Bool => "bool".into(),
        Kind::Bytes => "[]uint8".into(),
        Kind::Double => "float64".into(),
        Kind::Float => "float32".into(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => "int64".into(),
        Kind::Uint32 | Kind::Fixed32 => "uint32".into(),
        Kind::Uint64 | Kind::Fixed64 => "uint64".into(),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Enum(_) => "int32".into(),
    }
}

/// A message's Go type name: its package's last element and its name (`v1.DeploymentSpec`,
/// `resource.Quantity`).
fn go_name(desc: &MessageDescriptor) -> String {
    let package = desc.package_name();
    let last = package.rsplit('.').next().unwrap_or(package);
    format!("{last}.{}", desc.name())
}

/// Go's `time.Parse` of the layouts `meta.v1.Time` and `MicroTime` read, with its error texts.
mod go_time {
    /// `time.RFC3339`.
    pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
    /// `meta.v1.RFC3339Micro`.
    pub const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

    /// Parses `text` as Go does with `layout` (fractional seconds are read after the seconds in
    /// either layout).
    pub fn check(text: &str, layout: &str) -> Result<(), String> {
        let steps: [(&str, Step); 12] = [
            ("2006", Step::Digits(4)),
            ("-", Step::Literal('-')),
            ("01", Step::Digits(2)),
            ("-", Step::Literal('-')),
            ("02", Step::Digits(2)),
            ("T", Step::Literal('T')),
            ("15", Step::Digits(2)),
            (":", Step::Literal(':')),
            ("04", Step::Digits(2)),
            (":", Step::Literal(':')),
            ("05", Step::Digits(2)),
            ("Z07:00", Step::Zone),
        ];
        let cannot = |rest: &str, element: &str| {
            format!("parsing time {text:?} as {layout:?}: cannot parse {rest:?} as {element:?}")
        };
        let out_of_range = |what: &str| format!("parsing time {text:?}: {what} out of range");
        let mut rest = text;
        let mut numbers = Vec::new();
        for (element, step) in steps {
            let taken = match step {
                Step::Digits(n) => take_digits(rest, n),
                Step::Literal(c) => rest.starts_with(c).then_some(c.len_utf8()),
                Step::Zone => take_zone(rest),
            };
            let Some(len) = taken else {
                return Err(cannot(rest, element));
            };
            if let Step::Digits(_) = step {
                numbers.push(rest[..len].parse::<u32>().unwrap_or(0));
            }
            rest = &rest[len..];
            if element == "05" {
                rest = skip_fraction(rest);
            }
        }
        if !rest.is_empty() {
            return Err(format!("parsing time {text:?}: extra text: {rest:?}"));
        }
        let [year, month, day, hour, minute, second] = numbers[..] else {
            return Err(cannot(text, "2006"));
        };
        if !(1..=12).contains(&month) {
            return Err(out_of_range("month"));
        }
        if hour > 23 {
            return Err(out_of_range("hour"));
        }
        if minute > 59 {
            return Err(out_of_range("minute"));
        }
        if second > 59 {
            return Err(out_of_range("second"));
        }
        if day < 1 || day > days_in(year, month) {
            return Err(out_of_range("day"));
        }
        Ok(())
    }

    #[derive(Clone, Copy)]
    enum Step {
        Digits(usize),
        Literal(char),
        Zone,
    }

    fn take_digits(rest: &str, n: usize) -> Option<usize> {
        (rest.len() >= n && rest.as_bytes()[..n].iter().all(u8::is_ascii_digit)).then_some(n)
    }

    /// `Z`, or `+hh:mm` / `-hh:mm`.
    fn take_zone(rest: &str) -> Option<usize> {
        if rest.starts_with('Z') {
            return Some(1);
        }
        let b = rest.as_bytes();
        let signed = matches!(b.first(), Some(b'+' | b'-'));
        let shaped = b.len() >= 6
            && b[1..3].iter().all(u8::is_ascii_digit)
            && b[3] == b':'
            && b[4..6].iter().all(u8::is_ascii_digit);
        (signed && shaped).then_some(6)
    }

    /// A fraction of a second (`.5`, `,123`), which Go accepts after the seconds.
    fn skip_fraction(rest: &str) -> &str {
        match rest.strip_prefix(['.', ',']) {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => {
                after.trim_start_matches(|c: char| c.is_ascii_digit())
            }
            _ => rest,
        }
    }

    fn days_in(year: u32, month: u32) -> u32 {
        match month {
            2 if year.is_multiple_of(4)
                && (!year.is_multiple_of(100) || year.is_multiple_of(400)) =>
            {
                29
            }
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }
}

/// Adds what Go's encoder writes of a decoded object that its JSON left out: a field without
/// `omitempty` (a zero scalar, `null` for a slice or map) and a struct that is no pointer
/// (`{}`, with its own such fields), inside every struct the object holds (`"rules": null` of a
/// Role without rules, `"spec": {}` of a Lease, a StatefulSet's `"serviceName": ""`). Nothing
/// for a kind without a Go type.
pub fn add_zero_fields(schema: &Schema, desc: &MessageDescriptor, obj: &mut Value) {
    if let Value::Object(object) = obj {
        zero_fields_of(schema, desc, object);
    }
}

fn zero_fields_of(schema: &Schema, desc: &MessageDescriptor, object: &mut Map<String, Value>) {
    let Some(plan) = schema.plan(desc) else {
        return;
    };
    for fp in &plan.fields {
        if fp.inline {
            if let Kind::Message(inner) = fp.field.kind() {
                zero_fields_of(schema, &inner, object);
            }
            continue;
        }
        match object.get_mut(&fp.json) {
            Some(value) => present_zero_fields(schema, &fp.field, value),
            None => {
                if let Some(zero) = written_when_absent(schema, fp) {
                    object.insert(fp.json.clone(), zero);
                }
            }
        }
    }
}

/// Descends into a present field's structs.
fn present_zero_fields(schema: &Schema, field: &FieldDescriptor, value: &mut Value) {
    let Kind::Message(m) = field.kind() else {
        return;
    };
    if field.is_map() {
        let inner = m.map_entry_value_field();
        if let (Kind::Message(vm), Value::Object(entries)) = (inner.kind(), value) {
            for v in entries.values_mut() {
                struct_zero_fields(schema, &vm, v);
            }
        }
    } else if field.is_list() {
        if let Value::Array(items) = value {
            for item in items {
                struct_zero_fields(schema, &m, item);
            }
        }
    } else {
        struct_zero_fields(schema, &m, value);
    }
}

fn struct_zero_fields(schema: &Schema, desc: &MessageDescriptor, value: &mut Value) {
    if Special::of(desc.full_name()).is_some() || is_duration(desc) {
        return;
    }
    if let Value::Object(object) = value {
        zero_fields_of(schema, desc, object);
    }
}

/// The JSON Go writes for a field the object does not hold, if it writes any.
fn written_when_absent(schema: &Schema, fp: &FieldPlan) -> Option<Value> {
    if fp.go_type.is_empty() || fp.pointer || fp.omitzero {
        return None;
    }
    let field = &fp.field;
    if field.is_list() || field.is_map() {
        return (!fp.omitempty).then_some(Value::Null);
    }
    match field.kind() {
        Kind::Message(m) => match Special::of(m.full_name()) {
            Some(Special::Time | Special::MicroTime) => Some(Value::Null),
            Some(Special::Quantity) => Some(Value::String("0".into())),
            Some(Special::IntOrString) => Some(Value::from(0)),
            Some(_) => (!fp.omitempty).then_some(Value::Null),
            None if is_duration(&m) => None,
            None => {
                let mut zero = Value::Object(Map::new());
                struct_zero_fields(schema, &m, &mut zero);
                Some(zero)
            }
        },
        _ if fp.omitempty => None,
        Kind::String => Some(Value::String(String::new())),
        Kind::Bool => Some(Value::Bool(false)),
        Kind::Bytes => Some(Value::Null),
        _ => Some(Value::from(0)),
    }
}

/// The field a JSON key names in a message (or a struct it embeds).
pub fn field_of<'s>(
    schema: &'s Schema,
    desc: &MessageDescriptor,
    key: &str,
) -> Option<&'s FieldPlan> {
    schema.json_field(schema.plan(desc)?, key)
}

/// Whether a field is there in the zero value of its struct as Go writes it: a struct that is
/// no pointer (nor `omitzero`), or a slice or map without `omitempty`.
pub fn in_zero_value(fp: &FieldPlan) -> bool {
    if fp.go_type.is_empty() || fp.pointer || fp.omitzero {
        return false;
    }
    let field = &fp.field;
    if field.is_list() || field.is_map() {
        return !fp.omitempty;
    }
    matches!(field.kind(), Kind::Message(m) if Special::of(m.full_name()).is_none() && !is_duration(&m))
}

/// `meta.v1.Duration`, whose JSON is Go's duration text, not its message.
fn is_duration(desc: &MessageDescriptor) -> bool {
    desc.full_name() == "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
}

#[cfg(test)]
mod tests;
