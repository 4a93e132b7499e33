//! What kube-apiserver refuses in a write's options (`CreateOptions`, `UpdateOptions`,
//! `PatchOptions`), as its `ValidateCreateOptions`, `ValidateUpdateOptions` and
//! `ValidatePatchOptions` refuse it: every error at once, in one 422 about the options.
//!
//! The query parameters checked are `force` (a patch other than an apply may not name it),
//! `fieldManager` (an apply needs one; any is at most 128 bytes of printable characters),
//! `dryRun` (only `All`) and `fieldValidation` (`Ignore`, `Warn`, `Strict` or nothing).

use serde_json::{Value, json};

use crate::schema::field::{ErrorType, FieldError, invalid_object};
use crate::status::ApiError;

/// The longest field manager kube-apiserver accepts, in bytes.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The options of one write as its query names them.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteQuery<'a> {
    /// `CreateOptions`, `UpdateOptions` or `PatchOptions`.
    pub options_kind: &'a str,
    /// Whether the write is a server-side apply.
    pub apply: bool,
    /// `?force=`, when named at all.
    pub force: Option<&'a str>,
    /// `?fieldManager=`.
    pub field_manager: Option<&'a str>,
    /// Every `?dryRun=`.
    pub dry_run: &'a [&'a str],
    /// `?fieldValidation=`.
    pub field_validation: Option<&'a str>,
}

/// Refuses the options with kube-apiserver's 422 when any is invalid.
pub fn check(query: &WriteQuery<'_>) -> Result<(), ApiError> {
    let errors = errors(query);
    if errors.is_empty() {
        return Ok(());
    }
    Err(invalid_object(
        "meta.k8s.io",
        query.options_kind,
        "",
        &errors,
    ))
}

/// Every error of the options, in kube-apiserver's order.
pub fn errors(query: &WriteQuery<'_>) -> Vec<FieldError> {
    let manager = query.field_manager.unwrap_or_default();
    let mut errors = Vec::new();
    if query.options_kind == "PatchOptions" {
        if query.apply && manager.is_empty() {
            errors.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
        if !query.apply && query.force.is_some() {
            errors.push(FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ));
        }
    }
    errors.extend(field_manager_errors(manager));
    errors.extend(dry_run_error(query.dry_run));
    errors.extend(field_validation_error(query.field_validation));
    errors
}

/// A field manager's errors: too long, or a character that is not printable (a control or
/// format character, or a space other than ` `, as Go's `unicode.IsPrint` sees them; each named
/// with its code point and byte position, as Go's `%#U` prints it).
pub fn field_manager_errors(manager: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::new(
            ErrorType::TooLong,
            "fieldManager",
            None,
            format!("may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
        ));
    }
    for (position, c) in manager.char_indices() {
        if c.is_control() || (c.is_whitespace() && c != ' ') {
            errors.push(FieldError::invalid(
                "fieldManager",
                Value::String(manager.to_owned()),
                format!(
                    "invalid character U+{:04X} (at position {position})",
                    c as u32
                ),
            ));
        }
    }
    errors
}

/// `dryRun` takes only `All`.
pub fn dry_run_error(values: &[&str]) -> Option<FieldError> {
    values.iter().any(|v| *v != "All").then(|| {
        FieldError::new(
            ErrorType::NotSupported,
            "dryRun",
            Some(json!(values)),
            "supported values: \"All\"",
        )
    })
}

/// `fieldValidation` takes `Ignore`, `Warn`, `Strict` or nothing.
pub fn field_validation_error(value: Option<&str>) -> Option<FieldError> {
    let value = value.unwrap_or_default();
    (!matches!(value, "" | "Ignore" | "Warn" | "Strict")).then(|| {
        FieldError::new(
            ErrorType::NotSupported,
            "fieldValidation",
            Some(Value::String(value.to_owned())),
            "supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch<'a>(apply: bool) -> WriteQuery<'a> {
        WriteQuery {
            options_kind: "PatchOptions",
            apply,
            ..WriteQuery::default()
        }
    }

    #[test]
    fn force_on_a_merge_patch_is_forbidden_even_when_false() {
        let query = WriteQuery {
            force: Some("false"),
            ..patch(false)
        };
        let error = check(&query).unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
    }

    #[test]
    fn an_apply_needs_a_field_manager() {
        let messages: Vec<String> = errors(&patch(true))
            .iter()
            .map(FieldError::message)
            .collect();
        assert_eq!(
            messages,
            ["fieldManager: Required value: is required for apply patch"]
        );
    }

    #[test]
    fn a_field_manager_of_129_bytes_is_too_long() {
        let long = "a".repeat(129);
        let query = WriteQuery {
            options_kind: "CreateOptions",
            field_manager: Some(&long),
            ..WriteQuery::default()
        };
        let messages: Vec<String> = errors(&query).iter().map(FieldError::message).collect();
        assert_eq!(
            messages,
            ["fieldManager: Too long: may not be more than 128 bytes"]
        );
        let just = "a".repeat(128);
        let query = WriteQuery {
            field_manager: Some(&just),
            ..query
        };
        assert!(errors(&query).is_empty());
    }

    #[test]
    fn every_error_is_listed_at_once() {
        let query = WriteQuery {
            dry_run: &["Some"],
            field_validation: Some("strict"),
            ..patch(true)
        };
        let fields: Vec<String> = errors(&query).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["fieldManager", "dryRun", "fieldValidation"]);
    }
}
