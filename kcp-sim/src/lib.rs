//! kcp-sim: an in-process Kubernetes and kcp API server.
