//! Kubernetes' `format` library: string formats by name (`format.dns1123Label()`,
//! `format.named('uuid')`), whose `validate(s)` answers `optional.none()` for a string of the
//! format and otherwise the list of what is wrong with it, in apimachinery's words.

use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::{Opaque, OptionalValue};
use kcp_core::name_validation::{
    dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
    qualified_name_errors,
};

use super::url::Url;

/// What is wrong with a string of a format (nothing when it is of the format).
type Check = fn(&str) -> Vec<String>;

/// A named format: what `format.<name>()` returns.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    name: &'static str,
    check: Check,
}

/// Two formats are equal when they are the same format (kube compares them by name).
impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// The formats by the names the library gives them.
const FORMATS: &[(&str, Check)] = &[
    ("dns1123Label", dns1123_label_errors),
    ("dns1123Subdomain", dns1123_subdomain_errors),
    ("dns1035Label", dns1035_label_errors),
    ("qualifiedName", qualified_name_errors),
    ("dns1123LabelPrefix", |s| {
        dns1123_label_errors(&masked_trailing_dash(s))
    }),
    ("dns1123SubdomainPrefix", |s| {
        dns1123_subdomain_errors(&masked_trailing_dash(s))
    }),
    ("dns1035LabelPrefix", |s| {
        dns1035_label_errors(&masked_trailing_dash(s))
    }),
    ("labelValue", label_value_errors),
    ("uri", uri_errors),
    ("uuid", |s| {
        failing(s, "uuid", "does not match the UUID format")
    }),
    // govalidator's base64 wants at least one group of four characters.
    ("byte", |s| match s {
        "" => vec!["invalid base64".to_string()],
        s => failing(s, "byte", "invalid base64"),
    }),
    ("date", |s| failing(s, "date", "invalid date")),
    ("datetime", |s| failing(s, "datetime", "invalid datetime")),
];

/// The format called `name`, if the library has one.
pub fn named(name: &str) -> Option<Format> {
    FORMATS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(name, check)| Format {
            name,
            check: *check,
        })
}

/// `format.named(name)`: an optional of the format.
pub fn named_optional(name: &str) -> Cel {
    let found = match named(name) {
        Some(format) => OptionalValue::of(Cel::Opaque(Arc::new(format))),
        None => OptionalValue::none(),
    };
    Cel::Opaque(Arc::new(found))
}

impl Format {
    /// `f.validate(s)`: none when `s` is of the format, else an optional of what is wrong.
    pub fn validate(&self, s: &str) -> Cel {
        let errors = (self.check)(s);
        let found = if errors.is_empty() {
            OptionalValue::none()
        } else {
            let listed = errors.into_iter().map(|e| Cel::String(Arc::new(e)));
            OptionalValue::of(Cel::List(Arc::new(listed.collect())))
        };
        Cel::Opaque(Arc::new(found))
    }

    /// The name the library gives the format.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// A name checked as a prefix of generated names: a trailing dash stands for more to come, so
/// the name is checked with its last two bytes replaced by `a` (apimachinery's
/// `maskTrailingDash`).
fn masked_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        let kept = &s.as_bytes()[..s.len() - 2];
        format!("{}a", String::from_utf8_lossy(kept))
    } else {
        s.to_string()
    }
}

/// Go's `url.ParseRequestURI` error, if `s` is not a URI a request may name.
fn uri_errors(s: &str) -> Vec<String> {
    match Url::parse(s) {
        Ok(_) => Vec::new(),
        Err(e) => {
            let prefix = "URL parse error during conversion from string: ";
            vec![e.strip_prefix(prefix).unwrap_or(&e).to_string()]
        }
    }
}

/// `[why]` when `s` is not of the OpenAPI `format`.
fn failing(s: &str, format: &str, why: &str) -> Vec<String> {
    if crate::schema::format::is_valid(format, s) {
        Vec::new()
    } else {
        vec![why.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(format: &str, s: &str) -> Vec<String> {
        let f = named(format).expect("a format of the library");
        (f.check)(s)
    }

    #[test]
    fn a_name_of_the_format_has_no_errors() {
        assert!(errors("dns1123Label", "my-name").is_empty());
        assert!(errors("uuid", "123e4567-e89b-12d3-a456-426614174000").is_empty());
        assert!(errors("uri", "https://example.com/x").is_empty());
    }

    #[test]
    fn a_prefix_may_end_in_a_dash() {
        assert!(errors("dns1123LabelPrefix", "my-name-").is_empty());
        assert!(!errors("dns1123Label", "my-name-").is_empty());
    }

    #[test]
    fn errors_are_apimachinerys() {
        assert!(errors("dns1123Label", "Not_A_Name")[0].starts_with("a lowercase RFC 1123 label"));
        assert_eq!(errors("byte", "!"), ["invalid base64"]);
        assert_eq!(
            errors("uri", "relative"),
            ["parse \"relative\": invalid URI for request"]
        );
    }

    #[test]
    fn an_unknown_name_is_no_format() {
        assert!(named("shout").is_none());
    }
}
