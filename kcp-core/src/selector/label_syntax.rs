//! The string syntax of label selectors, read as apimachinery's `labels.Parse` reads it (the
//! parser kube-apiserver runs on a `labelSelector` parameter): the same tokens, the same
//! grammar, the same checks of keys and values, and the same error text, so a refusal reads
//! as the real server's. kcp-core's differential test holds it to `labels.Parse` itself.
//!
//! A few rules come with that grammar: `in` and `notin` are keywords only where an operator
//! may stand (`x in (in)` is fine), `key in ()` asks for the empty value, `key=` too, a set's
//! empty entries (`(a,,b)`) are empty values, and a NUL byte ends a word, is swallowed after
//! a symbol and ends the selector where a token would start.

use std::collections::BTreeSet;

use super::{LabelOp, LabelRequirement};
use crate::name_validation::{label_value_errors, qualified_name_errors};
use crate::template::sprig::strings::go_quote;

/// The parsed requirements, or kube-apiserver's message.
pub(super) fn parse(selector: &str) -> Result<Vec<LabelRequirement>, String> {
    Parser {
        tokens: lex(selector.as_bytes()),
        position: 0,
    }
    .selector()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Identifier,
    In,
    NotIn,
    /// `!`
    DoesNotExist,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    Comma,
    OpenParen,
    CloseParen,
    End,
}

/// A token and its text, which the messages quote.
#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    literal: String,
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn symbol(text: &[u8]) -> Option<Kind> {
    Some(match text {
        b"!" => Kind::DoesNotExist,
        b"!=" => Kind::NotEquals,
        b"=" => Kind::Equals,
        b"==" => Kind::DoubleEquals,
        b">" => Kind::GreaterThan,
        b"<" => Kind::LessThan,
        b"," => Kind::Comma,
        b"(" => Kind::OpenParen,
        b")" => Kind::CloseParen,
        _ => return None,
    })
}

/// The tokens up to the first end of string. As apimachinery's lexer reads bytes, a NUL where
/// a token may start is the end of the string, and one inside a word ends the word.
fn lex(input: &[u8]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut at = 0;
    loop {
        while at < input.len() && is_whitespace(input[at]) {
            at += 1;
        }
        let Some(&first) = input.get(at).filter(|c| **c != 0) else {
            tokens.push(Token {
                kind: Kind::End,
                literal: String::new(),
            });
            return tokens;
        };
        let (token, next) = if is_special(first) {
            special(input, at)
        } else {
            word(input, at)
        };
        tokens.push(token);
        at = next;
    }
}

/// The longest run of special characters from `at` that is one symbol (every single one is).
/// A NUL right after it is consumed with it, as apimachinery's lexer reads it.
fn special(input: &[u8], at: usize) -> (Token, usize) {
    let mut end = at + 1;
    let mut kind = symbol(&input[at..end]).unwrap_or(Kind::End);
    let mut next = end;
    loop {
        match input.get(end) {
            Some(0) => {
                next = end + 1;
                break;
            }
            Some(&c) if is_special(c) => match symbol(&input[at..=end]) {
                Some(longer) => {
                    kind = longer;
                    end += 1;
                    next = end;
                }
                None => break,
            },
            _ => break,
        }
    }
    let literal = String::from_utf8_lossy(&input[at..end]).into_owned();
    (Token { kind, literal }, next)
}

/// A word up to white space, a special character or a NUL (which is consumed); `in` and
/// `notin` are keywords.
fn word(input: &[u8], at: usize) -> (Token, usize) {
    let mut end = at;
    while end < input.len() && !is_whitespace(input[end]) && !is_special(input[end]) {
        if input[end] == 0 {
            let literal = String::from_utf8_lossy(&input[at..end]).into_owned();
            return (keyword_or_identifier(literal), end + 1);
        }
        end += 1;
    }
    let literal = String::from_utf8_lossy(&input[at..end]).into_owned();
    (keyword_or_identifier(literal), end)
}

fn keyword_or_identifier(literal: String) -> Token {
    let kind = match literal.as_str() {
        "in" => Kind::In,
        "notin" => Kind::NotIn,
        _ => Kind::Identifier,
    };
    Token { kind, literal }
}

/// Where a token is read: where values are read, `in` and `notin` are plain words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// The operator of a requirement, as apimachinery's `selection.Operator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    Exists,
    DoesNotExist,
}

struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

impl Parser {
    fn lookahead(&self, context: Context) -> (Kind, String) {
        let token = self
            .tokens
            .get(self.position)
            .or(self.tokens.last())
            .cloned()
            .unwrap_or(Token {
                kind: Kind::End,
                literal: String::new(),
            });
        let kind = match token.kind {
            Kind::In | Kind::NotIn if context == Context::Values => Kind::Identifier,
            kind => kind,
        };
        (kind, token.literal)
    }

    fn consume(&mut self, context: Context) -> (Kind, String) {
        let token = self.lookahead(context);
        if self.position < self.tokens.len() {
            self.position += 1;
        }
        token
    }

    fn selector(&mut self) -> Result<Vec<LabelRequirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (kind, literal) = self.lookahead(Context::Values);
            match kind {
                Kind::Identifier | Kind::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    match self.consume(Context::Values) {
                        (Kind::End, _) => return Ok(requirements),
                        (Kind::Comma, _) => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Kind::Identifier && next != Kind::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        (_, literal) => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Kind::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<LabelRequirement, String> {
        let (key, inferred) = self.key_and_inferred_operator()?;
        if let Some(operator) = inferred {
            return requirement(key, operator, BTreeSet::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        requirement(key, operator, values)
    }

    /// The key, and the operator when there is no other (`key` exists, `!key` does not).
    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut kind, mut literal) = self.consume(Context::Values);
        let mut operator = None;
        if kind == Kind::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (kind, literal) = self.consume(Context::Values);
        }
        if kind != Kind::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errors = qualified_name_errors(&literal);
        if !errors.is_empty() {
            return Err(invalid("<nil>", &literal, &errors.join("; ")));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Kind::End | Kind::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        Ok(match self.consume(Context::KeyAndOperator) {
            (Kind::In, _) => Operator::In,
            (Kind::Equals, _) => Operator::Equals,
            (Kind::DoubleEquals, _) => Operator::DoubleEquals,
            (Kind::GreaterThan, _) => Operator::GreaterThan,
            (Kind::LessThan, _) => Operator::LessThan,
            (Kind::NotIn, _) => Operator::NotIn,
            (Kind::NotEquals, _) => Operator::NotEquals,
            (_, literal) => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(v1,v2,...)`; `()` is the empty value.
    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let (kind, literal) = self.consume(Context::Values);
        if kind != Kind::OpenParen {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (kind, literal) = self.lookahead(Context::Values);
        match kind {
            Kind::Identifier | Kind::Comma => {
                let values = self.identifiers()?;
                if self.consume(Context::Values).0 != Kind::CloseParen {
                    // apimachinery names the token after `(` here.
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Kind::CloseParen => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    /// The words and commas of a set up to its `)`; an empty entry is the empty value.
    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            match self.consume(Context::Values) {
                (Kind::Identifier, literal) => {
                    values.insert(literal);
                    match self.lookahead(Context::Values) {
                        (Kind::Comma, _) => {}
                        (Kind::CloseParen, _) => return Ok(values),
                        (_, next) => {
                            return Err(format!("found '{next}', expected: ',' or ')'"));
                        }
                    }
                }
                (Kind::Comma, _) => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Kind::CloseParen => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Kind::Comma => {
                            self.consume(Context::Values);
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                (_, literal) => {
                    return Err(format!("found '{literal}', expected: ',', or identifier"));
                }
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; nothing (a comma or the end) is the empty
    /// value.
    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.lookahead(Context::Values).0, Kind::End | Kind::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.consume(Context::Values) {
            (Kind::Identifier, literal) => Ok(BTreeSet::from([literal])),
            (_, literal) => Err(format!("found '{literal}', expected: identifier")),
        }
    }
}

/// `field.Invalid(path, value, why)` as text.
fn invalid(path: &str, value: &str, why: &str) -> String {
    format!("{path}: Invalid value: {}: {why}", go_quote(value))
}

/// `labels.NewRequirement`: the values checked for the operator and as label values (in sorted
/// order, as apimachinery's set lists them); its errors as one aggregate.
fn requirement(
    key: String,
    operator: Operator,
    values: BTreeSet<String>,
) -> Result<LabelRequirement, String> {
    let mut errors = Vec::new();
    let numbers: Vec<Option<i64>> = values.iter().map(|v| v.parse().ok()).collect();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, (value, number)) in values.iter().zip(&numbers).enumerate() {
            if number.is_none() {
                let why = "for 'Gt', 'Lt' operators, the value must be an integer";
                errors.push(invalid(&format!("values[{i}]"), value, why));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let wrong = label_value_errors(value);
        if !wrong.is_empty() {
            let path = format!("values[{i}][{key}]");
            errors.push(invalid(&path, value, &wrong.join("; ")));
        }
    }
    if !errors.is_empty() {
        return Err(aggregate(errors));
    }
    let single = || values.iter().next().cloned().unwrap_or_default();
    let number = || numbers.first().copied().flatten().unwrap_or_default();
    let op = match operator {
        Operator::In => LabelOp::In(values),
        Operator::NotIn => LabelOp::NotIn(values),
        Operator::Equals | Operator::DoubleEquals => LabelOp::Equals(single()),
        Operator::NotEquals => LabelOp::NotEquals(single()),
        Operator::GreaterThan => LabelOp::GreaterThan(number()),
        Operator::LessThan => LabelOp::LessThan(number()),
        Operator::Exists => LabelOp::Exists,
        Operator::DoesNotExist => LabelOp::DoesNotExist,
    };
    Ok(LabelRequirement { key, op })
}

/// apimachinery's aggregate error: one message alone, several (each once) in brackets.
fn aggregate(mut messages: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    messages.retain(|m| seen.insert(m.clone()));
    match messages.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", messages.join(", ")),
    }
}

#[cfg(test)]
mod tests;
