//! YAML 1.1 scalar resolution as go-yaml v2 does it, which is how Kubernetes
//! (`sigs.k8s.io/yaml`) and the upstream tools read manifests.
//!
//! An unquoted scalar is a boolean when it is one of `y Y yes Yes YES true True TRUE on On
//! ON` (or the `n no false off` family), null when empty or `~ null Null NULL`, an integer
//! when Go's `strconv.ParseInt(s, 0, 64)` accepts it after removing `_` (so `0644` is octal
//! 420 and `0x1F` is 31), a float when it looks like a decimal float (`1e3`, `.5`, `08`) or
//! is `.inf`/`.nan`, and a timestamp (kept as a string) when it starts like `2006-01-02`.
//! Everything else is a string.

use regex::Regex;
use std::sync::LazyLock;

use crate::template::sprig::args::go_parse_int;

/// What an unquoted scalar means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits `int64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    Uint(u64),
    /// A float.
    Float(f64),
    /// A timestamp: go-yaml keeps its text as a string when decoding into `interface{}`.
    Timestamp,
    /// A string.
    Str,
}

static YAML_STYLE_FLOAT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").ok());

static BASE60_FLOAT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$").ok());

/// Resolves an unquoted scalar.
pub(crate) fn resolve(s: &str) -> Scalar {
    let hint = s.as_bytes().first().copied();
    match hint {
        None => return Scalar::Null,
        Some(b'+' | b'-' | b'0'..=b'9' | b'.') => {}
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => {}
        Some(_) => return Scalar::Str,
    }
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false);
        }
        "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match hint {
        Some(b'.') => match s.parse::<f64>() {
            Ok(f) if is_go_float_syntax(s) => Scalar::Float(f),
            _ => Scalar::Str,
        },
        Some(b'+' | b'-' | b'0'..=b'9') => {
            if is_timestamp(s) {
                return Scalar::Timestamp;
            }
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Scalar::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Scalar::Uint(u);
            }
            if YAML_STYLE_FLOAT
                .as_ref()
                .is_some_and(|re| re.is_match(&plain))
                && let Ok(f) = plain.parse::<f64>()
            {
                return Scalar::Float(f);
            }
            if let Some(bits) = plain.strip_prefix("0b") {
                if let Ok(i) = i64::from_str_radix(bits, 2) {
                    return Scalar::Int(i);
                }
                if let Ok(u) = u64::from_str_radix(bits, 2) {
                    return Scalar::Uint(u);
                }
            } else if let Some(bits) = plain.strip_prefix("-0b")
                && let Ok(i) = i64::from_str_radix(&format!("-{bits}"), 2)
            {
                return Scalar::Int(i);
            }
            Scalar::Str
        }
        _ => Scalar::Str,
    }
}

/// Whether a string needs quoting to stay a string when written unquoted (go-yaml v2 also
/// quotes base-60 floats such as `1:20`, for older parsers).
pub(crate) fn needs_quotes(s: &str) -> bool {
    resolve(s) != Scalar::Str
        || (s.contains(':')
            && s.starts_with(|c: char| c == '+' || c == '-' || c.is_ascii_digit())
            && BASE60_FLOAT.as_ref().is_some_and(|re| re.is_match(s)))
}

/// Go's `strconv.ParseFloat` syntax for strings starting with `.`: digits and an exponent.
fn is_go_float_syntax(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
fn go_parse_uint(s: &str) -> Option<u64> {
    if s.starts_with(['-', '+']) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let (radix, digits) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || digits.starts_with('+') {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The timestamp forms go-yaml recognises: `2006-1-2`, optionally followed by a time
/// (`T`/`t` with a zone, or a space without one).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some((&rest[i..i + 1], &rest[i + 1..]))),
        None => (rest, None),
    };
    let Some((month, day)) = date.split_once('-') else {
        return false;
    };
    let (Some(month), Some(day)) = (small_number(month), small_number(day)) else {
        return false;
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return false;
    }
    match time {
        None => true,
        Some((sep, time)) => {
            let with_zone = sep != " ";
            is_time_of_day(time, with_zone)
        }
    }
}

fn small_number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 2 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `15:4:5[.999999999]` followed by `Z` or `±07:00` when `with_zone`.
fn is_time_of_day(s: &str, with_zone: bool) -> bool {
    let (clock, zone) = if with_zone {
        if let Some(clock) = s.strip_suffix('Z') {
            (clock, true)
        } else if s.len() > 6 && matches!(s.as_bytes()[s.len() - 6], b'+' | b'-') {
            let zone = &s[s.len() - 5..];
            let ok = zone.len() == 5
                && zone.as_bytes()[2] == b':'
                && small_number(&zone[..2]).is_some_and(|h| h < 24)
                && small_number(&zone[3..]).is_some_and(|m| m < 60);
            (&s[..s.len() - 6], ok)
        } else {
            (s, false)
        }
    } else {
        (s, true)
    };
    if !zone {
        return false;
    }
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    if fraction
        .is_some_and(|f| f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let parts: Vec<&str> = hms.split(':').collect();
    if parts.len() != 3 {
        return false;
    }
    let limits = [24, 60, 60];
    parts
        .iter()
        .zip(limits)
        .all(|(p, limit)| small_number(p).is_some_and(|n| n < limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_and_yaml_11_booleans_resolve_like_go_yaml() {
        assert_eq!(resolve("0644"), Scalar::Int(420));
        assert_eq!(resolve("yes"), Scalar::Bool(true));
        assert_eq!(resolve("Off"), Scalar::Bool(false));
        assert_eq!(resolve("y"), Scalar::Bool(true));
        assert_eq!(resolve("~"), Scalar::Null);
        assert_eq!(resolve("1_000"), Scalar::Int(1000));
        assert_eq!(resolve("0x1F"), Scalar::Int(31));
        assert_eq!(resolve("1e3"), Scalar::Float(1000.0));
        assert_eq!(resolve("08"), Scalar::Float(8.0));
        assert_eq!(resolve(".5"), Scalar::Float(0.5));
        assert_eq!(resolve("2024-02-29"), Scalar::Timestamp);
        assert_eq!(resolve("2023-02-29"), Scalar::Str);
        assert_eq!(resolve("hello"), Scalar::Str);
        assert_eq!(resolve("+inf"), Scalar::Str);
        assert!(needs_quotes("1:20"));
        assert!(!needs_quotes("a:b"));
    }
}
