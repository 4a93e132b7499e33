//! A list's `continue` token, written and read as kube-apiserver writes and reads it.
//!
//! A token is the unpadded URL-safe base64 of the JSON
//! `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key>"}`; kcp-sim's start key is the next
//! object's logical cluster and storage key joined by a NUL. A token that does not read is a
//! 400, worded as kube-apiserver words it: `invalid continue token: continue key is not valid:
//! <why>`, where `why` is what Go's base64 or JSON decoder says
//! ([`crate::go_json_syntax`]). Where two fields of a token have the wrong type, Go names the
//! first in the token and kcp-sim the first of `v`, `rv`, `start`; a number is quoted as
//! serde_json writes it back (`1e3` as `1000.0`).

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::builtin_decoding::json_type;
use crate::go_json_syntax::{object_members, syntax_error, value_type};
use crate::status::{ApiError, ApiResult};

/// The only version of the token's encoding.
const VERSION: &str = "meta.k8s.io/v1";

/// Go's `base64.RawURLEncoding`: no padding, and bits after the last byte are not checked.
const RAW_URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Where the next page of a list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinueToken {
    /// The revision the first page was read at; `None` when the token asks for the latest
    /// (kube-apiserver reads a negative revision so).
    pub revision: Option<u64>,
    /// The logical cluster of the first object of the next page.
    pub cluster: String,
    /// The storage key of that object within its cluster.
    pub key: String,
}

/// The token as JSON, its fields in kube-apiserver's order.
#[derive(Serialize)]
struct Wire<'a> {
    v: &'a str,
    rv: i64,
    start: &'a str,
}

impl ContinueToken {
    /// The token's text.
    pub fn encode(&self) -> String {
        let start = format!("{}\u{0}{}", self.cluster, self.key);
        let rv = self
            .revision
            .map_or(-1, |rv| i64::try_from(rv).unwrap_or(i64::MAX));
        let wire = Wire {
            v: VERSION,
            rv,
            start: &start,
        };
        // A struct of two strings and an integer always serialises.
        let json = serde_json::to_vec(&wire).unwrap_or_default();
        RAW_URL.encode(json)
    }

    /// Reads a token a client sent back.
    pub fn decode(token: &str) -> ApiResult<ContinueToken> {
        read(token).map_err(|why| {
            ApiError::bad_request(format!(
                "invalid continue token: continue key is not valid{why}"
            ))
        })
    }
}

/// The token, or what follows `continue key is not valid` in kube-apiserver's message.
fn read(token: &str) -> Result<ContinueToken, String> {
    let json =
        base64_bytes(token).map_err(|at| format!(": illegal base64 data at input byte {at}"))?;
    let fields = json_fields(&json).map_err(|why| format!(": {why}"))?;
    let text = |name: &str| {
        field(&fields, name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let version = text("v");
    if version != VERSION {
        return Err(format!(
            ": server does not recognize this encoded version {version}"
        ));
    }
    let rv = field(&fields, "rv").and_then(Value::as_i64).unwrap_or(0);
    if rv == 0 {
        return Err(format!(
            ": incorrect encoded start resourceVersion (version {VERSION})"
        ));
    }
    let start = text("start");
    if start.is_empty() {
        return Err(format!(": encoded start key empty (version {VERSION})"));
    }
    let (cluster, key) = start
        .split_once('\u{0}')
        .ok_or_else(|| format!(": {start}"))?;
    Ok(ContinueToken {
        revision: u64::try_from(rv).ok(),
        cluster: cluster.to_string(),
        key: key.to_string(),
    })
}

/// The bytes of unpadded URL-safe base64, or the offset Go's decoder names: the first byte
/// outside the alphabet, or a lone last character. Go skips line breaks.
fn base64_bytes(token: &str) -> Result<Vec<u8>, usize> {
    let mut kept = String::with_capacity(token.len());
    let mut last = 0;
    for (at, c) in token.bytes().enumerate() {
        match c {
            b'\r' | b'\n' => {}
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => {
                kept.push(char::from(c));
                last = at;
            }
            _ => return Err(at),
        }
    }
    if kept.len() % 4 == 1 {
        return Err(last);
    }
    RAW_URL.decode(kept).map_err(|_| last)
}

/// The token's JSON object, or Go's error decoding it into kube-apiserver's token struct.
fn json_fields(json: &[u8]) -> Result<Map<String, Value>, String> {
    if let Some(syntax) = syntax_error(json) {
        return Err(syntax);
    }
    let fields = match value_type(json) {
        "object" => object_members(json)
            .ok_or_else(|| "json: a number in the token is beyond float64".to_string())?,
        "null" => Map::new(),
        other => {
            return Err(format!(
                "json: cannot unmarshal {other} into Go value of type storage.continueToken"
            ));
        }
    };
    for (name, go_type) in [("v", "string"), ("rv", "int64"), ("start", "string")] {
        let Some(value) = field(&fields, name).filter(|v| !v.is_null()) else {
            continue;
        };
        let fits = match go_type {
            "string" => value.is_string(),
            _ => value.is_i64(),
        };
        if !fits {
            let what = match value {
                Value::Number(n) if go_type == "int64" => format!("number {n}"),
                other => json_type(other).to_string(),
            };
            return Err(format!(
                "json: cannot unmarshal {what} into Go struct field continueToken.{name} of type {go_type}"
            ));
        }
    }
    Ok(fields)
}

/// A field as Go's decoder finds it: by its exact name, else by its name in any case.
fn field<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).or_else(|| {
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

#[cfg(test)]
mod tests;
