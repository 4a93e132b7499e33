//! apimachinery's checks of an object's metadata (`ValidateObjectMetaAccessor`): its names and
//! its labels, with the real server's messages (`util/validation`'s texts, with their examples
//! and the regular expression they name), as [`FieldError`]s for a `422 Invalid` answer.
//!
//! A name is checked by the rule of its kind: RBAC objects are path segments (so
//! `system:controller:x` and `<uid>:<role>` are valid, as `ValidateRBACName` allows), every
//! other kind a DNS-1123 subdomain.

use serde_json::Value;

use crate::schema::field::FieldError;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_ERROR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// `dns1123SubdomainFmt`.
fn dns1123_subdomain_fmt() -> String {
    format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*")
}

/// `validation.MaxLenError`.
fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `validation.RegexError`: the message, the examples and the regular expression, in Go's
/// words (each example is followed by `, `, so two examples read `'a',  or 'b', `).
fn regex_error(message: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{fmt}')");
    }
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

/// Whether `label` matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1123_label_shape(label: &str) -> bool {
    let bytes = label.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    let end = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => end(first) && end(last) && bytes.iter().all(inner),
        _ => false,
    }
}

/// `validation.IsDNS1123Subdomain`.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !value.split('.').all(is_dns1123_label_shape) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_ERROR,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errors
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERROR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_ERROR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MAX: usize = 63;

/// Whether `name` matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_name_shape(name: &str) -> bool {
    let bytes = name.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && bytes.iter().all(inner)
        }
        _ => false,
    }
}

/// `validation.IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errors.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERROR, QUALIFIED_NAME_FMT, &examples)
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errors.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !is_qualified_name_shape(name) {
        errors.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERROR, QUALIFIED_NAME_FMT, &examples)
        ));
    }
    errors
}

/// `validation.IsValidLabelValue`: empty, or a qualified name without a prefix.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errors.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !is_qualified_name_shape(value) {
        errors.push(regex_error(
            LABEL_VALUE_ERROR,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// What is wrong with an object's `metadata.labels` (`ValidateLabels`: each key, then its
/// value; keys in order, where Go's map order is random).
pub fn label_errors(labels: Option<&Value>) -> Vec<FieldError> {
    let Some(labels) = labels.and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for (key, value) in labels {
        let at = |v: &str, m: String| {
            FieldError::invalid("metadata.labels", Value::String(v.to_string()), m)
        };
        errors.extend(qualified_name_errors(key).into_iter().map(|m| at(key, m)));
        if let Some(value) = value.as_str() {
            errors.extend(label_value_errors(value).into_iter().map(|m| at(value, m)));
        }
    }
    errors
}

/// `path.ValidatePathSegmentName`: a prefix (a `generateName`) may be `.` or `..`.
fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && let Some(bad) = [".", ".."].into_iter().find(|bad| name == *bad) {
        return vec![format!("may not be '{bad}'")];
    }
    ["/", "%"]
        .into_iter()
        .filter(|bad| name.contains(bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `maskTrailingDash`: a prefix may end in a dash, since a suffix follows it. Go's code drops
/// the last two characters and appends `a`.
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if name.len() > 1 => {
            let mut chars = rest.chars();
            chars.next_back();
            format!("{}a", chars.as_str())
        }
        _ => name.to_string(),
    }
}

/// The kind's `ValidateNameFunc`: what is wrong with `name` (a `generateName` when `prefix`).
fn name_messages(group: &str, name: &str, prefix: bool) -> Vec<String> {
    if group == "rbac.authorization.k8s.io" {
        return path_segment_errors(name, prefix);
    }
    let name = if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    };
    dns1123_subdomain_errors(&name)
}

/// What is wrong with the names of a new object of `group` (after name generation): its
/// `generateName`, if any, and its `name`, as `ValidateObjectMetaAccessor` reports them.
pub fn name_errors(group: &str, generate_name: Option<&str>, name: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(prefix) = generate_name.filter(|p| !p.is_empty()) {
        errors.extend(name_messages(group, prefix, true).into_iter().map(|m| {
            FieldError::invalid("metadata.generateName", Value::String(prefix.into()), m)
        }));
    }
    if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        errors.extend(
            name_messages(group, name, false)
                .into_iter()
                .map(|m| FieldError::invalid("metadata.name", Value::String(name.into()), m)),
        );
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(group: &str, generate_name: Option<&str>, name: &str) -> Vec<String> {
        name_errors(group, generate_name, name)
            .iter()
            .map(FieldError::message)
            .collect()
    }

    #[test]
    fn names_must_be_dns_subdomains() {
        assert!(messages("", None, "web-1.example").is_empty());
        for bad in ["Web", "-web", "a..b", "a.-b", "web_1"] {
            assert_eq!(messages("apps", None, bad).len(), 1, "{bad}");
        }
        assert_eq!(messages("", None, &"a".repeat(254)).len(), 1);
    }

    #[test]
    fn an_invalid_name_reads_as_kube_apiserver_writes_it() {
        assert_eq!(
            messages("", None, "Upper_Case"),
            [
                "metadata.name: Invalid value: \"Upper_Case\": a lowercase RFC 1123 subdomain must \
              consist of lower case alphanumeric characters, '-' or '.', and must start and end \
              with an alphanumeric character (e.g. 'example.com', regex used for validation is \
              '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            messages("", None, ""),
            ["metadata.name: Required value: name or generateName is required"]
        );
    }

    #[test]
    fn regex_errors_list_their_examples_as_go_does() {
        assert_eq!(
            regex_error("m", "f", &["a", "b"]),
            "m (e.g. 'a',  or 'b', regex used for validation is 'f')"
        );
        assert_eq!(
            regex_error("m", "f", &[]),
            "m (regex used for validation is 'f')"
        );
    }

    #[test]
    fn a_generate_name_may_end_in_a_dash() {
        assert!(messages("", Some("made-"), "made-x7k2p").is_empty());
        let bad = messages("", Some("Made-"), "Made-x7k2p");
        assert_eq!(bad.len(), 2);
        assert!(bad[0].starts_with("metadata.generateName: Invalid value: \"Made-\""));
        assert!(bad[1].starts_with("metadata.name: Invalid value: \"Made-x7k2p\""));
    }

    #[test]
    fn a_bad_label_value_reads_as_kube_apiserver_writes_it() {
        let errors = label_errors(Some(&serde_json::json!({"a": "not valid!", "b": ""})));
        let messages: Vec<String> = errors.iter().map(FieldError::message).collect();
        assert_eq!(
            messages,
            [
                "metadata.labels: Invalid value: \"not valid!\": a valid label must be an empty \
              string or consist of alphanumeric characters, '-', '_' or '.', and must start and \
              end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
              regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
        assert_eq!(label_value_errors(&"a".repeat(64)).len(), 1);
    }

    #[test]
    fn label_keys_are_qualified_names() {
        assert!(qualified_name_errors("app.kubernetes.io/name").is_empty());
        assert!(qualified_name_errors("MyName").is_empty());
        assert_eq!(
            qualified_name_errors("/x"),
            ["prefix part must be non-empty"]
        );
        assert_eq!(qualified_name_errors("Example.com/x").len(), 1);
        assert!(qualified_name_errors("Example.com/x")[0].starts_with("prefix part a lowercase"));
        assert_eq!(
            qualified_name_errors("x/"),
            [
                "name part must be non-empty".to_string(),
                format!(
                    "name part {}",
                    regex_error(
                        QUALIFIED_NAME_ERROR,
                        QUALIFIED_NAME_FMT,
                        &["MyName", "my.name", "123-abc"]
                    )
                )
            ]
        );
        assert!(qualified_name_errors("a/b/c")[0].starts_with("a qualified name must consist"));
    }

    #[test]
    fn rbac_names_are_path_segments() {
        let rbac = "rbac.authorization.k8s.io";
        assert!(messages(rbac, None, "system:controller:x").is_empty());
        assert!(messages(rbac, None, "0b7e:cluster-admin").is_empty());
        assert_eq!(
            messages(rbac, None, "a/b%"),
            [
                "metadata.name: Invalid value: \"a/b%\": may not contain '/'",
                "metadata.name: Invalid value: \"a/b%\": may not contain '%'"
            ]
        );
        assert_eq!(
            messages(rbac, None, ".."),
            ["metadata.name: Invalid value: \"..\": may not be '..'"]
        );
        assert!(!messages("apps", None, "a:b").is_empty());
    }
}
