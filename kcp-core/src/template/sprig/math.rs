//! sprig's integer and float math.
//!
//! Integer functions convert every argument with `cast.ToInt64` (strings are parsed, what
//! does not convert is 0) and wrap on overflow like Go's `int64`. Float functions
//! (`addf`, `divf`, ...) compute in decimal, as sprig does with shopspring/decimal, so
//! `addf 0.1 0.2` is `0.3`; quotients are rounded to 16 decimal places.

use std::str::FromStr;

use gotmpl::Value;
use rust_decimal::{Decimal, RoundingStrategy};

use super::args::{Outcome, int_arg, to_float64, to_int64, want, want_at_least};
use crate::template::go_value::format_float_g;

pub(super) fn add1(args: &[Value]) -> Outcome {
    want("add1", args, 1)?;
    Ok(Value::Int(to_int64(&args[0]).wrapping_add(1)))
}

pub(super) fn add(args: &[Value]) -> Outcome {
    Ok(Value::Int(
        args.iter()
            .fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
    ))
}

pub(super) fn sub(args: &[Value]) -> Outcome {
    want("sub", args, 2)?;
    Ok(Value::Int(
        to_int64(&args[0]).wrapping_sub(to_int64(&args[1])),
    ))
}

pub(super) fn mul(args: &[Value]) -> Outcome {
    want_at_least("mul", args, 1)?;
    Ok(Value::Int(
        args[1..]
            .iter()
            .fold(to_int64(&args[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
    ))
}

pub(super) fn div(args: &[Value]) -> Outcome {
    want("div", args, 2)?;
    let divisor = to_int64(&args[1]);
    if divisor == 0 {
        return Err("runtime error: integer divide by zero".to_owned());
    }
    Ok(Value::Int(to_int64(&args[0]).wrapping_div(divisor)))
}

pub(super) fn modulo(args: &[Value]) -> Outcome {
    want("mod", args, 2)?;
    let divisor = to_int64(&args[1]);
    if divisor == 0 {
        return Err("runtime error: integer divide by zero".to_owned());
    }
    Ok(Value::Int(to_int64(&args[0]).wrapping_rem(divisor)))
}

/// `max a b ...` (also `biggest`).
pub(super) fn max(args: &[Value]) -> Outcome {
    want_at_least("max", args, 1)?;
    Ok(Value::Int(
        args.iter().map(to_int64).fold(to_int64(&args[0]), i64::max),
    ))
}

pub(super) fn min(args: &[Value]) -> Outcome {
    want_at_least("min", args, 1)?;
    Ok(Value::Int(
        args.iter().map(to_int64).fold(to_int64(&args[0]), i64::min),
    ))
}

/// Go's `math.Max`: NaN wins, `+0` beats `-0`.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { b } else { a }
    } else {
        a.max(b)
    }
}

/// Go's `math.Min`: NaN wins, `-0` beats `+0`.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { a } else { b }
    } else {
        a.min(b)
    }
}

pub(super) fn maxf(args: &[Value]) -> Outcome {
    want_at_least("maxf", args, 1)?;
    Ok(Value::Float(
        args[1..]
            .iter()
            .map(to_float64)
            .fold(to_float64(&args[0]), go_max),
    ))
}

pub(super) fn minf(args: &[Value]) -> Outcome {
    want_at_least("minf", args, 1)?;
    Ok(Value::Float(
        args[1..]
            .iter()
            .map(to_float64)
            .fold(to_float64(&args[0]), go_min),
    ))
}

pub(super) fn floor(args: &[Value]) -> Outcome {
    want("floor", args, 1)?;
    Ok(Value::Float(to_float64(&args[0]).floor()))
}

pub(super) fn ceil(args: &[Value]) -> Outcome {
    want("ceil", args, 1)?;
    Ok(Value::Float(to_float64(&args[0]).ceil()))
}

/// `round x places [roundOn=.5]`: rounds up when the fraction at `places` is at least
/// `roundOn`.
pub(super) fn round(args: &[Value]) -> Outcome {
    want_at_least("round", args, 2)?;
    let value = to_float64(&args[0]);
    let places = int_arg(&args[1])? as f64;
    let round_on = match args.get(2) {
        Some(v) => match v {
            Value::Float(f) => *f,
            other => {
                return Err(format!(
                    "wrong type for value; expected float64; got {}",
                    crate::template::go_value::type_name(other)
                ));
            }
        },
        None => 0.5,
    };
    let pow = 10f64.powf(places);
    let digit = pow * value;
    let fraction = digit - digit.trunc();
    let rounded = if fraction >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(rounded / pow))
}

/// shopspring's `decimal.NewFromFloat`: the shortest decimal that reads back as `f`.
fn decimal(f: f64) -> Result<Decimal, String> {
    if !f.is_finite() {
        return Err(format!(
            "Cannot create a Decimal from {}",
            format_float_g(f)
        ));
    }
    Decimal::from_str(&format!("{f}"))
        .or_else(|_| Decimal::from_scientific(&format!("{f:e}")))
        .map_err(|e| format!("decimal out of range: {e}"))
}

fn to_float(d: Decimal) -> f64 {
    d.to_string().parse().unwrap_or(0.0)
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// sprig's `execDecimalOp`: folds the operands into the first with decimal arithmetic.
fn decimal_fold(first: &Value, rest: &[Value], op: Op) -> Outcome {
    let mut acc = decimal(to_float64(first))?;
    for v in rest {
        let x = decimal(to_float64(v))?;
        acc = match op {
            Op::Add => acc.checked_add(x),
            Op::Sub => acc.checked_sub(x),
            Op::Mul => acc.checked_mul(x),
            Op::Div => {
                if x.is_zero() {
                    return Err("decimal division by zero".to_owned());
                }
                acc.checked_div(x)
                    .map(|q| q.round_dp_with_strategy(16, RoundingStrategy::MidpointAwayFromZero))
            }
        }
        .ok_or_else(|| "decimal overflow".to_owned())?;
    }
    Ok(Value::Float(to_float(acc)))
}

pub(super) fn add1f(args: &[Value]) -> Outcome {
    want("add1f", args, 1)?;
    decimal_fold(&args[0], &[Value::Int(1)], Op::Add)
}

pub(super) fn addf(args: &[Value]) -> Outcome {
    decimal_fold(&Value::Float(0.0), args, Op::Add)
}

pub(super) fn subf(args: &[Value]) -> Outcome {
    want_at_least("subf", args, 1)?;
    decimal_fold(&args[0], &args[1..], Op::Sub)
}

pub(super) fn mulf(args: &[Value]) -> Outcome {
    want_at_least("mulf", args, 1)?;
    decimal_fold(&args[0], &args[1..], Op::Mul)
}

pub(super) fn divf(args: &[Value]) -> Outcome {
    want_at_least("divf", args, 1)?;
    decimal_fold(&args[0], &args[1..], Op::Div)
}
