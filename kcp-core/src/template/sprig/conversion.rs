//! sprig's type conversions: `atoi`, `int`, `int64`, `float64`, `toDecimal`, `toString`.

use gotmpl::Value;

use super::args::{Outcome, str_arg, strval, to_float64, to_int64, want};
use crate::template::go_value::{format_v, string};

/// `atoi s`: base-10 integer, 0 when `s` is not one.
pub(super) fn atoi(args: &[Value]) -> Outcome {
    want("atoi", args, 1)?;
    let s = str_arg(&args[0])?;
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let valid = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    Ok(Value::Int(if valid { s.parse().unwrap_or(0) } else { 0 }))
}

/// `int v` and `int64 v`: `cast.ToInt64`.
pub(super) fn int64(args: &[Value]) -> Outcome {
    want("int64", args, 1)?;
    Ok(Value::Int(to_int64(&args[0])))
}

pub(super) fn float64(args: &[Value]) -> Outcome {
    want("float64", args, 1)?;
    Ok(Value::Float(to_float64(&args[0])))
}

/// `toDecimal v`: `v` printed and read as an octal number (`"0777"` is 511); 0 when it is
/// not one.
pub(super) fn to_decimal(args: &[Value]) -> Outcome {
    want("toDecimal", args, 1)?;
    let text = format_v(&args[0]);
    let digits = text.strip_prefix(['+', '-']).unwrap_or(&text);
    let valid = !digits.is_empty() && digits.bytes().all(|b| (b'0'..=b'7').contains(&b));
    let value = if valid {
        i64::from_str_radix(&text, 8).unwrap_or(0)
    } else {
        0
    };
    Ok(Value::Int(value))
}

pub(super) fn to_string(args: &[Value]) -> Outcome {
    want("toString", args, 1)?;
    Ok(string(strval(&args[0])))
}
