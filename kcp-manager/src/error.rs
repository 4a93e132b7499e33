//! The error type of the process glue.

/// What can stop a binary before or while its controllers run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag has a bad value.
    #[error("invalid flag --{flag}: {reason}")]
    Flag {
        /// The flag.
        flag: String,
        /// Why.
        reason: String,
    },
    /// The kubeconfig could not be loaded.
    #[error("loading the kubeconfig {source_name}: {reason}")]
    Kubeconfig {
        /// Path, or "the environment".
        source_name: String,
        /// Why.
        reason: String,
    },
    /// A kube client could not be built.
    #[error("building a kube client: {0}")]
    Client(String),
    /// An HTTP listener could not bind.
    #[error("binding {address}: {source}")]
    Bind {
        /// The address.
        address: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Leader election failed.
    #[error("leader election on Lease {namespace}/{name}: {reason}")]
    LeaderElection {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The Lease was lost while leading; the process must restart as a candidate.
    #[error("lost the leader-election Lease {namespace}/{name}")]
    LeaseLost {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
    },
    /// The component failed.
    #[error("{0}")]
    Component(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// Wraps a kube client construction error.
    pub fn client(err: impl std::fmt::Display) -> Self {
        Error::Client(err.to_string())
    }
}
