//! Argument handling shared by the sprig functions.
//!
//! Go's text/template converts each argument to the parameter type of the Go function it
//! calls: a `string` parameter refuses numbers and nil (`invalid value; expected string`),
//! an `int` parameter refuses floats, an `interface{}` parameter takes anything. These
//! helpers apply the same rules, and implement the conversions sprig itself performs
//! (`cast.ToInt64`, `cast.ToFloat64`, `strval`).

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use crate::template::go_value::{format_v, type_name};

/// What a sprig function returns: a value, or the message of the error Go would report
/// (the engine prefixes it with `error calling NAME: `).
pub(crate) type Outcome = std::result::Result<Value, String>;

/// The key/value pairs of a Go `map[string]interface{}`.
pub(crate) type Dict = BTreeMap<Arc<str>, Value>;

/// Checks that exactly `n` arguments were given.
pub(crate) fn want(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() == n {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args for {name}: want {n} got {}",
            args.len()
        ))
    }
}

/// Checks that at least `n` arguments were given (variadic functions).
pub(crate) fn want_at_least(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() >= n {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args for {name}: want at least {n} got {}",
            args.len()
        ))
    }
}

fn wrong_type(expected: &str, got: &Value) -> String {
    match got {
        Value::Nil => format!("invalid value; expected {expected}"),
        other => format!(
            "wrong type for value; expected {expected}; got {}",
            type_name(other)
        ),
    }
}

/// A `string` parameter.
pub(crate) fn str_arg(v: &Value) -> Result<&str, String> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(wrong_type("string", other)),
    }
}

/// An `int` parameter.
pub(crate) fn int_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Uint(u) => i64::try_from(*u).map_err(|_| format!("{u} overflows int")),
        other => Err(wrong_type("int", other)),
    }
}

/// A `bool` parameter.
pub(crate) fn bool_arg(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(wrong_type("bool", other)),
    }
}

/// A `map[string]interface{}` parameter; nil is a nil map (`None`).
pub(crate) fn dict_arg(v: &Value) -> Result<Option<&Dict>, String> {
    match v {
        Value::Map(m) => Ok(Some(m)),
        Value::Nil => Ok(None),
        other => Err(wrong_type("map[string]interface {}", other)),
    }
}

/// A `...string` parameter.
pub(crate) fn str_args(args: &[Value]) -> Result<Vec<&str>, String> {
    args.iter().map(str_arg).collect()
}

/// sprig's `strval`: strings as they are, everything else as Go's `%v` prints it.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        other => format_v(other),
    }
}

/// Go's `reflect.Kind` name for "cannot ... on type X" messages.
pub(crate) fn kind_for_message(v: &Value) -> &'static str {
    crate::template::go_value::kind_name(v)
}

/// Go's `strconv.ParseInt(s, 0, 64)`: optional sign, then `0x`, `0o`, `0b` or a leading
/// `0` (octal) select the base; underscores are allowed between digits only with a prefix.
pub(crate) fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest.to_owned(), true)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest.to_owned(), true)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest.to_owned(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_owned(), true)
    } else {
        (10, lower.clone(), false)
    };
    let digits = if digits.contains('_') {
        if !prefixed || !underscores_ok(&digits) {
            return None;
        }
        digits.replace('_', "")
    } else {
        digits
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(&digits, radix).ok()?;
    if negative {
        if magnitude == 1 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(magnitude).ok().map(|m| -m)
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's rule for underscores in prefixed literals: they may follow the base prefix or a
/// digit and must be followed by a digit.
fn underscores_ok(digits: &str) -> bool {
    !digits.ends_with('_') && !digits.contains("__")
}

/// `cast.ToInt64` as sprig uses it: numbers are converted (floats truncated), strings parsed
/// with [`go_parse_int`] after dropping a `.0...` suffix, booleans are 1/0, and anything that
/// does not convert is 0.
pub(crate) fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Uint(u) => *u as i64,
        Value::Float(f) => go_float_to_int(*f),
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => go_parse_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// Go's `int64(f)` conversion on amd64: truncation; NaN and out-of-range values give
/// `math.MinInt64`.
pub(crate) fn go_float_to_int(f: f64) -> i64 {
    // 2^63 is exactly representable; everything from there up, and below -2^63, is out of range.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f.trunc() as i64
    }
}

/// cast's `trimZeroDecimal`: `"12.000"` becomes `"12"`; anything else stays.
fn trim_zero_decimal(s: &str) -> &str {
    let mut found_zero = false;
    for (i, b) in s.bytes().enumerate().rev() {
        match b {
            b'.' => {
                return if found_zero { &s[..i] } else { s };
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// `cast.ToFloat64` as sprig uses it: numbers convert, strings parse as Go floats, booleans
/// are 1/0, anything else is 0.
pub(crate) fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Uint(u) => *u as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => go_parse_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal spellings, `inf`/`infinity`/`nan`.
pub(crate) fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let special = matches!(
        body.to_ascii_lowercase().as_str(),
        "inf" | "infinity" | "nan"
    );
    let decimal = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if special || decimal {
        s.parse::<f64>().ok()
    } else {
        None
    }
}

/// Slices `s` by byte offsets as Go does. Cutting inside a multi-byte character cannot be
/// represented in a Rust string: the partial character becomes U+FFFD.
pub(crate) fn byte_slice(s: &str, start: usize, end: usize) -> String {
    match s.get(start..end) {
        Some(part) => part.to_owned(),
        None => String::from_utf8_lossy(&s.as_bytes()[start.min(s.len())..end.min(s.len())])
            .into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_int_follows_go_base_prefixes() {
        assert_eq!(go_parse_int("42"), Some(42));
        assert_eq!(go_parse_int("-0x1F"), Some(-31));
        assert_eq!(go_parse_int("0644"), Some(420));
        assert_eq!(go_parse_int("0o17"), Some(15));
        assert_eq!(go_parse_int("0b101"), Some(5));
        assert_eq!(go_parse_int("1_000"), None);
        assert_eq!(go_parse_int("0x_1F"), Some(31));
        assert_eq!(go_parse_int("12.5"), None);
        assert_eq!(go_parse_int(""), None);
        assert_eq!(go_parse_int("-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn to_int64_drops_zero_decimals_like_cast() {
        assert_eq!(to_int64(&Value::String("12.00".into())), 12);
        assert_eq!(to_int64(&Value::String("12.5".into())), 0);
        assert_eq!(to_int64(&Value::Float(3.9)), 3);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_int64(&Value::Nil), 0);
    }
}
