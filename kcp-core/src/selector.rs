//! Label and field selectors, as the API server reads them from the `labelSelector` and
//! `fieldSelector` query parameters of list and watch requests.
//!
//! [`LabelSelector`] understands the whole string syntax of Kubernetes label selectors:
//! `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` (the label
//! exists), `!key` (it does not), and the numeric `key>n` / `key<n`, joined by commas (all must
//! hold). It is read as apimachinery's `labels.Parse` reads it, with the same checks of keys
//! and values and the same error text (`label_syntax`, held to `labels.Parse` by kcp-core's
//! differential test). As on the real server, `!=` and `notin` also match objects that do not
//! carry the label at all.
//!
//! [`FieldSelector`] understands `field=value`, `field==value` and `field!=value` joined by commas,
//! with `\,`, `\=` and `\\` escapes in values, read as apimachinery's `fields.ParseSelector`
//! reads them (nothing trimmed, terms sorted, the same error text; held to it by the same
//! differential test). Which fields a resource can be selected by is the server's to say: here
//! any dotted path into the object's JSON selects (`metadata.name`, `status.phase`,
//! `spec.nodeName`, `involvedObject.name`, ...). A field that is missing (or `null`) compares as
//! the empty string, so `spec.nodeName=` selects unscheduled pods; booleans and numbers compare
//! as their JSON text (`spec.unschedulable=true`).
//!
//! Label selectors tolerate white space around tokens, as `labels.Parse` does; both treat an
//! empty string as "select everything".

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

mod label_syntax;

/// A selector that could not be parsed, and why, as kube-apiserver says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct SelectorError {
    /// The selector.
    pub selector: String,
    /// Why it was rejected, in apimachinery's words: `labels.Parse`'s
    /// (`unable to parse requirement: found 'b' expected: '('`) or `fields.ParseSelector`'s
    /// (`invalid selector: 'a'; can't understand 'a'`).
    pub reason: String,
}

impl SelectorError {
    fn new(selector: &str, reason: impl Into<String>) -> Self {
        Self {
            selector: selector.to_owned(),
            reason: reason.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// A parsed label selector: a conjunction of requirements on an object's `metadata.labels`.
///
/// The default value is the empty selector, which matches every object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
}

/// What a label requirement asks of the label's value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelOp {
    Equals(String),
    NotEquals(String),
    In(BTreeSet<String>),
    NotIn(BTreeSet<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

impl LabelRequirement {
    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = labels.and_then(|labels| labels.get(&self.key));
        let text = value.and_then(Value::as_str);
        match &self.op {
            LabelOp::Equals(expected) => text == Some(expected.as_str()),
            LabelOp::NotEquals(expected) => text != Some(expected.as_str()),
            LabelOp::In(set) => text.is_some_and(|t| set.contains(t)),
            LabelOp::NotIn(set) => !text.is_some_and(|t| set.contains(t)),
            LabelOp::Exists => value.is_some(),
            LabelOp::DoesNotExist => value.is_none(),
            LabelOp::GreaterThan(bound) => text
                .and_then(|t| t.parse::<i64>().ok())
                .is_some_and(|n| n > *bound),
            LabelOp::LessThan(bound) => text
                .and_then(|t| t.parse::<i64>().ok())
                .is_some_and(|n| n < *bound),
        }
    }
}

impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
        match &self.op {
            LabelOp::Equals(v) => write!(f, "{key}={v}"),
            LabelOp::NotEquals(v) => write!(f, "{key}!={v}"),
            LabelOp::In(set) => write!(f, "{key} in ({})", list(set)),
            LabelOp::NotIn(set) => write!(f, "{key} notin ({})", list(set)),
            LabelOp::Exists => write!(f, "{key}"),
            LabelOp::DoesNotExist => write!(f, "!{key}"),
            LabelOp::GreaterThan(n) => write!(f, "{key}>{n}"),
            LabelOp::LessThan(n) => write!(f, "{key}<{n}"),
        }
    }
}

impl LabelSelector {
    /// Parses a label selector in the Kubernetes string syntax (see the module documentation).
    ///
    /// An empty or blank string gives the empty selector, which matches everything.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let requirements =
            label_syntax::parse(s).map_err(|message| SelectorError::new(s, message))?;
        Ok(LabelSelector { requirements })
    }

    /// Whether an object with these labels (its `metadata.labels`; `None` when it has none) is
    /// selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this object is selected, reading its labels from `metadata.labels`.
    pub fn matches_object(&self, obj: &Value) -> bool {
        let labels = obj
            .get("metadata")
            .and_then(|metadata| metadata.get("labels"))
            .and_then(Value::as_object);
        self.matches(labels)
    }

    /// Whether this selector has no requirements, i.e. selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

/// Writes the selector back in the string syntax (`=` for both `=` and `==`, sets sorted).
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------

/// A parsed field selector: a conjunction of (in)equalities on dotted paths into the object.
///
/// The default value is the empty selector, which matches every object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// One `field=value` or `field!=value` requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    field: String,
    equals: bool,
    value: String,
}

impl FieldRequirement {
    fn matches(&self, obj: &Value) -> bool {
        (field_value(obj, &self.field) == self.value) == self.equals
    }
}

/// The value of a dotted path as the selector compares it: strings as they are, booleans and
/// numbers as their JSON text, missing fields and `null` as the empty string, objects and arrays
/// as their JSON text.
fn field_value(obj: &Value, field: &str) -> String {
    let mut current = obj;
    for segment in field.split('.') {
        match current.get(segment) {
            Some(next) => current = next,
            None => return String::new(),
        }
    }
    match current {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl FieldSelector {
    /// Parses a field selector as apimachinery's `fields.ParseSelector` does: terms joined by
    /// commas (a comma escaped with a backslash belongs to a value), each `field=value`,
    /// `field==value` or `field!=value`, split at its first operator; a value may escape `\`,
    /// `,` and `=` with a backslash. Nothing is trimmed (` a=b` selects on the field ` a`, which
    /// a server does not know). The terms are kept sorted, as apimachinery sorts them, and the
    /// first that does not parse is named in its words.
    ///
    /// An empty string gives the empty selector, which matches everything.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = split_unescaped_commas(s);
        terms.sort_unstable();
        let mut requirements: Vec<FieldRequirement> = terms
            .into_iter()
            .filter(|term| !term.is_empty())
            .map(|term| parse_field_term(s, term))
            .collect::<Result<_, _>>()?;
        // A term of no field and no value (`=`, `!=`) selects everything: apimachinery drops it.
        requirements.retain(|r| !(r.field.is_empty() && r.value.is_empty()));
        Ok(FieldSelector { requirements })
    }

    /// Whether this object is selected.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|r| r.matches(obj))
    }

    /// The value an `=` / `==` requirement demands of `field`, if there is one; the store uses it
    /// to narrow lookups by `metadata.name` or `metadata.namespace`.
    pub fn exact_value(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.equals && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// Whether this selector has no requirements, i.e. selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The fields the requirements select on, in order (a server checks them against the fields
    /// it can select by).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// The same requirements on the fields `rename` maps them to (a server whose objects are
    /// stored under other field names than a version serves, as `events.k8s.io`'s Events).
    pub fn with_fields_renamed(&self, rename: impl Fn(&str) -> String) -> FieldSelector {
        let requirements = self
            .requirements
            .iter()
            .map(|r| FieldRequirement {
                field: rename(&r.field),
                ..r.clone()
            })
            .collect();
        FieldSelector { requirements }
    }
}

/// Writes the selector back in the string syntax, escaping values.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if r.equals { "=" } else { "!=" };
            let value = r
                .value
                .replace('\\', "\\\\")
                .replace(',', "\\,")
                .replace('=', "\\=");
            write!(f, "{}{op}{value}", r.field)?;
        }
        Ok(())
    }
}

/// Splits a field selector on the commas that are not escaped with a backslash.
fn split_unescaped_commas(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Parses one `field<op>value` term of `selector`; the operator is the first `!=`, `==` or `=`
/// in it.
fn parse_field_term(selector: &str, term: &str) -> Result<FieldRequirement, SelectorError> {
    let Some((index, op)) = term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        ["!=", "==", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .map(|op| (i, op))
    }) else {
        return Err(SelectorError::new(
            selector,
            format!("invalid selector: '{selector}'; can't understand '{term}'"),
        ));
    };
    let value = unescape_field_value(&term[index + op.len()..])
        .map_err(|why| SelectorError::new(selector, why))?;
    Ok(FieldRequirement {
        field: term[..index].to_owned(),
        equals: op != "!=",
        value,
    })
}

/// Resolves `\\`, `\,` and `\=` in a field selector value, as apimachinery's `UnescapeValue`
/// does; another escape, a lone backslash at the end and an unescaped `,` or `=` are refused in
/// its words (the character by its code point, as Go prints a rune).
fn unescape_field_value(raw: &str) -> Result<String, String> {
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('\\' | ',' | '=')) => value.push(escaped),
                Some(other) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
                None => return Err("invalid field selector: invalid escape sequence: \\".into()),
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            c => value.push(c),
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("labels must be an object"),
        }
    }

    fn selects(selector: &str, object_labels: Value) -> bool {
        LabelSelector::parse(selector)
            .unwrap()
            .matches(Some(&labels(object_labels)))
    }

    fn pod(name: &str, node: Option<&str>, phase: &str) -> Value {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {},
            "status": {"phase": phase}
        });
        if let Some(node) = node {
            pod["spec"]["nodeName"] = json!(node);
        }
        pod
    }

    // ---- label selectors ----------------------------------------------------------------

    #[test]
    fn empty_label_selector_matches_everything() {
        let selector = LabelSelector::parse("").unwrap();
        assert!(selector.is_empty());
        assert!(selector.matches(None));
        assert!(selector.matches(Some(&labels(json!({"a": "b"})))));
    }

    #[test]
    fn blank_label_selector_is_empty() {
        assert!(LabelSelector::parse("   ").unwrap().is_empty());
    }

    #[test]
    fn equals_matches_only_that_value() {
        assert!(selects("app=web", json!({"app": "web"})));
        assert!(!selects("app=web", json!({"app": "db"})));
        assert!(!selects("app=web", json!({})));
    }

    #[test]
    fn double_equals_is_the_same_as_equals() {
        assert!(selects("app==web", json!({"app": "web"})));
        assert!(!selects("app==web", json!({"app": "db"})));
    }

    #[test]
    fn not_equals_matches_other_values_and_missing_labels() {
        assert!(!selects("app!=web", json!({"app": "web"})));
        assert!(selects("app!=web", json!({"app": "db"})));
        assert!(selects("app!=web", json!({})));
    }

    #[test]
    fn in_matches_any_listed_value() {
        assert!(selects("env in (dev,prod)", json!({"env": "prod"})));
        assert!(!selects("env in (dev,prod)", json!({"env": "qa"})));
        assert!(!selects("env in (dev,prod)", json!({})));
    }

    #[test]
    fn notin_matches_unlisted_values_and_missing_labels() {
        assert!(!selects("env notin (dev, prod)", json!({"env": "dev"})));
        assert!(selects("env notin (dev, prod)", json!({"env": "qa"})));
        assert!(selects("env notin (dev, prod)", json!({})));
    }

    #[test]
    fn bare_key_requires_the_label_to_exist() {
        assert!(selects("tier", json!({"tier": ""})));
        assert!(!selects("tier", json!({"app": "web"})));
    }

    #[test]
    fn bang_key_requires_the_label_to_be_absent() {
        assert!(selects("!tier", json!({"app": "web"})));
        assert!(!selects("!tier", json!({"tier": "x"})));
    }

    #[test]
    fn greater_and_less_than_compare_integer_values() {
        assert!(selects("replicas>2", json!({"replicas": "3"})));
        assert!(!selects("replicas>2", json!({"replicas": "2"})));
        assert!(selects("replicas<2", json!({"replicas": "1"})));
        assert!(!selects("replicas<2", json!({"replicas": "x"})));
        assert!(!selects("replicas<2", json!({})));
    }

    #[test]
    fn commas_require_every_requirement() {
        let selector = "app=web,env in (prod),!canary";
        assert!(selects(selector, json!({"app": "web", "env": "prod"})));
        assert!(!selects(selector, json!({"app": "web", "env": "dev"})));
        assert!(!selects(
            selector,
            json!({"app": "web", "env": "prod", "canary": "1"})
        ));
    }

    #[test]
    fn whitespace_around_tokens_is_ignored() {
        let selector = "  app =  web ,  env   in(  dev ,prod ) , ! canary , tier  ";
        assert!(selects(
            selector,
            json!({"app": "web", "env": "dev", "tier": "x"})
        ));
        assert!(!selects(
            selector,
            json!({"app": "web", "env": "qa", "tier": "x"})
        ));
    }

    #[test]
    fn missing_labels_count_as_no_labels() {
        let selector = LabelSelector::parse("app!=web,!tier").unwrap();
        assert!(selector.matches(None));
        assert!(!LabelSelector::parse("app").unwrap().matches(None));
    }

    #[test]
    fn equals_with_nothing_after_it_means_the_empty_value() {
        assert!(selects("app=,tier=x", json!({"app": "", "tier": "x"})));
        assert!(!selects("app=", json!({"app": "web"})));
    }

    #[test]
    fn empty_parentheses_stand_for_the_empty_value() {
        assert!(selects("app in ()", json!({"app": ""})));
        assert!(!selects("app in ()", json!({"app": "web"})));
    }

    #[test]
    fn prefixed_keys_are_accepted() {
        assert!(selects(
            "app.kubernetes.io/name=web",
            json!({"app.kubernetes.io/name": "web"})
        ));
    }

    #[test]
    fn in_and_notin_are_ordinary_keys_at_the_start() {
        assert!(selects("in in (x)", json!({"in": "x"})));
    }

    #[test]
    fn matches_object_reads_metadata_labels() {
        let selector = LabelSelector::parse("app=web").unwrap();
        assert!(selector.matches_object(&json!({"metadata": {"labels": {"app": "web"}}})));
        assert!(!selector.matches_object(&json!({"metadata": {"name": "x"}})));
    }

    #[test]
    fn label_selector_displays_in_canonical_form() {
        let selector = LabelSelector::parse("a==b, c notin (z,y), !d, e").unwrap();
        assert_eq!(selector.to_string(), "a=b,c notin (y,z),!d,e");
    }

    #[test]
    fn unclosed_parenthesis_is_an_error_keeping_the_selector() {
        // apimachinery names the end of the string ''.
        let err = LabelSelector::parse("app=web,env in (").unwrap_err();
        assert_eq!(err.selector, "app=web,env in (");
        assert_eq!(
            err.to_string(),
            "unable to parse requirement: found '', expected: ',', ')' or identifier"
        );
    }

    #[test]
    fn in_without_parenthesis_is_an_error() {
        let err = LabelSelector::parse("env in dev").unwrap_err();
        assert_eq!(err.selector, "env in dev");
        assert!(err.reason.contains("expected: '('"), "{err}");
    }

    #[test]
    fn invalid_key_is_an_invalid_value_without_a_path() {
        let err = LabelSelector::parse("-app=web").unwrap_err();
        assert_eq!(err.selector, "-app=web");
        assert!(
            err.reason
                .starts_with("unable to parse requirement: <nil>: Invalid value: \"-app\": "),
            "{err}"
        );
    }

    #[test]
    fn uppercase_key_prefix_is_an_error() {
        let err = LabelSelector::parse("Example.com/app=web").unwrap_err();
        assert!(err.reason.contains("prefix part"), "{err}");
    }

    #[test]
    fn overlong_key_name_is_an_error() {
        let key = "k".repeat(64);
        let err = LabelSelector::parse(&key).unwrap_err();
        assert!(err.reason.contains("no more than 63"), "{err}");
    }

    #[test]
    fn invalid_value_is_named_by_its_index_and_key() {
        let err = LabelSelector::parse("app=web_").unwrap_err();
        assert!(
            err.reason.starts_with(
                "unable to parse requirement: values[0][app]: Invalid value: \"web_\": "
            ),
            "{err}"
        );
    }

    #[test]
    fn overlong_value_is_an_error() {
        let err = LabelSelector::parse(&format!("app={}", "v".repeat(64))).unwrap_err();
        assert!(err.reason.contains("no more than 63"), "{err}");
    }

    #[test]
    fn trailing_comma_is_an_error() {
        let err = LabelSelector::parse("app=web,").unwrap_err();
        assert!(err.reason.contains("after ','"), "{err}");
    }

    #[test]
    fn empty_requirement_between_commas_is_an_error_naming_the_selector() {
        let err = LabelSelector::parse("a=b,,c").unwrap_err();
        assert_eq!(err.selector, "a=b,,c");
        assert!(err.reason.contains("found ','"), "{err}");
    }

    #[test]
    fn two_values_without_comma_are_an_error() {
        let err = LabelSelector::parse("app=web db").unwrap_err();
        assert_eq!(err.selector, "app=web db");
        assert!(err.reason.contains("found 'db'"), "{err}");
    }

    #[test]
    fn non_integer_bound_is_an_error() {
        let err = LabelSelector::parse("replicas>many").unwrap_err();
        assert!(err.reason.contains("must be an integer"), "{err}");
    }

    #[test]
    fn unknown_operator_is_an_error() {
        let err = LabelSelector::parse("app>=3").unwrap_err();
        assert_eq!(err.selector, "app>=3");
    }

    // ---- field selectors ----------------------------------------------------------------

    #[test]
    fn empty_field_selector_matches_everything() {
        let selector = FieldSelector::parse("").unwrap();
        assert!(selector.is_empty());
        assert!(selector.matches_object(&pod("a", None, "Running")));
    }

    #[test]
    fn field_equals_compares_the_dotted_path() {
        let selector = FieldSelector::parse("metadata.name=a").unwrap();
        assert!(selector.matches_object(&pod("a", None, "Running")));
        assert!(!selector.matches_object(&pod("b", None, "Running")));
    }

    #[test]
    fn field_double_equals_is_the_same_as_equals() {
        let selector = FieldSelector::parse("status.phase==Running").unwrap();
        assert!(selector.matches_object(&pod("a", None, "Running")));
        assert!(!selector.matches_object(&pod("a", None, "Pending")));
    }

    #[test]
    fn field_not_equals_excludes_the_value() {
        let selector = FieldSelector::parse("status.phase!=Running").unwrap();
        assert!(!selector.matches_object(&pod("a", None, "Running")));
        assert!(selector.matches_object(&pod("a", None, "Succeeded")));
    }

    #[test]
    fn missing_field_compares_as_empty_string() {
        let unscheduled = FieldSelector::parse("spec.nodeName=").unwrap();
        assert!(unscheduled.matches_object(&pod("a", None, "Pending")));
        assert!(!unscheduled.matches_object(&pod("a", Some("node-1"), "Running")));
        let scheduled = FieldSelector::parse("spec.nodeName!=").unwrap();
        assert!(scheduled.matches_object(&pod("a", Some("node-1"), "Running")));
    }

    #[test]
    fn field_requirements_are_all_required() {
        let selector =
            FieldSelector::parse("metadata.namespace=default,status.phase=Running").unwrap();
        assert!(selector.matches_object(&pod("a", None, "Running")));
        assert!(!selector.matches_object(&pod("a", None, "Failed")));
    }

    #[test]
    fn top_level_fields_are_supported() {
        let event = json!({"type": "Warning", "involvedObject": {"name": "web-1"}});
        let selector = FieldSelector::parse("type=Warning,involvedObject.name=web-1").unwrap();
        assert!(selector.matches_object(&event));
    }

    #[test]
    fn booleans_compare_as_their_text() {
        let node = json!({"spec": {"unschedulable": true}});
        assert!(
            FieldSelector::parse("spec.unschedulable=true")
                .unwrap()
                .matches_object(&node)
        );
    }

    #[test]
    fn white_space_belongs_to_the_field_and_the_value() {
        let selector = FieldSelector::parse(" metadata.name = a").unwrap();
        assert_eq!(selector.fields().collect::<Vec<_>>(), [" metadata.name "]);
        assert_eq!(selector.exact_value(" metadata.name "), Some(" a"));
    }

    #[test]
    fn terms_are_kept_in_sorted_order() {
        let selector = FieldSelector::parse("status.phase=Running,metadata.name=a").unwrap();
        assert_eq!(selector.to_string(), "metadata.name=a,status.phase=Running");
    }

    #[test]
    fn escaped_characters_are_part_of_the_value() {
        let selector = FieldSelector::parse(r"metadata.name=a\,b\=c\\d").unwrap();
        assert_eq!(selector.exact_value("metadata.name"), Some(r"a,b=c\d"));
    }

    #[test]
    fn exact_value_returns_an_equality_on_that_field() {
        let selector = FieldSelector::parse("metadata.namespace!=x,metadata.name==a").unwrap();
        assert_eq!(selector.exact_value("metadata.name"), Some("a"));
        assert_eq!(selector.exact_value("metadata.namespace"), None);
        assert_eq!(selector.exact_value("status.phase"), None);
    }

    #[test]
    fn field_selector_displays_with_escapes() {
        let selector = FieldSelector::parse(r"a.b==x\,y,c!=z").unwrap();
        assert_eq!(selector.to_string(), r"a.b=x\,y,c!=z");
    }

    // The messages below were printed by apimachinery v0.34.2's fields.ParseSelector.

    #[test]
    fn a_term_without_an_operator_is_not_understood() {
        let err = FieldSelector::parse("b=1,metadata.name").unwrap_err();
        assert_eq!(err.selector, "b=1,metadata.name");
        assert_eq!(
            err.to_string(),
            "invalid selector: 'b=1,metadata.name'; can't understand 'metadata.name'"
        );
    }

    #[test]
    fn an_empty_field_name_is_parsed_for_the_server_to_refuse() {
        let selector = FieldSelector::parse("=a").unwrap();
        assert_eq!(selector.fields().collect::<Vec<_>>(), [""]);
    }

    #[test]
    fn an_unescaped_equals_in_a_value_is_named_by_its_code_point() {
        let err = FieldSelector::parse("metadata.name=a=b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn an_unknown_escape_or_a_lone_backslash_is_an_invalid_escape_sequence() {
        let err = FieldSelector::parse(r"metadata.name=a\b").unwrap_err();
        assert_eq!(
            err.to_string(),
            r"invalid field selector: invalid escape sequence: \b"
        );
        let err = FieldSelector::parse("metadata.name=a\\").unwrap_err();
        assert_eq!(
            err.to_string(),
            r"invalid field selector: invalid escape sequence: \"
        );
    }
}
