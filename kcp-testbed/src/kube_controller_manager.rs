//! A real kube-controller-manager beside the shared kube-apiserver, running only the
//! controllers a test names (the garbage collector, say): what kube-apiserver alone never does,
//! such as collecting the dependents of a deleted owner, it does as a cluster does.

use std::path::Path;
use std::time::Duration;

use crate::error::Result;
use crate::go_build;
use crate::kubeconfig::{Endpoint, write_file};
use crate::process::PeerProcess;

/// A running kube-controller-manager.
#[derive(Debug)]
pub struct KubeControllerManager {
    /// The controllers it runs (its `--controllers`).
    pub controllers: Vec<String>,
    process: PeerProcess,
}

impl KubeControllerManager {
    /// Builds (or finds cached) kube-controller-manager and starts it against `apiserver` (an
    /// admin endpoint) with only `controllers`, serving nothing itself (`--secure-port=0`) and
    /// without leader election. Blocking: call from a plain thread.
    pub fn start(dir: &Path, apiserver: &Endpoint, controllers: &[&str]) -> Result<Self> {
        let built = go_build::build("kube-controller-manager")?;
        let kubeconfig = write_file(dir, "kube-controller-manager", apiserver)?;
        let args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--controllers={}", controllers.join(",")),
            "--leader-elect=false".to_string(),
            "--secure-port=0".to_string(),
            "--use-service-account-credentials=false".to_string(),
            // A quota's usage is resynced this often besides on the events that change it, so
            // a count the controller's caches missed (an object created just before its quota)
            // settles in seconds, not the default five minutes.
            "--resource-quota-sync-period=5s".to_string(),
        ];
        let mut process = PeerProcess::spawn(
            "kube-controller-manager",
            &built.binary,
            &args,
            &[],
            &dir.join("kube-controller-manager.log"),
        )?;
        // It has no port to probe; a process that survives its first seconds has read its
        // flags and kubeconfig and is running its controllers.
        std::thread::sleep(Duration::from_secs(2));
        process.check_alive()?;
        Ok(Self {
            controllers: controllers.iter().map(|c| c.to_string()).collect(),
            process,
        })
    }

    /// `Ok` while it runs; otherwise the error with the tail of its log.
    pub fn check_alive(&mut self) -> Result<()> {
        self.process.check_alive()
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        self.process.log()
    }
}
