//! sprig's reflection functions: `typeOf`, `typeIs`, `typeIsLike`, `kindOf`, `kindIs`,
//! `deepEqual`.
//!
//! Types are named as Go would name the values kcp templates see: data integers are
//! `int64`, floats `float64`, lists `[]interface {}`, dicts `map[string]interface {}`.
//! Integer literals in the template are `int` in Go but `int64` here.

use gotmpl::Value;

use super::args::{Outcome, str_arg, want};
use crate::template::go_value::{deep_equal, kind_name, string, type_name};

pub(super) fn type_of(args: &[Value]) -> Outcome {
    want("typeOf", args, 1)?;
    Ok(string(type_name(&args[0])))
}

pub(super) fn type_is(args: &[Value]) -> Outcome {
    want("typeIs", args, 2)?;
    Ok(Value::Bool(str_arg(&args[0])? == type_name(&args[1])))
}

pub(super) fn type_is_like(args: &[Value]) -> Outcome {
    want("typeIsLike", args, 2)?;
    let target = str_arg(&args[0])?;
    let actual = type_name(&args[1]);
    Ok(Value::Bool(
        target == actual || actual.strip_prefix('*') == Some(target),
    ))
}

pub(super) fn kind_of(args: &[Value]) -> Outcome {
    want("kindOf", args, 1)?;
    Ok(string(kind_name(&args[0])))
}

pub(super) fn kind_is(args: &[Value]) -> Outcome {
    want("kindIs", args, 2)?;
    Ok(Value::Bool(str_arg(&args[0])? == kind_name(&args[1])))
}

pub(super) fn deep_equal_fn(args: &[Value]) -> Outcome {
    want("deepEqual", args, 2)?;
    Ok(Value::Bool(deep_equal(&args[0], &args[1])))
}
