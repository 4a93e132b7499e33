//! A binary run as a process by a test: stopped when dropped, on a free loopback port, probed
//! for readiness.

use std::io::{Read, Write};
use std::process::Child;
use std::time::Duration;

/// A started binary, killed and reaped when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    kcp_testbed::ports::free_port("a binary under test").unwrap()
}

/// Whether `/readyz` on 127.0.0.1:`port` answers 200.
pub fn ready(port: u16) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(stream, "GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}
