//! Readiness: poll an HTTPS endpoint of a peer until it answers 200, while the peer still runs.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::kubeconfig::Endpoint;
use crate::process::PeerProcess;

/// Polls `GET path` at `endpoint` every 250 ms until it answers 200. Fails at once when the
/// process exits, and after `within` with the last answer; both errors carry the log's tail.
/// Runs a runtime of its own: call it from a plain thread, not from async code.
pub fn wait_ready(
    process: &mut PeerProcess,
    endpoint: &Endpoint,
    path: &str,
    within: Duration,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::io(
                process.name(),
                "building a runtime for the readiness probe",
                e,
            )
        })?;
    let started = Instant::now();
    let mut last = String::from("no answer yet");
    while started.elapsed() < within {
        process.check_alive()?;
        match runtime.block_on(get(endpoint, path)) {
            Ok(()) => return Ok(()),
            Err(reason) => last = reason,
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(process.failure(&format!(
        "not ready after {} s: GET {path}: {last}",
        within.as_secs()
    )))
}

async fn get(endpoint: &Endpoint, path: &str) -> Result<(), String> {
    let client = endpoint.client().map_err(|e| e.to_string())?;
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    client
        .request_text(request)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
