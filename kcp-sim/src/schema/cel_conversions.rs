//! Overloads kube-apiserver's rules have that the `cel` crate's environment lacks, added to
//! it: Kubernetes' `indexOf` and `lastIndexOf` of a list (its list library; the strings
//! extension has them for strings only), and cel-go's `int(duration)` (the duration in
//! nanoseconds) and `duration(int)`, which cel-go declares but fails when it runs.

use cel::common::types::{CelInt, DURATION_TYPE, DYN_TYPE, INT_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};

/// Adds the overloads to `env` (which has the standard library and the strings extension).
pub fn add(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_overload(
        "int",
        "duration_to_int64",
        vec![DURATION_TYPE],
        duration_to_int,
    )?;
    env.add_overload(
        "duration",
        "int64_to_duration",
        vec![INT_TYPE],
        int_to_duration,
    )
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(&args, false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(&args, true)
}

/// The first (or `last`) index of the list's item equal to the argument, -1 without one.
fn position<'b, 'v>(args: &[CowVal<'_, '_>], last: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, item] = args else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    let items = list
        .as_ref()
        .as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.as_ref().get_type().name().to_owned(),
            want: "list".to_owned(),
        })?;
    let mut found: i64 = -1;
    let mut index: i64 = 0;
    let mut next = items.iter();
    while let Some(candidate) = next.next() {
        if candidate.equals(item.as_ref()) {
            found = index;
            if !last {
                break;
            }
        }
        index += 1;
    }
    Ok(CowVal::Owned(Box::new(CelInt::from(found))))
}

/// `int(duration)`: the duration's nanoseconds.
fn duration_to_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [duration] = args.as_slice() else {
        return Err(ExecutionError::invalid_argument_count(1, args.len()));
    };
    let Some(duration) = duration
        .as_ref()
        .downcast_ref::<cel::common::types::CelDuration>()
    else {
        return Err(ExecutionError::function_error("int", "not a duration"));
    };
    let nanos = duration
        .inner()
        .num_nanoseconds()
        .ok_or_else(|| ExecutionError::function_error("int", "integer overflow"))?;
    Ok(CowVal::Owned(Box::new(CelInt::from(nanos))))
}

/// `duration(int)`: declared, and a conversion error when it runs, as in cel-go.
fn int_to_duration<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Err(ExecutionError::function_error(
        "duration",
        "Type conversion error from 'int' to 'google.protobuf.Duration'",
    ))
}

#[cfg(test)]
mod tests {
    use super::super::cel::Expression;

    fn evaluate(source: &str) -> Result<cel::Value, String> {
        Expression::compile(source)?.evaluate(&[])
    }

    #[test]
    fn a_list_finds_the_first_and_last_index_of_an_item() {
        assert_eq!(evaluate("[1, 2, 2, 3].indexOf(2)"), Ok(cel::Value::Int(1)));
        assert_eq!(
            evaluate("[1, 2, 2, 3].lastIndexOf(2)"),
            Ok(cel::Value::Int(2))
        );
        assert_eq!(evaluate("['a'].indexOf('b')"), Ok(cel::Value::Int(-1)));
        assert_eq!(evaluate("'abcb'.lastIndexOf('b')"), Ok(cel::Value::Int(3)));
    }

    #[test]
    fn a_duration_is_its_nanoseconds_as_an_int() {
        assert_eq!(
            evaluate("int(duration('1s'))"),
            Ok(cel::Value::Int(1_000_000_000))
        );
    }

    #[test]
    fn an_int_is_no_duration_when_the_rule_runs() {
        let error = evaluate("duration(1) > duration('0s')").unwrap_err();
        assert!(
            error.contains("Type conversion error from 'int' to 'google.protobuf.Duration'"),
            "{error}"
        );
    }
}
