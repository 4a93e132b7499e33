//! # kcp-manager
//!
//! The process glue every kcp-rs binary shares, so that each `main` is a few lines and an
//! embedder can build a binary of their own the same way:
//!
//! - [`CommonFlags`]: `--kubeconfig`, `--metrics-address`, `--health-address`,
//!   `--enable-leader-election` with the Lease's namespace and name, `--log-debug`,
//!   `--log-format json|console`, with the upstream spellings as aliases and the upstream
//!   address forms (`:8085`, `localhost:8085`, `0` to disable) ([`address`]).
//! - [`Manager`]: one lifecycle: logging, the `/metrics` server over one `prometheus-client`
//!   registry, `/healthz` and `/readyz` ([`Readiness`]: Ready once the caches synced, and a
//!   standby replica waiting for the Lease is Ready too), leader election on a Lease through
//!   `kube-lease-manager`, SIGTERM/Ctrl-C drain, and a non-zero exit after losing the Lease so
//!   the orchestrator restarts the process as a candidate.
//! - [`print_crds`]: the `crds` subcommand every binary has.
//!
//! ```no_run
//! use clap::Parser;
//! #[derive(Parser)]
//! struct Flags {
//!     #[command(flatten)]
//!     common: kcp_manager::CommonFlags,
//! }
//! # async fn demo() -> Result<(), kcp_manager::Error> {
//! let defaults = kcp_manager::Defaults::new("my-controller").metrics_address("127.0.0.1:8085");
//! let flags: Flags = kcp_manager::parse_flags(&defaults);
//! let mut manager = kcp_manager::Manager::new(&defaults, flags.common)?;
//! let readiness = manager.readiness();
//! let kube = manager.kube_config().await?;
//! manager
//!     .run(Some(kube::Client::try_from(kube.clone()).map_err(kcp_manager::Error::client)?), |shutdown| async move {
//!         readiness.set_synced(true); // once the controller's caches are synced
//!         shutdown.await;
//!         Ok(())
//!     })
//!     .await
//! # }
//! ```

pub mod address;
pub mod error;
pub mod flags;
pub mod health;
pub mod http;
pub mod leader;
pub mod lifecycle;
pub mod logging;
pub mod metrics_auth;
pub mod process_metrics;
pub mod tls;
pub mod zap;

pub use error::Error;
pub use flags::{CommonFlags, Defaults, parse_flags};
pub use health::Readiness;
pub use leader::LeaderElection;
pub use lifecycle::{Manager, Shutdown, print_crds, shutdown_signal};
pub use logging::{LogFormat, init_logging, init_logging_at};

/// Re-exported so binaries register their metrics in the same registry type.
pub use prometheus_client;
