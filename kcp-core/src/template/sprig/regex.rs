//! sprig's regular expressions, with Go's `regexp` semantics.
//!
//! Patterns are RE2 syntax in both Go and the `regex` crate. Go's `\d`, `\w`, `\s` and
//! `\b` are ASCII-only, so they are compiled as such; matching walks the input the way Go's
//! `FindAll`, `ReplaceAll` and `Split` do (an empty match right after a match is skipped).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use gotmpl::Value;
use regex::Regex;

use super::args::{Outcome, int_arg, str_arg, want};
use crate::template::go_value::{string, string_list};

/// Compiled patterns kept per process, so templates rendered many times compile once.
struct Cache {
    compiled: Mutex<HashMap<String, Arc<Regex>>>,
}

const CACHE_LIMIT: usize = 256;

static CACHE: std::sync::LazyLock<Cache> = std::sync::LazyLock::new(|| Cache {
    compiled: Mutex::new(HashMap::new()),
});

/// Compiles a Go pattern; the error reads like Go's `regexp.Compile` error.
fn compile(pattern: &str) -> Result<Arc<Regex>, String> {
    let mut cache = CACHE
        .compiled
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(re) = cache.get(pattern) {
        return Ok(re.clone());
    }
    let re = Arc::new(
        Regex::new(&go_to_rust_pattern(pattern))
            .map_err(|e| format!("error parsing regexp: {e}"))?,
    );
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), re.clone());
    Ok(re)
}

/// Rewrites Go's ASCII-only Perl classes for the Unicode-aware `regex` crate.
fn go_to_rust_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let replacement = match (next, in_class) {
                    ('d', false) => Some("[0-9]"),
                    ('D', false) => Some("[^0-9]"),
                    ('w', false) => Some("[0-9A-Za-z_]"),
                    ('W', false) => Some("[^0-9A-Za-z_]"),
                    ('s', false) => Some("[\\t\\n\\f\\r ]"),
                    ('S', false) => Some("[^\\t\\n\\f\\r ]"),
                    ('b', false) => Some("(?-u:\\b)"),
                    ('B', false) => Some("(?-u:\\B)"),
                    ('d', true) => Some("0-9"),
                    ('w', true) => Some("0-9A-Za-z_"),
                    ('s', true) => Some("\\t\\n\\f\\r "),
                    _ => None,
                };
                match replacement {
                    Some(r) => out.push_str(r),
                    None => {
                        out.push('\\');
                        out.push(next);
                    }
                }
                class_start = false;
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                continue;
            }
            ']' if in_class && !class_start => {
                in_class = false;
                out.push(']');
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // [:alpha:] inside a class.
                out.push('[');
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            other => {
                out.push(other);
                class_start = false;
            }
        }
        if c != '[' {
            class_start = false;
        }
    }
    out
}

/// Go's `allMatches`: successive matches, skipping an empty match right after a match,
/// at most `n` of them when `n >= 0`.
fn go_matches(re: &Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut pos = 0;
    let mut prev_end: Option<usize> = None;
    while (n < 0 || (found.len() as i64) < n) && pos <= s.len() {
        let Some(m) = re.find_at(s, pos) else {
            break;
        };
        let mut accept = true;
        if m.end() == pos {
            if Some(m.start()) == prev_end {
                accept = false;
            }
            pos += s[pos..].chars().next().map_or(1, char::len_utf8);
        } else {
            pos = m.end();
        }
        prev_end = Some(m.end());
        if accept {
            found.push((m.start(), m.end()));
        }
    }
    found
}

/// Go's `ReplaceAllString` (`literal == false`: `$1`, `${name}` expand) and
/// `ReplaceAllLiteralString`.
fn go_replace_all(re: &Regex, s: &str, replacement: &str, literal: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_end = 0;
    let mut search = 0;
    while search <= s.len() {
        let Some(caps) = re.captures_at(s, search) else {
            break;
        };
        let Some(m) = caps.get(0) else {
            break;
        };
        out.push_str(&s[last_end..m.start()]);
        if m.end() > last_end || m.start() == 0 {
            if literal {
                out.push_str(replacement);
            } else {
                caps.expand(replacement, &mut out);
            }
        }
        last_end = m.end();
        let width = s[search..].chars().next().map_or(1, char::len_utf8);
        if search + width > m.end() {
            search += width;
        } else if search + 1 > m.end() {
            search += 1;
        } else {
            search = m.end();
        }
    }
    out.push_str(&s[last_end.min(s.len())..]);
    out
}

/// Go's `Regexp.Split`.
fn go_split(re: &Regex, pattern: &str, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pattern.is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let matches = go_matches(re, s, n);
    let mut parts = Vec::with_capacity(matches.len() + 1);
    let (mut beg, mut end) = (0, 0);
    for (start, stop) in matches {
        if n > 0 && parts.len() as i64 == n - 1 {
            break;
        }
        end = start;
        if stop != 0 {
            parts.push(s[beg..end].to_owned());
        }
        beg = stop;
    }
    if end != s.len() {
        parts.push(s[beg..].to_owned());
    }
    parts
}

pub(super) fn regex_match(strict: bool, args: &[Value]) -> Outcome {
    want("regexMatch", args, 2)?;
    let pattern = str_arg(&args[0])?;
    let s = str_arg(&args[1])?;
    match compile(pattern) {
        Ok(re) => Ok(Value::Bool(re.is_match(s))),
        Err(e) if strict => Err(e),
        Err(_) => Ok(Value::Bool(false)),
    }
}

pub(super) fn regex_find_all(args: &[Value]) -> Outcome {
    want("regexFindAll", args, 3)?;
    let re = compile(str_arg(&args[0])?)?;
    let s = str_arg(&args[1])?;
    let n = int_arg(&args[2])?;
    let found: Vec<&str> = go_matches(&re, s, n)
        .into_iter()
        .map(|(a, b)| &s[a..b])
        .collect();
    Ok(string_list(found))
}

pub(super) fn regex_find(args: &[Value]) -> Outcome {
    want("regexFind", args, 2)?;
    let re = compile(str_arg(&args[0])?)?;
    let s = str_arg(&args[1])?;
    Ok(string(re.find(s).map_or("", |m| m.as_str())))
}

pub(super) fn regex_replace_all(literal: bool, args: &[Value]) -> Outcome {
    want("regexReplaceAll", args, 3)?;
    let re = compile(str_arg(&args[0])?)?;
    let s = str_arg(&args[1])?;
    let replacement = str_arg(&args[2])?;
    Ok(string(go_replace_all(&re, s, replacement, literal)))
}

pub(super) fn regex_split(args: &[Value]) -> Outcome {
    want("regexSplit", args, 3)?;
    let pattern = str_arg(&args[0])?;
    let re = compile(pattern)?;
    let s = str_arg(&args[1])?;
    let n = int_arg(&args[2])?;
    Ok(string_list(go_split(&re, pattern, s, n)))
}

/// Go's `regexp.QuoteMeta`: backslashes before ``\.+*?()|[]{}^$``.
pub(super) fn regex_quote_meta(args: &[Value]) -> Outcome {
    want("regexQuoteMeta", args, 1)?;
    let mut out = String::new();
    for c in str_arg(&args[0])?.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(string(out))
}
