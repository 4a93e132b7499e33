//! kcp-sim: an in-process Kubernetes and kcp API server.

pub mod managed_fields;
