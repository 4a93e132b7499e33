//! Field errors as apimachinery's `field.Error` renders them: a type (`FieldValueRequired`, ...),
//! a field path, a bad value printed the way Go prints it, and a detail; and the `422 Invalid`
//! answer (`<Kind>.<group> "<name>" is invalid: ...` with `details.causes`) built from them.

use serde_json::Value;

use crate::status::{ApiError, StatusCause};

/// The kind of a field error, one to one with `metav1.CauseType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `FieldValueRequired`: "Required value".
    Required,
    /// `FieldValueInvalid`: "Invalid value".
    Invalid,
    /// `FieldValueTypeInvalid`: "Invalid value" (the value has the wrong type).
    TypeInvalid,
    /// `FieldValueNotSupported`: "Unsupported value".
    NotSupported,
    /// `FieldValueDuplicate`: "Duplicate value".
    Duplicate,
    /// `FieldValueForbidden`: "Forbidden".
    Forbidden,
    /// `FieldValueNotFound`: "Not found".
    NotFound,
    /// `FieldValueTooLong`: "Too long".
    TooLong,
    /// `FieldValueTooMany`: "Too many".
    TooMany,
}

impl ErrorType {
    /// The `metav1.CauseType` (`reason` of a cause).
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Forbidden => "FieldValueForbidden",
            Self::NotFound => "FieldValueNotFound",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Duplicate => "Duplicate value",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "Not found",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
        }
    }

    /// Whether the error prints its bad value (`Invalid value: "x": ...`).
    fn shows_value(self) -> bool {
        !matches!(self, Self::Required | Self::Forbidden | Self::TooLong)
    }
}

/// One field error.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What is wrong.
    pub kind: ErrorType,
    /// The field path, e.g. `spec.ports[0].name`.
    pub field: String,
    /// The bad value; `None` omits it, as `field.OmitValueType` does.
    pub value: Option<Value>,
    /// The bad value as Go's `encoding/json` wrote it, when it is a Go struct (printed in
    /// place of `value`, whose members JSON would sort).
    pub go_struct: Option<String>,
    /// Why, or empty.
    pub detail: String,
}

impl FieldError {
    /// An error of `kind` at `field`.
    pub fn new(
        kind: ErrorType,
        field: impl Into<String>,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            value,
            go_struct: None,
            detail: detail.into(),
        }
    }

    /// `Invalid value: <struct>: detail`, the struct as Go's `encoding/json` wrote it.
    pub fn invalid_struct(
        field: impl Into<String>,
        go_json: String,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            go_struct: Some(go_json),
            ..Self::new(ErrorType::Invalid, field, None, detail)
        }
    }

    /// `Required value[: detail]`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, field, None, detail)
    }

    /// `Invalid value: <value>: detail`.
    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, field, Some(value), detail)
    }

    /// `Unsupported value: <value>: supported values: "a", "b"` (`field.NotSupported`).
    pub fn not_supported(field: impl Into<String>, value: Value, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = format!("supported values: {}", quoted.join(", "));
        Self::new(ErrorType::NotSupported, field, Some(value), detail)
    }

    /// `Forbidden: detail`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, None, detail)
    }

    /// The message without the field, as `field.Error.ErrorBody` writes it (a cause's message).
    pub fn body(&self) -> String {
        let mut s = self.kind.text().to_string();
        if self.kind.shows_value() {
            if let Some(shown) = &self.go_struct {
                s.push_str(": ");
                s.push_str(shown);
            } else if let Some(v) = &self.value {
                s.push_str(": ");
                s.push_str(&go_value(v));
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// `<field>: <body>`.
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// `value` as Go's `encoding/json` writes it: compact, keys sorted, HTML characters and the
/// JavaScript line separators escaped.
pub fn go_json(value: &Value) -> String {
    value
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A value as `field.Error` prints it: strings quoted, numbers and booleans bare, everything
/// else as JSON.
pub fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Number(n) if n.is_f64() => go_float(n.as_f64().unwrap_or_default()),
        other => other.to_string(),
    }
}

/// A float as Go's `%v` prints it: the shortest digits, in exponent form when the exponent is
/// below -4 or at least 6 (`%v` is `%g` with the shortest precision, whose threshold is 6).
pub fn go_float(f: f64) -> String {
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// [`invalid_object`] of `obj` (named by its `metadata.name`) when `errors` holds any.
pub fn refuse_if_invalid(
    group: &str,
    kind: &str,
    obj: &serde_json::Value,
    errors: &[FieldError],
) -> crate::status::ApiResult<()> {
    if errors.is_empty() {
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    Err(invalid_object(group, kind, name, errors))
}

/// The `422 Invalid` error of an object: `<Kind>.<group> "<name>" is invalid: <errors>`, one
/// cause per error; several errors are listed in brackets, as an aggregate prints them.
pub fn invalid_object(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let mut messages: Vec<String> = Vec::with_capacity(errors.len());
    for e in errors {
        let m = e.message();
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    let aggregate = match messages.as_slice() {
        [] => String::new(),
        [one] => format!(": {one}"),
        many => format!(": [{}]", many.join(", ")),
    };
    let causes = errors
        .iter()
        .map(|e| StatusCause {
            reason: e.kind.cause_type().to_string(),
            message: e.body(),
            field: e.field.clone(),
        })
        .collect();
    ApiError::new(
        422,
        "Invalid",
        format!(
            "{qualified} {} is invalid{aggregate}",
            Value::String(name.into())
        ),
    )
    .about(group, kind, name)
    .with_causes(causes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_go_prints_them() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(0.00001), "1e-05");
    }

    #[test]
    fn an_unsupported_value_lists_the_supported_ones() {
        let e = FieldError::new(
            ErrorType::NotSupported,
            "spec.mode",
            Some(json!("x")),
            "supported values: \"a\", \"b\"",
        );
        assert_eq!(
            e.message(),
            "spec.mode: Unsupported value: \"x\": supported values: \"a\", \"b\""
        );
    }

    #[test]
    fn several_errors_are_bracketed_in_the_message() {
        let errs = [
            FieldError::required("spec.a", ""),
            FieldError::new(
                ErrorType::TooLong,
                "spec.b",
                None,
                "may not be more than 3 bytes",
            ),
        ];
        let e = invalid_object("example.io", "Widget", "w", &errs);
        assert_eq!(
            e.message,
            "Widget.example.io \"w\" is invalid: [spec.a: Required value, spec.b: Too long: may not be more than 3 bytes]"
        );
        assert_eq!(e.code, 422);
    }
}
