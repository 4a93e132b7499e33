//! kcp-init: the kcp init-agent as a library.

pub mod api;
pub mod render;
