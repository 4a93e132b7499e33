//! A rule that fails to evaluate, worded as kube-apiserver words it: cel-go's runtime error
//! (`no such key: size`, `index out of bounds: 0`, `division by zero`) followed by
//! `evaluating rule: <rule>`, or, for a call no overload takes at run time (values of the wrong
//! type behind `dyn`), `'no such overload': call arguments did not match a supported operator,
//! function or macro signature for rule: <rule>`.

use cel::ExecutionError;
use cel::Value as Cel;

/// The detail of the error cause of a rule (`rule` is its message, or the rule itself) that
/// failed with `e`.
pub fn evaluation_error(e: &ExecutionError, rule: &str) -> String {
    match e {
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. } => format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule}"
        ),
        other => format!("{} evaluating rule: {rule}", go_words(other)),
    }
}

/// cel-go's words for the errors both evaluators raise; the crate's own words for the others.
fn go_words(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::IndexOutOfBounds(index) => {
            format!("index out of bounds: {}", plain(index))
        }
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(_, Cel::UInt(_), _) => "unsigned integer overflow".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        // The standard library's conversions (`bool('red')`): cel-go's message alone.
        ExecutionError::FunctionError { message, .. }
            if message.starts_with("Type conversion error") =>
        {
            format!("t{}", &message[1..])
        }
        // Kubernetes' libraries report their own errors alone (`types.NewErr("%v", err)`).
        ExecutionError::FunctionError { function, message }
            if super::cel_library::FUNCTIONS.contains(&function.as_str()) =>
        {
            message.clone()
        }
        ExecutionError::FunctionError { function, message } => match conversion_target(function) {
            // A string the conversion cannot read (`int('red')`, `duration('red')`).
            Some(target) => format!("type conversion error from 'string' to '{target}'"),
            // The strings extension's own errors (`index out of range: 1`) stand alone.
            None if STRING_FUNCTIONS.contains(&function.as_str()) => message.clone(),
            None => e.to_string(),
        },
        other => other.to_string(),
    }
}

/// The functions of the strings extension, whose errors cel-go reports as they are.
const STRING_FUNCTIONS: &[&str] = &[
    "charAt",
    "indexOf",
    "lastIndexOf",
    "substring",
    "replace",
    "split",
];

/// The type a conversion function of the standard library converts to, as cel-go names it.
fn conversion_target(function: &str) -> Option<&'static str> {
    Some(match function {
        "int" => "int",
        "uint" => "uint",
        "double" => "double",
        "duration" => "google.protobuf.Duration",
        "timestamp" => "google.protobuf.Timestamp",
        _ => return None,
    })
}

/// A number as Go's `%v` prints it.
fn plain(v: &Cel) -> String {
    match v {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_missing_key_and_an_index_past_the_end_read_as_cel_go_words_them() {
        let missing = ExecutionError::NoSuchKey(Arc::new("size".into()));
        assert_eq!(
            evaluation_error(&missing, "self.size > 1"),
            "no such key: size evaluating rule: self.size > 1"
        );
        let past = ExecutionError::IndexOutOfBounds(Cel::Int(0));
        assert_eq!(
            evaluation_error(&past, "self.tags[0] == 'a'"),
            "index out of bounds: 0 evaluating rule: self.tags[0] == 'a'"
        );
    }

    #[test]
    fn values_of_the_wrong_type_are_no_such_overload() {
        let e = ExecutionError::UnsupportedBinaryOperator("add", Cel::Int(1), Cel::Bool(true));
        assert_eq!(
            evaluation_error(&e, "self.a + self.b > 1"),
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.a + self.b > 1"
        );
    }
}
