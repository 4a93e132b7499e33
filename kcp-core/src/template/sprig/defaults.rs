//! sprig's defaults and flow functions: `default`, `empty`, `coalesce`, `all`, `any`,
//! `ternary` and `fail`.

use gotmpl::Value;

use super::args::{Outcome, bool_arg, str_arg, want, want_at_least};
use crate::template::go_value::is_empty;

/// `default d v`: `v`, or `d` when `v` is missing or empty.
pub(super) fn default(args: &[Value]) -> Outcome {
    want_at_least("default", args, 1)?;
    match args.get(1) {
        Some(given) if !is_empty(given) => Ok(given.clone()),
        _ => Ok(args[0].clone()),
    }
}

pub(super) fn empty(args: &[Value]) -> Outcome {
    want("empty", args, 1)?;
    Ok(Value::Bool(is_empty(&args[0])))
}

/// `coalesce a b ...`: the first non-empty argument, or nil.
pub(super) fn coalesce(args: &[Value]) -> Outcome {
    Ok(args
        .iter()
        .find(|v| !is_empty(v))
        .cloned()
        .unwrap_or(Value::Nil))
}

pub(super) fn all(args: &[Value]) -> Outcome {
    Ok(Value::Bool(args.iter().all(|v| !is_empty(v))))
}

pub(super) fn any(args: &[Value]) -> Outcome {
    Ok(Value::Bool(args.iter().any(|v| !is_empty(v))))
}

/// `ternary a b cond`: `a` when `cond` is true, else `b`.
pub(super) fn ternary(args: &[Value]) -> Outcome {
    want("ternary", args, 3)?;
    Ok(if bool_arg(&args[2])? {
        args[0].clone()
    } else {
        args[1].clone()
    })
}

/// `fail msg`: stops rendering with `msg` as the error.
pub(super) fn fail(args: &[Value]) -> Outcome {
    want("fail", args, 1)?;
    Err(str_arg(&args[0])?.to_owned())
}
