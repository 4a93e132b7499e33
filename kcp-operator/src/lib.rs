//! kcp-operator: run kcp installations (RootShard, Shard, FrontProxy, CacheServer,
//! VirtualWorkspace, Kubeconfig) on Kubernetes.
//!
//! Layers: [`api`] (CRD types and CRD YAML), [`render`] (pure functions, one per child object:
//! cert-manager Issuers and Certificates, Secrets, Deployments, Services, ConfigMaps).
//!
//! ```
//! let yaml = kcp_operator::api::crds_yaml().unwrap();
//! assert!(yaml.contains("rootshards.operator.kcp.io"));
//! ```

pub mod addresser;
pub mod api;
pub mod controller;
pub mod error;
pub mod metrics;
pub mod pki;
pub mod reconcile;
pub mod render;
pub mod shared;
pub mod status;
pub mod triggers;
pub mod validate;

pub use error::{Error, Result};
