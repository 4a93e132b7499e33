//! The error type of kcp-core and its transient/permanent classification.
//!
//! Every error carries enough context to act on it without a debugger: the object it concerns
//! (as an [`ObjectRef`](crate::ObjectRef) display string), the field, and the reason. [`Error::is_transient`] is the
//! single place that decides whether retrying can help; reconcile loops use it together with
//! [`crate::retry::Backoff`].

use std::time::Duration;

use kube::api::GroupVersionKind;

/// A `Result` with kcp-core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kcp-core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API server does not (yet) serve this kind, e.g. a CRD that is not Established.
    #[error("kind {} is not served by the API server", display_gvk(.gvk))]
    KindNotServed {
        /// The kind that was asked for.
        gvk: GroupVersionKind,
    },

    /// The namespace an object lives in does not exist (yet).
    #[error("{object}: namespace {namespace:?} not found")]
    NamespaceNotFound {
        /// The object that was written.
        object: String,
        /// The missing namespace.
        namespace: String,
    },

    /// The API server answered with a `metav1.Status` failure.
    #[error("{verb} {object}: {code} {reason}: {message}")]
    Api {
        /// What was attempted (`get`, `create`, `apply`, ...).
        verb: &'static str,
        /// The object or collection concerned.
        object: String,
        /// HTTP status code.
        code: u16,
        /// The machine-readable reason (`NotFound`, `Conflict`, `Forbidden`, ...).
        reason: String,
        /// The server's message.
        message: String,
    },

    /// A server-side apply without `force` touched fields another field manager owns. Retrying
    /// cannot help: the other manager, or this one's intent, has to change.
    #[error("{object}: field ownership conflict: {message}")]
    FieldConflict {
        /// The object applied.
        object: String,
        /// The server's message, naming each field and the manager that owns it.
        message: String,
    },

    /// An object is malformed: a required field is missing or has the wrong shape.
    #[error("invalid object {object}: field {field}: {reason}")]
    InvalidObject {
        /// The object (or its position in the input when it has no name yet).
        object: String,
        /// The field at fault, as a JSON-path-like string.
        field: String,
        /// Why it is invalid.
        reason: String,
    },

    /// A template failed to parse or render.
    #[error("template {template}{}: {message}", display_position(*.line, *.column))]
    Template {
        /// The template's name.
        template: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What went wrong.
        message: String,
    },

    /// A manifest stream could not be parsed.
    #[error("manifest {source_name} document {document} (line {line}): {message}")]
    Manifest {
        /// Where the stream came from (file name, template name, ...).
        source_name: String,
        /// 0-based index of the document in the stream.
        document: usize,
        /// 1-based line where the document (or the error, when known) starts.
        line: usize,
        /// What went wrong.
        message: String,
    },

    /// The "must exist before" graph of an apply plan has a cycle.
    #[error("dependency cycle between {}", .objects.join(", "))]
    DependencyCycle {
        /// The objects on the cycle.
        objects: Vec<String>,
    },

    /// Waiting for a condition did not finish before its deadline.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long was waited.
        after: Duration,
    },

    /// The connection to the API server failed (connect, TLS, reset, body read).
    #[error("{context}: {source}")]
    Transport {
        /// What was attempted.
        context: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A value could not be converted to or from JSON.
    #[error("{context}: {source}")]
    Serialization {
        /// What was converted.
        context: String,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },

    /// A client or configuration could not be built.
    #[error("configuration: {0}")]
    Config(String),
}

impl Error {
    /// Whether retrying the same operation later can succeed without anyone changing the input.
    ///
    /// Transient: a kind not served yet, a namespace not created yet, 409 Conflict, 410 Gone
    /// (expired watch), 429, any 5xx, timeouts and transport failures. Everything else
    /// (invalid objects, 403 Forbidden, 404 of a named object, 422, templates, manifests,
    /// cycles, configuration) needs a change of input and is permanent.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::KindNotServed { .. }
            | Error::NamespaceNotFound { .. }
            | Error::Timeout { .. }
            | Error::Transport { .. } => true,
            Error::Api { code, .. } => matches!(*code, 409 | 410 | 429 | 500..=599),
            Error::InvalidObject { .. }
            | Error::FieldConflict { .. }
            | Error::Template { .. }
            | Error::Manifest { .. }
            | Error::DependencyCycle { .. }
            | Error::Serialization { .. }
            | Error::Config(_) => false,
        }
    }

    /// Whether this is an API error with the given HTTP status code.
    pub fn is_status(&self, status: u16) -> bool {
        matches!(self, Error::Api { code, .. } if *code == status)
    }

    /// Whether this is a 404 NotFound from the API server.
    pub fn is_not_found(&self) -> bool {
        self.is_status(404)
    }

    /// Whether this is a 409 Conflict (stale resourceVersion or AlreadyExists).
    pub fn is_conflict(&self) -> bool {
        self.is_status(409)
    }

    /// Whether this is a 409 with reason `AlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::Api { code: 409, reason, .. } if reason == "AlreadyExists")
    }

    /// The short reason, suitable for a condition or Event `reason` field.
    pub fn reason(&self) -> &str {
        match self {
            Error::KindNotServed { .. } => "KindNotServed",
            Error::NamespaceNotFound { .. } => "NamespaceNotFound",
            Error::Api { reason, .. } => reason,
            Error::InvalidObject { .. } => "InvalidObject",
            Error::FieldConflict { .. } => "FieldConflict",
            Error::Template { .. } => "TemplateError",
            Error::Manifest { .. } => "ManifestError",
            Error::DependencyCycle { .. } => "DependencyCycle",
            Error::Timeout { .. } => "Timeout",
            Error::Transport { .. } => "TransportError",
            Error::Serialization { .. } => "SerializationError",
            Error::Config(_) => "ConfigError",
        }
    }
}

/// Formats a GVK as `group/version Kind` (`v1 Kind` for the core group).
pub(crate) fn display_gvk(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        format!("{} {}", gvk.version, gvk.kind)
    } else {
        format!("{}/{} {}", gvk.group, gvk.version, gvk.kind)
    }
}

fn display_position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str) -> Error {
        Error::Api {
            verb: "get",
            object: "v1 ConfigMap default/x".into(),
            code,
            reason: reason.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn conflicts_throttling_gone_and_server_errors_are_transient() {
        for code in [409, 410, 429, 500, 502, 503, 504] {
            assert!(api(code, "X").is_transient(), "{code} should be transient");
        }
    }

    #[test]
    fn forbidden_not_found_and_invalid_are_permanent() {
        for code in [400, 401, 403, 404, 405, 422] {
            assert!(!api(code, "X").is_transient(), "{code} should be permanent");
        }
    }

    #[test]
    fn kind_not_served_and_missing_namespace_are_transient() {
        let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
        assert!(Error::KindNotServed { gvk }.is_transient());
        let e = Error::NamespaceNotFound {
            object: "v1 ConfigMap a/b".into(),
            namespace: "a".into(),
        };
        assert!(e.is_transient());
    }

    #[test]
    fn template_errors_are_permanent_and_name_their_position() {
        let e = Error::Template {
            template: "t".into(),
            line: Some(3),
            column: Some(7),
            message: "unknown filter".into(),
        };
        assert!(!e.is_transient());
        assert_eq!(
            e.to_string(),
            "template t at line 3, column 7: unknown filter"
        );
    }

    #[test]
    fn kind_not_served_names_group_version_and_kind() {
        let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
        assert_eq!(
            Error::KindNotServed { gvk }.to_string(),
            "kind example.com/v1 Widget is not served by the API server"
        );
    }

    #[test]
    fn already_exists_is_a_conflict() {
        let e = api(409, "AlreadyExists");
        assert!(e.is_already_exists() && e.is_conflict());
        assert!(!api(409, "Conflict").is_already_exists());
    }
}
