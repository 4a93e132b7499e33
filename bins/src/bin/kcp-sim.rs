//! kcp-sim as a process, for the CI of any language: an in-memory Kubernetes (`--mode kube`,
//! the default) or kcp (`--mode kcp`) API server on loopback, with an optional kubeconfig for
//! kubectl and client libraries, workload simulation and fault injection.
//!
//! With `--tls` it serves HTTPS, as the real servers do, with a certificate signed by a CA of
//! its own, which the kubeconfig trusts and `--ca-file` writes.
//!
//! Once it listens it writes the kubeconfig (if `--kubeconfig` is given), then prints one line,
//! `kcp-sim serving <url>`, to stdout, so a script can wait for that line and read the URL from
//! it. It serves until SIGTERM or SIGINT, then stops (open watches end) and exits 0. Logs go to
//! stderr (`--log-format`, `RUST_LOG`). Bad flags exit 2 with clap's message naming the flag;
//! a failure to listen or to write the kubeconfig exits 1.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};
use kcp_manager::LogFormat;
use kcp_sim::{Config, ErrorRule, FaultConfig, Server, Verb};

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeFlag {
    /// One Kubernetes cluster (no `/clusters` prefix).
    Kube,
    /// kcp: logical clusters under `/clusters/<name or path>`, starting with `root`.
    Kcp,
}

/// `--fault-error-verbs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum VerbFlag {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
}

impl From<VerbFlag> for Verb {
    fn from(verb: VerbFlag) -> Self {
        match verb {
            VerbFlag::Get => Verb::Get,
            VerbFlag::List => Verb::List,
            VerbFlag::Watch => Verb::Watch,
            VerbFlag::Create => Verb::Create,
            VerbFlag::Update => Verb::Update,
            VerbFlag::Patch => Verb::Patch,
            VerbFlag::Delete => Verb::Delete,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "kcp-sim",
    version,
    about = "An in-memory Kubernetes or kcp API server for tests: prints `kcp-sim serving <url>` \
             once it listens, serves until SIGTERM or SIGINT."
)]
struct Flags {
    /// Which API server to simulate.
    #[arg(long, value_enum, default_value = "kube")]
    mode: ModeFlag,
    /// IP:PORT to listen on; port 0 picks a free port. There is no authentication: keep it on
    /// loopback unless the network is yours.
    #[arg(long, default_value = "127.0.0.1:0")]
    address: SocketAddr,
    /// Write a kubeconfig here once listening: context `kubernetes` (kube mode) or `root`
    /// (kcp mode, server `<url>/clusters/root`), the current context, token `kcp-sim`.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Serve HTTPS, as the real servers do, with a certificate signed by a CA made at start:
    /// the kubeconfig trusts it (`certificate-authority-data`), `--ca-file` writes it for other
    /// clients. kubectl sends a `--token` only over HTTPS.
    #[arg(long)]
    tls: bool,
    /// Write the CA certificate (PEM) that signs the serving certificate here once listening.
    #[arg(long, value_name = "PATH", requires = "tls")]
    ca_file: Option<PathBuf>,
    /// Simulated kcp shards (kcp mode): each listens on its own free port, and workspaces are
    /// placed on them round-robin.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    shards: u16,
    /// Mark Deployments and StatefulSets ready and available this long after each spec change
    /// (e.g. `300ms`, `2s`), as on a cluster with kubelets. Off unless given.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    simulate_workloads: Option<Duration>,
    /// Delay every request by this much (e.g. `50ms`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    fault_latency: Option<Duration>,
    /// Delay every request by a random extra amount below this (e.g. `20ms`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    fault_jitter: Option<Duration>,
    /// Fail this fraction of requests (0 to 1) with `--fault-error-code`.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    fault_error_rate: Option<f64>,
    /// The HTTP code of injected failures (400 to 599); kube clients retry 429, 503 and 504.
    #[arg(
        long,
        value_name = "CODE",
        default_value_t = 500,
        requires = "fault_error_rate",
        value_parser = clap::value_parser!(u16).range(400..=599)
    )]
    fault_error_code: u16,
    /// Inject failures only for these verbs (comma separated); every verb if not given.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "VERBS",
        requires = "fault_error_rate"
    )]
    fault_error_verbs: Vec<VerbFlag>,
    /// Inject failures only for these resources, as `plural` or `plural.group` (comma
    /// separated, e.g. `configmaps,deployments.apps`); every resource if not given.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "RESOURCES",
        requires = "fault_error_rate"
    )]
    fault_error_resources: Vec<String>,
    /// Log format on stderr: `console` or `json` (`RUST_LOG` sets the level, `info` by default).
    #[arg(long, default_value = "console", value_name = "FORMAT")]
    log_format: LogFormat,
}

impl Flags {
    /// The simulator's settings, or a usage error naming the flag at fault.
    fn config(&self) -> Result<Config, clap::Error> {
        let mut config = match self.mode {
            ModeFlag::Kube => Config::default(),
            ModeFlag::Kcp => Config::kcp(),
        };
        if self.shards > 1 && self.mode == ModeFlag::Kube {
            return Err(Flags::command().error(
                ErrorKind::ArgumentConflict,
                "--shards needs --mode kcp (a Kubernetes server has no shards)",
            ));
        }
        config.address = self.address;
        config.tls = self.tls;
        config.shards = usize::from(self.shards);
        config.simulate_workloads = self.simulate_workloads;
        config.faults = FaultConfig {
            latency: self.fault_latency.unwrap_or_default(),
            jitter: self.fault_jitter.unwrap_or_default(),
            errors: self
                .fault_error_rate
                .map(|rate| {
                    ErrorRule::new(self.fault_error_code, rate)
                        .verbs(self.fault_error_verbs.iter().map(|v| Verb::from(*v)))
                        .resources(self.fault_error_resources.iter().cloned())
                })
                .into_iter()
                .collect(),
        };
        Ok(config)
    }
}

/// A Go-style duration: `0`, or numbers with units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`,
/// e.g. `300ms`, `1.5s`, `1m30s`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = |why: &str| format!("{text:?} is not a duration ({why}; e.g. 300ms, 2s, 1m30s)");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(invalid("empty"));
    }
    let mut nanos = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| invalid("a number without a unit"))?;
        let (number, after) = rest.split_at(number_end);
        let value: f64 = number
            .parse()
            .map_err(|_| invalid("expected a number before each unit"))?;
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        let nanos_per_unit = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(invalid(&format!("unknown unit {unit:?}"))),
        };
        nanos += value * nanos_per_unit;
        rest = next;
    }
    if !nanos.is_finite() || nanos >= u64::MAX as f64 {
        return Err(invalid("out of range"));
    }
    Ok(Duration::from_nanos(nanos.round() as u64))
}

/// A probability in `[0, 1]`.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(format!("{text:?} is not a rate between 0 and 1 (e.g. 0.1)")),
    }
}

/// SIGTERM and SIGINT, listened for from before the URL is printed, so a signal sent as soon
/// as a script read the URL stops the server cleanly rather than killing the process.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The name of the first signal received.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// Logs to stderr at `info` (`RUST_LOG` overrides), coloured only on a terminal: CI logs get
/// plain text.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Console => builder.try_init(),
    };
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags = Flags::parse();
    let config = match flags.config() {
        Ok(config) => config,
        Err(err) => err.exit(),
    };
    init_logging(flags.log_format);
    match serve(&flags, config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kcp-sim: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(flags: &Flags, config: Config) -> Result<(), String> {
    let mut signals = Signals::listen().map_err(|e| format!("listening for signals: {e}"))?;
    if !config.address.ip().is_loopback() {
        tracing::warn!(
            address = %config.address,
            "listening beyond loopback: kcp-sim has no authentication, anyone reaching it may \
             read and write everything"
        );
    }
    let sim = Server::start(config).await.map_err(|e| match e {
        kcp_sim::Error::Bind { source } => {
            format!("--address {}: cannot listen: {source}", flags.address)
        }
        other => other.to_string(),
    })?;
    if let Some(path) = &flags.kubeconfig {
        sim.write_kubeconfig(path, &[])
            .map_err(|e| format!("--kubeconfig: {e}"))?;
    }
    if let (Some(path), Some(ca)) = (&flags.ca_file, sim.ca_pem()) {
        std::fs::write(path, ca).map_err(|e| format!("--ca-file {}: {e}", path.display()))?;
    }
    let mut stdout = std::io::stdout().lock();
    // The line scripts wait for; a closed stdout does not stop the server.
    let _ = writeln!(stdout, "kcp-sim serving {}", sim.url()).and_then(|()| stdout.flush());
    drop(stdout);
    tracing::info!(
        urls = ?sim.shard_urls(),
        kubeconfig = ?flags.kubeconfig,
        "serving until SIGTERM or SIGINT"
    );
    let signal = signals.recv().await;
    tracing::info!(signal, "stopping");
    sim.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Result<Flags, clap::Error> {
        Flags::try_parse_from(std::iter::once("kcp-sim").chain(args.iter().copied()))
    }

    #[test]
    fn durations_read_like_go() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        for bad in ["", "5", "5x", "ms", "-1s", "1..2s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults_are_a_kube_server_on_loopback_without_faults() {
        let config = flags(&[]).unwrap().config().unwrap();
        assert_eq!(config.mode, kcp_sim::Mode::Kubernetes);
        assert_eq!(config.address, "127.0.0.1:0".parse().unwrap());
        assert_eq!(config.faults, FaultConfig::default());
        assert_eq!((config.shards, config.simulate_workloads), (1, None));
    }

    #[test]
    fn fault_flags_map_onto_one_error_rule_and_the_latency() {
        let config = flags(&[
            "--mode=kcp",
            "--shards=2",
            "--simulate-workloads=300ms",
            "--fault-latency=50ms",
            "--fault-jitter=10ms",
            "--fault-error-rate=0.25",
            "--fault-error-code=429",
            "--fault-error-verbs=create,patch",
            "--fault-error-resources=configmaps,deployments.apps",
        ])
        .unwrap()
        .config()
        .unwrap();
        assert_eq!(config.mode, kcp_sim::Mode::Kcp);
        assert_eq!(config.shards, 2);
        assert_eq!(config.simulate_workloads, Some(Duration::from_millis(300)));
        assert_eq!(
            config.faults,
            FaultConfig {
                latency: Duration::from_millis(50),
                jitter: Duration::from_millis(10),
                errors: vec![
                    ErrorRule::new(429, 0.25)
                        .verbs([Verb::Create, Verb::Patch])
                        .resources(["configmaps", "deployments.apps"])
                ],
            }
        );
    }

    #[test]
    fn bad_flags_are_errors_naming_the_flag() {
        let message = |args: &[&str]| match flags(args).and_then(|f| f.config()) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(e) => e.to_string(),
        };
        for (args, flag) in [
            (&["--mode=etcd"][..], "--mode"),
            (&["--address=localhost"], "--address"),
            (&["--shards=0"], "--shards"),
            (&["--shards=2"], "--shards"),
            (&["--simulate-workloads=soon"], "--simulate-workloads"),
            (&["--fault-error-rate=2"], "--fault-error-rate"),
            (&["--fault-error-code=503"], "--fault-error-rate"),
            (
                &["--fault-error-rate=1", "--fault-error-code=200"],
                "--fault-error-code",
            ),
            (
                &["--fault-error-rate=1", "--fault-error-verbs=poke"],
                "--fault-error-verbs",
            ),
            (&["--log-format=xml"], "--log-format"),
        ] {
            let text = message(args);
            assert!(text.contains(flag), "{args:?}: {text}");
        }
    }
}
