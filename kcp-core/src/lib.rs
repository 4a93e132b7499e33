//! # kcp-core
//!
//! The foundation every kcp-rs component builds on. It holds no I/O policy of its own: it gives
//! reconcile code one client interface ([`ObjectClient`]) with a real implementation over
//! `kube::Client` ([`KubeObjectClient`]), one error type with a transient/permanent
//! classification ([`Error::is_transient`]) and one retry policy ([`retry::Backoff`]), a
//! dependency-ordered apply engine ([`apply`]), hermetic templates ([`template`]), manifest
//! parsing ([`manifest`]), kcp API types and URL helpers ([`kcp`]), multi-cluster plumbing
//! ([`cluster`]), label and field [`selector`]s, and the controller [`runtime`] every component
//! runs on.
//!
//! ## Choosing the Kubernetes API version
//! kcp-core depends on `k8s-openapi` without a `v1_*` version feature, as a library must. The
//! final binary picks exactly one (kcp-rs binaries use `v1_33`, the version kcp is based on);
//! inside this workspace `.cargo/config.toml` sets `K8S_OPENAPI_ENABLED_VERSION=1.33` for
//! `cargo check`, `clippy`, `test` and `doc`.

pub mod apply;
pub mod capi;
pub mod client;
pub mod cluster;
pub mod error;
pub mod go_duration;
pub mod go_quote;
pub mod kcp;
pub mod kube_client;
pub mod manifest;
pub mod name_validation;
pub mod resource_version;
pub mod rest_metrics;
pub mod retry;
pub mod runtime;
pub mod selector;
pub mod template;
pub mod typed;
pub mod untrusted_kubeconfig;

pub use apply::{Applier, ApplierConfig, ApplyPlan, ApplyReport, RuleSet};
pub use client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectClient, ObjectList, ObjectPatch, ObjectRef,
    PatchOptions, Propagation, ResourceInfo, Subresource, gvk_of,
};
pub use cluster::{ClusterEvent, ClusterProvider, EngagedCluster, SingleClusterProvider};
pub use error::{Error, Result};
pub use kcp::{ClusterName, ClusterPath, InitializerName};
pub use kube_client::KubeObjectClient;
pub use manifest::parse_manifests;
pub use retry::Backoff;
pub use template::{TemplateEngine, TemplateOptions, TemplateSyntax};
pub use typed::ObjectClientExt;

/// Re-exported so that users name the same `kube` and `k8s-openapi` kcp-core was built with.
pub use k8s_openapi;
/// Re-exported so that users name the same `kube` kcp-core was built with.
pub use kube;
