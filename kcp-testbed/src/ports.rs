//! Free loopback ports for the peers' listeners and the binaries under test.
//!
//! A port is found by binding port 0 and letting go of it, so the process that is handed the
//! port binds it a moment later. Tests of one binary run in parallel in one process: without a
//! record of what was handed out, the kernel may give the same released port to two of them,
//! and one test then reads another's metrics. A port is therefore handed out at most once per
//! process.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};

/// Ports already handed out by this process.
fn handed_out() -> &'static Mutex<BTreeSet<u16>> {
    static PORTS: OnceLock<Mutex<BTreeSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(BTreeSet::new()))
}

/// A port that was free on 127.0.0.1 a moment ago (the kernel's choice for port 0) and that
/// this process has not handed out before.
pub fn free_port(peer: &str) -> Result<u16> {
    // Hold every candidate until one is new, so the kernel cannot offer the same one again.
    let mut held = Vec::new();
    for _ in 0..64 {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| Error::io(peer, "finding a free port on 127.0.0.1", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io(peer, "reading a free port", e))?
            .port();
        let mut ports = match handed_out().lock() {
            Ok(ports) => ports,
            Err(poisoned) => poisoned.into_inner(),
        };
        if ports.insert(port) {
            return Ok(port);
        }
        drop(ports);
        held.push(listener);
    }
    Err(Error::io(
        peer,
        "finding a free port on 127.0.0.1",
        std::io::Error::other("64 ports in a row had been handed out already"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_handed_out_once_per_process() {
        let ports: Vec<u16> = (0..200).map(|_| free_port("test").unwrap()).collect();
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
    }
}
