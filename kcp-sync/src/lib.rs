//! kcp-sync: the kcp api-syncagent as a library.
//!
//! A `PublishedResource` on a service cluster names a type (usually a CRD) to publish into a
//! kcp APIExport. kcp-sync projects the type into an `APIResourceSchema` (named
//! `v<hash>.<plural>.<group>` exactly as the Go agent names it), merges it and the needed
//! permission claims into the APIExport, and syncs objects: the spec goes from kcp workspaces
//! to the service cluster, the status comes back, and related objects (Secrets, ConfigMaps,
//! any resource) travel in either direction. Labels, annotations, finalizers and the
//! last-known-state Secrets keep the upstream names, so kcp-sync takes over objects synced by
//! the Go agent.
//!
//! The pure parts are plain functions, usable on their own:
//!
//! ```
//! use kcp_sync::naming::{LocalName, local_name};
//! use kcp_sync::api::ResourceNaming;
//!
//! let remote = serde_json::json!({
//!     "metadata": {"namespace": "objnamespace", "name": "objname"},
//! });
//! let engine = kcp_core::TemplateEngine::new();
//! let name = local_name(&engine, None, &remote, "cluster-a", None, true).unwrap();
//! assert_eq!(
//!     name,
//!     LocalName {
//!         namespace: Some("cluster-a".into()),
//!         name: "2928c2aa0e510f017f07-73d08a1ba188f1340dae".into(),
//!     }
//! );
//! ```
//!
//! Running the whole agent is [`controller::run`] with an [`controller::Agent`]: the service
//! cluster's clients, the APIExport workspace's client and a
//! [`ClusterProvider`](kcp_core::ClusterProvider) for the consumer clusters (the binary uses
//! kcp-core's `ApiExportConsumers` on the endpoint slice; [`startup`] resolves it).
//!
//! Layers, pure first: [`api`] (the CRD types), [`hash`] (upstream's hashes), [`naming`]
//! (local names), [`metadata`] (link labels and annotations, metadata stripping), [`state`]
//! (the last-known-state store's Secret names and keys), [`schema`] (CRD projection and the
//! APIResourceSchema), [`export`] (the APIExport merge), [`filter`], [`path`] (gjson paths),
//! [`mutation`], [`merge`] (merge patches), [`related`] (related-object locators); then
//! [`reconcile`] (schema, export, object and related sync over `ObjectClient`s),
//! [`controller`] (wiring on kcp-core's runtime) and [`startup`].

pub mod api;
pub mod claims_acceptance;
pub mod clash;
pub mod controller;
pub mod error;
pub mod export;
pub mod filter;

pub mod hash;
pub mod merge;
pub mod metadata;
pub mod mutation;
pub mod naming;
pub mod path;
pub mod reconcile;
pub mod related;
pub mod related_namespaces;

pub mod schema;
pub mod service_rbac;
pub mod startup;
pub mod state;

pub use error::{Error, Result};
