//! sprig's list functions: building, slicing, searching, joining and generating lists.
//!
//! sprig returns fresh lists and never changes its arguments here, so immutable template
//! values behave exactly like Go's slices.

use gotmpl::Value;

use super::Limits;
use super::args::{
    Outcome, int_arg, kind_for_message, str_arg, strval, to_int64, want, want_at_least,
};
use crate::template::go_value::{deep_equal, is_empty, list, string, string_list};

const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

/// The items of a list argument, or sprig's "Cannot <what> on type <kind>" error.
fn list_arg<'a>(v: &'a Value, message: &str) -> Result<&'a [Value], String> {
    match v {
        Value::List(items) => Ok(items),
        Value::Nil => Err(NIL_DEREF.to_owned()),
        other => Err(format!("{message} {}", kind_for_message(other))),
    }
}

pub(super) fn list_fn(args: &[Value]) -> Outcome {
    Ok(list(args.to_vec()))
}

/// `append list v` (also `push`, `mustAppend`, `mustPush`).
pub(super) fn append(args: &[Value]) -> Outcome {
    want("append", args, 2)?;
    let mut out = list_arg(&args[0], "Cannot push on type")?.to_vec();
    out.push(args[1].clone());
    Ok(list(out))
}

pub(super) fn prepend(args: &[Value]) -> Outcome {
    want("prepend", args, 2)?;
    let rest = list_arg(&args[0], "Cannot prepend on type")?;
    let mut out = Vec::with_capacity(rest.len() + 1);
    out.push(args[1].clone());
    out.extend_from_slice(rest);
    Ok(list(out))
}

pub(super) fn first(args: &[Value]) -> Outcome {
    want("first", args, 1)?;
    let items = list_arg(&args[0], "Cannot find first on type")?;
    Ok(items.first().cloned().unwrap_or(Value::Nil))
}

pub(super) fn last(args: &[Value]) -> Outcome {
    want("last", args, 1)?;
    let items = list_arg(&args[0], "Cannot find last on type")?;
    Ok(items.last().cloned().unwrap_or(Value::Nil))
}

pub(super) fn rest(args: &[Value]) -> Outcome {
    want("rest", args, 1)?;
    let items = list_arg(&args[0], "Cannot find rest on type")?;
    // Go returns a nil `[]interface{}`, which prints as `[]`.
    Ok(list(items.get(1..).unwrap_or_default().to_vec()))
}

pub(super) fn initial(args: &[Value]) -> Outcome {
    want("initial", args, 1)?;
    let items = list_arg(&args[0], "Cannot find initial on type")?;
    Ok(list(
        items
            .get(..items.len().saturating_sub(1))
            .unwrap_or_default()
            .to_vec(),
    ))
}

pub(super) fn reverse(args: &[Value]) -> Outcome {
    want("reverse", args, 1)?;
    let items = list_arg(&args[0], "Cannot find reverse on type")?;
    Ok(list(items.iter().rev().cloned().collect()))
}

pub(super) fn uniq(args: &[Value]) -> Outcome {
    want("uniq", args, 1)?;
    let items = list_arg(&args[0], "Cannot find uniq on type")?;
    let mut out: Vec<Value> = Vec::new();
    for item in items {
        if !out.iter().any(|seen| deep_equal(item, seen)) {
            out.push(item.clone());
        }
    }
    Ok(list(out))
}

/// `without list a b ...`: the items equal to none of `a b ...`.
pub(super) fn without(args: &[Value]) -> Outcome {
    want_at_least("without", args, 1)?;
    let items = list_arg(&args[0], "Cannot find without on type")?;
    let omit = &args[1..];
    Ok(list(
        items
            .iter()
            .filter(|item| !omit.iter().any(|o| deep_equal(item, o)))
            .cloned()
            .collect(),
    ))
}

/// `has needle list`.
pub(super) fn has(args: &[Value]) -> Outcome {
    want("has", args, 2)?;
    match &args[1] {
        Value::Nil => Ok(Value::Bool(false)),
        Value::List(items) => Ok(Value::Bool(
            items.iter().any(|item| deep_equal(&args[0], item)),
        )),
        other => Err(format!(
            "Cannot find has on type {}",
            kind_for_message(other)
        )),
    }
}

pub(super) fn compact(args: &[Value]) -> Outcome {
    want("compact", args, 1)?;
    let items = list_arg(&args[0], "Cannot compact on type")?;
    Ok(list(
        items.iter().filter(|v| !is_empty(v)).cloned().collect(),
    ))
}

/// `slice list [start [end]]` (sprig's, which replaces Go's builtin `slice`: lists only).
pub(super) fn slice(args: &[Value]) -> Outcome {
    want_at_least("slice", args, 1)?;
    let items = match &args[0] {
        Value::List(items) => items,
        Value::Nil => return Err(NIL_DEREF.to_owned()),
        other => {
            return Err(format!(
                "list should be type of slice or array but {}",
                kind_for_message(other)
            ));
        }
    };
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    let indices = &args[1..];
    let start = indices.first().map_or(0, to_int64);
    let end = match indices.get(1) {
        Some(v) => to_int64(v),
        None => items.len() as i64,
    };
    if start < 0 || end < start || end > items.len() as i64 {
        return Err("reflect.Value.Slice: slice index out of bounds".to_owned());
    }
    Ok(list(items[start as usize..end as usize].to_vec()))
}

/// `concat list ...`: the items of every list in order.
pub(super) fn concat(args: &[Value]) -> Outcome {
    let mut out = Vec::new();
    for arg in args {
        match arg {
            Value::List(items) => out.extend_from_slice(items),
            Value::Nil => return Err(NIL_DEREF.to_owned()),
            other => {
                return Err(format!(
                    "Cannot concat type {} as list",
                    kind_for_message(other)
                ));
            }
        }
    }
    Ok(list(out))
}

/// `chunk size list`: lists of `size` items, the last one shorter.
pub(super) fn chunk(args: &[Value]) -> Outcome {
    want("chunk", args, 2)?;
    let size = int_arg(&args[0])?;
    let items = list_arg(&args[1], "Cannot chunk type")?;
    if items.is_empty() {
        return Ok(list(Vec::new()));
    }
    if size <= 0 {
        return Err("runtime error: makeslice: len out of range".to_owned());
    }
    Ok(list(
        items
            .chunks(size as usize)
            .map(|c| list(c.to_vec()))
            .collect(),
    ))
}

/// sprig's `strslice`: a list as strings (nil items dropped), nil as no strings, any other
/// value as one string.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items
            .iter()
            .filter(|i| !matches!(i, Value::Nil))
            .map(strval)
            .collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// `join sep list`.
pub(super) fn join(args: &[Value]) -> Outcome {
    want("join", args, 2)?;
    let sep = str_arg(&args[0])?;
    Ok(string(strslice(&args[1]).join(sep)))
}

pub(super) fn to_strings(args: &[Value]) -> Outcome {
    want("toStrings", args, 1)?;
    Ok(string_list(strslice(&args[0])))
}

/// `sortAlpha list`: the items as strings, sorted; a non-list becomes a one-string list.
pub(super) fn sort_alpha(args: &[Value]) -> Outcome {
    want("sortAlpha", args, 1)?;
    match &args[0] {
        Value::List(_) => {
            let mut strings = strslice(&args[0]);
            strings.sort();
            Ok(string_list(strings))
        }
        other => Ok(string_list([strval(other)])),
    }
}

/// The numbers `start, start+step, ...` before `stop`, as sprig's `untilStep`; the length
/// is bounded by the execution budget.
fn until_step(limits: &Limits, start: i64, stop: i64, step: i64) -> Result<Vec<i64>, String> {
    let count: u128 = if stop < start {
        if step >= 0 {
            0
        } else {
            let span = (start as i128 - stop as i128) as u128;
            let step = step.unsigned_abs() as u128;
            span.div_ceil(step)
        }
    } else if step <= 0 {
        0
    } else {
        let span = (stop as i128 - start as i128) as u128;
        span.div_ceil(step as u128)
    };
    if count > limits.max_list_items as u128 {
        return Err(limits.list_too_long(count));
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut value = start as i128;
    for _ in 0..count {
        out.push(value as i64);
        value += step as i128;
    }
    Ok(out)
}

fn int_list(values: Vec<i64>) -> Value {
    list(values.into_iter().map(Value::Int).collect())
}

pub(super) fn until(limits: &Limits, args: &[Value]) -> Outcome {
    want("until", args, 1)?;
    let count = int_arg(&args[0])?;
    let step = if count < 0 { -1 } else { 1 };
    Ok(int_list(until_step(limits, 0, count, step)?))
}

pub(super) fn until_step_fn(limits: &Limits, args: &[Value]) -> Outcome {
    want("untilStep", args, 3)?;
    let start = int_arg(&args[0])?;
    let stop = int_arg(&args[1])?;
    let step = int_arg(&args[2])?;
    Ok(int_list(until_step(limits, start, stop, step)?))
}

/// `seq [start [step]] end`: the numbers as a space-separated string, like the Unix `seq`.
pub(super) fn seq(limits: &Limits, args: &[Value]) -> Outcome {
    let params: Vec<i64> = args.iter().map(int_arg).collect::<Result<_, _>>()?;
    let numbers = match params.as_slice() {
        [end] => {
            let start = 1;
            let inc = if *end < start { -1 } else { 1 };
            until_step(limits, start, end.wrapping_add(inc), inc)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(limits, *start, end.wrapping_add(step), step)?
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if *step > 0 {
                    return Ok(string(""));
                }
            }
            until_step(limits, *start, end.wrapping_add(inc), *step)?
        }
        _ => return Ok(string("")),
    };
    let text: Vec<String> = numbers.iter().map(i64::to_string).collect();
    Ok(string(text.join(" ")))
}
