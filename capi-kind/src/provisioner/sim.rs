//! An in-process provisioner: each "kind cluster" is a kcp-sim server (plain Kubernetes mode)
//! listening on 127.0.0.1, a real API server that kubectl can use. For tests, examples and the
//! playground; compiled only with the `sim` feature.
//!
//! Knobs for tests and benchmarks: a delay per create (a real `kind create` takes a minute),
//! and injected create failures.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use kcp_sim::{Config, Server};

use super::{CreateRequest, Provisioner};
use crate::error::{Error, Result};

struct SimCluster {
    server: Server,
    owner: Option<String>,
    /// Stopped: listed, but its kubeconfig and marker cannot be read.
    stopped: bool,
}

/// The error kind gives for a cluster whose control-plane container is not running.
fn not_running(name: &str, operation: &'static str) -> Error {
    Error::provisioner(
        name,
        operation,
        "the control-plane container is not running",
    )
}

#[derive(Default)]
struct State {
    clusters: BTreeMap<String, SimCluster>,
    fail_creates: Option<String>,
    creates: usize,
}

/// Workload clusters as in-process kcp-sim servers.
#[derive(Clone, Default)]
pub struct SimProvisioner {
    state: Arc<Mutex<State>>,
    create_delay: Duration,
}

impl std::fmt::Debug for SimProvisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimProvisioner")
            .field("clusters", &self.lock().clusters.keys().collect::<Vec<_>>())
            .field("create_delay", &self.create_delay)
            .finish()
    }
}

impl SimProvisioner {
    /// A provisioner whose creates finish as soon as the server listens.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every create takes at least `delay` (like a real `kind create`).
    pub fn with_create_delay(mut self, delay: Duration) -> Self {
        self.create_delay = delay;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes every following create fail with `message` (`None`: succeed again).
    pub fn fail_creates(&self, message: Option<&str>) {
        self.lock().fail_creates = message.map(String::from);
    }

    /// How many creates were attempted.
    pub fn creates(&self) -> usize {
        self.lock().creates
    }

    /// Starts a cluster without ownership marker, as if someone ran `kind create` by hand.
    pub async fn create_unmarked(&self, name: &str) -> Result<()> {
        let server = start(name).await?;
        self.lock().clusters.insert(
            name.to_string(),
            SimCluster {
                server,
                owner: None,
                stopped: false,
            },
        );
        Ok(())
    }

    /// Stops a cluster's API server, as a stopped kind container leaves it: still listed, its
    /// kubeconfig and ownership marker unreadable.
    pub fn stop_cluster(&self, name: &str) {
        if let Some(cluster) = self.lock().clusters.get_mut(name) {
            cluster.stopped = true;
        }
    }

    /// The base URL of a cluster's API server.
    pub fn url(&self, name: &str) -> Option<String> {
        self.lock()
            .clusters
            .get(name)
            .map(|c| c.server.url().to_string())
    }
}

async fn start(name: &str) -> Result<Server> {
    Server::start(Config::default())
        .await
        .map_err(|e| Error::provisioner(name, "create", format!("starting kcp-sim: {e}")))
}

#[async_trait]
impl Provisioner for SimProvisioner {
    async fn create(&self, request: &CreateRequest) -> Result<()> {
        let failure = {
            let mut state = self.lock();
            state.creates += 1;
            if state.clusters.contains_key(&request.name) {
                Some(format!(
                    "node(s) already exist for a cluster with the name {:?}",
                    request.name
                ))
            } else {
                state.fail_creates.clone()
            }
        };
        tokio::time::sleep(self.create_delay).await;
        if let Some(message) = failure {
            return Err(Error::provisioner(&request.name, "create", message));
        }
        let server = start(&request.name).await?;
        let cluster = SimCluster {
            server,
            owner: Some(request.owner_uid.clone()),
            stopped: false,
        };
        self.lock().clusters.insert(request.name.clone(), cluster);
        Ok(())
    }

    async fn delete(&self, name: &str) -> Result<()> {
        let removed = self.lock().clusters.remove(name);
        if let Some(cluster) = removed {
            cluster.server.shutdown().await;
        }
        Ok(())
    }

    async fn list(&self) -> Result<Vec<String>> {
        Ok(self.lock().clusters.keys().cloned().collect())
    }

    async fn owner(&self, name: &str) -> Result<Option<String>> {
        let state = self.lock();
        let cluster = state.clusters.get(name).ok_or_else(|| {
            Error::provisioner(name, "read the ownership marker", "no such cluster")
        })?;
        if cluster.stopped {
            return Err(not_running(name, "read the ownership marker"));
        }
        Ok(cluster.owner.clone())
    }

    async fn mark_owner(&self, name: &str, owner_uid: &str) -> Result<()> {
        let mut state = self.lock();
        let cluster = state
            .clusters
            .get_mut(name)
            .ok_or_else(|| Error::provisioner(name, "mark the ownership", "no such cluster"))?;
        cluster.owner = Some(owner_uid.to_owned());
        Ok(())
    }

    async fn kubeconfig(&self, name: &str) -> Result<String> {
        let state = self.lock();
        let cluster = state
            .clusters
            .get(name)
            .ok_or_else(|| Error::provisioner(name, "get kubeconfig", "no such cluster"))?;
        if cluster.stopped {
            return Err(not_running(name, "get kubeconfig"));
        }
        Ok(cluster.server.kubeconfig(&[&format!("kind-{name}")]))
    }
}
