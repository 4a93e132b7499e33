//! The error type of kcp-sync.
//!
//! Every variant names what it is about (a PublishedResource, an object, a field) and why, so
//! a log line or a status condition alone says what to fix. [`Error::reason`] gives a short
//! machine-readable reason for condition and Event `reason` fields.

/// A `Result` with kcp-sync's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kcp-sync.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A PublishedResource (or a part of it) cannot be used as written.
    #[error("PublishedResource {published_resource:?}: {field}: {reason}")]
    InvalidSpec {
        /// The PublishedResource's name.
        published_resource: String,
        /// The offending field, e.g. `spec.projection.versions`.
        field: String,
        /// Why.
        reason: String,
    },

    /// A source CRD cannot be published.
    #[error("CustomResourceDefinition {crd:?}: {field}: {reason}")]
    InvalidCrd {
        /// The CRD's name.
        crd: String,
        /// The offending field.
        field: String,
        /// Why.
        reason: String,
    },

    /// A template failed to parse or render.
    #[error("{location}: template error: {message}")]
    Template {
        /// Where the template comes from, e.g. `spec.naming.name`.
        location: String,
        /// What went wrong.
        message: String,
    },

    /// A mutation rule failed on an object.
    #[error("{object}: {rule}: {reason}")]
    Mutation {
        /// The object being mutated.
        object: String,
        /// The rule, e.g. `spec.mutation.spec[2] (regex)`.
        rule: String,
        /// Why.
        reason: String,
    },

    /// A name or namespace rendered for a local object is not a valid Kubernetes name.
    #[error("{object}: rendered {field} {value:?} is invalid: {reason}")]
    InvalidName {
        /// The kcp object the name was rendered for.
        object: String,
        /// `spec.naming.name` or `spec.naming.namespace`.
        field: String,
        /// The rendered value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },

    /// An object is unusable (missing field, wrong shape, ambiguous link).
    #[error("{object}: {field}: {reason}")]
    InvalidObject {
        /// The object.
        object: String,
        /// The offending field.
        field: String,
        /// Why.
        reason: String,
    },

    /// A value could not be serialized or parsed.
    #[error("{context}: {message}")]
    Serialization {
        /// What was serialized.
        context: String,
        /// The serializer's message.
        message: String,
    },

    /// A discovery or OpenAPI document of the service cluster could not be read.
    #[error("reading {path} from the service cluster: {reason}")]
    Discovery {
        /// The request path, e.g. `/openapi/v3/api/v1`.
        path: String,
        /// Why.
        reason: String,
        /// Whether retrying may succeed (a 404 or an unreadable document is permanent).
        transient: bool,
    },

    /// Any kcp-core error (client calls), with what was being done.
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
            Error::InvalidSpec { .. } => "InvalidSpec",
            Error::InvalidCrd { .. } => "InvalidCRD",
            Error::Template { .. } => "TemplateError",
            Error::Mutation { .. } => "MutationFailed",
            Error::InvalidName { .. } => "InvalidName",
            Error::InvalidObject { .. } => "InvalidObject",
            Error::Serialization { .. } => "SerializationError",
            Error::Discovery { .. } => "DiscoveryFailed",
            Error::Core { source, .. } => source.reason(),
        }
    }

    /// Whether retrying may succeed without a change to configuration or objects.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Core { source, .. } => source.is_transient(),
            Error::Discovery { transient, .. } => *transient,
            _ => false,
        }
    }

    /// Whether the server refused a write because the object changed since it was read (or
    /// exists already).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Core { source, .. } if source.is_conflict())
    }

    /// Wraps a kcp-core error with what was being done.
    pub fn core(context: impl Into<String>, source: kcp_core::Error) -> Self {
        Error::Core {
            context: context.into(),
            source,
        }
    }
}

/// The runtime's error policy asks the enum's own [`Error::is_transient`] and [`Error::reason`].
impl kcp_core::runtime::Classify for Error {
    fn is_transient(&self) -> bool {
        Error::is_transient(self)
    }

    fn reason(&self) -> &str {
        Error::reason(self)
    }
}
