//! Kubernetes protobuf bodies (`application/vnd.kubernetes.protobuf`), as kubectl 1.30+ sends
//! them for its generator commands and client-go clients configured for protobuf exchange them.
//!
//! A body is the 4-byte magic `k8s\0` and a `runtime.Unknown` message: `typeMeta` (apiVersion
//! and kind), `raw` (the object's own message), `contentEncoding` and `contentType`. The
//! messages are not compiled into Rust types: [`schema`] loads descriptors compiled at build time
//! from the vendored Kubernetes `generated.proto` files, and [`to_json`] / [`from_json`] walk
//! them with `prost-reflect`, so every builtin kind kcp-sim serves (and every kind in those
//! packages) is covered by one decoder. JSON is what the store keeps: a protobuf body is turned
//! into the JSON kube-apiserver's Go types would marshal (see [`to_json`]), and an answer to a
//! client that accepts only protobuf is the stored JSON encoded back.
//!
//! Watches in protobuf are length-delimited frames (a 4-byte big-endian length, then a
//! `meta.v1.WatchEvent` without envelope whose `object.raw` is the enveloped object).

pub mod from_json;
pub mod go_type;
pub mod response;
pub mod schema;
pub mod special;
pub mod to_json;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost_reflect::{DynamicMessage, Value as Proto};
use serde_json::{Map, Value};

use crate::status::{ApiError, ApiResult};
use schema::{META, Schema};

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The first bytes of every enveloped protobuf body.
pub const MAGIC: &[u8] = b"k8s\0";

const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";

/// Whether a `Content-Type` is Kubernetes protobuf.
pub fn is_protobuf(content_type: &str) -> bool {
    media_type(content_type) == MEDIA_TYPE
}

fn media_type(range: &str) -> String {
    range
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether an `Accept` header lists protobuf and nothing else: only then is the answer
/// protobuf (a client that also takes JSON, as kubectl does, gets JSON).
pub fn accepts_only_protobuf(accept: &str) -> bool {
    let mut ranges = accept.split(',').map(media_type).filter(|m| !m.is_empty());
    let mut any = false;
    ranges.all(|m| {
        any = true;
        m == MEDIA_TYPE
    }) && any
}

/// The JSON object of an enveloped protobuf body, with its `apiVersion` and `kind`.
///
/// Errors are `400 BadRequest` naming the kind and the reason, or `415` for a kind that has no
/// protobuf form (custom resources, kcp's kinds), as kube-apiserver answers.
pub fn decode_envelope(body: &[u8]) -> ApiResult<Value> {
    let schema = Schema::get()?;
    let Some(rest) = body.strip_prefix(MAGIC) else {
        return Err(ApiError::bad_request(
            "the protobuf body does not start with the Kubernetes magic k8s\\0",
        ));
    };
    let unknown_desc = schema
        .message(UNKNOWN)
        .ok_or_else(|| ApiError::internal("runtime.Unknown is missing from the descriptors"))?;
    let unknown = DynamicMessage::decode(unknown_desc, rest).map_err(|e| {
        ApiError::bad_request(format!(
            "the protobuf envelope is not a runtime.Unknown: {e}"
        ))
    })?;
    let (api_version, kind) = match unknown.get_field_by_name("typeMeta").as_deref() {
        Some(Proto::Message(meta)) => (string(meta, "apiVersion"), string(meta, "kind")),
        _ => (String::new(), String::new()),
    };
    let encoding = string(&unknown, "contentEncoding");
    if !encoding.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{kind}: the protobuf content encoding {encoding:?} is not supported"
        )));
    }
    if kind.is_empty() {
        return Err(ApiError::bad_request(
            "the protobuf envelope names no kind (typeMeta.kind is empty)",
        ));
    }
    let desc = schema.message_for(&api_version, &kind).ok_or_else(|| {
        let mut err = ApiError::unsupported_media_type(MEDIA_TYPE);
        err.message = format!(
            "{kind} of {api_version} has no protobuf form: {}",
            err.message
        );
        err
    })?;
    let raw = match unknown.get_field_by_name("raw").as_deref() {
        Some(Proto::Bytes(b)) => b.clone(),
        _ => Bytes::new(),
    };
    let msg = DynamicMessage::decode(desc, raw)
        .map_err(|e| ApiError::bad_request(format!("decoding the protobuf body of {kind}: {e}")))?;
    let object = to_json::message(schema, &msg, "$").map_err(|(path, why)| {
        ApiError::bad_request(format!(
            "decoding the protobuf body of {kind}: {}: {why}",
            path.trim_start_matches("$.")
        ))
    })?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version));
    out.insert("kind".into(), Value::String(kind));
    if let Value::Object(fields) = object {
        out.extend(fields);
    }
    Ok(Value::Object(out))
}

fn string(msg: &DynamicMessage, field: &str) -> String {
    match msg.get_field_by_name(field).as_deref() {
        Some(Proto::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The enveloped protobuf form of a JSON object that carries `apiVersion` and `kind`.
///
/// Errors are `406 NotAcceptable`: the kind has no protobuf form, or the object holds a field
/// the message has no place for (named in the message).
pub fn encode_envelope(object: &Value) -> ApiResult<Bytes> {
    let schema = Schema::get()?;
    let field = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    let desc = schema
        .message_for(api_version, kind)
        .ok_or_else(|| not_acceptable(format!("{kind} of {api_version} has no protobuf form")))?;
    let msg = from_json::message(schema, &desc, object, "$").map_err(|(path, why)| {
        not_acceptable(format!(
            "{kind} cannot be encoded as protobuf: {}: {why}",
            path.trim_start_matches("$.")
        ))
    })?;
    let unknown_desc = schema
        .message(UNKNOWN)
        .ok_or_else(|| ApiError::internal("runtime.Unknown is missing from the descriptors"))?;
    let type_meta_desc = schema
        .message("k8s.io.apimachinery.pkg.runtime.TypeMeta")
        .ok_or_else(|| ApiError::internal("runtime.TypeMeta is missing from the descriptors"))?;
    let mut type_meta = DynamicMessage::new(type_meta_desc);
    type_meta.set_field_by_name("apiVersion", Proto::String(api_version.into()));
    type_meta.set_field_by_name("kind", Proto::String(kind.into()));
    let mut unknown = DynamicMessage::new(unknown_desc);
    unknown.set_field_by_name("typeMeta", Proto::Message(type_meta));
    unknown.set_field_by_name("raw", Proto::Bytes(msg.encode_to_vec().into()));
    unknown.set_field_by_name("contentEncoding", Proto::String(String::new()));
    unknown.set_field_by_name("contentType", Proto::String(String::new()));
    let mut out = BytesMut::with_capacity(MAGIC.len() + unknown.encoded_len());
    out.put_slice(MAGIC);
    out.put_slice(&unknown.encode_to_vec());
    Ok(out.freeze())
}

/// `406 NotAcceptable`, as kube-apiserver answers a protobuf-only client for a kind without
/// a protobuf form.
pub fn not_acceptable(message: impl Into<String>) -> ApiError {
    ApiError::new(406, "NotAcceptable", message)
}

/// One frame of a protobuf watch stream for a JSON watch event `{"type", "object"}`.
pub fn encode_watch_event(event: &Value) -> ApiResult<Bytes> {
    let schema = Schema::get()?;
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let object = event.get("object").cloned().unwrap_or(Value::Null);
    let raw = encode_envelope(&object)?;
    let event_desc = schema
        .message(&format!("{META}.WatchEvent"))
        .ok_or_else(|| ApiError::internal("meta.v1.WatchEvent is missing from the descriptors"))?;
    let raw_desc = schema
        .message("k8s.io.apimachinery.pkg.runtime.RawExtension")
        .ok_or_else(|| {
            ApiError::internal("runtime.RawExtension is missing from the descriptors")
        })?;
    let mut extension = DynamicMessage::new(raw_desc);
    extension.set_field_by_name("raw", Proto::Bytes(raw));
    let mut msg = DynamicMessage::new(event_desc);
    msg.set_field_by_name("type", Proto::String(kind.to_string()));
    msg.set_field_by_name("object", Proto::Message(extension));
    let body = msg.encode_to_vec();
    let len = u32::try_from(body.len())
        .map_err(|_| ApiError::internal("a watch event larger than 4 GiB"))?;
    let mut out = BytesMut::with_capacity(4 + body.len());
    out.put_u32(len);
    out.put_slice(&body);
    Ok(out.freeze())
}

/// The JSON watch event `{"type", "object"}` of one protobuf watch frame's message (the bytes
/// after its 4-byte length): the reverse of [`encode_watch_event`], for clients and tests that
/// read a protobuf watch.
pub fn decode_watch_event(message: &[u8]) -> ApiResult<Value> {
    let schema = Schema::get()?;
    let event_desc = schema
        .message(&format!("{META}.WatchEvent"))
        .ok_or_else(|| ApiError::internal("meta.v1.WatchEvent is missing from the descriptors"))?;
    let event = DynamicMessage::decode(event_desc, message)
        .map_err(|e| ApiError::bad_request(format!("the watch frame is not a WatchEvent: {e}")))?;
    let raw = match event.get_field_by_name("object").as_deref() {
        Some(Proto::Message(extension)) => match extension.get_field_by_name("raw").as_deref() {
            Some(Proto::Bytes(b)) => b.clone(),
            _ => Bytes::new(),
        },
        _ => Bytes::new(),
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::String(string(&event, "type")));
    out.insert("object".into(), decode_envelope(&raw)?);
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests;
