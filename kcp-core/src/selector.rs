//! Label and field selectors, as the API server reads them from the `labelSelector` and
//! `fieldSelector` query parameters of list and watch requests.
//!
//! [`LabelSelector`] understands the whole string syntax of Kubernetes label selectors:
//! `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` (the label
//! exists), `!key` (it does not), and the numeric `key>n` / `key<n`, joined by commas (all must
//! hold). Keys and values are validated roughly as Kubernetes validates labels. As on the real
//! server, `!=` and `notin` also match objects that do not carry the label at all.
//!
//! [`FieldSelector`] understands `field=value`, `field==value` and `field!=value` joined by commas,
//! with `\,`, `\=` and `\\` escapes in values. Unlike the real server, which accepts only a short
//! list of fields per resource, any dotted path into the object's JSON is accepted
//! (`metadata.name`, `status.phase`, `spec.nodeName`, `involvedObject.name`, ...). A field that is
//! missing (or `null`) compares as the empty string, so `spec.nodeName=` selects unscheduled pods;
//! booleans and numbers compare as their JSON text (`spec.unschedulable=true`).
//!
//! Both parsers tolerate whitespace around tokens, and both treat an empty (or blank) string as
//! "select everything".

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

/// A selector that could not be parsed: which requirement, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement {selector:?}: {reason}")]
pub struct SelectorError {
    /// The offending requirement (or the whole selector when no single requirement is at fault).
    pub selector: String,
    /// Why it was rejected.
    pub reason: String,
}

impl SelectorError {
    fn new(selector: &str, reason: impl Into<String>) -> Self {
        Self {
            selector: selector.trim().to_owned(),
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
        let tokens = lex(s);
        let mut parser = Parser {
            input: s,
            tokens: &tokens,
            pos: 0,
        };
        let requirements = parser.parse_selector()?;
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

/// The tokens of the label selector syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind<'a> {
    Identifier(&'a str),
    Bang,
    NotEquals,
    Equals,
    DoubleEquals,
    GreaterThan,
    LessThan,
    Comma,
    OpenParen,
    CloseParen,
    End,
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: TokenKind<'a>,
    start: usize,
}

impl TokenKind<'_> {
    /// How the token reads in an error message.
    fn describe(&self) -> String {
        match self {
            TokenKind::Identifier(text) => format!("'{text}'"),
            TokenKind::Bang => "'!'".to_owned(),
            TokenKind::NotEquals => "'!='".to_owned(),
            TokenKind::Equals => "'='".to_owned(),
            TokenKind::DoubleEquals => "'=='".to_owned(),
            TokenKind::GreaterThan => "'>'".to_owned(),
            TokenKind::LessThan => "'<'".to_owned(),
            TokenKind::Comma => "','".to_owned(),
            TokenKind::OpenParen => "'('".to_owned(),
            TokenKind::CloseParen => "')'".to_owned(),
            TokenKind::End => "end of string".to_owned(),
        }
    }
}

/// Characters that end an identifier (besides whitespace).
fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '>' | '<' | ',' | '(' | ')')
}

/// Splits a label selector into tokens; the last token is always [`TokenKind::End`].
fn lex(s: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let kind = if is_special(c) {
            chars.next();
            match c {
                '!' if chars.next_if(|&(_, next)| next == '=').is_some() => TokenKind::NotEquals,
                '!' => TokenKind::Bang,
                '=' if chars.next_if(|&(_, next)| next == '=').is_some() => TokenKind::DoubleEquals,
                '=' => TokenKind::Equals,
                '>' => TokenKind::GreaterThan,
                '<' => TokenKind::LessThan,
                ',' => TokenKind::Comma,
                '(' => TokenKind::OpenParen,
                _ => TokenKind::CloseParen,
            }
        } else {
            let mut end = s.len();
            while let Some(&(i, next)) = chars.peek() {
                if next.is_whitespace() || is_special(next) {
                    end = i;
                    break;
                }
                chars.next();
            }
            TokenKind::Identifier(&s[start..end])
        };
        tokens.push(Token { kind, start });
    }
    tokens.push(Token {
        kind: TokenKind::End,
        start: s.len(),
    });
    tokens
}

/// A recursive-descent parser over the tokens of one label selector.
struct Parser<'s, 't> {
    input: &'s str,
    tokens: &'t [Token<'s>],
    pos: usize,
}

impl<'s> Parser<'s, '_> {
    fn peek(&self) -> Token<'s> {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .copied()
            .unwrap_or(Token {
                kind: TokenKind::End,
                start: self.input.len(),
            })
    }

    fn next(&mut self) -> Token<'s> {
        let token = self.peek();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    /// The text of the requirement starting at byte `start`: up to the next comma outside
    /// parentheses, or the end of the input. When that is blank (`a,,b`), the whole selector.
    fn requirement_text(&self, start: usize) -> &'s str {
        let rest = &self.input[start..];
        let mut depth = 0usize;
        let mut text = rest;
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    text = &rest[..i];
                    break;
                }
                _ => {}
            }
        }
        if text.trim().is_empty() {
            self.input
        } else {
            text
        }
    }

    fn parse_selector(&mut self) -> Result<Vec<LabelRequirement>, SelectorError> {
        let mut requirements = Vec::new();
        if self.peek().kind == TokenKind::End {
            return Ok(requirements);
        }
        loop {
            let start = self.peek().start;
            let requirement = self
                .parse_requirement()
                .map_err(|reason| SelectorError::new(self.requirement_text(start), reason))?;
            requirements.push(requirement);
            let after = self.next();
            match after.kind {
                TokenKind::End => return Ok(requirements),
                TokenKind::Comma => {
                    if self.peek().kind == TokenKind::End {
                        return Err(SelectorError::new(
                            self.input,
                            "found end of string, expected: a requirement after ','",
                        ));
                    }
                }
                other => {
                    return Err(SelectorError::new(
                        self.requirement_text(start),
                        format!("found {}, expected: ',' or end of string", other.describe()),
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, String> {
        let first = self.next();
        let key = match first.kind {
            TokenKind::Bang => {
                let key = self.parse_key()?;
                return Ok(LabelRequirement {
                    key,
                    op: LabelOp::DoesNotExist,
                });
            }
            TokenKind::Identifier(key) => {
                validate_label_key(key)?;
                key.to_owned()
            }
            other => {
                return Err(format!(
                    "found {}, expected: '!' or a label key",
                    other.describe()
                ));
            }
        };
        let op = match self.peek().kind {
            TokenKind::Comma | TokenKind::End => LabelOp::Exists,
            TokenKind::Equals | TokenKind::DoubleEquals => {
                self.next();
                LabelOp::Equals(self.parse_exact_value()?)
            }
            TokenKind::NotEquals => {
                self.next();
                LabelOp::NotEquals(self.parse_exact_value()?)
            }
            TokenKind::GreaterThan => {
                self.next();
                LabelOp::GreaterThan(self.parse_integer()?)
            }
            TokenKind::LessThan => {
                self.next();
                LabelOp::LessThan(self.parse_integer()?)
            }
            TokenKind::Identifier("in") => {
                self.next();
                LabelOp::In(self.parse_value_set()?)
            }
            TokenKind::Identifier("notin") => {
                self.next();
                LabelOp::NotIn(self.parse_value_set()?)
            }
            other => {
                return Err(format!(
                    "found {}, expected: '=', '==', '!=', 'in', 'notin', '>', '<', ',' or end of string",
                    other.describe()
                ));
            }
        };
        Ok(LabelRequirement { key, op })
    }

    fn parse_key(&mut self) -> Result<String, String> {
        match self.next().kind {
            TokenKind::Identifier(key) => {
                validate_label_key(key)?;
                Ok(key.to_owned())
            }
            other => Err(format!("found {}, expected: a label key", other.describe())),
        }
    }

    /// The value after `=`, `==` or `!=`; nothing (a comma or the end) means the empty value.
    fn parse_exact_value(&mut self) -> Result<String, String> {
        match self.peek().kind {
            TokenKind::Comma | TokenKind::End => Ok(String::new()),
            TokenKind::Identifier(value) => {
                self.next();
                validate_label_value(value)?;
                Ok(value.to_owned())
            }
            other => Err(format!(
                "found {}, expected: a label value",
                other.describe()
            )),
        }
    }

    fn parse_integer(&mut self) -> Result<i64, String> {
        match self.next().kind {
            TokenKind::Identifier(value) => value.parse::<i64>().map_err(|_| {
                format!("the value of a '>' or '<' requirement must be an integer, not {value:?}")
            }),
            other => Err(format!("found {}, expected: an integer", other.describe())),
        }
    }

    /// `( v1, v2, ... )`; empty entries (`()`, `(a,,b)`) stand for the empty value.
    fn parse_value_set(&mut self) -> Result<BTreeSet<String>, String> {
        let open = self.next();
        if open.kind != TokenKind::OpenParen {
            return Err(format!("found {}, expected: '('", open.kind.describe()));
        }
        let mut values = BTreeSet::new();
        let mut expect_value = true;
        loop {
            let token = self.next();
            match token.kind {
                TokenKind::Identifier(value) if expect_value => {
                    validate_label_value(value)?;
                    values.insert(value.to_owned());
                    expect_value = false;
                }
                TokenKind::Comma => {
                    if expect_value {
                        values.insert(String::new());
                    }
                    expect_value = true;
                }
                TokenKind::CloseParen => {
                    if expect_value {
                        values.insert(String::new());
                    }
                    return Ok(values);
                }
                other => {
                    let expected = if expect_value {
                        "a label value, ',' or ')'"
                    } else {
                        "',' or ')'"
                    };
                    return Err(format!("found {}, expected: {expected}", other.describe()));
                }
            }
        }
    }
}

/// The longest name part of a qualified name and the longest label value.
const MAX_NAME_LEN: usize = 63;
/// The longest DNS subdomain (the prefix of a qualified name).
const MAX_PREFIX_LEN: usize = 253;

const NAME_CHARSET: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must \
     start and end with an alphanumeric character";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the shape of label names and values.
fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= MAX_PREFIX_LEN
        && s.split('.').all(|label| {
            let bytes = label.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    (first.is_ascii_lowercase() || first.is_ascii_digit())
                        && (last.is_ascii_lowercase() || last.is_ascii_digit())
                        && bytes
                            .iter()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                }
                _ => false,
            }
        })
}

/// Checks a label key: an optional DNS subdomain prefix and `/`, then a name of at most 63
/// characters.
fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err(format!(
                "invalid label key {key:?}: prefix part must be non-empty"
            ));
        }
        if !is_dns_subdomain(prefix) {
            return Err(format!(
                "invalid label key {key:?}: prefix part must be a lowercase RFC 1123 subdomain of \
                 at most {MAX_PREFIX_LEN} characters"
            ));
        }
    }
    if name.is_empty() {
        return Err(format!(
            "invalid label key {key:?}: name part must be non-empty"
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "invalid label key {key:?}: name part must be no more than {MAX_NAME_LEN} characters"
        ));
    }
    if !is_qualified_name_part(name) {
        return Err(format!(
            "invalid label key {key:?}: name part {NAME_CHARSET}"
        ));
    }
    Ok(())
}

/// Checks a label value: empty, or at most 63 characters of the label name shape.
fn validate_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > MAX_NAME_LEN {
        return Err(format!(
            "invalid label value {value:?}: must be no more than {MAX_NAME_LEN} characters"
        ));
    }
    if !is_qualified_name_part(value) {
        return Err(format!(
            "invalid label value {value:?}: a label value {NAME_CHARSET}"
        ));
    }
    Ok(())
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
    /// Parses a field selector: `field=value`, `field==value` or `field!=value`, joined by
    /// commas. Values may escape `,`, `=` and `\` with a backslash.
    ///
    /// An empty or blank string gives the empty selector, which matches everything.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        let mut requirements = Vec::new();
        for term in split_unescaped_commas(s) {
            if term.trim().is_empty() {
                continue;
            }
            requirements.push(parse_field_term(term)?);
        }
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

/// Parses one `field<op>value` term; the operator is the first `!=`, `==` or `=` in it.
fn parse_field_term(term: &str) -> Result<FieldRequirement, SelectorError> {
    let Some((index, op)) = term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        ["!=", "==", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .map(|op| (i, op))
    }) else {
        return Err(SelectorError::new(
            term,
            "expected an operator: '=', '==' or '!='",
        ));
    };
    let field = term[..index].trim();
    let raw_value = term[index + op.len()..].trim();
    validate_field_path(field).map_err(|reason| SelectorError::new(term, reason))?;
    let value =
        unescape_field_value(raw_value).map_err(|reason| SelectorError::new(term, reason))?;
    Ok(FieldRequirement {
        field: field.to_owned(),
        equals: op != "!=",
        value,
    })
}

/// Checks a dotted field path: non-empty segments without whitespace or backslashes.
fn validate_field_path(field: &str) -> Result<(), String> {
    if field.is_empty() {
        return Err("the field name is empty".to_owned());
    }
    let valid = field.split('.').all(|segment| {
        !segment.is_empty()
            && !segment
                .chars()
                .any(|c| c.is_whitespace() || c == '\\' || c == '!')
    });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "invalid field path {field:?}: expected dot-separated names such as metadata.name"
        ))
    }
}

/// Resolves `\\`, `\,` and `\=` in a field selector value; other escapes, and unescaped `=`, are
/// errors.
fn unescape_field_value(raw: &str) -> Result<String, String> {
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('\\' | ',' | '=')) => value.push(escaped),
                Some(other) => {
                    return Err(format!(
                        "invalid escape sequence '\\{other}' in value {raw:?}: only '\\\\', '\\,' \
                         and '\\=' are allowed"
                    ));
                }
                None => return Err(format!("value {raw:?} ends in an unfinished escape")),
            },
            '=' => {
                return Err(format!("unescaped '=' in value {raw:?}: write it as '\\='"));
            }
            other => value.push(other),
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
    fn unclosed_parenthesis_is_an_error_naming_the_requirement() {
        let err = LabelSelector::parse("app=web,env in (").unwrap_err();
        assert_eq!(err.selector, "env in (");
        assert_eq!(
            err.to_string(),
            "unable to parse requirement \"env in (\": found end of string, expected: a label value, ',' or ')'"
        );
    }

    #[test]
    fn in_without_parenthesis_is_an_error() {
        let err = LabelSelector::parse("env in dev").unwrap_err();
        assert_eq!(err.selector, "env in dev");
        assert!(err.reason.contains("expected: '('"), "{err}");
    }

    #[test]
    fn invalid_key_is_an_error_naming_the_key() {
        let err = LabelSelector::parse("-app=web").unwrap_err();
        assert_eq!(err.selector, "-app=web");
        assert!(err.reason.contains("invalid label key \"-app\""), "{err}");
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
    fn invalid_value_is_an_error_naming_the_value() {
        let err = LabelSelector::parse("app=web_").unwrap_err();
        assert!(err.reason.contains("invalid label value \"web_\""), "{err}");
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
    fn whitespace_around_field_terms_is_ignored() {
        let selector =
            FieldSelector::parse(" metadata.name = a , status.phase != Failed ").unwrap();
        assert!(selector.matches_object(&pod("a", None, "Running")));
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

    #[test]
    fn field_term_without_operator_is_an_error() {
        let err = FieldSelector::parse("metadata.name").unwrap_err();
        assert_eq!(err.selector, "metadata.name");
        assert!(err.reason.contains("expected an operator"), "{err}");
    }

    #[test]
    fn empty_field_name_is_an_error() {
        let err = FieldSelector::parse("=a").unwrap_err();
        assert!(err.reason.contains("field name is empty"), "{err}");
    }

    #[test]
    fn unescaped_equals_in_field_value_is_an_error() {
        let err = FieldSelector::parse("metadata.name=a=b").unwrap_err();
        assert!(err.reason.contains("unescaped '='"), "{err}");
    }

    #[test]
    fn unknown_escape_in_field_value_is_an_error() {
        let err = FieldSelector::parse(r"metadata.name=a\b").unwrap_err();
        assert!(err.reason.contains("invalid escape sequence"), "{err}");
    }
}
