//! A peer process that cannot outlive the test binary that started it.
//!
//! Each peer runs under a small `sh` watchdog whose standard input is a pipe from this process:
//! when this process exits for any reason (a passing run, a panic, SIGKILL), the pipe closes, the
//! watchdog's `read` returns and it stops the peer. Dropping a [`PeerProcess`] stops it at once.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::log_tail::tail;

/// The watchdog: start the peer, stop it (TERM, then KILL after 10 s) when stdin closes, and
/// exit when the peer does, writing its exit status to the log. (A background list reads
/// /dev/null unless redirected, hence stdin kept as fd 3 for the guard.)
const WATCHDOG: &str = r##"
exec 3<&0
"$@" </dev/null 3<&- &
peer=$!
( read -r _ <&3; kill -TERM "$peer" 2>/dev/null; sleep 10; kill -KILL "$peer" 2>/dev/null ) &
guard=$!
wait "$peer"
code=$?
echo "# peer exited with status $code"
kill "$guard" 2>/dev/null
exit "$code"
"##;

/// A running peer.
#[derive(Debug)]
pub struct PeerProcess {
    name: String,
    log: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl PeerProcess {
    /// Starts `binary args...` with its output in `log`.
    pub fn spawn(
        name: &str,
        binary: &Path,
        args: &[String],
        env: &[(&str, &str)],
        log: &Path,
    ) -> Result<Self> {
        let out = File::create(log)
            .map_err(|e| Error::io(name, format!("creating {}", log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::io(name, "sharing the log", e))?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sh")
            .arg(binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .map_err(|e| Error::io(name, format!("starting {}", binary.display()), e))?;
        let stdin = child.stdin.take();
        Ok(Self {
            name: name.to_string(),
            log: log.to_path_buf(),
            child,
            stdin,
        })
    }

    /// The peer's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The peer's log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// `Ok` while the peer runs; once it exited, an error with the tail of its log.
    pub fn check_alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.failure(&format!("exited ({status})"))),
            Err(e) => Err(Error::io(&self.name, "asking whether it still runs", e)),
        }
    }

    /// An error about this peer, carrying the tail of its log.
    pub fn failure(&self, reason: &str) -> Error {
        Error::Peer {
            peer: self.name.clone(),
            reason: reason.to_string(),
            log: self.log.clone(),
            tail: tail(&self.log, 40),
        }
    }

    /// Stops the peer (TERM, KILL after 10 s) and waits for it, at most `within`.
    pub fn stop(&mut self, within: Duration) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                _ => return,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(15));
    }
}
