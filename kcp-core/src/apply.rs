//! The apply engine: dependency-ordered, wave-parallel application of a set of objects.
//!
//! Applying a bag of manifests in input order fails whenever a custom resource comes before its
//! CRD or an object before its Namespace. Instead of a fixed kind list, kcp-rs builds a graph of
//! "must exist before" edges from [`DependencyRule`]s and groups it into *waves*: every object in
//! wave `n` depends only on objects in waves `< n`, so a wave can be applied concurrently.
//!
//! - [`ApplyPlan::build`] is a pure function of the objects and the rules: same input, same
//!   plan. Inside a wave, objects keep their input order. A cycle is an
//!   [`Error::DependencyCycle`](crate::Error::DependencyCycle) naming the objects on it.
//! - [`RuleSet::default`] holds the default rules ([`rules`]); add your own with
//!   [`RuleSet::with`], or per object with the [`DEPENDS_ON_ANNOTATION`].
//! - [`Applier`] runs a plan against any [`ObjectClient`](crate::ObjectClient) with server-side
//!   apply, bounded concurrency and readiness gates (CRD `Established`, Namespace `Active`,
//!   APIBinding `Bound`), and returns an [`ApplyReport`]. [`Applier::delete`] walks the waves
//!   backwards. A CRD that waits at `NamesAccepted` without becoming `Established` is touched
//!   once per wait ([`ESTABLISH_REQUESTED_ANNOTATION`]), which queues it for the API server's
//!   establishing controller again.
//!
//! ```
//! use kcp_core::apply::{ApplyPlan, RuleSet};
//! use kcp_core::manifest::parse_manifests;
//!
//! let objects = parse_manifests("example", r#"
//! apiVersion: v1
//! kind: ConfigMap
//! metadata: {name: info, namespace: team}
//! ---
//! apiVersion: v1
//! kind: Namespace
//! metadata: {name: team}
//! "#)?;
//! let plan = ApplyPlan::build(objects, &RuleSet::default())?;
//! let waves: Vec<Vec<String>> = plan.waves().iter()
//!     .map(|w| w.iter().map(|&i| plan.object(i).to_string()).collect())
//!     .collect();
//! assert_eq!(waves, vec![vec!["v1 Namespace team"], vec!["v1 ConfigMap team/info"]]);
//! # Ok::<(), kcp_core::Error>(())
//! ```

mod applier;
mod plan;
mod readiness;
mod report;
pub mod rules;

pub use applier::{Applier, ApplierConfig, ESTABLISH_REQUESTED_ANNOTATION};
pub use plan::{ApplyPlan, PlanObject};
pub use readiness::{Readiness, readiness};
pub use report::{ApplyReport, ObjectResult, Outcome};
pub use rules::{DEPENDS_ON_ANNOTATION, DependencyRule, EdgeSink, ObjectSet, RuleSet};
