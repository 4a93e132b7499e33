//! kcp-init: the kcp init-agent as a library.
