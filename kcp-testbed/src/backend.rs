//! One handle over either backend, so a suite's tests run unchanged on kcp-sim and on the real
//! servers. The backend is chosen by one environment variable, `KCP_RS_BACKEND` (`sim`, the
//! default, or `real`).
//!
//! On kcp-sim every bed is a fresh server. On the real servers every bed is a fresh workspace
//! (`root:e2e-<random>`, type `universal`) or namespace on the process's shared peers, so tests
//! running side by side never see each other's objects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_core::kcp::types::WorkspaceTypeReference;
use kcp_core::kcp::{Workspace, WorkspaceSpec};
use kcp_core::{KubeObjectClient, ObjectClient, ObjectClientExt};

use crate::error::{Error, Result};
use crate::kubeconfig::Endpoint;
use crate::real::{SharedKcp, SharedKube, shared_kcp, shared_kube};

/// The variable that picks the backend.
pub const BACKEND_VAR: &str = "KCP_RS_BACKEND";

/// Which servers the end-to-end tests run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// kcp-sim, in-process (the default).
    Sim,
    /// kcp, kube-apiserver and etcd built from their Go modules.
    Real,
}

impl Backend {
    /// The backend `KCP_RS_BACKEND` names; unset or empty is [`Backend::Sim`].
    pub fn from_env() -> Result<Backend> {
        Backend::parse(std::env::var(BACKEND_VAR).unwrap_or_default().as_str())
    }

    /// `sim`, `real`, or empty (sim).
    pub fn parse(value: &str) -> Result<Backend> {
        match value.trim() {
            "" | "sim" => Ok(Backend::Sim),
            "real" => Ok(Backend::Real),
            other => Err(Error::config(
                format!("{BACKEND_VAR}={other}"),
                "expected 'sim' or 'real'",
            )),
        }
    }
}

/// A kcp for one test: a fresh kcp-sim, or a fresh workspace on the real kcp.
#[derive(Debug)]
pub enum KcpBed {
    /// A kcp-sim server of this test alone; its `root` is the test's root.
    Sim(kcp_sim::Server),
    /// A workspace of the shared real kcp that plays the test's root.
    Real {
        /// The shared kcp.
        kcp: &'static SharedKcp,
        /// The test's root workspace path (`root:e2e-<random>`).
        root: String,
    },
}

impl KcpBed {
    /// A bed on the backend `KCP_RS_BACKEND` names.
    pub async fn start() -> Result<KcpBed> {
        match Backend::from_env()? {
            Backend::Sim => KcpBed::start_sim(kcp_sim::Config::kcp()).await,
            Backend::Real => KcpBed::start_real().await,
        }
    }

    /// A bed on kcp-sim with this configuration (whatever the environment says).
    pub async fn start_sim(config: kcp_sim::Config) -> Result<KcpBed> {
        kcp_sim::Server::start(config)
            .await
            .map(KcpBed::Sim)
            .map_err(|e| Error::config("starting kcp-sim", e))
    }

    /// A bed on the shared real kcp: a fresh workspace under `root`, Ready.
    pub async fn start_real() -> Result<KcpBed> {
        let kcp = tokio::task::spawn_blocking(shared_kcp)
            .await
            .map_err(|e| Error::config("starting the shared kcp", e))??;
        let name = format!("e2e-{:08x}", fastrand::u32(..));
        let root = kcp.admin_at("root").client()?;
        // `universal` allows any child type (root's default, `organization`, allows only `universal`).
        let universal = WorkspaceTypeReference {
            name: "universal".to_string(),
            path: Some("root".to_string()),
        };
        create_workspace(&KubeObjectClient::new(root), &name, Some(universal)).await?;
        Ok(KcpBed::Real {
            kcp,
            root: format!("root:{name}"),
        })
    }

    /// Which backend this bed runs on.
    pub fn backend(&self) -> Backend {
        match self {
            KcpBed::Sim(_) => Backend::Sim,
            KcpBed::Real { .. } => Backend::Real,
        }
    }

    /// The test's root workspace path: `root` on kcp-sim, `root:e2e-<random>` on real kcp.
    pub fn root(&self) -> &str {
        match self {
            KcpBed::Sim(_) => "root",
            KcpBed::Real { root, .. } => root,
        }
    }

    /// `root:<name>`-style paths relative to the test's root: `path("alpha")` is the child
    /// workspace `alpha` of [`Self::root`].
    pub fn path(&self, child: &str) -> String {
        format!("{}:{child}", self.root())
    }

    /// The kcp-sim server, for what only it offers (fault injection, request accounting).
    pub fn sim(&self) -> Option<&kcp_sim::Server> {
        match self {
            KcpBed::Sim(sim) => Some(sim),
            KcpBed::Real { .. } => None,
        }
    }

    /// An admin client configuration for the workspace (or logical cluster) `path`.
    pub async fn config(&self, path: &str) -> Result<kube::Config> {
        match self {
            KcpBed::Sim(sim) => sim
                .kube_config(path)
                .map_err(|e| Error::config(format!("a kcp-sim client for {path}"), e)),
            KcpBed::Real { kcp, .. } => kcp.admin_at(path).config(),
        }
    }

    /// The admin endpoint (URL, CA, token) of `path` on the real kcp.
    pub fn real_endpoint(&self, path: &str) -> Option<Endpoint> {
        match self {
            KcpBed::Sim(_) => None,
            KcpBed::Real { kcp, .. } => Some(kcp.admin_at(path)),
        }
    }

    /// Writes `<dir>/<name>.kubeconfig`, an admin kubeconfig whose one context addresses the
    /// workspace `path`, for a process a test starts with `--kubeconfig`; returns its path.
    pub fn write_kubeconfig(&self, dir: &Path, name: &str, path: &str) -> Result<PathBuf> {
        match self {
            KcpBed::Sim(sim) => {
                let file = dir.join(format!("{name}.kubeconfig"));
                sim.write_kubeconfig(&file, &[path])
                    .map_err(|e| Error::config(format!("a kcp-sim kubeconfig for {path}"), e))?;
                Ok(file)
            }
            KcpBed::Real { kcp, .. } => {
                crate::kubeconfig::write_file(dir, name, &kcp.admin_at(path))
            }
        }
    }

    /// An admin `ObjectClient` for `path`: in-process on kcp-sim, over HTTPS on real kcp.
    pub async fn object_client(&self, path: &str) -> Result<Arc<dyn ObjectClient>> {
        match self {
            KcpBed::Sim(sim) => Ok(Arc::new(sim.object_client(path))),
            KcpBed::Real { kcp, .. } => {
                let client = kcp.admin_at(path).client()?;
                Ok(Arc::new(KubeObjectClient::new(client)))
            }
        }
    }

    /// An admin client into the workspace `path` while it initializes, as an initializer reaches
    /// it: on real kcp through the initializingworkspaces virtual workspace of `initializer`
    /// (the workspace itself refuses every request until Ready), on kcp-sim directly.
    pub async fn initializing_client(
        &self,
        initializer: &str,
        path: &str,
    ) -> Result<Arc<dyn ObjectClient>> {
        match self {
            KcpBed::Sim(_) => self.object_client(path).await,
            KcpBed::Real { kcp, .. } => {
                let cluster = self.scheduled_cluster(path).await?;
                let url = format!(
                    "{}/services/initializingworkspaces/{initializer}/clusters/{cluster}",
                    kcp.base_url
                );
                let client = kcp.admin.at(url).client()?;
                Ok(Arc::new(KubeObjectClient::new(client)))
            }
        }
    }

    /// The logical cluster behind the workspace `path`, once it is scheduled (at most 30 s).
    pub async fn scheduled_cluster(&self, path: &str) -> Result<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(cluster) = self.logical_cluster(path).await? {
                return Ok(cluster);
            }
            if Instant::now() > deadline {
                return Err(Error::config(
                    format!("workspace {path}"),
                    "not scheduled to a logical cluster after 30 s",
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The logical cluster behind the workspace `path` (`None` while it is not scheduled).
    pub async fn logical_cluster(&self, path: &str) -> Result<Option<String>> {
        match self {
            KcpBed::Sim(sim) => Ok(sim.logical_cluster(path)),
            KcpBed::Real { .. } => {
                let Some((parent, name)) = path.rsplit_once(':') else {
                    return Ok(Some(path.to_string()));
                };
                let client = self.object_client(parent).await?;
                let workspace: Option<Workspace> = client
                    .get_typed(None, name)
                    .await
                    .map_err(|e| request_error(format!("getting workspace {path}"), e))?;
                Ok(workspace.and_then(|w| w.spec.cluster))
            }
        }
    }

    /// `Ok` while the servers run; on the real backend a dead kcp fails with its log's tail.
    pub fn check_alive(&self) -> Result<()> {
        match self {
            KcpBed::Sim(_) => Ok(()),
            KcpBed::Real { kcp, .. } => kcp.check_alive(),
        }
    }
}

/// A Kubernetes API server for one test: a fresh kcp-sim in Kubernetes mode, or the shared real
/// kube-apiserver with a namespace prefix of the test's own.
#[derive(Debug)]
pub enum KubeBed {
    /// A kcp-sim server of this test alone.
    Sim(kcp_sim::Server),
    /// The shared kube-apiserver.
    Real {
        /// The shared server.
        kube: &'static SharedKube,
        /// A prefix for this test's namespaces (`e2e-<random>`).
        prefix: String,
    },
}

impl KubeBed {
    /// A bed on the backend `KCP_RS_BACKEND` names.
    pub async fn start() -> Result<KubeBed> {
        match Backend::from_env()? {
            Backend::Sim => kcp_sim::Server::start(kcp_sim::Config::default())
                .await
                .map(KubeBed::Sim)
                .map_err(|e| Error::config("starting kcp-sim", e)),
            Backend::Real => {
                let kube = tokio::task::spawn_blocking(shared_kube)
                    .await
                    .map_err(|e| Error::config("starting the shared kube-apiserver", e))??;
                Ok(KubeBed::Real {
                    kube,
                    prefix: format!("e2e-{:08x}", fastrand::u32(..)),
                })
            }
        }
    }

    /// A namespace name of this test's own: `name` on kcp-sim, `<prefix>-<name>` on the real
    /// server (created by the caller like any namespace).
    pub fn namespace(&self, name: &str) -> String {
        match self {
            KubeBed::Sim(_) => name.to_string(),
            KubeBed::Real { prefix, .. } => format!("{prefix}-{name}"),
        }
    }

    /// The kcp-sim server, for what only it offers.
    pub fn sim(&self) -> Option<&kcp_sim::Server> {
        match self {
            KubeBed::Sim(sim) => Some(sim),
            KubeBed::Real { .. } => None,
        }
    }

    /// An admin client configuration.
    pub async fn config(&self) -> Result<kube::Config> {
        match self {
            KubeBed::Sim(sim) => sim
                .kube_config("")
                .map_err(|e| Error::config("a kcp-sim client", e)),
            KubeBed::Real { kube, .. } => kube.admin.config(),
        }
    }

    /// Writes `<dir>/<name>.kubeconfig`, an admin kubeconfig of the server, for a process a
    /// test starts with `--kubeconfig`; returns its path.
    pub fn write_kubeconfig(&self, dir: &Path, name: &str) -> Result<PathBuf> {
        match self {
            KubeBed::Sim(sim) => {
                let file = dir.join(format!("{name}.kubeconfig"));
                sim.write_kubeconfig(&file, &[])
                    .map_err(|e| Error::config("a kcp-sim kubeconfig", e))?;
                Ok(file)
            }
            KubeBed::Real { kube, .. } => crate::kubeconfig::write_file(dir, name, &kube.admin),
        }
    }

    /// An admin `ObjectClient`: in-process on kcp-sim, over HTTPS on the real server.
    pub async fn object_client(&self) -> Result<Arc<dyn ObjectClient>> {
        match self {
            KubeBed::Sim(sim) => Ok(Arc::new(sim.object_client(""))),
            KubeBed::Real { kube, .. } => Ok(Arc::new(KubeObjectClient::new(kube.admin.client()?))),
        }
    }

    /// `Ok` while the servers run; on the real backend a dead peer fails with its log's tail.
    pub fn check_alive(&self) -> Result<()> {
        match self {
            KubeBed::Sim(_) => Ok(()),
            KubeBed::Real { kube, .. } => kube.check_alive(),
        }
    }
}

fn request_error(what: String, source: kcp_core::Error) -> Error {
    Error::Request {
        what,
        source: Box::new(source),
    }
}

/// Creates the workspace `name` (of type `type_`, else the parent's default child type) in the
/// workspace the client addresses, waits until it is Ready, and returns its logical cluster.
pub async fn create_workspace(
    client: &dyn ObjectClient,
    name: &str,
    type_: Option<WorkspaceTypeReference>,
) -> Result<String> {
    let mut workspace = Workspace::new(
        name,
        WorkspaceSpec {
            type_,
            ..WorkspaceSpec::default()
        },
    );
    workspace.metadata.labels = Some([("kcp-rs.io/e2e".to_string(), "true".to_string())].into());
    let deadline = Instant::now() + Duration::from_secs(60);
    // Right after kcp starts, its admission may not know the bootstrap WorkspaceTypes yet
    // (403 "... not found", "unable to find inherited workspace type ..."): retry that until
    // the deadline.
    let not_known_yet = |e: &kcp_core::Error| {
        let text = e.to_string();
        text.contains("not found") || text.contains("unable to find")
    };
    loop {
        match client.create_typed(&workspace).await {
            Ok(_) => break,
            Err(e) if not_known_yet(&e) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(request_error(format!("creating workspace {name}"), e)),
        }
    }
    loop {
        let live: Option<Workspace> = client
            .get_typed(None, name)
            .await
            .map_err(|e| request_error(format!("getting workspace {name}"), e))?;
        let phase = live.as_ref().and_then(|w| w.status.as_ref()?.phase.clone());
        if phase.as_deref() == Some("Ready") {
            let cluster = live.and_then(|w| w.spec.cluster).unwrap_or_default();
            return Ok(cluster);
        }
        if Instant::now() > deadline {
            return Err(Error::config(
                format!("workspace {name}"),
                format!("not Ready after 60 s (phase {phase:?})"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
