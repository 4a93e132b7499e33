//! One process lifecycle for every binary: logging, metrics and health servers, leader
//! election, the component run, SIGTERM drain, and the exit status.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use http::StatusCode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::address::parse_listen_address;
use crate::error::Error;
use crate::flags::{CommonFlags, Defaults};
use crate::health::Readiness;
use crate::http::{Endpoint, Limits, OPENMETRICS, Secured, TEXT, serve, serve_with};
use crate::leader::LeaderElection;
use crate::logging::init_logging_at;
use crate::metrics_auth::KubeAuthorizer;
use crate::tls::{CertificateSource, server_config};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

/// The future a component gets: it completes when the component should stop (SIGTERM, Ctrl-C,
/// or the Lease was lost) and then drain.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A binary's process: see the [crate documentation](crate).
pub struct Manager {
    name: String,
    flags: CommonFlags,
    registry: Arc<Mutex<Registry>>,
    /// `leader_election_master_status{name}`: 1 while this replica holds the Lease.
    leading: Family<LeaseLabels, Gauge>,
    readiness: Readiness,
    stop_servers: CancellationToken,
}

impl Manager {
    /// Sets up logging and validates the address flags (a bad one is an error naming it).
    pub fn new(defaults: &Defaults, flags: CommonFlags) -> Result<Self, Error> {
        let logs = crate::zap::log_settings(&flags)?;
        init_logging_at(logs.format, logs.level);
        for warning in &logs.warnings {
            tracing::warn!("{warning}");
        }
        parse_listen_address("metrics-address", &flags.metrics_address)?;
        parse_listen_address("health-address", &flags.health_address)?;
        let mut registry = Registry::default();
        registry.register_collector(Box::new(crate::process_metrics::ProcessCollector));
        let leading = Family::<LeaseLabels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Whether this replica holds the leader-election Lease (1) or not (0)",
            leading.clone(),
        );
        kcp_core::rest_metrics::register(&mut registry);
        Ok(Manager {
            name: defaults.name.clone(),
            flags,
            registry: Arc::new(Mutex::new(registry)),
            leading,
            readiness: Readiness::new(),
            stop_servers: CancellationToken::new(),
        })
    }

    /// The process's one metrics registry, for components to register their series in.
    pub fn with_registry<T>(&self, f: impl FnOnce(&mut Registry) -> T) -> T {
        match self.registry.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// The readiness flags; the component sets `synced` once its caches are.
    pub fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// The common flags.
    pub fn flags(&self) -> &CommonFlags {
        &self.flags
    }

    /// Loads the kubeconfig: `--kubeconfig`, else kube's inference (`KUBECONFIG`, in-cluster,
    /// `~/.kube/config`).
    pub async fn kube_config(&self) -> Result<kube::Config, Error> {
        load_kube_config(self.flags.kubeconfig.as_deref()).await
    }

    /// Serves metrics and health, waits for the Lease when leader election is on (Ready as a
    /// standby meanwhile), runs `component` until SIGTERM/Ctrl-C or the Lease is lost, and
    /// returns after it drained. Losing the Lease is an error, so the process exits non-zero.
    /// `lease_client` is where the Lease lives; it is only used with leader election.
    pub async fn run<F, Fut>(
        self,
        lease_client: Option<kube::Client>,
        component: F,
    ) -> Result<(), Error>
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = Result<(), Box<dyn std::error::Error + Send + Sync>>>,
    {
        self.start_servers().await?;
        let result = self.lead_and_run(lease_client, component).await;
        self.readiness.set_synced(false);
        self.stop_servers.cancel();
        result
    }

    async fn lead_and_run<F, Fut>(
        &self,
        lease_client: Option<kube::Client>,
        component: F,
    ) -> Result<(), Error>
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = Result<(), Box<dyn std::error::Error + Send + Sync>>>,
    {
        let election = self.flags.enable_leader_election.then(|| {
            let mut e = LeaderElection::new(
                &self.flags.leader_election_namespace,
                &self.flags.leader_election_id,
            );
            e.duration_seconds = self.flags.leader_election_lease_duration;
            e.grace_seconds = self.flags.leader_election_renew_grace;
            e
        });
        let Some(election) = election else {
            return component(Box::pin(shutdown_signal()))
                .await
                .map_err(Error::Component);
        };
        let client = lease_client.ok_or_else(|| Error::LeaderElection {
            namespace: election.namespace.clone(),
            name: election.name.clone(),
            reason: "no client for the Lease's cluster".into(),
        })?;
        self.readiness.set_standby(true);
        let status = self.leading.get_or_create(&LeaseLabels {
            name: election.name.clone(),
        });
        status.set(0);
        tracing::info!(lease = %election.name, namespace = %election.namespace, "waiting for leadership");
        let leadership = tokio::select! {
            acquired = election.acquire(client) => acquired,
            _ = shutdown_signal() => { self.readiness.set_standby(false); return Ok(()); }
        };
        self.readiness.set_standby(false);
        let mut leadership = leadership?;
        status.set(1);
        let lost = CancellationToken::new();
        let (lost_flag, signal) = (lost.clone(), lost.clone());
        let watch_lease = async move {
            leadership.lost().await;
            status.set(0);
            lost_flag.cancel();
            leadership
        };
        let shutdown: Shutdown = Box::pin(async move {
            tokio::select! {
                _ = shutdown_signal() => {}
                _ = signal.cancelled() => tracing::error!("leadership lost; stopping"),
            }
        });
        let (result, leadership) = tokio::select! {
            result = component(shutdown) => (result, None),
            leadership = watch_lease => (Ok(()), Some(leadership)),
        };
        // The lease watch finished first only when the Lease was lost; the component then
        // still drains through its shutdown future, which has fired.
        let _ = leadership;
        result.map_err(Error::Component)?;
        if lost.is_cancelled() {
            return Err(Error::LeaseLost {
                namespace: election.namespace.clone(),
                name: election.name.clone(),
            });
        }
        Ok(())
    }

    async fn start_servers(&self) -> Result<(), Error> {
        if let Some(addr) = parse_listen_address("metrics-address", &self.flags.metrics_address)? {
            let registry = self.registry.clone();
            let metrics: Endpoint = Arc::new(move || {
                let text = match registry.lock() {
                    Ok(g) => kcp_core::runtime::metrics::encode(&g),
                    Err(poisoned) => kcp_core::runtime::metrics::encode(&poisoned.into_inner()),
                };
                (StatusCode::OK, OPENMETRICS, text)
            });
            let secured = if self.flags.metrics_secure {
                Some(self.secured().await?)
            } else {
                None
            };
            let secure = secured.is_some();
            let routes = vec![("/metrics", metrics)];
            let stop = self.stop_servers.clone();
            let bound = serve_with(addr, routes, Limits::default(), secured, stop).await?;
            tracing::info!(address = %bound, secure, "serving metrics");
        }
        if let Some(addr) = parse_listen_address("health-address", &self.flags.health_address)? {
            let readiness = self.readiness.clone();
            let healthz: Endpoint = Arc::new(|| (StatusCode::OK, TEXT, "ok\n".into()));
            let readyz: Endpoint = Arc::new(move || {
                let status = if readiness.is_ready() {
                    StatusCode::OK
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                (status, TEXT, format!("{}\n", readiness.describe()))
            });
            let routes = vec![
                ("/healthz", healthz),
                ("/livez", healthz_alias()),
                ("/readyz", readyz),
            ];
            let bound = serve(addr, routes, self.stop_servers.clone()).await?;
            tracing::info!(address = %bound, "serving health checks");
        }
        tracing::info!(binary = %self.name, version = env!("CARGO_PKG_VERSION"), "started");
        Ok(())
    }
}

impl Manager {
    /// TLS and the TokenReview/SubjectAccessReview guard of `--metrics-secure`, asking the
    /// API server of `--kubeconfig`.
    async fn secured(&self) -> Result<Secured, Error> {
        let source = CertificateSource {
            dir: self.flags.metrics_cert_path.clone(),
            cert_name: self.flags.metrics_cert_name.clone(),
            key_name: self.flags.metrics_cert_key.clone(),
        };
        let tls = server_config(&source)?;
        let client = kube::Client::try_from(self.kube_config().await?).map_err(Error::client)?;
        Ok(Secured {
            tls,
            guard: Arc::new(KubeAuthorizer::new(client)),
        })
    }
}

fn healthz_alias() -> Endpoint {
    Arc::new(|| (StatusCode::OK, TEXT, "ok\n".into()))
}

/// Loads a kube configuration: `kubeconfig` if given, else kube's inference.
pub async fn load_kube_config(kubeconfig: Option<&str>) -> Result<kube::Config, Error> {
    let Some(path) = kubeconfig.filter(|p| !p.is_empty()) else {
        return kube::Config::infer().await.map_err(|e| Error::Kubeconfig {
            source_name: "the environment".into(),
            reason: e.to_string(),
        });
    };
    let error = |e: &dyn std::fmt::Display| Error::Kubeconfig {
        source_name: path.to_string(),
        reason: e.to_string(),
    };
    let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| error(&e))?;
    kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| error(&e))
}

/// Resolves when the process gets SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The `crds` subcommand: prints the CRDs, or the error and exits 1.
pub fn print_crds<E: std::fmt::Display>(
    binary: &str,
    crds: Result<String, E>,
) -> std::process::ExitCode {
    use std::io::Write as _;
    match crds {
        // A reader that stops early (`| head`) closes the pipe: not worth a panic.
        Ok(yaml) => match std::io::stdout().lock().write_all(yaml.as_bytes()) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(_) => std::process::ExitCode::FAILURE,
        },
        Err(err) => {
            eprintln!("{binary}: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
