//! The flags every kcp-rs binary shares, with per-binary defaults.
//!
//! Defaults differ per tool (the init-agent serves metrics on `127.0.0.1:8085`, the operator on
//! `:8080`; each has its own Lease), so [`parse_flags`] fills them in from [`Defaults`] before
//! parsing, and `--help` shows the binary's own defaults.

use clap::{Args, Parser};

use crate::logging::LogFormat;

/// The flags of every binary; `#[command(flatten)]` them into the binary's own.
#[derive(Debug, Clone, Args)]
pub struct CommonFlags {
    /// Kubeconfig (default: $KUBECONFIG, in-cluster config, ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<String>,
    /// Prometheus /metrics listener: host:port, :port (every interface), or 0 to disable.
    #[arg(long, alias = "metrics-bind-address")]
    pub metrics_address: String,
    /// Serve /metrics over HTTPS, only to a bearer token a TokenReview authenticates and a
    /// SubjectAccessReview allows to get /metrics (controller-runtime's --metrics-secure).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub metrics_secure: bool,
    /// With --metrics-secure: the directory of the serving certificate and key; empty: a
    /// self-signed certificate made at start.
    #[arg(long, default_value = "")]
    pub metrics_cert_path: String,
    /// The certificate's file name in --metrics-cert-path.
    #[arg(long, default_value = "tls.crt")]
    pub metrics_cert_name: String,
    /// The key's file name in --metrics-cert-path.
    #[arg(long, default_value = "tls.key")]
    pub metrics_cert_key: String,
    /// /healthz and /readyz listener: host:port, :port, or 0 / empty to disable.
    #[arg(long, alias = "health-probe-bind-address")]
    pub health_address: String,
    /// Act only while holding the leader-election Lease.
    #[arg(long, alias = "leader-elect", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_leader_election: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long)]
    pub leader_election_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long)]
    pub leader_election_id: String,
    /// How long a Lease lasts without renewal, in seconds.
    #[arg(long, default_value_t = 15)]
    pub leader_election_lease_duration: u64,
    /// How long before expiry the leader renews, in seconds.
    #[arg(long, default_value_t = 5)]
    pub leader_election_renew_grace: u64,
    /// Debug logging.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub log_debug: bool,
    /// Log format: json or console (case-insensitive).
    #[arg(long, default_value = "json")]
    pub log_format: LogFormat,
    /// controller-runtime's development mode: console format, debug level.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub zap_devel: Option<bool>,
    /// controller-runtime's log encoder: json or console (over --log-format).
    #[arg(long)]
    pub zap_encoder: Option<String>,
    /// controller-runtime's log level: debug, info, error, panic, or a verbosity > 0.
    #[arg(long)]
    pub zap_log_level: Option<String>,
    /// controller-runtime's stack trace level: accepted (Rust logs carry no stack traces).
    #[arg(long)]
    pub zap_stacktrace_level: Option<String>,
    /// controller-runtime's time encoding: accepted (timestamps are RFC 3339).
    #[arg(long)]
    pub zap_time_encoding: Option<String>,
}

/// A binary's name and its defaults for the common flags.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// The binary's name (logs, default Lease name, Event source).
    pub name: String,
    /// Default `--metrics-address`.
    pub metrics_address: String,
    /// Default `--health-address`.
    pub health_address: String,
    /// Default `--metrics-secure`.
    pub metrics_secure: bool,
    /// Default `--leader-election-namespace`.
    pub lease_namespace: String,
    /// Default `--leader-election-id`.
    pub lease_name: String,
    /// Whether the Lease lives where the pod runs: then `--leader-election-namespace` defaults
    /// to the pod's namespace (`POD_NAMESPACE`, else the in-cluster ServiceAccount's namespace
    /// file), as controller-runtime's does, and to `lease_namespace` only outside a cluster.
    pub lease_in_pod_namespace: bool,
}

impl Defaults {
    /// Defaults for `name`: metrics on `127.0.0.1:8080`, health disabled, Lease `name` in
    /// `default`.
    pub fn new(name: &str) -> Self {
        Defaults {
            name: name.to_string(),
            metrics_address: "127.0.0.1:8080".into(),
            health_address: String::new(),
            metrics_secure: false,
            lease_namespace: "default".into(),
            lease_name: name.to_string(),
            lease_in_pod_namespace: false,
        }
    }

    /// Sets the default metrics address.
    pub fn metrics_address(mut self, address: &str) -> Self {
        self.metrics_address = address.into();
        self
    }

    /// Sets the default health address.
    pub fn health_address(mut self, address: &str) -> Self {
        self.health_address = address.into();
        self
    }

    /// The Lease lives in the pod's namespace when there is one (see
    /// [`Defaults::lease_in_pod_namespace`]).
    pub fn lease_in_pod_namespace(mut self) -> Self {
        self.lease_in_pod_namespace = true;
        self
    }

    /// The default `--leader-election-namespace`, reading the pod's namespace where it applies.
    pub fn lease_namespace_default(&self) -> String {
        self.lease_namespace_with(
            std::env::var("POD_NAMESPACE").ok(),
            std::path::Path::new(IN_CLUSTER_NAMESPACE),
        )
    }

    /// [`Defaults::lease_namespace_default`] with the pod's environment and namespace file given.
    pub fn lease_namespace_with(&self, env: Option<String>, file: &std::path::Path) -> String {
        let pod = self
            .lease_in_pod_namespace
            .then(|| pod_namespace(env, file));
        pod.flatten()
            .unwrap_or_else(|| self.lease_namespace.clone())
    }

    /// Sets the default of `--metrics-secure`.
    pub fn metrics_secure(mut self, secure: bool) -> Self {
        self.metrics_secure = secure;
        self
    }

    /// Sets the default Lease namespace and name.
    pub fn lease(mut self, namespace: &str, name: &str) -> Self {
        self.lease_namespace = namespace.into();
        self.lease_name = name.into();
        self
    }
}

/// Where a pod's ServiceAccount namespace is mounted.
pub const IN_CLUSTER_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The pod's namespace: `env` (`POD_NAMESPACE`) when set, else the content of `file`.
pub fn pod_namespace(env: Option<String>, file: &std::path::Path) -> Option<String> {
    env.filter(|n| !n.trim().is_empty())
        .or_else(|| std::fs::read_to_string(file).ok())
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
}

/// Parses the process arguments into `F` with `defaults` filled in; exits with clap's message
/// on bad flags, as every CLI does.
pub fn parse_flags<F: Parser>(defaults: &Defaults) -> F {
    parse_flags_from(defaults, std::env::args_os()).unwrap_or_else(|err| err.exit())
}

/// [`parse_flags`] over given arguments (the first is the program name).
pub fn parse_flags_from<F: Parser, I, T>(defaults: &Defaults, args: I) -> Result<F, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let with_default = |value: &str| {
        let value = value.to_string();
        move |arg: clap::Arg| arg.required(false).default_value(value)
    };
    let command = F::command()
        .mut_arg("metrics_address", with_default(&defaults.metrics_address))
        .mut_arg("health_address", with_default(&defaults.health_address))
        .mut_arg(
            "metrics_secure",
            with_default(if defaults.metrics_secure {
                "true"
            } else {
                "false"
            }),
        )
        .mut_arg(
            "leader_election_namespace",
            with_default(&defaults.lease_namespace_default()),
        )
        .mut_arg("leader_election_id", with_default(&defaults.lease_name));
    let mut matches = command.try_get_matches_from(args)?;
    F::from_arg_matches_mut(&mut matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        common: CommonFlags,
    }

    fn defaults() -> Defaults {
        Defaults::new("tool")
            .metrics_address("127.0.0.1:8085")
            .lease("le-ns", "lease-id")
    }

    fn parse(args: &[&str]) -> CommonFlags {
        let mut all = vec!["tool"];
        all.extend_from_slice(args);
        parse_flags_from::<Flags, _, _>(&defaults(), all)
            .unwrap()
            .common
    }

    #[test]
    fn the_binary_defaults_fill_the_unset_flags() {
        let f = parse(&[]);
        assert_eq!(f.metrics_address, "127.0.0.1:8085");
        assert_eq!(f.health_address, "");
        assert_eq!(
            (
                f.leader_election_namespace.as_str(),
                f.leader_election_id.as_str()
            ),
            ("le-ns", "lease-id")
        );
        assert!(!f.enable_leader_election);
        assert!(!f.metrics_secure);
        assert_eq!(f.log_format, LogFormat::Json);
    }

    #[test]
    fn the_pod_namespace_comes_from_the_environment_then_the_service_account_file() {
        let file = std::env::temp_dir().join(format!("pod-namespace-{}", std::process::id()));
        std::fs::write(&file, "from-file\n").unwrap();
        assert_eq!(
            pod_namespace(Some("from-env".into()), &file).as_deref(),
            Some("from-env")
        );
        assert_eq!(pod_namespace(None, &file).as_deref(), Some("from-file"));
        assert_eq!(
            pod_namespace(Some(" ".into()), &file).as_deref(),
            Some("from-file")
        );
        std::fs::remove_file(&file).unwrap();
        assert_eq!(pod_namespace(None, &file), None);
    }

    #[test]
    fn the_lease_follows_the_pod_and_outside_one_the_binarys_namespace() {
        let nowhere = std::path::Path::new("/nonexistent/namespace");
        let in_pod = Defaults::new("tool")
            .lease("tool-system", "id")
            .lease_in_pod_namespace();
        assert_eq!(
            in_pod.lease_namespace_with(Some("ops".into()), nowhere),
            "ops"
        );
        assert_eq!(in_pod.lease_namespace_with(None, nowhere), "tool-system");
        let elsewhere = Defaults::new("tool").lease("kcp-side", "id");
        assert_eq!(
            elsewhere.lease_namespace_with(Some("ops".into()), nowhere),
            "kcp-side"
        );
    }

    #[test]
    fn upstream_spellings_are_accepted_as_aliases() {
        let f = parse(&[
            "--leader-elect",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address",
            ":8081",
        ]);
        assert!(f.enable_leader_election);
        assert_eq!(f.metrics_address, ":8080");
        assert_eq!(f.health_address, ":8081");
    }

    #[test]
    fn boolean_flags_take_an_optional_value_as_go_flags_do() {
        assert!(!parse(&["--enable-leader-election=false"]).enable_leader_election);
        assert!(parse(&["--log-debug"]).log_debug);
    }

    #[test]
    fn the_log_format_is_case_insensitive() {
        assert_eq!(
            parse(&["--log-format", "Console"]).log_format,
            LogFormat::Console
        );
    }
}
