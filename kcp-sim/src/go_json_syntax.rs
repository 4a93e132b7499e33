//! What Go's `encoding/json` says of bytes that are not one JSON value.
//!
//! kube-apiserver decodes bodies and continue tokens with Go's `json.Unmarshal`, which checks
//! the whole input with its scanner before decoding anything and reports the first byte the
//! scanner refuses: `invalid character 'n' looking for beginning of object key string`, or
//! `unexpected end of JSON input`. Clients show that text to people, so kcp-sim words its
//! refusals the same way: [`syntax_error`] runs the same grammar, one byte at a time, and
//! names the byte and what was expected where it stands as Go's scanner does. Like Go's
//! scanner it does not check that strings are UTF-8.

/// The syntax error Go's `json.Unmarshal` reports for `data`, or `None` when `data` is one JSON
/// value with nothing but white space around it.
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut scanner = Scanner::default();
    for &c in data {
        if let Err(message) = scanner.step(c) {
            return Some(message);
        }
    }
    scanner.end()
}

/// How Go's decoder names the type of the value of `data`, a valid JSON document (see
/// [`syntax_error`]): `object`, `array`, `string`, `number`, `bool` or `null`.
pub fn value_type(data: &[u8]) -> &'static str {
    match data.iter().find(|c| !is_space(**c)) {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        Some(b'n') | None => "null",
        Some(_) => "number",
    }
}

/// The members of `data`, a valid JSON document whose value is an object, as Go decodes them:
/// a string that is not UTF-8 holds U+FFFD in place of each bad byte. `None` for a number
/// serde_json cannot hold (beyond `f64`).
pub fn object_members(data: &[u8]) -> Option<serde_json::Map<String, serde_json::Value>> {
    serde_json::from_str(&String::from_utf8_lossy(data)).ok()
}

/// Where a value stands in the containers around it (Go's parse states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    /// An object, before the `:` of a member (its key is being read).
    ObjectKey,
    /// An object, in a member's value.
    ObjectValue,
    /// An array, in an element.
    ArrayValue,
}

/// The scanner's state: what the next byte may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// A value must begin (white space first).
    #[default]
    BeginValue,
    /// Just after `[`: a value or `]`.
    BeginValueOrEmpty,
    /// Just after `{`: a key or `}`.
    BeginKeyOrEmpty,
    /// After a member's `,`: a key.
    BeginKey,
    InString,
    /// After `\` in a string.
    InEscape,
    /// In `\u`, after this many hex digits.
    InUnicodeEscape(u8),
    /// After a number's `-`.
    Minus,
    /// After a number's leading `0`.
    Zero,
    /// In a number's integer digits (the first was not `0`).
    Integer,
    /// After a number's `.`.
    Dot,
    /// In a number's fraction digits.
    Fraction,
    /// After a number's `e`.
    Exponent,
    /// After the exponent's sign.
    ExponentSign,
    /// In the exponent's digits.
    ExponentDigits,
    /// In `true`, `false` or `null`, the next byte expected at this index.
    Literal(&'static [u8], usize),
    /// A value just ended: what follows depends on the container.
    EndValue,
    /// The top-level value ended: only white space may follow.
    EndTop,
}

#[derive(Debug, Default)]
struct Scanner {
    state: State,
    containers: Vec<Container>,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl Scanner {
    fn step(&mut self, c: u8) -> Result<(), String> {
        self.state = match self.state {
            State::BeginValue => self.begin_value(c)?,
            State::BeginValueOrEmpty if is_space(c) => State::BeginValueOrEmpty,
            State::BeginValueOrEmpty if c == b']' => self.close(),
            State::BeginValueOrEmpty => self.begin_value(c)?,
            State::BeginKeyOrEmpty if is_space(c) => State::BeginKeyOrEmpty,
            State::BeginKeyOrEmpty if c == b'}' => self.close(),
            State::BeginKeyOrEmpty | State::BeginKey => begin_key(c)?,
            State::InString | State::InEscape | State::InUnicodeEscape(_) => self.string(c)?,
            State::Literal(word, at) => literal(word, at, c)?,
            State::EndValue => self.end_value(c)?,
            State::EndTop if is_space(c) => State::EndTop,
            State::EndTop => return Err(invalid(c, "after top-level value")),
            number => self.number(number, c)?,
        };
        Ok(())
    }

    /// The end of the input: Go's scanner reads one more space, so a number or literal cut
    /// short names that space; anything else unfinished is an unexpected end.
    fn end(mut self) -> Option<String> {
        if self.state == State::EndTop {
            return None;
        }
        if let Err(message) = self.step(b' ') {
            return Some(message);
        }
        (self.state != State::EndTop).then(|| "unexpected end of JSON input".to_string())
    }

    fn begin_value(&mut self, c: u8) -> Result<State, String> {
        Ok(match c {
            c if is_space(c) => State::BeginValue,
            b'{' => {
                self.containers.push(Container::ObjectKey);
                State::BeginKeyOrEmpty
            }
            b'[' => {
                self.containers.push(Container::ArrayValue);
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Minus,
            b'0' => State::Zero,
            b'1'..=b'9' => State::Integer,
            b't' => State::Literal(b"true", 1),
            b'f' => State::Literal(b"false", 1),
            b'n' => State::Literal(b"null", 1),
            _ => return Err(invalid(c, "looking for beginning of value")),
        })
    }

    fn string(&mut self, c: u8) -> Result<State, String> {
        Ok(match (self.state, c) {
            (State::InString, b'"') => State::EndValue,
            (State::InString, b'\\') => State::InEscape,
            (State::InString, c) if c < 0x20 => return Err(invalid(c, "in string literal")),
            (State::InEscape, b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"') => {
                State::InString
            }
            (State::InEscape, b'u') => State::InUnicodeEscape(0),
            (State::InEscape, c) => return Err(invalid(c, "in string escape code")),
            (State::InUnicodeEscape(3), c) if c.is_ascii_hexdigit() => State::InString,
            (State::InUnicodeEscape(n), c) if c.is_ascii_hexdigit() => {
                State::InUnicodeEscape(n + 1)
            }
            (State::InUnicodeEscape(_), c) => {
                return Err(invalid(c, "in \\u hexadecimal character escape"));
            }
            _ => State::InString,
        })
    }

    fn number(&mut self, state: State, c: u8) -> Result<State, String> {
        let digit = c.is_ascii_digit();
        Ok(match state {
            State::Minus if c == b'0' => State::Zero,
            State::Minus if matches!(c, b'1'..=b'9') => State::Integer,
            State::Minus => return Err(invalid(c, "in numeric literal")),
            State::Integer if digit => State::Integer,
            State::Integer | State::Zero if c == b'.' => State::Dot,
            State::Dot if digit => State::Fraction,
            State::Dot => return Err(invalid(c, "after decimal point in numeric literal")),
            State::Fraction if digit => State::Fraction,
            State::Integer | State::Zero | State::Fraction if matches!(c, b'e' | b'E') => {
                State::Exponent
            }
            State::Exponent if matches!(c, b'+' | b'-') => State::ExponentSign,
            State::Exponent | State::ExponentSign if digit => State::ExponentDigits,
            State::Exponent | State::ExponentSign => {
                return Err(invalid(c, "in exponent of numeric literal"));
            }
            State::ExponentDigits if digit => State::ExponentDigits,
            // The number ended at `c`, which the value's container reads.
            _ => self.end_value(c)?,
        })
    }

    fn end_value(&mut self, c: u8) -> Result<State, String> {
        let Some(&container) = self.containers.last() else {
            return if is_space(c) {
                Ok(State::EndTop)
            } else {
                Err(invalid(c, "after top-level value"))
            };
        };
        if is_space(c) {
            return Ok(State::EndValue);
        }
        match (container, c) {
            (Container::ObjectKey, b':') => {
                self.set_top(Container::ObjectValue);
                Ok(State::BeginValue)
            }
            (Container::ObjectKey, _) => Err(invalid(c, "after object key")),
            (Container::ObjectValue, b',') => {
                self.set_top(Container::ObjectKey);
                Ok(State::BeginKey)
            }
            (Container::ObjectValue, b'}') | (Container::ArrayValue, b']') => Ok(self.close()),
            (Container::ObjectValue, _) => Err(invalid(c, "after object key:value pair")),
            (Container::ArrayValue, b',') => Ok(State::BeginValue),
            (Container::ArrayValue, _) => Err(invalid(c, "after array element")),
        }
    }

    /// Leaves the innermost container at its closing bracket; the container is a value of the
    /// one around it, which reads what follows.
    fn close(&mut self) -> State {
        self.containers.pop();
        if self.containers.is_empty() {
            State::EndTop
        } else {
            State::EndValue
        }
    }

    fn set_top(&mut self, container: Container) {
        if let Some(top) = self.containers.last_mut() {
            *top = container;
        }
    }
}

fn begin_key(c: u8) -> Result<State, String> {
    match c {
        c if is_space(c) => Ok(State::BeginKey),
        b'"' => Ok(State::InString),
        _ => Err(invalid(c, "looking for beginning of object key string")),
    }
}

fn literal(word: &'static [u8], at: usize, c: u8) -> Result<State, String> {
    let expected = word[at];
    if c != expected {
        let context = format!(
            "in literal {} (expecting {})",
            String::from_utf8_lossy(word),
            quote_byte(expected)
        );
        return Err(invalid(c, &context));
    }
    Ok(if at + 1 == word.len() {
        State::EndValue
    } else {
        State::Literal(word, at + 1)
    })
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_byte(c))
}

/// A byte as Go's scanner quotes it: single quotes around what `strconv.Quote` writes of the
/// byte read as a rune (U+0000 to U+00FF).
fn quote_byte(c: u8) -> String {
    let inner = match c {
        b'\'' => "\\'".to_string(),
        b'"' => "\"".to_string(),
        b'\\' => "\\\\".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x0b => "\\v".to_string(),
        c if c < 0x20 || c == 0x7f => format!("\\x{c:02x}"),
        // Go's unicode.IsPrint: Latin-1's C1 controls, its no-break space and its soft hyphen
        // are not printable.
        0x80..=0xa0 | 0xad => format!("\\u{c:04x}"),
        c => char::from(c).to_string(),
    };
    format!("'{inner}'")
}

#[cfg(test)]
mod tests;
