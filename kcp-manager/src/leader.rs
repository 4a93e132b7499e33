//! Leader election on a `coordination.k8s.io` Lease, through `kube-lease-manager`.
//!
//! The defaults follow controller-runtime: a 15 s Lease, renewed 5 s before it expires; a
//! standby takes over once the leader's Lease expires (or at once when the leader releases it
//! on a clean shutdown).

use kube_lease_manager::{LeaseManagerBuilder, LeaseParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::Error;

/// Settings of one election.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This process's identity (host name and process id by default).
    pub identity: String,
    /// Lease duration in seconds.
    pub duration_seconds: u64,
    /// Renew this many seconds before expiry.
    pub grace_seconds: u64,
}

/// A held Lease: `lost` resolves when leadership ends.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl Leadership {
    /// Resolves once this process no longer holds the Lease.
    pub async fn lost(&mut self) {
        let _ = self.state.wait_for(|leading| !*leading).await;
    }

    /// Releases the Lease (a clean shutdown lets a standby take over at once).
    pub async fn release(self) {
        drop(self.state);
        // The manager releases the Lease when its channel closes.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.task).await;
    }
}

impl LeaderElection {
    /// An election on Lease `namespace/name` with the default timings.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
        LeaderElection {
            namespace: namespace.into(),
            name: name.into(),
            identity: format!("{host}_{}", std::process::id()),
            duration_seconds: 15,
            grace_seconds: 5,
        }
    }

    fn error(&self, reason: impl std::fmt::Display) -> Error {
        Error::LeaderElection {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            reason: reason.to_string(),
        }
    }

    /// Waits until this process holds the Lease (renewed in the background from then on).
    pub async fn acquire(&self, client: kube::Client) -> Result<Leadership, Error> {
        if self.grace_seconds >= self.duration_seconds {
            return Err(self.error(format!(
                "the renew grace ({} s) must be shorter than the lease duration ({} s)",
                self.grace_seconds, self.duration_seconds
            )));
        }
        let params = LeaseParams::new(
            self.identity.clone(),
            self.duration_seconds,
            self.grace_seconds,
        );
        let manager = LeaseManagerBuilder::new(client, self.name.clone())
            .with_namespace(self.namespace.clone())
            .with_parameters(params)
            .build()
            .await
            .map_err(|e| self.error(e))?;
        let (mut state, handle) = manager.watch().await;
        let task = tokio::spawn(async move {
            match handle.await {
                Ok(Err(err)) => tracing::error!(error = %err, "leader election stopped"),
                Err(err) => tracing::error!(error = %err, "leader election task failed"),
                Ok(Ok(_)) => {}
            }
        });
        state
            .wait_for(|leading| *leading)
            .await
            .map_err(|_| self.error("the lease manager stopped"))?;
        tracing::info!(lease = %self.name, namespace = %self.namespace, identity = %self.identity, "became leader");
        Ok(Leadership { state, task })
    }
}
