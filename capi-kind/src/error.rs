//! The error type of capi-kind: every variant names the object (or kind cluster) concerned,
//! and, for bad input, the field and the reason.

use kcp_core::runtime::Classify;

/// A `Result` with capi-kind's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in capi-kind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An object's spec cannot be acted on.
    #[error("{object}: {field}: {reason}")]
    InvalidSpec {
        /// The object (`KindCluster default/dev`).
        object: String,
        /// The offending field (`spec.clusterName`).
        field: String,
        /// Why.
        reason: String,
    },

    /// The provisioner (the `kind` CLI, or the in-process one) failed.
    #[error("kind cluster {cluster:?}: {operation} failed: {message}")]
    Provisioner {
        /// The kind cluster.
        cluster: String,
        /// What was attempted (`create`, `delete`, `get kubeconfig`, ...).
        operation: &'static str,
        /// What went wrong (the CLI's stderr, say).
        message: String,
    },

    /// A kubeconfig could not be read.
    #[error("kubeconfig of kind cluster {cluster:?}: {reason}")]
    Kubeconfig {
        /// The kind cluster.
        cluster: String,
        /// Why.
        reason: String,
    },

    /// A value could not be serialized.
    #[error("{context}: {message}")]
    Serialization {
        /// What was serialized.
        context: String,
        /// The serializer's message.
        message: String,
    },

    /// A kcp-core (API) error, with the object and what was being done.
    #[error("{object}: {context}: {source}")]
    Core {
        /// The object concerned.
        object: String,
        /// What was attempted.
        context: String,
        /// The underlying error.
        #[source]
        source: Box<kcp_core::Error>,
    },
}

impl Error {
    /// Wraps a kcp-core error with the object and what was being done.
    pub fn core(
        object: impl Into<String>,
        context: impl Into<String>,
        source: kcp_core::Error,
    ) -> Self {
        Error::Core {
            object: object.into(),
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// A provisioner failure.
    pub fn provisioner(cluster: &str, operation: &'static str, message: impl Into<String>) -> Self {
        Error::Provisioner {
            cluster: cluster.to_string(),
            operation,
            message: message.into(),
        }
    }
}

impl Classify for Error {
    /// Provisioner and API failures can pass (the container engine recovers, a conflict
    /// resolves); bad specs and serialization errors cannot.
    fn is_transient(&self) -> bool {
        match self {
            Error::Provisioner { .. } | Error::Kubeconfig { .. } => true,
            Error::Core { source, .. } => source.is_transient(),
            Error::InvalidSpec { .. } | Error::Serialization { .. } => false,
        }
    }

    fn reason(&self) -> &str {
        match self {
            Error::InvalidSpec { .. } => "InvalidSpec",
            Error::Provisioner { .. } => "ProvisionerFailed",
            Error::Kubeconfig { .. } => "KubeconfigUnreadable",
            Error::Serialization { .. } => "SerializationError",
            Error::Core { source, .. } => source.reason(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_specs_name_object_field_and_reason_and_are_permanent() {
        let err = Error::InvalidSpec {
            object: "KindCluster d/x".into(),
            field: "spec.clusterName".into(),
            reason: "too long".into(),
        };
        assert_eq!(
            err.to_string(),
            "KindCluster d/x: spec.clusterName: too long"
        );
        assert!(!err.is_transient());
    }

    #[test]
    fn provisioner_failures_are_retried() {
        let err = Error::provisioner("dev", "create", "docker is not running");
        assert_eq!(
            err.to_string(),
            "kind cluster \"dev\": create failed: docker is not running"
        );
        assert!(err.is_transient());
        assert_eq!(err.reason(), "ProvisionerFailed");
    }
}
