//! A real kcp: `kcp start` with its embedded etcd, on 127.0.0.1 only, as upstream's e2e suites
//! start it (static tokens, the admin kubeconfig kcp writes).

use std::path::Path;
use std::time::Duration;

use kube::config::Kubeconfig;

use crate::error::{Error, Result};
use crate::go_build;
use crate::kubeconfig::{Endpoint, endpoint_of};
use crate::ports::free_port;
use crate::probe::wait_ready;
use crate::process::PeerProcess;

/// How long a first `kcp start` may take on two busy cores (kcp-dev/kcp#3532: first starts are slow).
const START_WITHIN: Duration = Duration::from_secs(300);

/// A running kcp.
#[derive(Debug)]
pub struct Kcp {
    /// `https://127.0.0.1:<port>` (workspaces live under `/clusters/<path>`).
    pub base_url: String,
    /// kcp's own admin, at the root workspace (`/clusters/root`).
    pub admin: Endpoint,
    /// How long kcp took from start to a served root workspace.
    pub ready_after: Duration,
    root_directory: std::path::PathBuf,
    process: PeerProcess,
}

impl Kcp {
    /// Builds (or finds cached) kcp, starts it under `dir` and waits until the root workspace
    /// serves workspaces. Blocking: call from a plain thread.
    pub fn start(dir: &Path, tokens: &Path) -> Result<Self> {
        let binary = go_build::build("kcp")?;
        let root_directory = dir.join(".kcp");
        let port = free_port("kcp")?;
        let etcd_client = free_port("kcp")?;
        let etcd_peer = free_port("kcp")?;
        let args: Vec<String> = vec![
            "start".into(),
            format!("--root-directory={}", root_directory.display()),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--embedded-etcd-client-port={etcd_client}"),
            format!("--embedded-etcd-peer-port={etcd_peer}"),
            // etcd preallocates two WAL segments of 64 MB by default: 8 MB is ample for a test.
            "--embedded-etcd-wal-size-bytes=8388608".into(),
            format!("--token-auth-file={}", tokens.display()),
            "-v=2".into(),
        ];
        let started = std::time::Instant::now();
        let mut process = PeerProcess::spawn(
            "kcp",
            &binary.binary,
            &args,
            &[("UNSAFE_E2E_HACK_DISABLE_ETCD_FSYNC", "true")],
            &dir.join("kcp.log"),
        )?;
        let admin_file = root_directory.join("admin.kubeconfig");
        let admin = wait_for_admin(&mut process, &admin_file)?;
        let base_url = admin
            .url
            .strip_suffix("/clusters/root")
            .map(String::from)
            .ok_or_else(|| {
                process.failure(&format!(
                    "admin.kubeconfig's root URL {} is not .../clusters/root",
                    admin.url
                ))
            })?;
        wait_ready(
            &mut process,
            &admin,
            "/apis/tenancy.kcp.io/v1alpha1/workspaces",
            START_WITHIN,
        )?;
        let ready_after = started.elapsed();
        Ok(Self {
            base_url,
            admin,
            ready_after,
            root_directory,
            process,
        })
    }

    /// The admin at the workspace `path` (`root:team-a`, ...).
    pub fn admin_at(&self, path: &str) -> Endpoint {
        self.admin.at(format!("{}/clusters/{path}", self.base_url))
    }

    /// `Ok` while kcp runs; otherwise an error with the tail of its log.
    pub fn check_alive(&mut self) -> Result<()> {
        self.process.check_alive()
    }

    /// Kills kcp with SIGKILL and starts it again on the same root directory, ports and
    /// embedded etcd data, then waits until it serves workspaces again. Returns how long it
    /// took from the kill to serving. Blocking: call from a plain thread.
    ///
    /// kcp mints a new admin token at every start (`system-admin`'s token is volatile), so
    /// [`Self::admin`] is read again from the kubeconfig the new process writes; clients built
    /// from the old token are refused afterwards. A static token of the token file outlives it.
    pub fn restart_hard(&mut self) -> Result<Duration> {
        let killed = std::time::Instant::now();
        self.process.kill_hard()?;
        // As kcp's own restart tests do: without both files kcp mints and writes a new admin
        // (with only the kubeconfig gone it refuses to start, having no shard-admin token).
        let admin_file = self.root_directory.join("admin.kubeconfig");
        for file in [&admin_file, &self.root_directory.join(".admin-token-store")] {
            std::fs::remove_file(file)
                .map_err(|e| Error::io("kcp", format!("removing {}", file.display()), e))?;
        }
        self.process.respawn()?;
        self.admin = wait_for_admin(&mut self.process, &admin_file)?;
        wait_ready(
            &mut self.process,
            &self.admin,
            "/apis/tenancy.kcp.io/v1alpha1/workspaces",
            START_WITHIN,
        )?;
        Ok(killed.elapsed())
    }

    /// kcp's log file.
    pub fn log(&self) -> &Path {
        self.process.log()
    }
}

/// kcp writes `admin.kubeconfig` once its certificates exist; its context `root` is the admin.
fn wait_for_admin(process: &mut PeerProcess, path: &Path) -> Result<Endpoint> {
    let deadline = std::time::Instant::now() + START_WITHIN;
    while std::time::Instant::now() < deadline {
        process.check_alive()?;
        if let Some(endpoint) = Kubeconfig::read_from(path)
            .ok()
            .and_then(|k| endpoint_of(&k, "root").ok())
        {
            return Ok(endpoint);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(process.failure(&format!("never wrote {}", path.display()))).map_err(|e: Error| e)
}
