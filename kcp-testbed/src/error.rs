//! The test bed's one error type: every variant names the peer (and its version) it concerns,
//! and where a process or a build wrote a log, the log's path and its last lines.

use std::path::PathBuf;

/// What went wrong while building, starting or talking to a real peer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `peers/PINS` has no line for this peer.
    #[error("peer {peer}: not pinned in kcp-testbed/peers/PINS")]
    UnknownPeer {
        /// The peer asked for.
        peer: String,
    },
    /// A line of `peers/PINS` could not be read.
    #[error("kcp-testbed/peers/PINS line {line}: {reason}")]
    Pins {
        /// One-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// No usable Go toolchain.
    #[error("peer {peer} {version}: no usable Go toolchain: {reason}")]
    NoGo {
        /// The peer that needed it.
        peer: String,
        /// Its pinned version.
        version: String,
        /// What was tried.
        reason: String,
    },
    /// A line of a wrapper's `SHIMS` file could not be read.
    #[error("peer {peer}: SHIMS line {line}: {reason}")]
    Shims {
        /// The peer whose wrapper holds the file.
        peer: String,
        /// One-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A shim module could not be assembled.
    #[error("peer {peer}: assembling the shim of {module}: {reason}")]
    Shim {
        /// The peer that needs it.
        peer: String,
        /// The module path the shim stands in for.
        module: String,
        /// What failed.
        reason: String,
    },
    /// A loopback fix (see [`crate::loopback`]) could not be applied.
    #[error("peer {peer}: making {module} listen on 127.0.0.1: {reason}")]
    Loopback {
        /// The peer that needs it.
        peer: String,
        /// The module (or the LOOPBACK line) concerned.
        module: String,
        /// What failed.
        reason: String,
    },
    /// `go build` failed (a module the proxy refused, a compile error, ...).
    #[error("peer {peer} {version}: go build failed (log {log}):\n{tail}")]
    Build {
        /// The peer.
        peer: String,
        /// Its pinned version.
        version: String,
        /// The full build log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// A file or process operation failed.
    #[error("peer {peer}: {action}: {source}")]
    Io {
        /// The peer concerned (or `test bed`).
        peer: String,
        /// What was being done.
        action: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A peer process exited, or never became ready.
    #[error("peer {peer}: {reason} (log {log}):\n{tail}")]
    Peer {
        /// The peer.
        peer: String,
        /// What happened.
        reason: String,
        /// The process's log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// A kubeconfig or client could not be made.
    #[error("{what}: {reason}")]
    Config {
        /// What was being configured.
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// A request to a peer failed.
    #[error("{what}: {source}")]
    Request {
        /// What was asked.
        what: String,
        /// The cause.
        source: Box<kcp_core::Error>,
    },
    /// A conformance case could not be read or run.
    #[error("conformance case {case}, step {step}: {reason}")]
    Conformance {
        /// The case (`<file>/<name>`).
        case: String,
        /// The step (1-based; 0 for the case as a whole).
        step: usize,
        /// What went wrong.
        reason: String,
    },
}

/// The test bed's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(peer: &str, action: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            peer: peer.to_string(),
            action: action.into(),
            source,
        }
    }

    pub(crate) fn config(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        Error::Config {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}
