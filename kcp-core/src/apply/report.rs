//! `ApplyReport`: what happened to every object of a plan.

use std::fmt;

use crate::client::ObjectRef;
use crate::error::Error;

/// What happened to one object.
#[derive(Debug)]
pub enum Outcome {
    /// Written; the server state changed.
    Applied,
    /// Already as desired: the server did not change it (or, when deleting, it was already
    /// gone).
    Unchanged,
    /// Deleted.
    Deleted,
    /// Not done yet for a transient reason (kind not served yet, dependency not ready,
    /// throttled, ...); retrying later can succeed.
    Pending {
        /// Why, naming the object or dependency waited for.
        reason: String,
    },
    /// Failed for a reason that needs a change of input.
    Failed {
        /// The error.
        error: Error,
    },
}

impl Outcome {
    /// Whether the object is in its desired state.
    pub fn is_done(&self) -> bool {
        matches!(
            self,
            Outcome::Applied | Outcome::Unchanged | Outcome::Deleted
        )
    }
}

/// The outcome for one object of the plan.
#[derive(Debug)]
pub struct ObjectResult {
    /// Index of the object in the plan.
    pub index: usize,
    /// The object.
    pub object: ObjectRef,
    /// The wave it belongs to.
    pub wave: usize,
    /// What happened.
    pub outcome: Outcome,
}

/// What an [`Applier`](super::Applier) run did, one entry per object in plan (input) order.
#[derive(Debug, Default)]
pub struct ApplyReport {
    /// One result per object, in input order.
    pub results: Vec<ObjectResult>,
}

impl ApplyReport {
    /// Results that were applied.
    pub fn applied(&self) -> impl Iterator<Item = &ObjectResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Applied))
    }

    /// Results that were unchanged.
    pub fn unchanged(&self) -> impl Iterator<Item = &ObjectResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Unchanged))
    }

    /// Results that were deleted.
    pub fn deleted(&self) -> impl Iterator<Item = &ObjectResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Deleted))
    }

    /// Results that are pending, with their reasons.
    pub fn pending(&self) -> impl Iterator<Item = (&ObjectResult, &str)> {
        self.results.iter().filter_map(|r| match &r.outcome {
            Outcome::Pending { reason } => Some((r, reason.as_str())),
            _ => None,
        })
    }

    /// Results that failed, with their errors.
    pub fn failed(&self) -> impl Iterator<Item = (&ObjectResult, &Error)> {
        self.results.iter().filter_map(|r| match &r.outcome {
            Outcome::Failed { error } => Some((r, error)),
            _ => None,
        })
    }

    /// `<object>: <reason>` for every pending and every failed object, in plan order.
    pub fn unfinished(&self) -> Vec<String> {
        self.pending()
            .map(|(r, reason)| format!("{}: {reason}", r.object))
            .chain(
                self.failed()
                    .map(|(r, error)| format!("{}: {error}", r.object)),
            )
            .collect()
    }

    /// Whether every object reached its desired state.
    pub fn is_complete(&self) -> bool {
        self.results.iter().all(|r| r.outcome.is_done())
    }

    /// Whether some object failed permanently.
    pub fn has_failures(&self) -> bool {
        self.failed().next().is_some()
    }
}

impl fmt::Display for ApplyReport {
    /// A one-line summary: `3 applied, 1 unchanged, 0 deleted, 1 pending, 0 failed`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} applied, {} unchanged, {} deleted, {} pending, {} failed",
            self.applied().count(),
            self.unchanged().count(),
            self.deleted().count(),
            self.pending().count(),
            self.failed().count()
        )
    }
}
