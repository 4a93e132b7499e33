//! kcp-init: the kcp init-agent as a library.
//!
//! An `InitTarget` names a kcp `WorkspaceType` and lists sources (`InitTemplate`s). Every new
//! workspace of that type waits in phase `Initializing` until the agent has rendered the
//! templates for it, applied the objects through the initializingworkspaces virtual workspace
//! (one server-side-apply plan across all sources: CRDs before their resources, Namespaces
//! before their members, ...), and removed the type's initializer from its `LogicalCluster`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let kube = kube::Config::infer().await?;
//! let config = kcp_init::AgentConfig::new(kube, "root:init-agent");
//! kcp_init::run(config, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
//!
//! Layers: [`api`] (CRD types), [`render`] (pure template rendering), [`reconcile`] (one
//! cluster's initialization over `ObjectClient`s), [`objects`] (duplicates, `generateName`),
//! [`targets`] (which InitTargets act), [`runner`] (one InitTarget on kcp-core's runtime),
//! [`status`], [`controller`] (wiring), [`metrics`].

pub mod api;
pub mod controller;
pub mod error;
pub mod metrics;
pub mod objects;
pub mod reconcile;
pub mod render;
pub mod runner;
pub mod status;
pub mod supervisor;
pub mod targets;

pub use controller::{AgentConfig, run};
pub use metrics::Metrics;

pub use error::{Error, Result};
