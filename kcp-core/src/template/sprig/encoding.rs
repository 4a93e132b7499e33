//! sprig's encodings: base64, base32, JSON in and out, plus kcp's `toYaml`.

use base64::Engine as _;
use gotmpl::Value;

use super::args::{Outcome, str_arg, want};
use super::json::{JsonStyle, encode};
use crate::template::go_value::{from_json_as_go, string};
use crate::template::yaml_emit::to_yaml;

pub(super) fn b64enc(args: &[Value]) -> Outcome {
    want("b64enc", args, 1)?;
    Ok(string(
        base64::engine::general_purpose::STANDARD.encode(str_arg(&args[0])?),
    ))
}

/// `b64dec s`: the decoded text; invalid input yields Go's error message as the result
/// (sprig does not fail).
pub(super) fn b64dec(args: &[Value]) -> Outcome {
    want("b64dec", args, 1)?;
    let s = str_arg(&args[0])?;
    Ok(string(match go_base64_decode(s.as_bytes()) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(offset) => format!("illegal base64 data at input byte {offset}"),
    }))
}

fn base64_value(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Go's `base64.StdEncoding.DecodeString`: padded, `\r` and `\n` ignored; the error is
/// the offset Go reports in "illegal base64 data at input byte N".
fn go_base64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let is_newline = |b: u8| b == b'\n' || b == b'\r';
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    loop {
        let mut quantum = [0u8; 4];
        let mut len = 4;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let b = src[si];
            si += 1;
            if let Some(v) = base64_value(b) {
                quantum[j] = v;
                j += 1;
                continue;
            }
            if is_newline(b) {
                continue;
            }
            if b != b'=' || j < 2 {
                return Err(si - 1);
            }
            if j == 2 {
                while si < src.len() && is_newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(si);
            }
            len = j;
            break;
        }
        let v = (u32::from(quantum[0]) << 18)
            | (u32::from(quantum[1]) << 12)
            | (u32::from(quantum[2]) << 6)
            | u32::from(quantum[3]);
        let bytes = v.to_be_bytes();
        out.extend_from_slice(&bytes[1..len]);
        if len < 4 {
            return Ok(out);
        }
    }
}

pub(super) fn b32enc(args: &[Value]) -> Outcome {
    want("b32enc", args, 1)?;
    Ok(string(
        data_encoding::BASE32.encode(str_arg(&args[0])?.as_bytes()),
    ))
}

/// `b32dec s`: like `b64dec`, an invalid input yields an error message as the result.
pub(super) fn b32dec(args: &[Value]) -> Outcome {
    want("b32dec", args, 1)?;
    let s = str_arg(&args[0])?;
    Ok(string(match data_encoding::BASE32.decode(s.as_bytes()) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(err) => format!("illegal base32 data at input byte {}", err.position),
    }))
}

fn json(name: &str, args: &[Value], style: JsonStyle, strict: bool) -> Outcome {
    want(name, args, 1)?;
    match encode(&args[0], style) {
        Ok(text) => Ok(string(text)),
        Err(err) if strict => Err(err),
        Err(_) => Ok(string("")),
    }
}

const COMPACT: JsonStyle = JsonStyle {
    escape_html: true,
    pretty: false,
};
const PRETTY: JsonStyle = JsonStyle {
    escape_html: true,
    pretty: true,
};
const RAW: JsonStyle = JsonStyle {
    escape_html: false,
    pretty: false,
};

pub(super) fn to_json(args: &[Value]) -> Outcome {
    json("toJson", args, COMPACT, false)
}

pub(super) fn must_to_json(args: &[Value]) -> Outcome {
    json("mustToJson", args, COMPACT, true)
}

pub(super) fn to_pretty_json(args: &[Value]) -> Outcome {
    json("toPrettyJson", args, PRETTY, false)
}

pub(super) fn must_to_pretty_json(args: &[Value]) -> Outcome {
    json("mustToPrettyJson", args, PRETTY, true)
}

/// `toRawJson v`: JSON without HTML escaping; unlike `toJson` it fails on what JSON
/// cannot hold.
pub(super) fn to_raw_json(args: &[Value]) -> Outcome {
    json("toRawJson", args, RAW, true)
}

pub(super) fn must_to_raw_json(args: &[Value]) -> Outcome {
    json("mustToRawJson", args, RAW, true)
}

/// `fromJson s`: the decoded value (numbers are float64, as in Go); nil when `s` is not
/// JSON.
pub(super) fn from_json(args: &[Value]) -> Outcome {
    want("fromJson", args, 1)?;
    let s = str_arg(&args[0])?;
    Ok(serde_json::from_str::<serde_json::Value>(s)
        .map(|v| from_json_as_go(&v))
        .unwrap_or(Value::Nil))
}

pub(super) fn must_from_json(args: &[Value]) -> Outcome {
    want("mustFromJson", args, 1)?;
    let s = str_arg(&args[0])?;
    serde_json::from_str::<serde_json::Value>(s)
        .map(|v| from_json_as_go(&v))
        .map_err(|e| e.to_string())
}

/// `toYaml v`: YAML as `sigs.k8s.io/yaml` writes it, without the final newline; empty
/// when `v` cannot be encoded (helm's definition).
pub(super) fn to_yaml_fn(args: &[Value]) -> Outcome {
    want("toYaml", args, 1)?;
    Ok(string(
        to_yaml(&args[0])
            .map(|y| y.strip_suffix('\n').map(str::to_owned).unwrap_or(y))
            .unwrap_or_default(),
    ))
}
