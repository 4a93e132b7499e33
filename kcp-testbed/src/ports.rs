//! Free loopback ports for the peers' listeners.

use std::net::TcpListener;

use crate::error::{Error, Result};

/// A port that was free on 127.0.0.1 a moment ago (the kernel's choice for port 0).
pub fn free_port(peer: &str) -> Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| Error::io(peer, "finding a free port on 127.0.0.1", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::io(peer, "reading a free port", e))?
        .port();
    Ok(port)
}
