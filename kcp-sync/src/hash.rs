//! The hashes upstream names things with, reproduced byte for byte.
//!
//! The Go agent hashes strings directly and everything else as the output of Go's
//! `json.Encoder`: map keys sorted, struct fields in declaration order, `<`, `>`, `&`,
//! U+2028 and U+2029 escaped as `\u003c`-style sequences, floats in Go's format, and a
//! trailing newline. [`go_json`] writes a `serde_json::Value` that way (objects are maps, so
//! their keys are sorted); callers that hash Go structs build the JSON text with the fields
//! in Go's order themselves (see [`crate::state::object_key`] and [`crate::schema`]).

use std::fmt::Write as _;

use serde_json::Value;
use sha1::{Digest as _, Sha1};
use sha3::Sha3_256;

/// Hex SHA-1 of `data` (40 characters): upstream's `crypto.Hash` of a string.
pub fn sha1_hex(data: impl AsRef<[u8]>) -> String {
    hex::encode(Sha1::digest(data.as_ref()))
}

/// The first 20 hex characters of SHA-1: upstream's `crypto.ShortHash` and the `shortHash`
/// template function.
pub fn short_hash(data: impl AsRef<[u8]>) -> String {
    let mut hash = sha1_hex(data);
    hash.truncate(20);
    hash
}

/// Hex SHA3-256 (64 characters): the `sha3sum` template function.
pub fn sha3_hex(data: impl AsRef<[u8]>) -> String {
    hex::encode(Sha3_256::digest(data.as_ref()))
}

/// Hex SHA-1 of `value` as Go's `json.Encoder` writes it (with the trailing newline):
/// upstream's `crypto.Hash` of a map or slice.
pub fn go_json_sha1(value: &Value) -> String {
    let mut text = go_json(value);
    text.push('\n');
    sha1_hex(text)
}

/// `value` as Go's `encoding/json` writes a `map[string]any` holding it: compact, map keys
/// sorted, HTML-sensitive characters escaped, floats in Go's notation. No trailing newline.
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Appends `value` to `out` as Go's `encoding/json` would.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, &map[key]);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        out.push_str(&go_float(f));
    }
}

/// A float64 as Go's `encoding/json` writes it: plain decimal for `1e-6 <= |f| < 1e21`
/// (and zero), otherwise exponent notation with a signed, at least one-digit exponent.
pub(crate) fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    let text = format!("{f:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => text,
    }
}

/// Appends `s` as a JSON string, escaped as Go's `encoding/json` does with HTML escaping on.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sha1_of_a_name_matches_the_spec_vector() {
        assert_eq!(
            sha1_hex("my-test-thing"),
            "c346c8ceb5d104cc783d09b95e8ea7032c190948"
        );
    }

    #[test]
    fn short_hash_of_default_matches_the_spec_vector() {
        assert_eq!(short_hash("default"), "7505d64a54e061b7acd5");
    }

    #[test]
    fn go_json_sorts_map_keys_at_every_level() {
        let value = json!({"b": 1, "a": {"d": true, "c": null}});
        assert_eq!(go_json(&value), r#"{"a":{"c":null,"d":true},"b":1}"#);
    }

    #[test]
    fn go_json_escapes_html_characters_like_go() {
        let value = json!("<a & b>\u{2028}");
        assert_eq!(go_json(&value), r#""\u003ca \u0026 b\u003e\u2028""#);
    }

    #[test]
    fn go_json_escapes_control_characters_like_go() {
        let value = json!("a\nb\u{1}\u{8}");
        assert_eq!(go_json(&value), r#""a\nb\u0001\b""#);
    }

    #[test]
    fn go_json_writes_floats_in_go_notation() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1.5e-7), "1.5e-7");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(0.0), "0");
    }

    #[test]
    fn go_json_keeps_non_ascii_characters_unescaped() {
        assert_eq!(go_json(&json!("æøå")), "\"æøå\"");
    }
}
