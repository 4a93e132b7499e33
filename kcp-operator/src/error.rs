//! The error type of kcp-operator.
//!
//! Every variant names the object (kind, namespace and name) and, where one is at fault, the
//! field, so that a log line or a condition message alone says what to fix.

/// A `Result` with kcp-operator's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kcp-operator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A field of an object has a value the operator cannot use.
    #[error("{object}: field {field}: {reason}")]
    InvalidField {
        /// The object, e.g. `RootShard kcp/root`.
        object: String,
        /// The field path, e.g. `spec.shardBaseURL`.
        field: String,
        /// Why.
        reason: String,
    },

    /// An object another one refers to does not exist (yet).
    #[error("{object}: {field} refers to {target}, which does not exist")]
    MissingReference {
        /// The referring object.
        object: String,
        /// The referring field.
        field: String,
        /// The missing object, e.g. `RootShard kcp/root`.
        target: String,
    },

    /// A Secret lacks a key the operator needs (its content is never logged).
    #[error("{object}: Secret {secret} has no key {key:?}")]
    MissingSecretKey {
        /// The object that needs it.
        object: String,
        /// The Secret, `namespace/name`.
        secret: String,
        /// The key.
        key: String,
    },

    /// A value could not be serialized.
    #[error("{context}: {message}")]
    Serialization {
        /// What was serialized.
        context: String,
        /// The serializer's message.
        message: String,
    },

    /// A kcp-core error (client, runtime), with what was being done.
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
    pub fn reason(&self) -> &str {
        match self {
            Error::InvalidField { .. } => "InvalidSpec",
            Error::MissingReference { .. } => "ReferenceNotFound",
            Error::MissingSecretKey { .. } => "SecretInvalid",
            Error::Serialization { .. } => "SerializationError",
            Error::Core { source, .. } => source.reason(),
        }
    }

    /// Whether the error is about what a user wrote (a field, a reference, a Secret's key),
    /// so that it belongs in the object's status rather than only in the log.
    pub fn is_about_input(&self) -> bool {
        matches!(
            self,
            Error::InvalidField { .. }
                | Error::MissingReference { .. }
                | Error::MissingSecretKey { .. }
        )
    }

    /// Whether retrying later may help (missing references and transient API errors).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::MissingReference { .. } | Error::MissingSecretKey { .. } => true,
            Error::Core { source, .. } => source.is_transient(),
            _ => false,
        }
    }
}

impl kcp_core::runtime::Classify for Error {
    fn is_transient(&self) -> bool {
        Error::is_transient(self)
    }
    fn reason(&self) -> &str {
        Error::reason(self)
    }
}
