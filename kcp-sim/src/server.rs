//! Starting and stopping the simulator: [`Server::start`] binds [`Config::address`] (127.0.0.1
//! on a free port unless set; one listener per simulated shard), and hands out URLs,
//! kubeconfigs, kube clients and in-process clients.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::api::{Endpoint, PLAIN_CLUSTER, Sim, SimSettings};
use crate::client::SimClient;
use crate::error::{Error, Result};
use crate::faults::{FaultConfig, Faults};
use crate::http::{HttpSettings, handle};
use crate::resource::Flavor;
use crate::serving_ca::ServingCa;

/// Which API server to simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// One Kubernetes cluster, no `/clusters` prefix.
    #[default]
    Kubernetes,
    /// kcp: logical clusters under `/clusters/<name or path>`, `root` to start with.
    Kcp,
}

/// Settings of a simulator.
#[derive(Debug, Clone)]
pub struct Config {
    /// Kubernetes or kcp.
    pub mode: Mode,
    /// Faults in effect from the start.
    pub faults: FaultConfig,
    /// Writes kept for watches; a watch from an older resourceVersion gets 410 Gone.
    pub watch_history: usize,
    /// Events buffered per watcher; a watcher further behind is disconnected.
    pub watch_buffer: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// The longest a watch stays open when the client sets no timeout.
    pub max_watch: Duration,
    /// Simulated kcp shards: each gets its own listener, and WorkspaceTypes publish one virtual
    /// workspace URL per shard.
    pub shards: usize,
    /// Workload simulation ([`crate::workloads`]): Deployments and StatefulSets report their
    /// replicas ready and available this long after each spec change. Off (`None`) by default.
    pub simulate_workloads: Option<Duration>,
    /// Where the first shard listens: `127.0.0.1:0` (loopback, a free port) by default. Port 0
    /// picks a free port; further shards listen on the same IP, each on a free port. The URLs
    /// ([`Server::url`]) name the address bound, so an unspecified IP (`0.0.0.0`) appears in
    /// them as such.
    pub address: SocketAddr,
    /// Serve HTTPS with a certificate signed by a CA made at start ([`Server::ca_pem`]; kube
    /// clients, kubeconfigs and URLs from the server trust it), as the real servers serve only
    /// HTTPS, and authenticate bearer tokens as they do: a request with no token, or the
    /// kubeconfig's, acts as the admin; a ServiceAccount token kcp-sim signed acts as that
    /// ServiceAccount; any other token is kube's `401 Unauthorized`. Off by default: plain
    /// HTTP, where any token kcp-sim did not sign acts as the admin.
    pub tls: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mode: Mode::Kubernetes,
            faults: FaultConfig::default(),
            watch_history: 100_000,
            watch_buffer: 65_536,
            bookmark_interval: Duration::from_secs(5),
            max_watch: Duration::from_secs(1800),
            shards: 1,
            simulate_workloads: None,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: false,
        }
    }
}

impl Config {
    /// A kcp-mode configuration with the other settings at their defaults.
    pub fn kcp() -> Self {
        Self {
            mode: Mode::Kcp,
            ..Self::default()
        }
    }
}

/// A running simulator. Dropping it stops the server too; [`Server::shutdown`] waits for it.
#[derive(Debug)]
pub struct Server {
    sim: Arc<Sim>,
    urls: Vec<String>,
    mode: Mode,
    ca: Option<ServingCa>,
    tls: bool,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl Server {
    /// Starts a simulator on [`Config::address`] (by default 127.0.0.1, a free port per shard).
    pub async fn start(config: Config) -> Result<Server> {
        let shards = config.shards.max(1);
        // kcp publishes its CA in every namespace, so kcp mode has one even over plain HTTP.
        let ca = if config.tls || config.mode == Mode::Kcp {
            Some(ServingCa::generate(config.address.ip())?)
        } else {
            None
        };
        let scheme = if config.tls { "https" } else { "http" };
        let acceptor = match &ca {
            Some(ca) if config.tls => Some(TlsAcceptor::from(ca.tls())),
            _ => None,
        };
        let mut listeners = Vec::with_capacity(shards);
        let mut urls = Vec::with_capacity(shards);
        for shard in 0..shards {
            let port = if shard == 0 { config.address.port() } else { 0 };
            let listener = TcpListener::bind(SocketAddr::new(config.address.ip(), port))
                .await
                .map_err(|source| Error::Bind { source })?;
            let addr = listener
                .local_addr()
                .map_err(|source| Error::Bind { source })?;
            urls.push(format!("{scheme}://{addr}"));
            listeners.push(listener);
        }
        let flavor = match config.mode {
            Mode::Kubernetes => Flavor::Kubernetes,
            Mode::Kcp => Flavor::Kcp,
        };
        let settings = SimSettings {
            flavor,
            history: config.watch_history,
            watch_buffer: config.watch_buffer,
            root_ca: ca.as_ref().map(|ca| ca.ca_pem().to_string()),
            refuse_unknown_tokens: config.tls,
        };
        let sim = Arc::new(
            Sim::new(&settings, Faults::new(config.faults.clone()), urls.clone())
                .map_err(Error::Setup)?,
        );
        let (stop, _) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for (shard, listener) in listeners.into_iter().enumerate() {
            let http = Arc::new(HttpSettings {
                bookmark_interval: config.bookmark_interval,
                max_watch: config.max_watch,
                shard,
            });
            tasks.spawn(accept_loop(
                listener,
                acceptor.clone(),
                sim.clone(),
                http,
                stop.subscribe(),
            ));
        }
        if let Some(delay) = config.simulate_workloads {
            let kcp = config.mode == Mode::Kcp;
            tasks.spawn(crate::workloads::run(
                sim.clone(),
                kcp,
                delay,
                stop.subscribe(),
            ));
        }
        tracing::info!(url = %urls[0], mode = ?config.mode, "kcp-sim started");
        Ok(Server {
            sim,
            urls,
            mode: config.mode,
            ca,
            tls: config.tls,
            stop,
            tasks,
        })
    }

    /// The base URL (`http://127.0.0.1:<port>`, `https://` with [`Config::tls`]).
    pub fn url(&self) -> &str {
        &self.urls[0]
    }

    /// The base URL of every shard (the first is [`Self::url`]).
    pub fn shard_urls(&self) -> &[String] {
        &self.urls
    }

    /// The URL of a logical cluster (kcp mode), e.g. `http://127.0.0.1:1234/clusters/root`.
    pub fn cluster_url(&self, cluster: &str) -> String {
        match self.mode {
            Mode::Kubernetes => self.url().to_string(),
            Mode::Kcp => format!("{}/clusters/{cluster}", self.url()),
        }
    }

    /// The CA certificate (PEM) of the server: over HTTPS ([`Config::tls`]) it signs the
    /// serving certificate; in kcp mode it is published as `kube-root-ca.crt` in every
    /// namespace. `None` for a Kubernetes-mode server on plain HTTP.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca.as_ref().map(ServingCa::ca_pem)
    }

    /// The CA clients must trust: the server's over HTTPS, none over plain HTTP.
    fn trusted_ca(&self) -> Option<&ServingCa> {
        self.ca.as_ref().filter(|_| self.tls)
    }

    /// A kube client configuration for a cluster (ignored in Kubernetes mode); over HTTPS it
    /// trusts the server's CA.
    pub fn kube_config(&self, cluster: &str) -> Result<kube::Config> {
        let url = self.cluster_url(cluster);
        let uri = url.parse().map_err(|e| Error::Config {
            message: format!("{url} is not a valid URL: {e}"),
        })?;
        let mut config = kube::Config::new(uri);
        if let Some(ca) = self.trusted_ca() {
            config.root_cert = Some(vec![ca.ca_der().to_vec()]);
        }
        Ok(config)
    }

    /// A kube client for a cluster (ignored in Kubernetes mode).
    pub fn client(&self, cluster: &str) -> Result<kube::Client> {
        kube::Client::try_from(self.kube_config(cluster)?).map_err(|e| Error::Config {
            message: format!("building a kube client: {e}"),
        })
    }

    /// A kube client for a cluster as kcp's shard admin (a `system:masters` user): it
    /// impersonates `shard-admin` in that group. In kcp mode only such a user may list and
    /// watch every workspace at once (`/clusters/*`), as on kcp; [`Server::client`] acts as
    /// kcp-admin, whom kcp refuses there.
    pub fn shard_admin_client(&self, cluster: &str) -> Result<kube::Client> {
        let mut config = self.kube_config(cluster)?;
        config.auth_info.impersonate = Some(crate::kcp::SHARD_ADMIN_USER.to_string());
        config.auth_info.impersonate_groups = Some(vec!["system:masters".to_string()]);
        kube::Client::try_from(config).map_err(|e| Error::Config {
            message: format!("building a kube client: {e}"),
        })
    }

    /// A client for a cluster that calls the simulator in-process, without HTTP.
    pub fn object_client(&self, cluster: &str) -> SimClient {
        let endpoint = match self.mode {
            Mode::Kubernetes => Endpoint::Plain,
            Mode::Kcp => Endpoint::Cluster(cluster.to_string()),
        };
        SimClient::new(self.sim.clone(), endpoint)
    }

    /// An in-process client for an arbitrary endpoint (a virtual workspace view, say).
    pub fn object_client_at(&self, endpoint: Endpoint) -> SimClient {
        SimClient::new(self.sim.clone(), endpoint)
    }

    /// A kubeconfig document (YAML) with one context per entry of `clusters` (in Kubernetes mode
    /// the names only label contexts); the first is the current context.
    pub fn kubeconfig(&self, clusters: &[&str]) -> String {
        let names: Vec<&str> = if clusters.is_empty() {
            vec![match self.mode {
                Mode::Kubernetes => PLAIN_CLUSTER,
                Mode::Kcp => crate::kcp::ROOT,
            }]
        } else {
            clusters.to_vec()
        };
        let mut out = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for name in &names {
            out.push_str(&format!(
                "- name: {name}\n  cluster:\n    server: {}\n",
                self.cluster_url(name)
            ));
            if let Some(ca) = self.trusted_ca() {
                let data = base64::engine::general_purpose::STANDARD.encode(ca.ca_pem());
                out.push_str(&format!("    certificate-authority-data: {data}\n"));
            }
        }
        out.push_str(&format!(
            "users:\n- name: kcp-sim\n  user:\n    token: {}\ncontexts:\n",
            crate::tokens::KUBECONFIG_TOKEN
        ));
        for name in &names {
            out.push_str(&format!(
                "- name: {name}\n  context:\n    cluster: {name}\n    user: kcp-sim\n"
            ));
        }
        out.push_str(&format!("current-context: {}\n", names[0]));
        out
    }

    /// Writes [`Self::kubeconfig`] to a file.
    pub fn write_kubeconfig(&self, path: &Path, clusters: &[&str]) -> Result<()> {
        std::fs::write(path, self.kubeconfig(clusters)).map_err(|source| Error::Kubeconfig {
            path: path.display().to_string(),
            source,
        })
    }

    /// The live fault settings.
    pub fn faults(&self) -> &Faults {
        &self.sim.faults
    }

    /// The HTTP requests answered so far, by verb and resource (for profiling clients).
    pub fn requests(&self) -> &crate::requests::RequestStats {
        &self.sim.requests
    }

    /// Forgets the watch history: every watch from an older resourceVersion gets 410 Gone.
    pub fn compact(&self) {
        self.sim.write().compact();
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.sim.read().rv
    }

    /// The logical cluster name of a workspace path (kcp mode).
    pub fn logical_cluster(&self, path: &str) -> Option<String> {
        self.sim.read().resolve_cluster(path).map(String::from)
    }

    /// Stops accepting connections, ends open ones (watches included) and waits for that.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.tasks.abort_all();
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    sim: Arc<Sim>,
    http: Arc<HttpSettings>,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let stop_template = stop.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let (sim, http, acceptor) = (sim.clone(), http.clone(), acceptor.clone());
                let mut conn_stop = stop_template.clone();
                connections.spawn(async move {
                    let served = async {
                        match acceptor {
                            // A client that fails the handshake only loses its connection.
                            Some(acceptor) => {
                                if let Ok(stream) = acceptor.accept(stream).await {
                                    serve(stream, sim, http).await;
                                }
                            }
                            None => serve(stream, sim, http).await,
                        }
                    };
                    tokio::select! {
                        _ = served => {}
                        _ = conn_stop.wait_for(|s| *s) => {}
                    }
                });
            }
            _ = stop.wait_for(|s| *s) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// Serves one connection's HTTP/1.1 requests until it closes.
async fn serve<S>(stream: S, sim: Arc<Sim>, http: Arc<HttpSettings>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(sim.clone(), http.clone(), req));
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
