//! kcp-sim: an in-process Kubernetes and kcp API server.

pub mod patch;
pub mod selector;
