//! capi-agent: the Cluster API infrastructure provider for Agents (a re-implementation of
//! openshift/cluster-api-provider-agent) as a library.
//!
//! Bare-metal hosts booted from an assisted-service discovery ISO appear as `Agent`s. An
//! `AgentCluster` gets a Hive `ClusterDeployment` and an `AgentClusterInstall`; every
//! `AgentMachine` (one per CAPI `Machine`) claims a free, approved Agent, binds it to that
//! ClusterDeployment with the ignition token from the Machine's bootstrap data, and becomes
//! ready when assisted-service reports the host installed. Deleting a Machine unbinds its Agent
//! at the Machine's pre-terminate hook.
//!
//! Layers: [`api`] (CRD types and wire-contract keys), [`foreign`] (Agent, Hive and CAPI types),
//! pure parts ([`select`], [`binding`], [`bootstrap`], [`render`], [`conditions`],
//! [`deletion`]), the reconcilers ([`cluster`], [`machine`], [`nodes`]) over what they share
//! ([`context`]: the [`context::Context`], the provider's settings, typed read and patch
//! helpers) and [`controller`] (wiring on `kube::runtime::Controller`).

pub mod agent_cache;
pub mod api;
pub mod binding;
pub mod bootstrap;
pub mod claims;
pub mod cluster;
pub mod conditions;
pub mod context;
pub mod controller;
pub mod deletion;
pub mod deploy;
pub mod error;
pub mod foreign;
pub mod machine;
pub mod metrics;
pub mod nodes;
pub mod pause_watch;
pub mod render;
pub mod select;

pub use error::{Error, Result};
