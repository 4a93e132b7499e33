//! The real-server test bed of kcp-rs.
//!
//! kcp-sim answers like kcp and Kubernetes as far as we know them; this crate is how the project
//! checks that against the real thing. It
//! - builds the **real peers** (kcp, kube-apiserver, kube-controller-manager, etcd) and
//!   **upstream's Go tools** from wrapper Go modules pinned in `peers/PINS`, once, into a cache
//!   ([`go_build`]);
//! - starts them on 127.0.0.1 only, on free ports, in a temporary directory, and waits until they
//!   serve ([`kcp`], [`kube_apiserver`]); one kcp and one kube-apiserver per test binary, shared
//!   by its tests ([`real`]); no peer outlives the test binary ([`process`]) and its data is
//!   removed after it (`janitor`);
//! - writes the playground's kubeconfig contract (contexts `kcp` and `kube`) and hands out
//!   restricted token identities ([`kubeconfig`], [`identities`]);
//! - runs Cluster API's core manager beside the real kube-apiserver with Cluster API's own CRDs
//!   and webhooks, read from its Go module ([`cluster_api`]);
//! - gives the end-to-end suites one handle over either backend, picked by `KCP_RS_BACKEND`
//!   ([`backend`]): [`KcpBed`] (a fresh kcp-sim or a fresh workspace on real kcp) and [`KubeBed`].
//!
//! ```no_run
//! # async fn example() -> Result<(), kcp_testbed::Error> {
//! use kcp_testbed::KcpBed;
//!
//! // kcp-sim by default; the shared real kcp with KCP_RS_BACKEND=real.
//! let bed = KcpBed::start().await?;
//! let root = bed.object_client(bed.root()).await?;
//! # let _ = root;
//! # Ok(())
//! # }
//! ```

pub mod backend;
pub mod cluster_api;
pub mod conformance;
pub mod error;
pub mod etcd;
pub mod go_build;
pub mod identities;
mod janitor;
pub mod kcp;
pub mod kube_apiserver;
pub mod kube_controller_manager;
pub mod kubeconfig;
mod log_tail;
pub mod loopback;
pub mod pins;
pub mod ports;
mod probe;
pub mod process;
pub mod real;
pub mod shim;

pub use backend::{BACKEND_VAR, Backend, KcpBed, KubeBed, create_workspace};
pub use error::{Error, Result};
pub use etcd::Etcd;
pub use kubeconfig::Endpoint;
pub use real::{shared_kcp, shared_kube, write_kubeconfig};
