//! The playground: two API servers, every system running against them, their examples
//! applied, and a live table until everything converged.
//!
//! - `kcp`: kcp (root workspace), the current context of `kcp-playground.kubeconfig`.
//! - `kube`: a plain Kubernetes API server: the service cluster of kcp-sync and the
//!   management cluster of kcp-operator and the Cluster API providers.
//!
//! Both are kcp-sim servers by default ([`Backend::Sim`]); with [`Backend::Real`] they are the
//! real kcp and kube-apiserver (+ etcd) of `kcp-testbed`, built from their Go modules. No kubelet
//! runs there, so the playground marks Deployments and StatefulSets on kube available itself
//! (as envtest users do), and says so.
//!
//! Each system is a [`Section`] in its own module: it installs its CRDs, starts its controller
//! against the servers, applies its examples, reports a table and whether it converged, and
//! stops with the playground. [`sections`] lists them; `--only` picks some.

pub mod agent;
pub mod init;
pub mod kind;
pub mod kubeconfig;
pub mod operator;
pub mod sync;
pub mod workloads;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::future::BoxFuture;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{KubeObjectClient, ObjectClient, ObjectClientExt as _, parse_manifests};
use kcp_sim::{Config, Server};
pub use kcp_testbed::Backend;
use kcp_testbed::Endpoint;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What can go wrong while the playground starts or waits.
#[derive(Debug, thiserror::Error)]
pub enum PlaygroundError {
    /// A kcp-sim server failed to start or answer.
    #[error("kcp-sim: {0}")]
    Sim(#[from] kcp_sim::Error),
    /// A real server of the test bed failed to build, start or answer.
    #[error("real backend: {0}")]
    Real(#[from] kcp_testbed::Error),
    /// Reading, planning or applying example objects failed.
    #[error("{context}: {source}")]
    Core {
        /// What the playground was doing.
        context: String,
        /// The underlying error.
        source: kcp_core::Error,
    },
    /// Applying a file left objects pending or failed.
    #[error("applying {file}: {report}")]
    Apply {
        /// The example file.
        file: String,
        /// The apply report.
        report: String,
    },
    /// Writing the kubeconfig failed.
    #[error("writing {path}: {source}")]
    Kubeconfig {
        /// The kubeconfig path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `--only` named a system the playground does not have.
    #[error("--only: unknown system {name:?}; known: {known}")]
    UnknownSection {
        /// The name given.
        name: String,
        /// The names the playground knows, comma separated.
        known: String,
    },
    /// A section's controller stopped or failed.
    #[error("{section}: {message}")]
    Section {
        /// The section's name.
        section: &'static str,
        /// What happened.
        message: String,
    },
    /// Not everything converged in time.
    #[error("not converged after {seconds}s (see the table above)")]
    Timeout {
        /// The timeout.
        seconds: u64,
    },
}

/// One API server of the playground: a kcp-sim server, or a real server of the test bed.
pub enum Side {
    /// kcp-sim, in-process.
    Sim(Server),
    /// The test bed's real kcp (`kcp: true`, workspaces under `/clusters/<path>`) or
    /// kube-apiserver, as its admin.
    Real {
        /// `https://127.0.0.1:<port>`.
        base_url: String,
        /// The admin (server URL ignored: see [`Side::cluster_url`]).
        admin: Endpoint,
        /// Whether this is kcp.
        kcp: bool,
    },
}

impl Side {
    /// The server's base URL.
    pub fn url(&self) -> &str {
        match self {
            Side::Sim(sim) => sim.url(),
            Side::Real { base_url, .. } => base_url,
        }
    }

    /// The URL of a workspace (kcp) or of the server (kube; `cluster` ignored).
    pub fn cluster_url(&self, cluster: &str) -> String {
        match self {
            Side::Sim(sim) => sim.cluster_url(cluster),
            Side::Real { base_url, kcp, .. } if *kcp => format!("{base_url}/clusters/{cluster}"),
            Side::Real { base_url, .. } => base_url.clone(),
        }
    }

    /// A client configuration for a workspace (kcp) or the server (kube).
    pub fn kube_config(&self, cluster: &str) -> Result<kube::Config, PlaygroundError> {
        match self {
            Side::Sim(sim) => Ok(sim.kube_config(cluster)?),
            Side::Real { admin, .. } => Ok(admin.at(self.cluster_url(cluster)).config()?),
        }
    }

    /// A kube client for a workspace (kcp) or the server (kube).
    pub fn client(&self, cluster: &str) -> Result<kube::Client, PlaygroundError> {
        match self {
            Side::Sim(sim) => Ok(sim.client(cluster)?),
            Side::Real { admin, .. } => Ok(admin.at(self.cluster_url(cluster)).client()?),
        }
    }

    /// An `ObjectClient` for a workspace (kcp) or the server (kube): in-process on kcp-sim.
    pub fn object_client(&self, cluster: &str) -> Result<Arc<dyn ObjectClient>, PlaygroundError> {
        match self {
            Side::Sim(sim) => Ok(Arc::new(sim.object_client(cluster))),
            Side::Real { .. } => Ok(Arc::new(KubeObjectClient::new(self.client(cluster)?))),
        }
    }

    /// Stops a kcp-sim server; a real server stops with the process.
    pub async fn shutdown(self) {
        if let Side::Sim(sim) = self {
            sim.shutdown().await;
        }
    }
}

/// The two API servers every section runs against.
pub struct Playground {
    /// Which servers these are.
    pub backend: Backend,
    /// kcp (workspaces under `root`).
    pub kcp: Side,
    /// A plain Kubernetes API server: service and management cluster.
    pub kube: Side,
    /// Where the kubeconfig with contexts `kcp` and `kube` was written.
    pub kubeconfig: PathBuf,
    /// Marks workloads on the real kube-apiserver available (no kubelet runs there).
    workloads: Option<JoinHandle<()>>,
}

impl Playground {
    /// Starts both servers and writes the kubeconfig.
    pub async fn start(backend: Backend, kubeconfig: &Path) -> Result<Self, PlaygroundError> {
        match backend {
            Backend::Sim => Self::start_sim(kubeconfig).await,
            Backend::Real => Self::start_real(kubeconfig).await,
        }
    }

    async fn start_sim(kubeconfig: &Path) -> Result<Self, PlaygroundError> {
        // Workloads report ready as on a cluster with kubelets, so operators converge.
        let workloads = Some(Duration::from_millis(300));
        let kcp = Server::start(Config {
            simulate_workloads: workloads,
            ..Config::kcp()
        })
        .await?;
        let kube = Server::start(Config {
            simulate_workloads: workloads,
            ..Config::default()
        })
        .await?;
        let text = kubeconfig::render(&kcp.cluster_url("root"), kube.url());
        std::fs::write(kubeconfig, text).map_err(|source| PlaygroundError::Kubeconfig {
            path: kubeconfig.display().to_string(),
            source,
        })?;
        Ok(Self {
            backend: Backend::Sim,
            kcp: Side::Sim(kcp),
            kube: Side::Sim(kube),
            kubeconfig: kubeconfig.to_path_buf(),
            workloads: None,
        })
    }

    /// The test bed's real kcp and kube-apiserver (built from their Go modules on first use,
    /// which takes minutes), running until this process exits.
    async fn start_real(kubeconfig: &Path) -> Result<Self, PlaygroundError> {
        let path = kubeconfig.to_path_buf();
        let written = tokio::task::spawn_blocking(move || kcp_testbed::write_kubeconfig(&path))
            .await
            .map_err(|e| PlaygroundError::Section {
                section: "playground",
                message: format!("starting the real servers: {e}"),
            })?;
        written?;
        let kcp = kcp_testbed::shared_kcp()?;
        let kube = kcp_testbed::shared_kube()?;
        let kube_side = Side::Real {
            base_url: kube.admin.url.clone(),
            admin: kube.admin.clone(),
            kcp: false,
        };
        let settler = kube_side.object_client("")?;
        let workloads = tokio::spawn(workloads::mark_available(settler));
        Ok(Self {
            backend: Backend::Real,
            kcp: Side::Real {
                base_url: kcp.base_url.clone(),
                admin: kcp.admin.clone(),
                kcp: true,
            },
            kube: kube_side,
            kubeconfig: kubeconfig.to_path_buf(),
            workloads: Some(workloads),
        })
    }

    /// Stops both servers (kcp-sim) or lets them stop with the process (real).
    pub async fn shutdown(self) {
        if let Some(task) = self.workloads {
            task.abort();
        }
        self.kcp.shutdown().await;
        self.kube.shutdown().await;
    }
}

/// A controller running in a task until [`Running::stop`].
pub struct Running<E> {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), E>>,
}

impl<E: Send + 'static> Running<E> {
    /// Spawns `start(shutdown)`; `shutdown` completes when [`Running::stop`] is called.
    pub fn spawn<F, Fut>(start: F) -> Self
    where
        F: FnOnce(BoxFuture<'static, ()>) -> Fut,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
    {
        let (stop, mut stopped) = watch::channel(false);
        let shutdown = async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        let task = tokio::spawn(start(Box::pin(shutdown)));
        Running { stop, task }
    }

    /// Whether the controller stopped on its own.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Asks the controller to stop and waits up to 10 s for it to drain.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// What a section shows in the live table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionStatus {
    /// Lines of the section's table (a header line first).
    pub lines: Vec<String>,
    /// Everything the section set out to do has converged.
    pub converged: bool,
}

/// One system in the playground.
#[async_trait]
pub trait Section: Send {
    /// The name `--only` uses.
    fn name(&self) -> &'static str;
    /// Installs CRDs, starts the controller and applies the examples.
    async fn start(&mut self, playground: &Playground) -> Result<(), PlaygroundError>;
    /// The section's table now; an error when its controller stopped.
    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError>;
    /// What the section created and kubectl commands to look at it, once converged.
    async fn summary(&self, playground: &Playground) -> Result<Vec<String>, PlaygroundError>;
    /// Stops the controller, letting in-flight work drain.
    async fn stop(&mut self);
}

/// Every system the playground can run, in start order.
pub fn sections() -> Vec<Box<dyn Section>> {
    vec![
        Box::new(init::InitSection::default()),
        Box::new(sync::SyncSection::default()),
        Box::new(kind::KindSection::default()),
        Box::new(agent::AgentSection::default()),
        Box::new(operator::OperatorSection::default()),
    ]
}

/// The sections `only` names (all when empty), in start order.
pub fn select(only: &[String]) -> Result<Vec<Box<dyn Section>>, PlaygroundError> {
    let all = sections();
    let known: Vec<&'static str> = all.iter().map(|s| s.name()).collect();
    if let Some(unknown) = only.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(PlaygroundError::UnknownSection {
            name: unknown.clone(),
            known: known.join(", "),
        });
    }
    Ok(all
        .into_iter()
        .filter(|s| only.is_empty() || only.iter().any(|n| n == s.name()))
        .collect())
}

/// Applies a YAML stream through the apply engine (dependencies first), naming the file in
/// errors.
pub async fn apply_yaml(
    client: &dyn ObjectClient,
    file: &str,
    yaml: &str,
) -> Result<(), PlaygroundError> {
    let plan = plan_yaml(file, yaml)?;
    apply_plan_within(client, file, &plan, Duration::from_secs(30)).await
}

fn plan_yaml(file: &str, yaml: &str) -> Result<ApplyPlan, PlaygroundError> {
    let objects = parse_manifests(file, yaml).map_err(|source| PlaygroundError::Core {
        context: format!("reading {file}"),
        source,
    })?;
    plan_objects(file, objects)
}

fn plan_objects(file: &str, objects: Vec<DynamicObject>) -> Result<ApplyPlan, PlaygroundError> {
    ApplyPlan::build(objects, &RuleSet::default()).map_err(|source| PlaygroundError::Core {
        context: format!("planning {file}"),
        source,
    })
}

/// Waits until the workspaces `names` of the workspace `root` addresses are Ready: a real kcp
/// refuses every request into a workspace until then (kcp-sim makes them Ready at once).
pub async fn wait_workspaces_ready(
    root: &dyn ObjectClient,
    names: &[&str],
    within: Duration,
) -> Result<(), PlaygroundError> {
    let deadline = Instant::now() + within;
    for name in names {
        loop {
            let workspace: Option<kcp_core::kcp::Workspace> = root
                .get_typed(None, name)
                .await
                .map_err(|source| PlaygroundError::Core {
                    context: format!("reading workspace {name}"),
                    source,
                })?;
            let phase = workspace.and_then(|w| w.status?.phase);
            if phase.as_deref() == Some("Ready") {
                break;
            }
            if Instant::now() > deadline {
                return Err(PlaygroundError::Section {
                    section: "playground",
                    message: format!(
                        "workspace {name} not Ready after {} s (phase {phase:?})",
                        within.as_secs()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// Applies objects through the apply engine. Objects of a kind the server does not serve yet are
/// applied again for up to 30 s: a real API server serves a new CRD's kind a moment after the
/// CRD is created (kcp-sim at once).
pub async fn apply_objects(
    client: &dyn ObjectClient,
    file: &str,
    objects: Vec<DynamicObject>,
) -> Result<(), PlaygroundError> {
    let plan = plan_objects(file, objects)?;
    apply_plan_within(client, file, &plan, Duration::from_secs(30)).await
}

/// Applies a YAML stream once: objects of a kind not served yet are an `Apply` error at once
/// (for callers that try again on their next tick).
pub async fn apply_yaml_once(
    client: &dyn ObjectClient,
    file: &str,
    yaml: &str,
) -> Result<(), PlaygroundError> {
    let plan = plan_yaml(file, yaml)?;
    apply_plan_within(client, file, &plan, Duration::ZERO).await
}

async fn apply_plan_within(
    client: &dyn ObjectClient,
    file: &str,
    plan: &ApplyPlan,
    within: Duration,
) -> Result<(), PlaygroundError> {
    let report = Applier::new(client, ApplierConfig::new("kcp-playground"))
        .apply_until_settled(plan, within)
        .await;
    if report.is_complete() {
        println!("applied {file}: {report}");
        return Ok(());
    }
    Err(PlaygroundError::Apply {
        file: file.to_string(),
        report: format!("{report} ({})", report.unfinished().join("; ")),
    })
}

/// Starts the sections, prints the live table until all converged (or `timeout`), then the
/// summary. The sections keep running; the caller stops them.
pub async fn converge(
    playground: &Playground,
    sections: &mut [Box<dyn Section>],
    timeout: Duration,
) -> Result<(), PlaygroundError> {
    for section in sections.iter_mut() {
        section.start(playground).await?;
    }
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let mut table = String::new();
        let mut converged = true;
        for section in sections.iter_mut() {
            let status = section.status(playground).await?;
            converged &= status.converged;
            for line in status.lines {
                table.push_str(&line);
                table.push('\n');
            }
        }
        // Printed when it changed; the timestamp alone is no change.
        if table != last {
            print!("\n[{:>5.1}s]\n{table}", started.elapsed().as_secs_f64());
            last = table;
        }
        if converged {
            break;
        }
        if started.elapsed() > timeout {
            return Err(PlaygroundError::Timeout {
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "\neverything converged after {:.1}s",
        started.elapsed().as_secs_f64()
    );
    for section in sections.iter() {
        println!("\n{}:", section.name());
        for line in section.summary(playground).await? {
            println!("  {line}");
        }
    }
    Ok(())
}
