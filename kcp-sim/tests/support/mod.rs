//! Running the machine's kubectl against a kcp-sim server from a test.
//!
//! Needs `kubectl` on PATH (or `KUBECTL=/path/to/kubectl`); `.ci/run` installs it when missing.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use kcp_sim::Server;
use serde_json::Value;

fn kubectl_binary() -> String {
    std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string())
}

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kcp-sim-kubectl-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// kubectl with a kubeconfig for one kcp-sim server, and a directory for input files.
pub struct Kubectl {
    kubeconfig: PathBuf,
    dir: TempDir,
}

impl Kubectl {
    /// kubectl talking to `sim`.
    pub fn new(sim: &Server) -> Self {
        let dir = TempDir::new();
        let kubeconfig = dir.0.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
        Kubectl { kubeconfig, dir }
    }

    /// Writes a file next to the kubeconfig and returns its path.
    pub fn file(&self, name: &str, content: &[u8]) -> String {
        let path = self.dir.0.join(name);
        std::fs::write(&path, content).unwrap();
        path.to_str().unwrap().to_string()
    }

    /// The command line `kubectl --kubeconfig <file> <args>`, with a discovery cache of this
    /// kubectl's own (kubectl keys its cache by host and port, and another test's server may
    /// have had this port before).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_binary());
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.0.join("cache"))
            .args(args);
        cmd
    }

    /// Runs kubectl off the async runtime, returning stdout; panics with stderr on failure.
    pub async fn run(&self, args: &[&str]) -> String {
        let mut cmd = self.command(args);
        let shown = args.join(" ");
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl_binary()));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "kubectl {shown} failed: {stderr}\n{stdout}"
        );
        stdout
    }

    /// `kubectl <args> -o json`, parsed.
    pub async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.run(&all).await).unwrap()
    }

    /// Starts a long-running kubectl (`get -w`) with its stdout piped.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl")
    }
}

/// The lines a spawned kubectl prints, read on a thread as they come.
pub struct Lines {
    rx: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl Lines {
    /// Follows the stdout of `child`.
    pub fn follow(child: &mut Child) -> Self {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits (up to 10 s) for a line matching `pred`; panics with everything seen otherwise.
    pub async fn until(&mut self, pred: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(line)) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                _ => panic!("no matching line; kubectl printed {:?}", self.seen),
            }
        }
    }

    /// Every line seen so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }
}
