//! A create or update body kube-apiserver cannot read as an object, refused with the 400 its
//! decoder gives.
//!
//! Before anything else kube-apiserver reads a body's `apiVersion` and `kind`, with Go's
//! `json.Unmarshal` into a struct of two strings. A body that is not JSON, a JSON value that is
//! not an object, or an `apiVersion` or `kind` that is not a string fails there, and the
//! handler answers `the object provided is unrecognized (must be of type <Kind>): couldn't get
//! version/kind; json parse error: <Go's error> (<the body>)`, the body summarised as it is in
//! the message: its first 30 bytes as text when it starts with `{`, in hex otherwise.

use serde_json::{Map, Value};

use crate::builtin_decoding::json_type;
use crate::go_json_syntax::{object_members, syntax_error, value_type};
use crate::status::ApiError;

/// How many bytes of the body the message shows.
const SUMMARY_BYTES: usize = 30;

/// The Go type the probe decodes into, as Go's errors print it.
const PROBE_TYPE: &str = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; \
                          Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// kube-apiserver's refusal of `body` as an object of `kind`, or `None` when its `apiVersion`
/// and `kind` can be read (what is wrong with it, if anything, is found later).
pub fn refusal(kind: &str, body: &[u8]) -> Option<ApiError> {
    let reason = probe_error(body)?;
    Some(ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): \
         couldn't get version/kind; json parse error: {reason} ({})",
        summary(body)
    )))
}

/// kube-apiserver's refusal of a protobuf body (by its `Content-Type`) that does not start with
/// the Kubernetes magic `k8s\0`, as an object of `kind`.
pub fn not_protobuf(kind: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): provided data does not \
         appear to be a protobuf message, expected prefix [107 56 115 0] ({})",
        summary(body)
    ))
}

/// Whether Go reads the `apiVersion` and `kind` of this decoded body without an error.
pub fn is_readable(body: &Value) -> bool {
    match body {
        Value::Null => true,
        Value::Object(fields) => field_error(fields).is_none(),
        _ => false,
    }
}

/// Go's error decoding `body` into the `apiVersion`/`kind` probe.
fn probe_error(body: &[u8]) -> Option<String> {
    if let Some(syntax) = syntax_error(body) {
        return Some(syntax);
    }
    match value_type(body) {
        "null" => None,
        "object" => field_error(&object_members(body)?),
        other => Some(format!(
            "json: cannot unmarshal {other} into Go value of type {PROBE_TYPE}"
        )),
    }
}

/// Go's error for an `apiVersion` or `kind` that is neither a string nor `null`.
fn field_error(fields: &Map<String, Value>) -> Option<String> {
    ["apiVersion", "kind"].into_iter().find_map(|key| {
        let value = fields.get(key)?;
        (!value.is_string() && !value.is_null()).then(|| {
            format!(
                "json: cannot unmarshal {} into Go struct field .{key} of type string",
                json_type(value)
            )
        })
    })
}

/// The body as the message shows it.
fn summary(body: &[u8]) -> String {
    let shown = &body[..body.len().min(SUMMARY_BYTES)];
    let more = if body.len() > SUMMARY_BYTES {
        " ..."
    } else {
        ""
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(shown)),
        Some(_) => format!("{}{more}", hex::encode(shown)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &[u8]) -> String {
        refusal("ConfigMap", body)
            .map(|e| e.message)
            .unwrap_or_default()
    }

    #[test]
    fn a_protobuf_body_without_the_magic_names_the_go_prefix_and_the_body_in_hex() {
        // As kube-apiserver v1.34.2 answered (protobuf-exchange/a-body-without-the-protobuf-magic-is-refused).
        assert_eq!(
            not_protobuf("ConfigMap", b"not protobuf").message,
            "the object provided is unrecognized (must be of type ConfigMap): provided data does \
             not appear to be a protobuf message, expected prefix [107 56 115 0] \
             (6e6f742070726f746f627566)"
        );
    }

    #[test]
    fn a_json_string_is_shown_in_hex_with_gos_type_error() {
        // As kube-apiserver v1.34.2 answered (the conformance case a-malformed-body-is-a-bad-request).
        assert_eq!(
            message(b"\"{not json\""),
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get \
             version/kind; json parse error: json: cannot unmarshal string into Go value of type \
             struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \
             \"json:\\\"kind,omitempty\\\"\" } (227b6e6f74206a736f6e22)"
        );
    }

    #[test]
    fn a_body_that_starts_as_an_object_is_shown_as_text_cut_at_30_bytes() {
        let body = br#"{"apiVersion": "v1", "kind": "ConfigMap", "data": "#;
        assert!(
            message(body).ends_with(
                "unexpected end of JSON input ({\"apiVersion\": \"v1\", \"kind\": \" ...)"
            )
        );
    }

    #[test]
    fn an_api_version_that_is_not_a_string_names_the_field() {
        assert!(message(br#"{"apiVersion": 1}"#).contains(
            "json: cannot unmarshal number into Go struct field .apiVersion of type string"
        ));
    }

    #[test]
    fn a_readable_probe_is_left_to_later_checks() {
        assert!(refusal("ConfigMap", b"null").is_none());
        assert!(refusal("ConfigMap", br#"{"apiVersion": "v1", "data": 1}"#).is_none());
    }
}
