//! The controller runtime every kcp-rs component runs on.
//!
//! One reconcile contract for all components: a reconcile function returns
//! `Result<`[`Outcome`]`, E>` where `E` says whether it is transient ([`Classify`]), and
//! [`Disposition::of`] is the one place that turns that into "forget", "requeue after",
//! "retry with backoff" or "failed: record a Warning and retry at the backoff cap"
//! (controller-runtime's `reconcileHandler` is the model).
//!
//! Two ways to run reconcilers:
//! - **Single-cluster controllers** (kcp-operator, the CAPI providers) run on
//!   `kube::runtime::Controller`, the ecosystem's convention; a [`Harness`] goes around their
//!   reconcile and is their `error_policy` (span, timing, metrics, backoff through
//!   [`ErrorPolicy`], the Warning Event of a permanent failure), and the helpers here serve the
//!   reconcile itself: typed [`conditions`], a
//!   [`status`] writer that writes only on change with a resourceVersion precondition,
//!   [`finalizer`]s, [`owner`] references and an aggregating [`events`] recorder.
//! - **Multi-cluster controllers** (kcp-init, kcp-sync) key work by (cluster, namespace, name)
//!   in a [`WorkQueue`] (dedup, per-key backoff, cancellable delayed requeues, never two
//!   workers on one key, drain on shutdown) run by [`run_workers`], and start dynamic
//!   sub-controllers in a [`TaskSet`].
//!
//! [`child`] writes children by server-side apply, so a field no longer rendered is removed,
//! and skips the write when the live object already matches.
//!
//! [`drain_controller`] stops a `Controller` that never synced its cache, which kube-runtime alone would
//! wait for forever.
//!
//! [`metrics`] registers the per-controller series (reconciles by result, duration, queue
//! depth) in a `prometheus-client` registry, under controller-runtime's metric names so
//! existing dashboards keep working.

pub mod child;
pub mod conditions;
pub mod drain;
pub mod error_policy;
pub mod events;
pub mod finalizer;
pub mod harness;
pub mod metrics;
pub mod outcome;
pub mod owner;
pub mod queue;
pub mod readiness;
pub mod status;
pub mod tasks;
pub mod workers;

pub use child::{Applied, apply_child};
pub use conditions::{ConditionStatus, ConditionUpdate, StatusCondition, set_condition};
pub use drain::drain_controller;
pub use error_policy::ErrorPolicy;
pub use events::{EventRecorder, EventType};
pub use finalizer::{FinalizerState, add_finalizer, finalizer_state, remove_finalizer};
pub use harness::Harness;
pub use metrics::{ControllerMetrics, ReconcileResult};
pub use outcome::{Classify, Disposition, Outcome, RetryPolicy};
pub use queue::{ObjectKey, WorkQueue};
pub use readiness::CacheSync;
pub use status::{StatusWrite, write_status};
pub use tasks::TaskSet;
pub use workers::{Reconciler, WorkerConfig, run_workers};
