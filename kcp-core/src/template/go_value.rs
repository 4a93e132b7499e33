//! Values as Go templates see them.
//!
//! Template data arrives as JSON and is turned into [`gotmpl::Value`]s the way Kubernetes'
//! unstructured decoder types it (integers are `int64`, other numbers `float64`). The helpers
//! here reproduce what Go's `fmt` and `reflect` packages do with such values, because sprig
//! functions are defined in those terms: `%v` printing, `%T` type names, reflect kinds,
//! sprig's notion of "empty" and `reflect.DeepEqual`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use gotmpl::Value;

/// Converts JSON template data into a Go template value: integral numbers become `int64`
/// (`uint64` above `i64::MAX`), other numbers `float64`.
pub(crate) fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::Uint(u)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::String(Arc::from(s.as_str())),
        serde_json::Value::Array(items) => Value::List(items.iter().map(from_json).collect()),
        serde_json::Value::Object(map) => Value::Map(Arc::new(
            map.iter()
                .map(|(k, v)| (Arc::from(k.as_str()), from_json(v)))
                .collect(),
        )),
    }
}

/// Converts JSON the way Go's `json.Unmarshal` into `interface{}` does (sprig's `fromJson`):
/// every number becomes a `float64`.
pub(crate) fn from_json_as_go(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Array(items) => Value::List(items.iter().map(from_json_as_go).collect()),
        serde_json::Value::Object(map) => Value::Map(Arc::new(
            map.iter()
                .map(|(k, v)| (Arc::from(k.as_str()), from_json_as_go(v)))
                .collect(),
        )),
        other => from_json(other),
    }
}

/// A string value.
pub(crate) fn string(s: impl Into<Arc<str>>) -> Value {
    Value::String(s.into())
}

/// A list value.
pub(crate) fn list(items: Vec<Value>) -> Value {
    Value::List(Arc::from(items))
}

/// A map value.
pub(crate) fn map(entries: BTreeMap<Arc<str>, Value>) -> Value {
    Value::Map(Arc::new(entries))
}

/// A list of strings.
pub(crate) fn string_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
    list(items.into_iter().map(|s| string(s.as_ref())).collect())
}

/// Go's `%v` formatting of a value (what `fmt.Sprint` and sprig's `toString` print).
pub(crate) fn format_v(v: &Value) -> String {
    let mut out = String::new();
    write_v(&mut out, v);
    out
}

fn write_v(out: &mut String, v: &Value) {
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => out.push_str(&format_float_g(*f)),
        Value::String(s) => out.push_str(s),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_v(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push_str("map[");
            for (i, (k, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_v(out, item);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// The shortest decimal digits and exponent of a finite, non-zero float: `(digits, exp)`
/// with the value being `0.d1d2d3... * 10^(exp+1)`, i.e. `exp` is the exponent of the first
/// digit.
fn shortest_digits(f: f64) -> (String, i32) {
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Go's `strconv.FormatFloat(f, 'e', -1, 64)`: shortest digits, exponent with a sign and at
/// least two digits.
pub(crate) fn format_float_e(f: f64) -> String {
    if let Some(special) = special_float(f) {
        return special.to_owned();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0e+00");
    }
    let (digits, exp) = shortest_digits(f);
    let mut out = String::from(sign);
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let _ = write!(
        out,
        "e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    );
    out
}

fn special_float(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f == f64::INFINITY {
        Some("+Inf")
    } else if f == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which is also `%v`: the shortest digits that
/// read back as `f`, in exponent form when the exponent is below -4 or at least 6
/// (`1e+06`, `100000`).
pub(crate) fn format_float_g(f: f64) -> String {
    if let Some(special) = special_float(f) {
        return special.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let (_, exp) = shortest_digits(f);
    if !(-4..6).contains(&exp) {
        format_float_e(f)
    } else {
        format!("{f}")
    }
}

/// Go's `%T` of a value as a sprig function would see it.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
        _ => "func",
    }
}

/// Go's `reflect.Kind` name of a value.
pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        _ => "func",
    }
}

/// sprig's `empty`: nil, false, zero numbers, and empty strings, lists and maps.
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::List(items) => items.is_empty(),
        Value::Map(entries) => entries.is_empty(),
        _ => false,
    }
}

/// Go's `reflect.DeepEqual` on template values: equal types and equal contents.
pub(crate) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Uint(x), Value::Uint(y)) => x == y,
        // DeepEqual compares floats with ==, so NaN is never equal to itself.
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| deep_equal(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|other| deep_equal(v, other)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_go_v() {
        assert_eq!(format_float_g(1e6), "1e+06");
        assert_eq!(format_float_g(123456789.0), "1.23456789e+08");
        assert_eq!(format_float_g(100000.0), "100000");
        assert_eq!(format_float_g(1.5), "1.5");
        assert_eq!(format_float_g(1e-5), "1e-05");
        assert_eq!(format_float_g(0.0001), "0.0001");
        assert_eq!(format_float_g(-0.0), "-0");
        assert_eq!(format_float_g(f64::INFINITY), "+Inf");
    }
}
