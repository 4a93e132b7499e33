//! Protobuf answers: a whole JSON response re-encoded for a client that accepts only protobuf,
//! and the encoding of watch events for such a client.

use http::{HeaderValue, Response, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use crate::http::{Body, error_response};
use crate::status::ApiResult;

/// The response re-encoded as protobuf, for a client whose `Accept` lists only protobuf.
///
/// JSON bodies that carry a `kind` are encoded; other bodies (`/version`, OpenAPI, health,
/// streams) pass unchanged. A kind without a protobuf form (custom resources, kcp's kinds)
/// becomes `406 NotAcceptable`, in protobuf, as kube-apiserver answers.
pub async fn transcode(resp: Response<Body>) -> Response<Body> {
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let streaming = resp.headers().contains_key(header::TRANSFER_ENCODING);
    if !json || streaming {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Response::from_parts(parts, Full::new(bytes).boxed()),
    };
    if value.get("kind").and_then(Value::as_str).is_none() {
        return Response::from_parts(parts, Full::new(bytes).boxed());
    }
    match super::encode_envelope(&value) {
        Ok(encoded) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(super::MEDIA_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Full::new(encoded).boxed())
        }
        Err(_) if parts.status.is_success() => not_acceptable_in_protobuf(),
        // An error we cannot encode is still an error: keep its JSON Status.
        Err(_) => Response::from_parts(parts, Full::new(bytes).boxed()),
    }
}

/// kube-apiserver's answer to a protobuf-only client reading a kind without a protobuf form (a
/// custom resource): the apiextensions server negotiated protobuf, so its `406` Status is
/// itself protobuf, and names the media types it serves.
pub fn not_acceptable_in_protobuf() -> Response<Body> {
    let err = super::not_acceptable(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    );
    let Ok(encoded) = super::encode_envelope(&err.to_status()) else {
        return error_response(&err);
    };
    let mut resp = Response::new(Full::new(encoded).boxed());
    *resp.status_mut() = http::StatusCode::NOT_ACCEPTABLE;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(super::MEDIA_TYPE),
    );
    resp
}

/// Whether `kind` of `api_version` has a protobuf form; `406 NotAcceptable` otherwise (checked
/// before a watch starts, as kube-apiserver negotiates before streaming).
pub fn check_encodable(api_version: &str, kind: &str) -> ApiResult<()> {
    let schema = super::schema::Schema::get()?;
    match schema.message_for(api_version, kind) {
        Some(_) => Ok(()),
        None => Err(super::not_acceptable(format!(
            "{kind} of {api_version} has no protobuf form: the server was unable to respond with a content type that the client supports"
        ))),
    }
}
