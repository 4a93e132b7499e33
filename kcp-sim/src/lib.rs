//! kcp-sim: an in-process Kubernetes and kcp API server for tests, examples and the playground.
//!
//! Real clients (kube-rs, kubectl) talk to it over HTTP on 127.0.0.1; tests can also drive it
//! in-process through [`kcp_core::ObjectClient`] ([`SimClient`]). It is an envtest in pure Rust:
//! no kube-apiserver, etcd or kcp binary.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kcp_sim::{Config, Server};
//!
//! let sim = Server::start(Config::kcp()).await?;
//! let client = sim.client("root")?;            // a kube::Client for /clusters/root
//! let objects = sim.object_client("root");     // an in-process kcp_core::ObjectClient
//! println!("serving on {}", sim.url());
//! # let _ = (client, objects);
//! sim.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Layers, bottom up: [`store`] (objects, resourceVersions, change history, watch fan-out),
//! [`semantics`] (Kubernetes write rules), [`crd`], [`kcp`], [`apiexport`], [`query`] (lists and watch
//! filters), [`api`] (addressing and faults, shared by HTTP and in-process calls), [`http`],
//! [`server`]. [`schema`] validates, defaults and prunes custom resources. [`selector`], [`patch`],
//! [`managed_fields`], [`object_meta`] (metadata checks), [`defaults`] (the builtin kinds'
//! decode defaults), [`validation`] (their field validation), [`pods`], [`services`], [`batch`],
//! [`daemon_sets`], [`volume_claims`], [`persistent_volumes`], [`limit_ranges`] and
//! [`scheduling`] (what kube's strategies and admission add to a new Pod, Service, Job, CronJob,
//! DaemonSet, claim, volume or PriorityClass) are the pure pieces
//! underneath; [`authorization`] checks impersonated requests with RBAC and answers access
//! reviews, and [`tokens`] answers ServiceAccount TokenRequests; [`table`] (with
//! [`kind_cells`]), [`events`], [`protobuf`] and [`openapi`] are how answers are shown (Tables,
//! watch events, Kubernetes protobuf bodies, OpenAPI v3 documents).
//!
//! Known differences from the real servers are listed in the project's docs/kcp-sim.md.

pub mod admission_policies;
pub mod aggregated_discovery;
pub mod answered;
pub mod api;
pub mod api_services;
pub mod apiexport;
pub mod authorization;
pub mod autoscaling;
pub mod batch;
pub mod bootstrap_rbac;
pub mod builtin_decoding;
pub mod certificates;
pub mod client;
pub mod component_statuses;
pub mod continue_token;
pub mod conversion;
pub mod crd;
pub mod crd_names;
pub mod daemon_sets;
pub mod defaults;
pub mod ephemeral_containers;
pub mod error;
pub mod event_apis;
pub mod events;
pub mod evictions;
pub mod faults;
pub mod field_validation;
pub mod flowcontrol;
mod garbage_collector;
pub mod go_json_syntax;
pub mod go_quote;
pub mod health;
pub mod http;
pub mod impersonation;
pub mod ip_addresses;
pub mod kcp;
pub mod kind_cells;
pub mod kube_bootstrap;
pub mod last_applied;
pub mod limit_range_checks;
pub mod limit_range_validation;
pub mod limit_ranges;
pub mod managed_fields;
pub mod media;
pub mod nodes;
pub mod object_meta;
pub mod openapi;
pub mod patch;
pub mod persistent_volumes;
pub mod pod_connections;
pub mod pod_resources;
pub mod pod_updates;
pub mod pods;
pub mod preconditions;
pub mod protobuf;
pub mod quantity;
pub mod query;
pub mod rbac_escalation;
pub mod rbac_validation;
pub mod requests;
pub mod resource;
mod resource_quotas;
pub mod scale;
pub mod scale_fields;
pub mod scheduling;
pub mod schema;
/// Label and field selectors (kept in kcp-core, shared with controllers).
pub use kcp_core::selector;
pub mod semantics;
pub mod server;
pub mod services;
pub mod serving_ca;
pub mod status;
pub mod status_writes;
pub mod store;
pub mod table;
pub mod token_binding;
pub mod token_review;
pub mod tokens;
pub mod unreadable_body;
pub mod validation;
pub mod volume_claims;
pub mod workloads;
pub mod write_options;

pub use api::{Endpoint, PLAIN_CLUSTER};
pub use client::SimClient;
pub use error::{Error, Result};
pub use faults::{ErrorRule, FaultConfig, Faults, Verb};
pub use server::{Config, Mode, Server};
pub use status::ApiError;
