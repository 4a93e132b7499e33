//! `Applier`: runs an [`ApplyPlan`] against an [`ObjectClient`], wave by wave.

use std::ops::ControlFlow;
use std::time::Duration;

use futures::StreamExt;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use tracing::{Instrument, debug, info, info_span};

use super::plan::{ApplyPlan, PlanObject};
use super::readiness::{Readiness, awaits_establishing, has_gate, readiness};
use super::report::{ApplyReport, ObjectResult, Outcome};
use crate::client::{
    DeleteOptions, DeleteOutcome, ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Propagation,
    Subresource,
};
use crate::error::Error;
use crate::retry::Backoff;

/// How an [`Applier`] writes.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplierConfig {
    /// Field manager for server-side apply.
    pub field_manager: String,
    /// Take over fields owned by other managers (`force=true`).
    pub force: bool,
    /// Maximum number of requests in flight inside one wave (at least 1).
    pub concurrency: usize,
    /// How long to wait for a readiness gate (or, when deleting, for finalizers) before the
    /// object's dependents are reported pending.
    pub readiness_timeout: Duration,
    /// Polling schedule while waiting for a gate.
    pub readiness_poll: Backoff,
    /// Read each object before applying it, to report [`Outcome::Unchanged`] when the apply did
    /// not change it (one extra GET per object).
    pub detect_unchanged: bool,
    /// How long a CustomResourceDefinition may sit at `NamesAccepted` without `Established`
    /// before the applier touches it (sets and removes [`ESTABLISH_REQUESTED_ANNOTATION`]),
    /// once per wait; `None`: never. The API server queues a CRD for its establishing controller
    /// only when it sees an update of it; kcp v0.30.0 can miss that for a CRD created while it
    /// starts, and then leaves it at `Installing` for good.
    pub establish_nudge_after: Option<Duration>,
}

/// The annotation the applier sets on a CustomResourceDefinition stuck at `NamesAccepted`, and
/// removes with the next request: two updates the API server sees, each of which queues the
/// CRD for its establishing controller. Nothing is left behind unless the removal fails (the
/// next touch removes it).
pub const ESTABLISH_REQUESTED_ANNOTATION: &str = "apply.kcp-rs.io/establish-requested";

impl ApplierConfig {
    /// Defaults for `field_manager`: force, 8 requests in flight, 30 s readiness deadline
    /// polled from 50 ms up to 1 s, unchanged detection on, a CRD not Established 10 s after
    /// its names were accepted touched once per wait (the establishing controller of a single
    /// API server turns it at once, of several within 5 s).
    pub fn new(field_manager: impl Into<String>) -> Self {
        ApplierConfig {
            field_manager: field_manager.into(),
            force: true,
            concurrency: 8,
            readiness_timeout: Duration::from_secs(30),
            readiness_poll: Backoff::new(Duration::from_millis(50), Duration::from_secs(1)),
            detect_unchanged: true,
            establish_nudge_after: Some(Duration::from_secs(10)),
        }
    }
}

/// Applies and deletes [`ApplyPlan`]s.
///
/// Within a wave, up to `concurrency` objects are written at once. An object is attempted only
/// when every object it depends on is applied and ready; otherwise it is reported
/// [`Outcome::Pending`] naming what it waits for, and its own dependents are held back in turn.
/// Transient errors (see [`Error::is_transient`]) give `Pending`, permanent ones `Failed`.
/// Running the same plan again is safe: server-side apply is idempotent.
#[derive(Debug)]
pub struct Applier<'c, C: ObjectClient + ?Sized = dyn ObjectClient> {
    client: &'c C,
    config: ApplierConfig,
}

/// What a wait for a readiness gate saw last.
struct GateWait {
    /// Why the object is not ready.
    last: String,
    /// Whether it is a CRD waiting for its establishing controller.
    awaits_establishing: bool,
}

enum State {
    /// Not attempted because a dependency is not ready.
    Blocked,
    Done {
        ready: Result<(), String>,
    },
    NotDone,
}

impl<'c, C: ObjectClient + ?Sized> Applier<'c, C> {
    /// An applier writing through `client`.
    pub fn new(client: &'c C, config: ApplierConfig) -> Self {
        Applier { client, config }
    }

    /// The configuration.
    pub fn config(&self) -> &ApplierConfig {
        &self.config
    }

    /// Applies the plan, wave by wave, and reports what happened to each object.
    pub async fn apply(&self, plan: &ApplyPlan) -> ApplyReport {
        let span = info_span!("apply", objects = plan.len(), waves = plan.waves().len());
        self.apply_waves(plan).instrument(span).await
    }

    /// Applies the plan again (every 250 ms) while objects are only pending, until it is
    /// complete, something failed, or `within` has passed; answers the last report. This is a
    /// user re-running `kubectl apply`: a real API server serves a new CRD's kind, or admits
    /// requests into a new kcp workspace, a moment after they were created.
    pub async fn apply_until_settled(&self, plan: &ApplyPlan, within: Duration) -> ApplyReport {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let report = self.apply(plan).await;
            if report.is_complete()
                || report.has_failures()
                || tokio::time::Instant::now() >= deadline
            {
                return report;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn apply_waves(&self, plan: &ApplyPlan) -> ApplyReport {
        let n = plan.len();
        let mut outcomes: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
        let mut states: Vec<State> = (0..n).map(|_| State::NotDone).collect();
        let concurrency = self.config.concurrency.max(1);

        for (w, wave) in plan.waves().iter().enumerate() {
            let mut todo = Vec::with_capacity(wave.len());
            for &i in wave {
                match blocker(plan, &states, &outcomes, plan.dependencies(i)) {
                    Some(reason) => {
                        outcomes[i] = Some(Outcome::Pending { reason });
                        states[i] = State::Blocked;
                    }
                    None => todo.push(i),
                }
            }
            debug!(wave = w, attempting = todo.len(), "applying wave");

            let written: Vec<(usize, Outcome, Option<DynamicObject>)> = futures::stream::iter(todo)
                .map(|i| async move {
                    let (outcome, live) = self.apply_one(plan.object(i)).await;
                    (i, outcome, live)
                })
                .buffer_unordered(concurrency)
                .collect()
                .await;

            let gates = written
                .into_iter()
                .map(|(i, outcome, live)| {
                    let gate = outcome.is_done()
                        && live.as_ref().is_some_and(has_gate)
                        && !plan.dependents(i).is_empty();
                    outcomes[i] = Some(outcome);
                    (i, gate, live)
                })
                .collect::<Vec<_>>();
            let checked: Vec<(usize, Result<(), String>)> = futures::stream::iter(gates)
                .map(|(i, gate, live)| async move {
                    match (gate, live) {
                        (true, Some(live)) => (i, self.wait_ready(plan.object(i), live).await),
                        _ => (i, Ok(())),
                    }
                })
                .buffer_unordered(concurrency)
                .collect()
                .await;
            for (i, ready) in checked {
                if outcomes[i].as_ref().is_some_and(Outcome::is_done) {
                    states[i] = State::Done { ready };
                }
            }
        }
        finish(plan, outcomes)
    }

    async fn apply_one(&self, o: &PlanObject) -> (Outcome, Option<DynamicObject>) {
        let target = o.object_ref();
        let before = if self.config.detect_unchanged {
            match self.client.get(&target).await {
                Ok(found) => found.and_then(|f| f.metadata.resource_version),
                Err(e) => return (outcome_of_error(e), None),
            }
        } else {
            None
        };
        let options = PatchOptions {
            field_manager: Some(self.config.field_manager.clone()),
            force: self.config.force,
        };
        match self.client.apply(o.object(), &options).await {
            Ok(live) => {
                let unchanged = before.is_some() && before == live.metadata.resource_version;
                debug!(object = %target, unchanged, "applied");
                let outcome = if unchanged {
                    Outcome::Unchanged
                } else {
                    Outcome::Applied
                };
                (outcome, Some(live))
            }
            Err(e) => {
                debug!(object = %target, error = %e, "apply failed");
                // Without force, a 409 to an apply is a field-ownership conflict (an apply
                // carries no resourceVersion), which no retry resolves.
                let e = match e {
                    Error::Api {
                        code: 409, message, ..
                    } if !self.config.force => Error::FieldConflict {
                        object: target.to_string(),
                        message,
                    },
                    other => other,
                };
                (outcome_of_error(e), None)
            }
        }
    }

    /// Reads `target` on the readiness polling schedule, handing each read to `check`, until
    /// `check` breaks with a value or `deadline` would pass (then `None`).
    async fn poll<T>(
        &self,
        target: &ObjectRef,
        deadline: tokio::time::Instant,
        mut check: impl FnMut(Result<Option<DynamicObject>, Error>) -> ControlFlow<T> + Send,
    ) -> Option<T> {
        for attempt in 1.. {
            let delay = self.config.readiness_poll.delay(attempt);
            if tokio::time::Instant::now() + delay > deadline {
                break;
            }
            tokio::time::sleep(delay).await;
            if let ControlFlow::Break(value) = check(self.client.get(target).await) {
                return Some(value);
            }
        }
        None
    }

    /// Waits until `live` (or its fresh reads) passes its readiness gate, up to the deadline; a
    /// CRD still waiting for its establishing controller at `establish_nudge_after` is touched.
    async fn wait_ready(&self, o: &PlanObject, live: DynamicObject) -> Result<(), String> {
        let mut wait = GateWait {
            last: match readiness(&live) {
                Readiness::Ready => return Ok(()),
                Readiness::NotReady(why) => why,
            },
            awaits_establishing: awaits_establishing(&live),
        };
        let target = o.object_ref();
        let deadline = tokio::time::Instant::now() + self.config.readiness_timeout;
        if let Some(after) = self.config.establish_nudge_after {
            let nudge_at = (tokio::time::Instant::now() + after).min(deadline);
            if let Some(done) = self.poll_gate(&target, nudge_at, &mut wait).await {
                return done;
            }
            if wait.awaits_establishing {
                self.request_establishing(&target).await;
            }
        }
        let outcome = self.poll_gate(&target, deadline, &mut wait).await;
        outcome.unwrap_or_else(|| {
            Err(format!(
                "{} after {:?}",
                wait.last, self.config.readiness_timeout
            ))
        })
    }

    /// Polls `target` until its gate opens (`Ok`), a permanent error (`Err`), or `until`.
    async fn poll_gate(
        &self,
        target: &ObjectRef,
        until: tokio::time::Instant,
        wait: &mut GateWait,
    ) -> Option<Result<(), String>> {
        self.poll(target, until, |read| match read {
            Ok(Some(fresh)) => match readiness(&fresh) {
                Readiness::Ready => ControlFlow::Break(Ok(())),
                Readiness::NotReady(why) => {
                    wait.last = why;
                    wait.awaits_establishing = awaits_establishing(&fresh);
                    ControlFlow::Continue(())
                }
            },
            Ok(None) => {
                wait.last = "it disappeared".to_string();
                wait.awaits_establishing = false;
                ControlFlow::Continue(())
            }
            Err(e) if e.is_transient() => {
                wait.last = e.to_string();
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(Err(e.to_string())),
        })
        .await
    }

    /// Touches a CRD that waits for its establishing controller: sets, then removes,
    /// [`ESTABLISH_REQUESTED_ANNOTATION`]. A failed touch is only logged: the wait goes on.
    async fn request_establishing(&self, target: &ObjectRef) {
        let options = PatchOptions {
            field_manager: Some(self.config.field_manager.clone()),
            force: false,
        };
        for value in [json!("true"), Value::Null] {
            let patch = ObjectPatch::Merge(json!({
                "metadata": {"annotations": {ESTABLISH_REQUESTED_ANNOTATION: value}}
            }));
            if let Err(e) = self
                .client
                .patch(target, Subresource::Main, &patch, &options)
                .await
            {
                debug!(object = %target, error = %e, "touching the CRD failed");
                return;
            }
        }
        info!(
            object = %target,
            "CustomResourceDefinition accepted but not Established: touched it to queue it for establishing again"
        );
    }

    /// Deletes the objects of the plan in reverse dependency order.
    ///
    /// A wave is deleted only when everything that depends on it is gone; objects held by
    /// finalizers are waited for up to the readiness deadline, then reported pending (and so
    /// are the objects they depend on). An object that is already gone is
    /// [`Outcome::Unchanged`].
    pub async fn delete(&self, plan: &ApplyPlan) -> ApplyReport {
        let span = info_span!("delete", objects = plan.len(), waves = plan.waves().len());
        self.delete_waves(plan).instrument(span).await
    }

    async fn delete_waves(&self, plan: &ApplyPlan) -> ApplyReport {
        let n = plan.len();
        let mut outcomes: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
        let concurrency = self.config.concurrency.max(1);
        for wave in plan.waves().iter().rev() {
            let mut todo = Vec::with_capacity(wave.len());
            for &i in wave.iter().rev() {
                let waiting = plan
                    .dependents(i)
                    .into_iter()
                    .find(|&d| !outcomes[d].as_ref().is_some_and(Outcome::is_done));
                match waiting {
                    Some(d) => {
                        outcomes[i] = Some(Outcome::Pending {
                            reason: format!("waiting for {} to be deleted", plan.object(d)),
                        })
                    }
                    None => todo.push(i),
                }
            }
            let deleted: Vec<(usize, Outcome)> = futures::stream::iter(todo)
                .map(|i| async move { (i, self.delete_one(plan.object(i)).await) })
                .buffer_unordered(concurrency)
                .collect()
                .await;
            for (i, outcome) in deleted {
                outcomes[i] = Some(outcome);
            }
        }
        finish(plan, outcomes)
    }

    async fn delete_one(&self, o: &PlanObject) -> Outcome {
        let target = o.object_ref();
        let options = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..DeleteOptions::default()
        };
        match self.client.delete(&target, &options).await {
            Ok(DeleteOutcome::Deleted) => Outcome::Deleted,
            Ok(DeleteOutcome::AlreadyGone) => Outcome::Unchanged,
            Ok(DeleteOutcome::Terminating(_)) => self.wait_gone(o).await,
            Err(e) => outcome_of_error(e),
        }
    }

    async fn wait_gone(&self, o: &PlanObject) -> Outcome {
        let mut finalizers = Vec::new();
        let deadline = tokio::time::Instant::now() + self.config.readiness_timeout;
        let outcome = self
            .poll(&o.object_ref(), deadline, |read| match read {
                Ok(None) => ControlFlow::Break(Outcome::Deleted),
                Ok(Some(live)) => {
                    finalizers = live.metadata.finalizers.unwrap_or_default();
                    ControlFlow::Continue(())
                }
                Err(e) if e.is_transient() => ControlFlow::Continue(()),
                Err(error) => ControlFlow::Break(Outcome::Failed { error }),
            })
            .await;
        outcome.unwrap_or_else(|| Outcome::Pending {
            reason: format!(
                "still terminating after {:?}, finalizers: [{}]",
                self.config.readiness_timeout,
                finalizers.join(", ")
            ),
        })
    }
}

/// Why an object cannot be attempted yet: the first dependency that is not applied and ready.
fn blocker(
    plan: &ApplyPlan,
    states: &[State],
    outcomes: &[Option<Outcome>],
    dependencies: Vec<usize>,
) -> Option<String> {
    dependencies.into_iter().find_map(|d| {
        let name = plan.object(d);
        match (&states[d], &outcomes[d]) {
            (State::Done { ready: Ok(()) }, _) => None,
            (State::Done { ready: Err(why) }, _) => Some(format!("waiting for {name}: {why}")),
            (State::Blocked, _) => Some(format!("waiting for {name}, which is pending")),
            (State::NotDone, Some(Outcome::Pending { reason })) => {
                Some(format!("waiting for {name}: {reason}"))
            }
            (State::NotDone, Some(Outcome::Failed { .. })) => {
                Some(format!("waiting for {name}, which failed"))
            }
            (State::NotDone, _) => Some(format!("waiting for {name}")),
        }
    })
}

fn outcome_of_error(error: Error) -> Outcome {
    if error.is_transient() {
        Outcome::Pending {
            reason: error.to_string(),
        }
    } else {
        Outcome::Failed { error }
    }
}

fn finish(plan: &ApplyPlan, outcomes: Vec<Option<Outcome>>) -> ApplyReport {
    let results = outcomes
        .into_iter()
        .enumerate()
        .map(|(i, outcome)| ObjectResult {
            index: i,
            object: plan.object(i).object_ref(),
            wave: plan.wave_of(i).unwrap_or(0),
            outcome: outcome.unwrap_or(Outcome::Pending {
                reason: "not attempted".into(),
            }),
        })
        .collect();
    ApplyReport { results }
}
