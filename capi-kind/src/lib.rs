//! capi-kind: a Cluster API infrastructure provider that creates kind clusters.
//!
//! Two APIs are served ([`api`]): upstream's `KINDCluster` (`infrastructure.cluster-k8s.io`,
//! kept wire-compatible with `sergenyalcin/cluster-api-provider-kind`) and a Cluster API
//! InfraCluster `KindCluster` (`infrastructure.cluster.x-k8s.io`). For each object the
//! controller creates a kind cluster through a [`Provisioner`] (the `kind` CLI, or with the
//! `sim` feature an in-process kcp-sim server), in the background so that one slow create never
//! blocks the others, publishes its kubeconfig in a Secret, fills `controlPlaneEndpoint`, and
//! removes the cluster when the object is deleted. Clusters it did not create (no ownership
//! marker) are never adopted or deleted.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! let client = kube::Client::try_default().await?;
//! let provisioner = Arc::new(capi_kind::provisioner::KindCli::new("kind"));
//! let config = capi_kind::ControllerConfig::new(client, provisioner);
//! capi_kind::run(config, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
//!
//! Layers: [`api`] (CRD types), [`kind_config`] and [`secrets`] (pure renderers),
//! [`plan`] (what an object asks for, validated), [`status`] (phases and conditions),
//! [`provisioner`] (the trait and its implementations), [`creations`] (background creates),
//! [`reconcile`] and [`controller`] (wiring on `kube::runtime::Controller`).

pub mod api;
pub mod controller;
pub mod creations;
pub mod error;
pub mod kind_config;
pub mod kinds;
pub mod plan;
pub mod provisioner;
pub mod reconcile;
pub mod secrets;
pub mod status;

pub use controller::{ControllerConfig, run};
pub use error::{Error, Result};
pub use provisioner::Provisioner;
