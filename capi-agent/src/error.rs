//! The error type of capi-agent: every variant names the object and, where one is at fault,
//! the field, so a log line or a condition message is enough to act on it.

use kcp_core::runtime::Classify;

/// A `Result` with capi-agent's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in capi-agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A call to the API server failed (the core error names verb and object).
    #[error(transparent)]
    Client(#[from] kcp_core::Error),

    /// An object lacks something the provider needs, or has it in the wrong shape.
    #[error("{object}: field {field}: {reason}")]
    InvalidObject {
        /// The object, e.g. `Machine ns/m1`.
        object: String,
        /// The field at fault.
        field: String,
        /// Why it is unusable.
        reason: String,
    },

    /// Something the provider needs does not exist yet; retrying later can help.
    #[error("{object}: waiting for {what}")]
    Waiting {
        /// The object being reconciled.
        object: String,
        /// What is missing.
        what: String,
    },

    /// Encoding or decoding failed.
    #[error("{context}: {message}")]
    Serialization {
        /// What was being encoded or decoded.
        context: String,
        /// The underlying error.
        message: String,
    },

    /// The workload cluster could not be reached through its kubeconfig.
    #[error("workload cluster of {object}: {message}")]
    WorkloadCluster {
        /// The AgentMachine whose cluster it is.
        object: String,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// An [`Error::InvalidObject`].
    pub fn invalid(object: impl Into<String>, field: &str, reason: impl Into<String>) -> Self {
        Error::InvalidObject {
            object: object.into(),
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// Whether the server answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Client(e) if e.is_not_found())
    }

    /// Whether the server answered 409 Conflict.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Client(e) if e.is_conflict())
    }
}

impl Classify for Error {
    fn is_transient(&self) -> bool {
        match self {
            Error::Client(e) => e.is_transient(),
            Error::Waiting { .. } | Error::WorkloadCluster { .. } => true,
            Error::InvalidObject { .. } | Error::Serialization { .. } => false,
        }
    }

    fn reason(&self) -> &str {
        match self {
            Error::Client(e) => e.reason(),
            Error::InvalidObject { .. } => "InvalidObject",
            Error::Waiting { .. } => "Waiting",
            Error::Serialization { .. } => "SerializationError",
            Error::WorkloadCluster { .. } => "WorkloadClusterUnreachable",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_objects_name_object_field_and_reason_and_are_permanent() {
        let err = Error::invalid("Secret ns/data", "data.value", "is not JSON");
        assert_eq!(
            err.to_string(),
            "Secret ns/data: field data.value: is not JSON"
        );
        assert!(!err.is_transient());
    }

    #[test]
    fn waiting_is_transient() {
        let err = Error::Waiting {
            object: "AgentMachine ns/m".into(),
            what: "the Machine owner reference".into(),
        };
        assert!(err.is_transient());
        assert_eq!(err.reason(), "Waiting");
    }
}
