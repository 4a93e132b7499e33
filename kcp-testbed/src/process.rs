//! A peer process that cannot outlive the test binary that started it.
//!
//! Each peer runs under a small `sh` watchdog whose standard input is a pipe from this process:
//! when this process exits for any reason (a passing run, a panic, SIGKILL), the pipe closes, the
//! watchdog's `read` returns and it stops the peer. Dropping a [`PeerProcess`] stops it at once.
//!
//! Fault tests kill a peer as a crash would ([`PeerProcess::kill_hard`], SIGKILL to the peer
//! itself, which the watchdog writes to a pid file) and start it again with the same command
//! line on the same data ([`PeerProcess::respawn`]).

use std::fs::{File, OpenOptions};
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
pid_file=$1
shift
"$@" </dev/null 3<&- &
peer=$!
echo "$peer" > "$pid_file"
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
    command: PeerCommand,
    child: Child,
    stdin: Option<ChildStdin>,
}

/// What starts a peer, kept to start it again.
#[derive(Debug, Clone)]
struct PeerCommand {
    binary: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    pid_file: PathBuf,
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
        let command = PeerCommand {
            binary: binary.to_path_buf(),
            args: args.to_vec(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            pid_file: log.with_extension("pid"),
        };
        let out = File::create(log)
            .map_err(|e| Error::io(name, format!("creating {}", log.display()), e))?;
        let (child, stdin) = command.start(name, out)?;
        Ok(Self {
            name: name.to_string(),
            log: log.to_path_buf(),
            command,
            child,
            stdin,
        })
    }

    /// Kills the peer with SIGKILL, as a crash or an OOM kill would (no chance to flush or
    /// release anything), and waits until its watchdog has seen it go.
    pub fn kill_hard(&mut self) -> Result<()> {
        // A peer that already exited (and its watchdog with it) has nothing left to kill.
        if let Ok(Some(_)) = self.child.try_wait() {
            self.stdin = None;
            return Ok(());
        }
        let pid = std::fs::read_to_string(&self.command.pid_file)
            .map_err(|e| Error::io(&self.name, "reading the peer's pid file", e))?;
        let pid = pid.trim();
        let killed = Command::new("kill")
            .args(["-KILL", pid])
            .status()
            .map_err(|e| Error::io(&self.name, format!("sending SIGKILL to {pid}"), e))?;
        if !killed.success() {
            return Err(self.failure(&format!("kill -KILL {pid} failed ({killed})")));
        }
        self.stdin = None;
        self.child
            .wait()
            .map_err(|e| Error::io(&self.name, "waiting for the killed peer's watchdog", e))?;
        Ok(())
    }

    /// Starts the peer again with the same command line (and so the same ports and data),
    /// appending to its log. Call after [`Self::kill_hard`] or after it exited.
    pub fn respawn(&mut self) -> Result<()> {
        self.stop(Duration::from_secs(15));
        let mut out = OpenOptions::new()
            .append(true)
            .open(&self.log)
            .map_err(|e| Error::io(&self.name, format!("reopening {}", self.log.display()), e))?;
        let _ = writeln!(out, "# started again");
        let (child, stdin) = self.command.start(&self.name, out)?;
        self.child = child;
        self.stdin = stdin;
        Ok(())
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

impl PeerCommand {
    /// Starts the watchdog with the peer under it, both writing to `out`.
    fn start(&self, name: &str, out: File) -> Result<(Child, Option<ChildStdin>)> {
        // A pid file left by an earlier run of the peer must not be mistaken for this one's.
        let _ = std::fs::remove_file(&self.pid_file);
        let err = out
            .try_clone()
            .map_err(|e| Error::io(name, "sharing the log", e))?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sh")
            .arg(&self.pid_file)
            .arg(&self.binary)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .map_err(|e| Error::io(name, format!("starting {}", self.binary.display()), e))?;
        let stdin = child.stdin.take();
        Ok((child, stdin))
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(15));
    }
}
