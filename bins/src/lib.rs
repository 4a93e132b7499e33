//! Process glue shared by the kcp-rs binaries: logging set-up, the metrics and health HTTP
//! server, shutdown signals, kubeconfig loading and Lease-based leader election.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What can stop a binary before its controllers run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag has a bad value.
    #[error("invalid flag --{flag}: {reason}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// Why.
        reason: String,
    },
    /// The kubeconfig could not be loaded.
    #[error("loading the kubeconfig {source_name}: {reason}")]
    Kubeconfig {
        /// Path, or "the environment".
        source_name: String,
        /// Why.
        reason: String,
    },
    /// An HTTP listener could not bind.
    #[error("binding {address}: {source}")]
    Bind {
        /// The address.
        address: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Leader election failed.
    #[error("leader election on Lease {namespace}/{name}: {reason}")]
    LeaderElection {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// Log output format (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable lines.
    Console,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(LogFormat::Json),
            "console" => Ok(LogFormat::Console),
            other => Err(format!("unknown log format {other:?} (json or console)")),
        }
    }
}

/// Installs the global tracing subscriber (stderr). `RUST_LOG` overrides the level.
pub fn init_logging(format: LogFormat, debug: bool) {
    let default = if debug { "debug" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A subscriber already installed (tests) is fine.
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Console => builder.try_init(),
    };
}

/// Resolves when the process gets SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Loads a kube configuration: `--kubeconfig` if given, else `KUBECONFIG`, in-cluster config or
/// `~/.kube/config` (kube's inference).
pub async fn load_kube_config(kubeconfig: Option<&str>) -> Result<kube::Config, Error> {
    match kubeconfig.filter(|p| !p.is_empty()) {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig {
                source_name: path.to_string(),
                reason: e.to_string(),
            })?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| Error::Kubeconfig {
                    source_name: path.to_string(),
                    reason: e.to_string(),
                })
        }
        None => kube::Config::infer().await.map_err(|e| Error::Kubeconfig {
            source_name: "the environment".into(),
            reason: e.to_string(),
        }),
    }
}

/// The answer of one plain-text endpoint.
pub type Endpoint = Arc<dyn Fn() -> (StatusCode, String) + Send + Sync>;

/// Parses a listen address flag: `""` or `"0"` disables the listener.
pub fn listen_address(flag: &'static str, value: &str) -> Result<Option<SocketAddr>, Error> {
    if value.is_empty() || value == "0" {
        return Ok(None);
    }
    value.parse().map(Some).map_err(|e| Error::Flag {
        flag,
        reason: format!("{value:?} is not a host:port address: {e}"),
    })
}

/// Serves `routes` (path -> answer) over HTTP until `stop` turns true.
pub async fn serve_http(
    addr: SocketAddr,
    routes: Vec<(&'static str, Endpoint)>,
    mut stop: watch::Receiver<bool>,
) -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind {
            address: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| Error::Bind {
        address: addr.to_string(),
        source,
    })?;
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let routes = routes.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req: Request<Incoming>| {
                            let routes = routes.clone();
                            async move {
                                let (status, body) = routes
                                    .iter()
                                    .find(|(path, _)| *path == req.uri().path())
                                    .map(|(_, answer)| answer())
                                    .unwrap_or((StatusCode::NOT_FOUND, "not found\n".into()));
                                let mut resp = Response::new(Full::new(Bytes::from(body)));
                                *resp.status_mut() = status;
                                Ok::<_, Infallible>(resp)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
    });
    Ok(bound)
}

/// Settings of Lease-based leader election.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This process's identity.
    pub identity: String,
    /// How long a lease lasts without renewal.
    pub lease_duration: Duration,
    /// How often the holder renews.
    pub renew_every: Duration,
}

impl LeaderElection {
    /// Defaults: 15 s leases renewed every 5 s, identity from the host name and process id.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: format!("{host}-{}", std::process::id()),
            lease_duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
        }
    }

    fn error(&self, reason: String) -> Error {
        Error::LeaderElection {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            reason,
        }
    }

    /// Tries once to take or renew the lease; `true` when this process holds it.
    pub async fn try_acquire(&self, client: &kube::Client) -> Result<bool, Error> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        let now = jiff_now();
        let micro_now = now.to_string();
        let current = api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error(e.to_string()))?;
        let spec = json!({
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_duration.as_secs(),
            "renewTime": micro_now,
        });
        match current {
            None => {
                let lease: Lease = serde_json::from_value(json!({
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.lease_duration.as_secs(),
                        "acquireTime": micro_now, "renewTime": micro_now, "leaseTransitions": 0},
                }))
                .map_err(|e| self.error(e.to_string()))?;
                match api.create(&kube::api::PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(self.error(e.to_string())),
                }
            }
            Some(mut lease) => {
                let spec_now = lease.spec.clone().unwrap_or_default();
                let holder = spec_now.holder_identity.clone().unwrap_or_default();
                let expired = spec_now
                    .renew_time
                    .as_ref()
                    .map(|t| {
                        let age = now.duration_since(t.0);
                        let limit = spec_now
                            .lease_duration_seconds
                            .map(|s| jiff::SignedDuration::from_secs(i64::from(s)))
                            .unwrap_or(jiff::SignedDuration::from_secs(15));
                        age > limit
                    })
                    .unwrap_or(true);
                if holder != self.identity && !holder.is_empty() && !expired {
                    return Ok(false);
                }
                let mut new_spec: k8s_openapi::api::coordination::v1::LeaseSpec =
                    serde_json::from_value(spec).map_err(|e| self.error(e.to_string()))?;
                if holder != self.identity {
                    new_spec.acquire_time = new_spec.renew_time.clone();
                    new_spec.lease_transitions = Some(spec_now.lease_transitions.unwrap_or(0) + 1);
                } else {
                    new_spec.acquire_time = spec_now.acquire_time.clone();
                    new_spec.lease_transitions = spec_now.lease_transitions;
                }
                lease.spec = Some(new_spec);
                match api
                    .replace(&self.name, &kube::api::PostParams::default(), &lease)
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(self.error(e.to_string())),
                }
            }
        }
    }

    /// Waits until this process holds the lease, then keeps renewing it in the background.
    /// The returned receiver turns `true` if the lease is lost.
    pub async fn acquire(&self, client: kube::Client) -> Result<watch::Receiver<bool>, Error> {
        loop {
            match self.try_acquire(&client).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(err) => tracing::warn!(error = %err, "leader election attempt failed"),
            }
            tokio::time::sleep(self.renew_every).await;
        }
        tracing::info!(lease = %self.name, identity = %self.identity, "became leader");
        let (lost_tx, lost_rx) = watch::channel(false);
        let me = self.clone();
        tokio::spawn(async move {
            let mut last_renewal = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(me.renew_every).await;
                match me.try_acquire(&client).await {
                    Ok(true) => last_renewal = tokio::time::Instant::now(),
                    Ok(false) => break,
                    Err(err) => {
                        tracing::warn!(error = %err, "renewing the lease failed");
                        if last_renewal.elapsed() > me.lease_duration {
                            break;
                        }
                    }
                }
            }
            tracing::error!(lease = %me.name, "lost the leader lease");
            let _ = lost_tx.send(true);
        });
        Ok(lost_rx)
    }
}

fn jiff_now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_formats_parse_case_insensitively() {
        assert_eq!("Console".parse::<LogFormat>(), Ok(LogFormat::Console));
        assert_eq!("JSON".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert!("xml".parse::<LogFormat>().is_err());
    }

    #[test]
    fn zero_or_empty_disables_a_listener() {
        assert_eq!(listen_address("metrics-address", "0").unwrap(), None);
        assert_eq!(listen_address("metrics-address", "").unwrap(), None);
        assert!(listen_address("metrics-address", "nonsense").is_err());
        assert_eq!(
            listen_address("metrics-address", "127.0.0.1:8085").unwrap(),
            Some("127.0.0.1:8085".parse().unwrap())
        );
    }
}
