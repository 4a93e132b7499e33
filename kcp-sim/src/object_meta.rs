//! apimachinery's checks of an object's metadata (`ValidateObjectMetaAccessor`), with the real
//! server's messages: `util/validation`'s texts, with their examples and the regular expression
//! they name, as [`FieldError`]s for a `422 Invalid` answer.
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
