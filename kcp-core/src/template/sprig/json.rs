//! JSON as Go's `encoding/json` writes it, for sprig's `toJson` family.
//!
//! Map keys are sorted, numbers print like Go (`1` for the float 1.0, `1e+21`, `1e-7`),
//! `<`, `>` and `&` are escaped unless raw output is asked for, and NaN or infinities are
//! an error.

use std::fmt::Write as _;

use gotmpl::Value;

use crate::template::go_value::format_float_e;

/// How to write JSON.
#[derive(Clone, Copy)]
pub(crate) struct JsonStyle {
    /// Escape `<`, `>` and `&` as `\u003c` ... (`json.Marshal`); off for `toRawJson`.
    pub escape_html: bool,
    /// Indent nested values by two spaces (`json.MarshalIndent(v, "", "  ")`).
    pub pretty: bool,
}

/// Encodes `v`; the error names what cannot be encoded.
pub(crate) fn encode(v: &Value, style: JsonStyle) -> Result<String, String> {
    let mut out = String::new();
    write_value(&mut out, v, style, 0)?;
    Ok(out)
}

fn newline(out: &mut String, style: JsonStyle, depth: usize) {
    if style.pretty {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn write_value(out: &mut String, v: &Value, style: JsonStyle, depth: usize) -> Result<(), String> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => out.push_str(&go_json_float(*f)?),
        Value::String(s) => write_string(out, s, style.escape_html),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                write_value(out, item, style, depth + 1)?;
            }
            if !items.is_empty() {
                newline(out, style, depth);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                write_string(out, k, style.escape_html);
                out.push(':');
                if style.pretty {
                    out.push(' ');
                }
                write_value(out, item, style, depth + 1)?;
            }
            if !entries.is_empty() {
                newline(out, style, depth);
            }
            out.push('}');
        }
        _ => return Err("json: unsupported type: func".to_owned()),
    }
    Ok(())
}

/// A float as Go's JSON encoder writes it.
pub(crate) fn go_json_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!(
            "json: unsupported value: {}",
            crate::template::go_value::format_float_g(f)
        ));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format_float_e(f);
        // Go writes e-07 as e-7.
        return Ok(match e.split_once("e-0") {
            Some((mantissa, exp)) => format!("{mantissa}e-{exp}"),
            None => e,
        });
    }
    if f == 0.0 {
        return Ok(if f.is_sign_negative() { "-0" } else { "0" }.to_owned());
    }
    Ok(format!("{f}"))
}

fn write_string(out: &mut String, s: &str, escape_html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' if escape_html => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '\u{2028}' | '\u{2029}' => {
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
