//! API errors as the real server reports them: a `metav1.Status` body with a code and reason.
//!
//! Every failure of a request (not found, conflict, invalid input, injected faults) is an
//! [`ApiError`]. The HTTP layer writes it as a `Status` JSON body; the in-process client turns it
//! into a [`kcp_core::Error`] the same way `KubeObjectClient` turns a real server's answer into one,
//! so code under test sees identical errors whichever way it talks to the simulator.

use serde_json::{Value, json};

/// A failed API request: HTTP code, `metav1.StatusReason`, message and optional details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The `metav1.StatusReason` (`NotFound`, `AlreadyExists`, `Conflict`, ...).
    pub reason: &'static str,
    /// Human-readable message, worded like the real server's.
    pub message: String,
    /// `details`, when the error is about one object or asks the client to wait.
    pub details: Option<Box<StatusDetails>>,
    /// Answered as Go's `http.Error` writes it: the message as plain text, not a `Status`
    /// (the mux's `404 page not found`, or a handler of kcp's virtual workspaces).
    pub plain_text: bool,
    /// `metadata.continue`: the token an expired list's next page may be read with instead.
    pub continue_token: Option<String>,
}

/// The `details` of a `Status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusDetails {
    /// `details.name`: the object the error is about.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind`: the resource (plural) the real server puts here.
    pub kind: Option<String>,
    /// `details.retryAfterSeconds`, for 429 and 503 answers.
    pub retry_after_seconds: Option<u32>,
    /// `details.causes`: the field errors of a `422 Invalid`.
    pub causes: Vec<StatusCause>,
}

/// One `details.causes[]` entry of a `Status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusCause {
    /// `reason`: the cause type, e.g. `FieldValueRequired`.
    pub reason: String,
    /// `message`: what is wrong, without the field.
    pub message: String,
    /// `field`: the field path, e.g. `spec.replicas`.
    pub field: String,
}

impl ApiError {
    /// An error with a code, reason and message and no details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            plain_text: false,
            continue_token: None,
        }
    }

    /// The mux's `404 page not found` (a path no handler serves).
    pub fn page_not_found() -> Self {
        Self::plain(404, "NotFound", "404 page not found")
    }

    /// An answer written by Go's `http.Error`: `message` as plain text, no `Status`.
    pub fn plain(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            plain_text: true,
            ..Self::new(code, reason, message)
        }
    }

    fn details_mut(&mut self) -> &mut StatusDetails {
        self.details.get_or_insert_with(Box::default)
    }

    /// Sets `details.retryAfterSeconds`.
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.details_mut().retry_after_seconds = Some(seconds);
        self
    }

    /// Sets `details.causes`.
    pub fn with_causes(mut self, causes: Vec<StatusCause>) -> Self {
        self.details_mut().causes = causes;
        self
    }

    /// `details.causes` (empty when none).
    pub fn causes(&self) -> &[StatusCause] {
        self.details.as_ref().map_or(&[], |d| d.causes.as_slice())
    }

    /// `details.retryAfterSeconds`, if set.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        self.details.as_ref()?.retry_after_seconds
    }

    /// `details.kind`, if set.
    pub fn details_kind(&self) -> Option<&str> {
        self.details.as_ref()?.kind.as_deref()
    }

    /// `details.name`, if set.
    pub fn details_name(&self) -> Option<&str> {
        self.details.as_ref()?.name.as_deref()
    }

    /// Attaches the object the error is about (`details.name`, `details.group`, `details.kind`).
    pub fn about(mut self, group: &str, resource: &str, name: &str) -> Self {
        let details = self.details_mut();
        details.group = Some(group.to_string());
        details.kind = Some(resource.to_string());
        details.name = Some(name.to_string());
        self
    }

    /// `405 MethodNotAllowed` as apimachinery's `NewMethodNotSupported` words it (the
    /// apiextensions server's answer to a verb a custom resource's subresource does not serve):
    /// `<verb> is not supported on resources of kind "<resource>[.<group>]"`.
    pub fn method_not_supported(group: &str, resource: &str, verb: &str) -> Self {
        let mut error = Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                qualified(group, resource)
            ),
        );
        let details = error.details_mut();
        details.group = Some(group.to_string());
        details.kind = Some(resource.to_string());
        error
    }

    /// `404 NotFound`: `<resource>[.<group>] "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .about(group, resource, name)
    }

    /// `409 AlreadyExists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .about(group, resource, name)
    }

    /// `409 Conflict` for a stale resourceVersion or failed precondition.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .about(group, resource, name)
    }

    /// `422 Invalid`: `<Kind>[.<group>] "<name>" is invalid: <field>: <reason>`, with the one
    /// cause the real server lists; `why` starts with the error's type (`Required value`,
    /// `Invalid value: ...`, `Forbidden: ...`), which names the cause's reason.
    pub fn invalid(group: &str, kind: &str, name: &str, field: &str, why: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{name}\" is invalid: {field}: {why}",
                qualified(group, kind)
            ),
        )
        .about(group, kind, name)
        .with_causes(vec![StatusCause {
            reason: cause_type(why).to_string(),
            message: why.to_string(),
            field: field.to_string(),
        }])
    }

    /// The `422 Invalid` kube-apiserver answers when a JSON patch cannot be applied: the
    /// generic text of apimachinery's `NewGenericServerResponse`, empty `details`; the reason
    /// is not told.
    pub fn unprocessable() -> Self {
        Self {
            details: Some(Box::default()),
            ..Self::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            )
        }
    }

    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `403 Forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// `403 Forbidden` about one object, as apimachinery's `NewForbidden` words it:
    /// `<resource>[.<group>] "<name>" is forbidden: <reason>`.
    pub fn forbidden_object(group: &str, resource: &str, name: &str, reason: &str) -> Self {
        let object = qualified(group, resource);
        Self::forbidden(format!("{object} {name:?} is forbidden: {reason}"))
            .about(group, resource, name)
    }

    /// `405 MethodNotAllowed` (with empty details, as kube-apiserver writes it).
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        let mut error = Self::new(405, "MethodNotAllowed", message);
        error.details_mut();
        error
    }

    /// `410 Expired`: a watch or list asked for a resourceVersion older than the kept history.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `504 Timeout`: a read asked for a resourceVersion the server had not reached within its
    /// wait, worded as kube-apiserver's `NewTooLargeResourceVersionError`.
    pub fn resource_version_too_large(asked: u64, current: u64) -> Self {
        let mut error = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {asked}, current: {current}"),
        );
        let details = error.details_mut();
        details.retry_after_seconds = Some(1);
        details.causes.push(StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        });
        error
    }

    /// `415 UnsupportedMediaType`.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
            ),
        )
    }

    /// The `415` of a body whose content type the resource's routes do not take, listing the
    /// ones they do.
    pub fn unsupported_media_type_among(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// The `406` of a request whose `Accept` names no type the resource's routes produce:
    /// go-restful's text, listing `available`, and empty `details`.
    pub fn not_acceptable_by_route(available: &str) -> Self {
        Self {
            details: Some(Box::default()),
            ..Self::new(
                406,
                "NotAcceptable",
                format!("406: Not Acceptable\n\nAvailable representations: {available}"),
            )
        }
    }

    /// The `415` of a request whose content type none of the resource's routes consumes:
    /// go-restful's text and empty `details`, as kube-apiserver writes it.
    pub fn media_type_not_routed() -> Self {
        Self {
            details: Some(Box::default()),
            ..Self::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
        }
    }

    /// `500 InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The 404 for a URL that names no known resource: the real server's text, and empty
    /// `details` (`details: {}`), as apimachinery's `NewGenericServerResponse` writes them.
    pub fn path_not_found() -> Self {
        Self {
            details: Some(Box::default()),
            ..Self::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }

    /// The reason the real server uses for a code (for injected faults).
    pub fn reason_for_code(code: u16) -> &'static str {
        match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        }
    }

    /// The `metav1.Status` body of this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(token) = &self.continue_token {
            status["metadata"]["continue"] = json!(token);
        }
        // Go leaves out an empty reason (an apply's typed-patch failure has none).
        if self.reason.is_empty()
            && let Some(fields) = status.as_object_mut()
        {
            fields.remove("reason");
        }
        if let Some(d) = &self.details {
            // `metav1.StatusDetails` omits empty strings: a core-group error has no `group`.
            let mut details = serde_json::Map::new();
            let present =
                |s: &Option<String>| s.as_deref().filter(|s| !s.is_empty()).map(String::from);
            if let Some(name) = present(&d.name) {
                details.insert("name".into(), json!(name));
            }
            if let Some(group) = present(&d.group) {
                details.insert("group".into(), json!(group));
            }
            if let Some(kind) = present(&d.kind) {
                details.insert("kind".into(), json!(kind));
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| {
                        // Go leaves out an empty reason or field.
                        let mut cause = json!({"message": c.message});
                        for (key, value) in [("reason", &c.reason), ("field", &c.field)] {
                            if !value.is_empty() {
                                cause[key] = json!(value);
                            }
                        }
                        cause
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            if let Some(secs) = d.retry_after_seconds {
                details.insert("retryAfterSeconds".into(), json!(secs));
            }
            status["details"] = Value::Object(details);
        }
        status
    }
}

/// The `metav1.CauseType` of a field error, from the text its message starts with.
fn cause_type(why: &str) -> &'static str {
    const TYPES: &[(&str, &str)] = &[
        ("Required value", "FieldValueRequired"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Forbidden", "FieldValueForbidden"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Internal error", "InternalError"),
    ];
    TYPES
        .iter()
        .find(|(text, _)| why.starts_with(text))
        .map_or("FieldValueInvalid", |(_, cause)| cause)
}

/// `resource.group`, or `resource` for the core group, as the server prints it.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The result type of the simulator's request handling.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_matches_the_real_server() {
        let status = ApiError::not_found("", "configmaps", "cfg").to_status();
        assert_eq!(
            status,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"configmaps \"cfg\" not found","reason":"NotFound",
                "details":{"name":"cfg","kind":"configmaps"},"code":404})
        );
    }

    #[test]
    fn an_unknown_resource_has_empty_details() {
        let status = ApiError::path_not_found().to_status();
        assert_eq!(status["details"], json!({}));
    }

    #[test]
    fn an_invalid_object_lists_its_cause() {
        let err = ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            "fieldManager",
            "Required value: is required for apply patch",
        );
        assert_eq!(
            err.to_status()["details"],
            json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                {"reason": "FieldValueRequired", "field": "fieldManager",
                 "message": "Required value: is required for apply patch"}]})
        );
    }

    #[test]
    fn grouped_resources_are_qualified_in_messages() {
        let err = ApiError::already_exists("apps", "deployments", "web");
        assert_eq!(err.message, "deployments.apps \"web\" already exists");
        assert_eq!(err.code, 409);
    }
}
