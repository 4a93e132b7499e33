//! The error type of starting and driving the simulator (request failures are
//! [`crate::ApiError`]s, answered to the client).

use crate::status::ApiError;

/// What can go wrong outside a request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding 127.0.0.1 failed.
    #[error("binding 127.0.0.1: {source}")]
    Bind {
        /// The I/O error.
        source: std::io::Error,
    },
    /// Setting up the initial clusters failed.
    #[error("setting up the simulated clusters: {0}")]
    Setup(ApiError),
    /// A client or configuration could not be built.
    #[error("{message}")]
    Config {
        /// What went wrong.
        message: String,
    },
    /// Writing a kubeconfig file failed.
    #[error("writing kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The result type of the simulator's setup functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
