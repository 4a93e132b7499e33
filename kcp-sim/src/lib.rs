//! kcp-sim: an in-process Kubernetes and kcp API server for tests, examples and the playground.
