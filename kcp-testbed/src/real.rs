//! The real servers of one test binary: one kcp and one kube-apiserver (+ etcd), each started on
//! first use and shared by every test of the binary, which isolate themselves by workspace and
//! namespace names (as upstream's e2e suites do). The processes stop when the binary exits,
//! however it exits (see [`crate::process`]).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::identities::Identities;
use crate::kcp::Kcp;
use crate::kube_apiserver::KubeApiServer;
use crate::kube_controller_manager::KubeControllerManager;
use crate::kubeconfig::{Endpoint, playground_kubeconfig};

/// The identities and token file both servers of this process read.
#[derive(Debug)]
pub struct Credentials {
    /// The admin and the restricted users.
    pub identities: Identities,
    /// The static token file.
    pub token_file: PathBuf,
    /// The directory every peer of this process keeps its data and log in.
    pub dir: PathBuf,
    /// Removes the peers' data once this process ends (see [`crate::janitor`]).
    _janitor: std::process::Child,
}

/// The shared kcp.
#[derive(Debug)]
pub struct SharedKcp {
    /// `https://127.0.0.1:<port>`.
    pub base_url: String,
    /// kcp's admin at `root` (kcp's own `system-admin`, whose token kcp mints at every start:
    /// it is refused after [`SharedKcp::restart_hard`]).
    pub admin: Endpoint,
    /// The token file's kcp administrator ([`crate::identities::KCP_ADMIN`], group
    /// `system:kcp:admin` as kcp's own `kcp-admin`) at `root`: the same rights and workspace
    /// ownership, and a token that outlives a restart of kcp. Fault tests use this one.
    pub durable_admin: Endpoint,
    /// Start to ready.
    pub ready_after: Duration,
    /// kcp's log.
    pub log: PathBuf,
    process: Mutex<Kcp>,
}

/// The shared kube-apiserver.
#[derive(Debug)]
pub struct SharedKube {
    /// The admin (`system:masters`).
    pub admin: Endpoint,
    /// Start to ready.
    pub ready_after: Duration,
    /// kube-apiserver's log.
    pub log: PathBuf,
    process: Mutex<KubeApiServer>,
}

/// A run's directory is `<temp>/kcp-testbed-<pid>-<random>`.
const RUN_DIR_PREFIX: &str = "kcp-testbed-";

static CREDENTIALS: OnceLock<std::result::Result<Credentials, String>> = OnceLock::new();
static KCP: OnceLock<std::result::Result<SharedKcp, String>> = OnceLock::new();
static KUBE: OnceLock<std::result::Result<SharedKube, String>> = OnceLock::new();
static KUBE_CONTROLLERS: OnceLock<std::result::Result<Mutex<KubeControllerManager>, String>> =
    OnceLock::new();

fn shared_error(what: &str, message: &str) -> Error {
    Error::config(format!("the shared {what}"), message)
}

/// This process's credentials and data directory (made on first use under the system temp
/// directory; when the process ends its data is removed and its logs kept for a day, so a
/// failed run's logs can be read).
pub fn credentials() -> Result<&'static Credentials> {
    CREDENTIALS
        .get_or_init(|| make_credentials().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|m| shared_error("test-bed credentials", m))
}

fn make_credentials() -> Result<Credentials> {
    let parent = std::env::temp_dir();
    crate::janitor::prune_finished_runs(&parent, RUN_DIR_PREFIX);
    let dir = parent.join(format!(
        "{RUN_DIR_PREFIX}{}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io("test bed", format!("creating {}", dir.display()), e))?;
    let janitor = crate::janitor::watch(&dir)
        .map_err(|e| Error::io("test bed", "starting the data directory's janitor", e))?;
    let identities = Identities::generate();
    let token_file = dir.join("tokens.csv");
    identities.write_token_file(&token_file)?;
    Ok(Credentials {
        identities,
        token_file,
        dir,
        _janitor: janitor,
    })
}

/// The kcp of this test binary, started on first use. Blocking (up to minutes on a first start):
/// it runs the start on a thread of its own, so it may be called from async code.
pub fn shared_kcp() -> Result<&'static SharedKcp> {
    KCP.get_or_init(|| {
        let started = credentials().and_then(|c| {
            let dir = c.dir.clone();
            let tokens = c.token_file.clone();
            on_thread(move || Kcp::start(&dir, &tokens))
        });
        started
            .map(|kcp| SharedKcp {
                base_url: kcp.base_url.clone(),
                admin: kcp.admin.clone(),
                durable_admin: kcp.admin.with_token(
                    &credentials()
                        .map(|c| c.identities.kcp_admin.token.clone())
                        .unwrap_or_default(),
                ),
                ready_after: kcp.ready_after,
                log: kcp.log().to_path_buf(),
                process: Mutex::new(kcp),
            })
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|m| shared_error("kcp", m))
}

/// The kube-apiserver of this test binary, started on first use (blocking, like [`shared_kcp`]).
pub fn shared_kube() -> Result<&'static SharedKube> {
    KUBE.get_or_init(|| {
        let started = credentials().and_then(|c| {
            let dir = c.dir.clone();
            let tokens = c.token_file.clone();
            let identities = c.identities.clone();
            on_thread(move || KubeApiServer::start(&dir, &identities, &tokens))
        });
        started
            .map(|kube| SharedKube {
                admin: Endpoint {
                    url: kube.url.clone(),
                    ca_pem: kube.ca_pem.clone(),
                    token: credentials()
                        .map(|c| c.identities.admin.token.clone())
                        .unwrap_or_default(),
                },
                ready_after: kube.ready_after,
                log: kube.log().to_path_buf(),
                process: Mutex::new(kube),
            })
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|m| shared_error("kube-apiserver", m))
}

/// The controllers a cluster runs beside [`shared_kube`] that its tests may need (the garbage
/// collector and the resource quota controller, both whichever a test names: each acts only on
/// what it is for), started on first use by a real kube-controller-manager and kept for the rest
/// of the test binary. Blocking, like [`shared_kube`].
pub fn shared_kube_controllers() -> Result<&'static SharedKube> {
    let kube = shared_kube()?;
    KUBE_CONTROLLERS
        .get_or_init(|| {
            let started = credentials().and_then(|c| {
                let dir = c.dir.clone();
                let admin = kube.admin.clone();
                on_thread(move || {
                    KubeControllerManager::start(
                        &dir,
                        &admin,
                        &["garbagecollector", "resourcequota"],
                    )
                })
            });
            started.map(Mutex::new).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|m| shared_error("kube-controller-manager", m))?;
    Ok(kube)
}

impl SharedKcp {
    /// The admin at the workspace `path`.
    pub fn admin_at(&self, path: &str) -> Endpoint {
        self.admin.at(format!("{}/clusters/{path}", self.base_url))
    }

    /// The durable admin (see [`SharedKcp::durable_admin`]) at the workspace `path`.
    pub fn durable_admin_at(&self, path: &str) -> Endpoint {
        self.durable_admin
            .at(format!("{}/clusters/{path}", self.base_url))
    }

    /// kcp's own `system-admin` as the running process minted it: [`SharedKcp::admin`] until
    /// the first [`SharedKcp::restart_hard`], the new one after it.
    pub fn current_admin(&self) -> Endpoint {
        match self.process.lock() {
            Ok(kcp) => kcp.admin.clone(),
            Err(poisoned) => poisoned.into_inner().admin.clone(),
        }
    }

    /// `Ok` while kcp runs; otherwise the error with the tail of its log.
    pub fn check_alive(&self) -> Result<()> {
        match self.process.lock() {
            Ok(mut kcp) => kcp.check_alive(),
            Err(poisoned) => poisoned.into_inner().check_alive(),
        }
    }
}

impl SharedKcp {
    /// Kills this binary's kcp with SIGKILL and starts it again on the same data and ports
    /// (fault tests; every other test of the binary sees the outage). Blocking, like
    /// [`shared_kcp`]. Returns the time from the kill to serving again.
    pub fn restart_hard(&self) -> Result<Duration> {
        let mut kcp = match self.process.lock() {
            Ok(kcp) => kcp,
            Err(poisoned) => poisoned.into_inner(),
        };
        let kcp: &mut Kcp = &mut kcp;
        std::thread::scope(|scope| {
            scope
                .spawn(|| kcp.restart_hard())
                .join()
                .unwrap_or_else(|_| Err(Error::config("kcp", "its restart panicked")))
        })
    }
}

impl SharedKube {
    /// Kills this binary's kube-apiserver and etcd with SIGKILL and starts both again on the
    /// same data and ports (fault tests). Blocking. Returns the time from the kill to ready.
    pub fn restart_hard(&self) -> Result<Duration> {
        let mut kube = match self.process.lock() {
            Ok(kube) => kube,
            Err(poisoned) => poisoned.into_inner(),
        };
        let admin = self.admin.clone();
        let kube: &mut KubeApiServer = &mut kube;
        std::thread::scope(|scope| {
            scope
                .spawn(|| kube.restart_hard(&admin))
                .join()
                .unwrap_or_else(|_| Err(Error::config("kube-apiserver", "its restart panicked")))
        })
    }

    /// `Ok` while etcd and kube-apiserver run; otherwise the error with the dead one's log tail.
    pub fn check_alive(&self) -> Result<()> {
        match self.process.lock() {
            Ok(mut kube) => kube.check_alive(),
            Err(poisoned) => poisoned.into_inner().check_alive(),
        }
    }
}

/// Writes the playground contract (contexts `kcp` and `kube`, and one per restricted identity)
/// for the shared servers to `path`, starting them if needed.
pub fn write_kubeconfig(path: &Path) -> Result<()> {
    let kcp = shared_kcp()?;
    let kube = shared_kube()?;
    let identities = &credentials()?.identities;
    let document = playground_kubeconfig(&kcp.admin, &kube.admin, identities);
    let text = serde_saphyr::to_string(&document)
        .map_err(|e| Error::config("the test-bed kubeconfig", e))?;
    std::fs::write(path, text)
        .map_err(|e| Error::io("test bed", format!("writing {}", path.display()), e))
}

fn on_thread<T: Send + 'static>(start: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    std::thread::spawn(start).join().unwrap_or_else(|_| {
        Err(Error::config(
            "starting a peer",
            "the start thread panicked",
        ))
    })
}
