//! The error type of kcp-init.
//!
//! Every variant carries the context needed to act on it from a log line or a status
//! condition alone: the object or template concerned, and where in it things went wrong.
//! [`Error::reason`] gives a short machine-readable reason for condition `reason` fields, and
//! [`Error::is_transient`] whether trying again can help; together they are the runtime's
//! [`Classify`], which decides between a retry with backoff and a Warning Event.

use kcp_core::runtime::Classify;

/// A `Result` with kcp-init's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kcp-init.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An object lacks an annotation kcp-init needs (upstream panics in this case).
    #[error("{object}: annotation {annotation:?} is missing")]
    MissingAnnotation {
        /// The object, e.g. `LogicalCluster "cluster" in logical cluster "abc"`.
        object: String,
        /// The missing annotation key.
        annotation: String,
    },

    /// A template failed to parse or render.
    #[error("template {template:?}{}: {message}", display_position(*.line, *.column))]
    Template {
        /// The template's name (the InitTemplate's name).
        template: String,
        /// 1-based line in the template source, when known.
        line: Option<usize>,
        /// 1-based column in the template source, when known.
        column: Option<usize>,
        /// What went wrong.
        message: String,
    },

    /// The output of a template is not a valid manifest stream.
    #[error(
        "template {template:?} rendered invalid manifests: document {document} (line {line}): {message}"
    )]
    Manifest {
        /// The template's name.
        template: String,
        /// 0-based index of the document in the rendered stream.
        document: usize,
        /// 1-based line of the rendered output where the document (or the error) starts.
        line: usize,
        /// What went wrong.
        message: String,
    },

    /// Rendering one source of an InitTarget failed.
    #[error("source #{index} (InitTemplate {template:?}): {source}")]
    Source {
        /// 0-based position of the source in `spec.sources`.
        index: usize,
        /// The name of the InitTemplate the source refers to.
        template: String,
        /// What went wrong with it.
        #[source]
        source: Box<Error>,
    },

    /// A value could not be serialized.
    #[error("{context}: {message}")]
    Serialization {
        /// What was serialized.
        context: String,
        /// The serializer's message.
        message: String,
    },

    /// A source of an InitTarget cannot be used (no variant set, its InitTemplate missing).
    #[error("InitTarget {target:?} source #{index}: {reason}")]
    InvalidSource {
        /// The InitTarget.
        target: String,
        /// 0-based position of the source in `spec.sources`.
        index: usize,
        /// Why.
        reason: String,
    },

    /// An object could not be applied in a cluster for a reason that will not pass by itself.
    #[error("cluster {cluster:?}: {object}: {reason}")]
    Apply {
        /// The logical cluster.
        cluster: String,
        /// The object.
        object: String,
        /// Why (the server's answer).
        reason: String,
    },

    /// The agent's configuration is unusable (bad URL, client set-up).
    #[error("configuration: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },

    /// Initialization cannot finish yet for a reason that passes by itself (an object not ready
    /// yet, the view not serving the cluster's LogicalCluster for a moment, a contended
    /// write); it is tried again with backoff.
    #[error("{reason}")]
    Pending {
        /// What is awaited.
        reason: String,
    },

    /// Any other kcp-core error, with what was being done.
    #[error("{context}: {source}")]
    Core {
        /// What was attempted.
        context: String,
        /// The underlying error.
        #[source]
        source: kcp_core::Error,
    },
}

impl Error {
    /// The short reason, suitable for a condition or Event `reason` field.
    ///
    /// Template and manifest errors (also inside [`Error::Source`]) are `TemplateError`, to
    /// match the InitTarget condition type of the same name.
    pub fn reason(&self) -> &str {
        match self {
            Error::MissingAnnotation { .. } => "MissingAnnotation",
            Error::Template { .. } | Error::Manifest { .. } => crate::api::CONDITION_TEMPLATE_ERROR,
            Error::Source { source, .. } => source.reason(),
            Error::Serialization { .. } => "SerializationError",
            Error::InvalidSource { .. } => "InvalidSource",
            Error::Apply { .. } => "ApplyFailed",
            Error::Config { .. } => "InvalidConfiguration",
            Error::Pending { .. } => "Pending",
            Error::Core { source, .. } => source.reason(),
        }
    }

    /// Whether the same input can succeed later: [`Error::Pending`], and a kcp-core error that
    /// is transient (a conflict, a 429 or 5xx, a kind not served yet), also inside
    /// [`Error::Source`]. Everything else needs a change (to a template, an InitTarget, a
    /// permission) before trying again helps.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Pending { .. } => true,
            Error::Core { source, .. } => source.is_transient(),
            Error::Source { source, .. } => source.is_transient(),
            Error::MissingAnnotation { .. }
            | Error::Template { .. }
            | Error::Manifest { .. }
            | Error::Serialization { .. }
            | Error::InvalidSource { .. }
            | Error::Apply { .. }
            | Error::Config { .. } => false,
        }
    }

    /// Converts a kcp-core error raised while rendering or parsing `template`, keeping its
    /// position information in structured fields.
    pub(crate) fn from_core(template: &str, err: kcp_core::Error) -> Self {
        match err {
            kcp_core::Error::Template {
                line,
                column,
                message,
                ..
            } => Error::Template {
                template: template.to_owned(),
                line,
                column,
                message,
            },
            kcp_core::Error::Manifest {
                document,
                line,
                message,
                ..
            } => Error::Manifest {
                template: template.to_owned(),
                document,
                line,
                message,
            },
            other => Error::Core {
                context: format!("template {template:?}"),
                source: other,
            },
        }
    }
}

impl Classify for Error {
    fn is_transient(&self) -> bool {
        Error::is_transient(self)
    }

    fn reason(&self) -> &str {
        Error::reason(self)
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

    #[test]
    fn template_error_names_template_and_position() {
        let err = Error::from_core(
            "t",
            kcp_core::Error::Template {
                template: "ignored".into(),
                line: Some(2),
                column: Some(7),
                message: "boom".into(),
            },
        );
        assert_eq!(err.to_string(), "template \"t\" at line 2, column 7: boom");
    }

    #[test]
    fn source_error_names_index_and_template_and_keeps_reason() {
        let inner = Error::Template {
            template: "t".into(),
            line: None,
            column: None,
            message: "boom".into(),
        };
        let err = Error::Source {
            index: 3,
            template: "t".into(),
            source: Box::new(inner),
        };
        assert_eq!(
            err.to_string(),
            "source #3 (InitTemplate \"t\"): template \"t\": boom"
        );
        assert_eq!(err.reason(), "TemplateError");
        assert!(!err.is_transient());
    }

    fn core(code: u16) -> Error {
        Error::Core {
            context: "initializing".into(),
            source: kcp_core::Error::Api {
                verb: "get",
                object: "x".into(),
                code,
                reason: "r".into(),
                message: "m".into(),
            },
        }
    }

    #[test]
    fn pending_and_transient_core_errors_are_retried() {
        let pending = Error::Pending {
            reason: "waiting".into(),
        };
        assert!(Classify::is_transient(&pending));
        assert_eq!(Classify::reason(&pending), "Pending");
        assert!(core(409).is_transient());
        assert!(core(503).is_transient());
    }

    #[test]
    fn permanent_errors_wait_for_a_change() {
        assert!(!core(403).is_transient());
        let apply = Error::Apply {
            cluster: "c".into(),
            object: "o".into(),
            reason: "forbidden".into(),
        };
        assert!(!Classify::is_transient(&apply));
        assert_eq!(Classify::reason(&apply), "ApplyFailed");
    }
}
