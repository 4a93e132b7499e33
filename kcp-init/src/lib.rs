//! kcp-init: the kcp init-agent as a library.

pub mod api;
pub mod error;
pub mod render;

pub use error::{Error, Result};
