//! apimachinery's name checks (`util/validation`), worded as Go words them: the message, its
//! examples and the regular expression it names, as kube-apiserver's `422`s and label selector
//! errors quote them. Each function answers every message that applies, in Go's order; none is
//! a valid value.

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
pub fn regex_error(message: &str, fmt: &str, examples: &[&str]) -> String {
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

const DNS1123_LABEL_ERROR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERROR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_MAX: usize = 63;

/// `validation.IsDNS1123Label` (a Namespace's name).
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX {
        errors.push(max_len_error(LABEL_MAX));
    }
    if !is_dns1123_label_shape(value) {
        if value.split('.').all(is_dns1123_label_shape) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(regex_error(
                DNS1123_LABEL_ERROR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errors
}

/// `validation.IsDNS1035Label` (a Service's name).
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX {
        errors.push(max_len_error(LABEL_MAX));
    }
    let starts_alphabetic = value.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
    if !(starts_alphabetic && is_dns1123_label_shape(value)) {
        errors.push(regex_error(
            DNS1035_LABEL_ERROR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
