//! A real etcd on 127.0.0.1, for kube-apiserver and for kcp shards started from rendered
//! Deployments (which name an external etcd).

use std::path::Path;

use crate::error::Result;
use crate::go_build;
use crate::ports::free_port;
use crate::process::PeerProcess;

/// A running etcd.
#[derive(Debug)]
pub struct Etcd {
    /// `http://127.0.0.1:<port>`, its client URL.
    pub url: String,
    process: PeerProcess,
}

impl Etcd {
    /// Builds (or finds cached) etcd and starts it with its data under `dir/etcd` and its log
    /// at `dir/etcd.log`. Blocking: call from a plain thread.
    pub fn start(dir: &Path) -> Result<Etcd> {
        let binary = go_build::build("etcd")?;
        let port = free_port("etcd")?;
        let peer_port = free_port("etcd")?;
        let url = format!("http://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let args = [
            "--data-dir".to_owned(),
            dir.join("etcd").display().to_string(),
            "--listen-client-urls".into(),
            url.clone(),
            "--advertise-client-urls".into(),
            url.clone(),
            "--listen-peer-urls".into(),
            peer.clone(),
            "--initial-advertise-peer-urls".into(),
            peer.clone(),
            "--initial-cluster".into(),
            format!("default={peer}"),
            "--unsafe-no-fsync".into(),
        ];
        let process =
            PeerProcess::spawn("etcd", &binary.binary, &args, &[], &dir.join("etcd.log"))?;
        Ok(Etcd { url, process })
    }

    /// Kills etcd with SIGKILL and starts it again on the same data directory and ports.
    pub fn restart_hard(&mut self) -> Result<()> {
        self.process.kill_hard()?;
        self.process.respawn()
    }

    /// `Ok` while etcd runs; otherwise an error with the tail of its log.
    pub fn check_alive(&mut self) -> Result<()> {
        self.process.check_alive()
    }
}
