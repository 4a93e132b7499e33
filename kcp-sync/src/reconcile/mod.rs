//! Reconcile functions over [`ObjectClient`](kcp_core::ObjectClient)s, one per controller of
//! upstream §3 and §4: [`schema`] (PublishedResource + CRD -> APIResourceSchema in kcp),
//! [`export`] (schemas and claims into the APIExport) and [`sync`] (one kcp object and its
//! local copy).
//!
//! They are plain async functions of their inputs: the controllers decide when to call them,
//! and tests call them directly against kcp-sim. The writes the object sync makes for
//! primaries and related objects alike live in `spec_write` (the three-way spec merge) and
//! `finalizers`; [`dynamic_json`] converts between the client's objects and JSON. A
//! PublishedResource's status is written by [`published_status`] only.

pub mod caches;
pub mod discovery;
pub mod dynamic_json;
pub mod export;
mod finalizers;
pub mod kcp_events;
pub mod local_index;
pub mod object_cache;
pub mod published_status;
pub mod related;
pub mod schema;
mod spec_write;
pub mod state_store;
pub mod sync;
