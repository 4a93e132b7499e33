//! One InitTarget's runner: resolve the WorkspaceType and its initializer, engage the clusters
//! waiting for it through kcp-core's [`InitializingWorkspaces`] provider, and initialize each
//! through the runtime's work queue and workers.
//!
//! The reconcile answers the runtime's `Result<Outcome, Error>`; the runtime retries what
//! [`Error::is_transient`] calls transient and hands every permanent failure to
//! [`Reconciler::failed`], which records the Warning Event. Beside that, the runner keeps the
//! counts its InitTarget's status reports (`Counts`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kcp_core::ObjectClient;
use kcp_core::cluster::{ClusterEvent, ClusterProvider, EngagedCluster, InitializingWorkspaces};
use kcp_core::kcp::{InitializerName, LOGICAL_CLUSTER_NAME, WorkspaceType};
use kcp_core::kube::Api;
use kcp_core::kube::api::DynamicObject;
use kcp_core::runtime::workers::WorkerConfig;
use kcp_core::runtime::{
    ConditionStatus, ConditionUpdate, EventType, ObjectKey, Outcome, Reconciler, RetryPolicy,
    WorkQueue, run_workers,
};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::api::{
    CONDITION_DUPLICATE_OBJECTS, CONDITION_READY, CONDITION_TEMPLATE_ERROR, InitTarget,
};
use crate::controller::Shared;
use crate::error::Error;
use crate::reconcile::{EVENT_REASON, InitContext, Initialization, initialize_cluster};
use crate::status::{set_conditions, update_status};
use crate::targets::TypeRef;

/// What the runner's status report is made of.
#[derive(Debug, Default, Clone, PartialEq)]
struct Counts {
    pending: BTreeSet<String>,
    failing: BTreeMap<String, String>,
    duplicates: BTreeMap<String, String>,
    initialized: u32,
}

impl Counts {
    /// Counts one reconcile's result for `cluster`. A transient failure changes nothing: the
    /// cluster stays pending.
    fn record(&mut self, cluster: &str, result: &Result<Initialization, Error>) {
        match result {
            Ok(Initialization::Completed { duplicates, .. }) => {
                self.initialized += 1;
                self.forget(cluster);
                match duplicates.first() {
                    Some(d) => self.duplicates.insert(cluster.to_string(), d.to_string()),
                    None => self.duplicates.remove(cluster),
                };
            }
            Ok(Initialization::NotOurs) => self.forget(cluster),
            Err(err) if err.is_transient() => {}
            Err(err) => {
                self.failing.insert(cluster.to_string(), err.to_string());
            }
        }
    }

    /// Drops `cluster` from the pending and failing clusters (initialized, not ours, or gone).
    fn forget(&mut self, cluster: &str) {
        self.pending.remove(cluster);
        self.failing.remove(cluster);
    }
}

/// The reconciler of one InitTarget's clusters.
struct TargetReconciler {
    shared: Arc<Shared>,
    target: String,
    initializer: String,
    type_ref: TypeRef,
    clusters: Mutex<HashMap<String, EngagedCluster>>,
    counts: Mutex<Counts>,
}

/// Locks `m`; a holder that panicked leaves the maps and counts valid, so poisoning is ignored.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TargetReconciler {
    /// The client of an engaged cluster and, on its first attempt only, the LogicalCluster that
    /// announced it (retries read afresh); `None` when the cluster is no longer engaged.
    fn take_engaged(
        &self,
        cluster: &str,
    ) -> Option<(Arc<dyn ObjectClient>, Option<DynamicObject>)> {
        let mut clusters = lock(&self.clusters);
        let engaged = clusters.get_mut(cluster)?;
        let seen = engaged.announced_by.take().map(|lc| (*lc).clone());
        Some((engaged.client.clone(), seen))
    }

    fn init_context(&self) -> InitContext<'_> {
        InitContext {
            config: self.shared.config.as_ref() as &dyn ObjectClient,
            target: &self.target,
            initializer: &self.initializer,
            workspace_type_name: &self.type_ref.name,
            workspace_type_path: &self.type_ref.path,
            engine: &self.shared.engine,
            applier: &self.shared.applier,
            templates: Some(&self.shared.templates),
        }
    }
}

#[async_trait]
impl Reconciler<ObjectKey> for TargetReconciler {
    type Error = Error;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, Error> {
        let Some((client, seen)) = self.take_engaged(&key.cluster) else {
            return Ok(Outcome::Done);
        };
        let ctx = self.init_context();
        let span = tracing::info_span!("reconcile", cluster = %key.cluster, kind = "LogicalCluster", namespace = "", name = LOGICAL_CLUSTER_NAME, target = %self.target);
        let started = Instant::now();
        let result = tracing::Instrument::instrument(
            initialize_cluster(&ctx, &key.cluster, client.as_ref(), seen),
            span,
        )
        .await;
        if matches!(result, Ok(Initialization::Completed { .. })) {
            self.shared
                .metrics
                .initialized(&self.target, started.elapsed());
        }
        lock(&self.counts).record(&key.cluster, &result);
        result.map(|done| done.outcome())
    }

    async fn failed(&self, key: &ObjectKey, error: &Error) {
        self.shared.metrics.failed(&self.target);
        tracing::warn!(cluster = %key.cluster, target = %self.target, error = %error, "initialization failed");
        // The Event goes to the InitTarget in the config workspace, not to the LogicalCluster:
        // a workspace still initializing has no namespace at all on kcp (not even `default`), so
        // an Event inside it cannot be written (upstream writes none: its recorder is nil).
        // The runner knows its InitTarget by name only.
        let message = format!("Failed to initialize cluster {}: {error}.", key.cluster);
        let (client, warning) = (self.shared.config.as_ref(), EventType::Warning);
        self.shared
            .events
            .publish_named::<InitTarget>(
                client,
                None,
                &self.target,
                warning,
                EVENT_REASON,
                &message,
            )
            .await;
    }
}

/// Runs the InitTarget `target` for `type_ref` until `stop` is cancelled; re-attempts every
/// pending cluster at once when `templates` changes.
pub(crate) async fn run_target(
    shared: Arc<Shared>,
    target: String,
    type_ref: TypeRef,
    templates: watch::Receiver<u64>,
    stop: CancellationToken,
) {
    let Some((type_kube, initializer)) = resolve_type(&shared, &target, &type_ref, &stop).await
    else {
        return;
    };
    tracing::info!(target = %target, %initializer, "InitTarget resolved its initializer");
    let provider = InitializingWorkspaces::new(
        shared.clients.clone(),
        type_kube,
        &type_ref.name,
        &initializer,
    );
    let views = Views {
        urls: provider.urls(),
        failures: provider.failures(),
    };
    let (tx, clusters) = mpsc::channel(64);
    let provider_task = tokio::spawn(async move { provider.run(tx).await });

    let queue = WorkQueue::new(shared.backoff);
    let reconciler = Arc::new(TargetReconciler {
        shared: shared.clone(),
        target: target.clone(),
        initializer,
        type_ref,
        clusters: Mutex::new(HashMap::new()),
        counts: Mutex::new(Counts::default()),
    });
    let mut config = WorkerConfig::new(format!("inittarget/{target}"), shared.workers);
    config.retry = RetryPolicy::new(shared.backoff);
    config.metrics = shared.metrics.controllers().clone();
    let workers = tokio::spawn(run_workers(queue.clone(), reconciler.clone(), config));
    let running = Running { reconciler, queue };
    running.serve(clusters, views, templates, &stop).await;
    // Stop handing out work, cancel delayed retries, and let in-flight attempts finish.
    running.queue.shutdown();
    provider_task.abort();
    let _ = workers.await;
}

/// The provider's virtual workspace URLs and the failing watches among them.
struct Views {
    urls: watch::Receiver<Vec<String>>,
    failures: watch::Receiver<BTreeMap<String, String>>,
}

/// What a runner has written to its InitTarget's status.
#[derive(Debug, Default)]
struct Reported {
    /// Whether the current virtual workspace URLs and their `Ready` condition are written.
    views: bool,
    /// The counts last written.
    counts: Option<Counts>,
}

/// A started runner: its reconciler and the queue its workers drain.
struct Running {
    reconciler: Arc<TargetReconciler>,
    queue: WorkQueue<ObjectKey>,
}

impl Running {
    /// Feeds the queue from the provider's cluster events and template changes, and keeps the
    /// InitTarget's status current, until `stop` is cancelled or an input closes. A status
    /// write that failed is written again on the next status tick.
    async fn serve(
        &self,
        mut clusters: mpsc::Receiver<ClusterEvent>,
        mut views: Views,
        mut templates: watch::Receiver<u64>,
        stop: &CancellationToken,
    ) {
        let mut status_tick = tokio::time::interval(Duration::from_millis(250));
        let mut reported = Reported {
            views: self.report_urls(&[], &BTreeMap::new()).await,
            counts: None,
        };
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                event = clusters.recv() => match event {
                    Some(event) => engage(&self.reconciler, &self.queue, event),
                    None => break,
                },
                Ok(()) = views.urls.changed() => reported.views = self.report_views(&mut views).await,
                Ok(()) = views.failures.changed() => reported.views = self.report_views(&mut views).await,
                changed = templates.changed() => {
                    if changed.is_err() { break; }
                    self.retry_pending();
                }
                _ = status_tick.tick() => self.report_on_tick(&mut views, &mut reported).await,
            }
        }
    }

    /// Re-attempts every pending cluster at once, without waiting for its backoff.
    fn retry_pending(&self) {
        for cluster in lock(&self.reconciler.counts).pending.iter() {
            let key = ObjectKey::cluster_scoped(cluster.clone(), LOGICAL_CLUSTER_NAME);
            self.queue.forget(&key);
            self.queue.add(key);
        }
    }

    /// Writes the views again when their last write failed, and the counts when they changed
    /// since the last successful write.
    async fn report_on_tick(&self, views: &mut Views, reported: &mut Reported) {
        if !reported.views {
            reported.views = self.report_views(views).await;
        }
        let counts = lock(&self.reconciler.counts).clone();
        if reported.counts.as_ref() != Some(&counts) && self.report_counts(&counts).await {
            reported.counts = Some(counts);
        }
    }

    /// Writes the current views; whether the write succeeded.
    async fn report_views(&self, views: &mut Views) -> bool {
        let current = views.urls.borrow_and_update().clone();
        let failing = views.failures.borrow_and_update().clone();
        self.report_urls(&current, &failing).await
    }

    /// Writes `urls` and the `Ready` condition they make; whether the write succeeded.
    async fn report_urls(&self, urls: &[String], failing: &BTreeMap<String, String>) -> bool {
        let r = &self.reconciler;
        let result = report_urls(&r.shared, &r.target, &r.initializer, urls, failing).await;
        written(&r.target, result)
    }

    /// Writes `counts`; whether the write succeeded.
    async fn report_counts(&self, counts: &Counts) -> bool {
        let r = &self.reconciler;
        written(&r.target, report_counts(&r.shared, &r.target, counts).await)
    }
}

/// Whether a status write of InitTarget `target` succeeded; a failure is logged as a warning.
fn written(target: &str, result: Result<(), Error>) -> bool {
    match result {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!(target = %target, error = %err, "could not write the InitTarget's status; writing again on the next status tick");
            false
        }
    }
}

fn engage(reconciler: &TargetReconciler, queue: &WorkQueue<ObjectKey>, event: ClusterEvent) {
    match event {
        ClusterEvent::Engaged(cluster) => {
            let name = cluster.name.as_str().to_string();
            lock(&reconciler.counts).pending.insert(name.clone());
            lock(&reconciler.clusters).insert(name.clone(), cluster);
            queue.add(ObjectKey::cluster_scoped(name, LOGICAL_CLUSTER_NAME));
        }
        ClusterEvent::Disengaged(name) => {
            let name = name.as_str().to_string();
            let key = ObjectKey::cluster_scoped(name.clone(), LOGICAL_CLUSTER_NAME);
            queue.remove(&key);
            lock(&reconciler.clusters).remove(&name);
            lock(&reconciler.counts).forget(&name);
        }
    }
}

/// Reads the WorkspaceType until it exists and names an initializer; `None` when stopped.
async fn resolve_type(
    shared: &Shared,
    target: &str,
    type_ref: &TypeRef,
    stop: &CancellationToken,
) -> Option<(kcp_core::kube::Client, String)> {
    let config = shared.config.as_ref() as &dyn ObjectClient;
    let type_kube = match shared.clients.cluster(&shared.base_url, &type_ref.path) {
        Ok(c) => c,
        Err(err) => {
            let update = ConditionUpdate::new(CONDITION_READY, false, "InvalidWorkspaceTypeRef")
                .message(err.to_string());
            report_until_written(shared, target, update, stop).await;
            return None;
        }
    };
    let types: Api<WorkspaceType> = Api::all(type_kube.clone());
    let mut failures = 0u32;
    loop {
        let problem = match types.get_opt(&type_ref.name).await {
            Ok(Some(wt)) => match InitializerName::from_workspace_type(&wt) {
                Ok(init) => return Some((type_kube, init.as_str().to_string())),
                Err(err) => err.to_string(),
            },
            Ok(None) => format!(
                "WorkspaceType {:?} not found in {:?}",
                type_ref.name, type_ref.path
            ),
            Err(err) => format!(
                "reading WorkspaceType {:?} in {:?}: {err}",
                type_ref.name, type_ref.path
            ),
        };
        let update =
            ConditionUpdate::new(CONDITION_READY, false, "WorkspaceTypeNotFound").message(problem);
        if let Err(err) = set_conditions(config, target, vec![update]).await {
            tracing::warn!(target = %target, error = %err, "could not write the InitTarget's Ready condition; writing again on the next read");
        }
        failures = failures.saturating_add(1);
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tokio::time::sleep(shared.backoff.delay(failures)) => {}
        }
    }
}

/// Writes `update`, a `Ready` False after which the runner ends, until it is written or `stop`
/// is cancelled: nothing else reports why the InitTarget does not run.
async fn report_until_written(
    shared: &Shared,
    target: &str,
    update: ConditionUpdate,
    stop: &CancellationToken,
) {
    let config = shared.config.as_ref() as &dyn ObjectClient;
    let mut failures = 0u32;
    while let Err(err) = set_conditions(config, target, vec![update.clone()]).await {
        tracing::warn!(target = %target, error = %err, "could not write the InitTarget's Ready condition; writing again");
        failures = failures.saturating_add(1);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(shared.backoff.delay(failures)) => {}
        }
    }
}

/// The Ready condition from the watched URLs: none published, a watch refused or failing (with
/// the server's words, which name the user, verb and resource of a 403), or running.
async fn report_urls(
    shared: &Shared,
    target: &str,
    initializer: &str,
    urls: &[String],
    failing: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let (status, reason, message) = if let Some((url, error)) = failing.iter().next() {
        (
            ConditionStatus::False,
            "VirtualWorkspaceUnavailable",
            format!("watching {url}: {error}"),
        )
    } else if urls.is_empty() {
        (
            ConditionStatus::False,
            "NoVirtualWorkspace",
            "the WorkspaceType publishes no initializingworkspaces URL (is spec.initializer true?)"
                .to_string(),
        )
    } else {
        (
            ConditionStatus::True,
            "Running",
            format!("watching {} virtual workspace URL(s)", urls.len()),
        )
    };
    let update = ConditionUpdate::new(CONDITION_READY, status, reason).message(message);
    update_status(shared.config.as_ref(), target, |s| {
        s.initializer = Some(initializer.to_string());
        s.virtual_workspaces = urls.to_vec();
        kcp_core::runtime::set_condition(
            &mut s.conditions,
            update.clone(),
            kcp_core::runtime::conditions::now(),
        );
    })
    .await
}

async fn report_counts(shared: &Shared, target: &str, counts: &Counts) -> Result<(), Error> {
    shared
        .metrics
        .set_pending(target, counts.pending.len() as u64);
    let template_error = match counts.failing.iter().next() {
        Some((cluster, reason)) => {
            ConditionUpdate::new(CONDITION_TEMPLATE_ERROR, true, "InitializationFailed")
                .message(format!("cluster {cluster}: {reason}"))
        }
        None => ConditionUpdate::new(CONDITION_TEMPLATE_ERROR, false, "NoErrors"),
    };
    let duplicates = match counts.duplicates.iter().next() {
        Some((cluster, what)) => {
            ConditionUpdate::new(CONDITION_DUPLICATE_OBJECTS, true, "SameObjectInTwoSources")
                .message(format!("cluster {cluster}: {what}"))
        }
        None => ConditionUpdate::new(CONDITION_DUPLICATE_OBJECTS, false, "NoDuplicates"),
    };
    let clusters = crate::api::ClusterCounts {
        pending: u32::try_from(
            counts.pending.len() - counts.failing.len().min(counts.pending.len()),
        )
        .unwrap_or(u32::MAX),
        initialized: counts.initialized,
        failing: u32::try_from(counts.failing.len()).unwrap_or(u32::MAX),
    };
    update_status(shared.config.as_ref(), target, |s| {
        s.clusters = clusters;
        let now = kcp_core::runtime::conditions::now();
        kcp_core::runtime::set_condition(&mut s.conditions, template_error.clone(), now.clone());
        kcp_core::runtime::set_condition(&mut s.conditions, duplicates.clone(), now);
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::Duplicate;

    fn pending(cluster: &str) -> Counts {
        let mut counts = Counts::default();
        counts.pending.insert(cluster.to_string());
        counts
    }

    #[test]
    fn a_transient_failure_leaves_the_cluster_pending_and_not_failing() {
        let mut counts = pending("c");
        let waiting = Error::Pending {
            reason: "waiting".into(),
        };
        counts.record("c", &Err(waiting));
        assert_eq!(counts, pending("c"));
    }

    #[test]
    fn a_permanent_failure_is_counted_failing_until_the_cluster_is_initialized() {
        let mut counts = pending("c");
        let refused = Error::Apply {
            cluster: "c".into(),
            object: "o".into(),
            reason: "forbidden".into(),
        };
        counts.record("c", &Err(refused));
        assert_eq!(
            counts.failing.get("c").map(String::as_str),
            Some("cluster \"c\": o: forbidden")
        );
        let duplicate = Duplicate {
            object: "v1 ConfigMap default/x".into(),
            kept: "a".into(),
            dropped: "b".into(),
        };
        let done = Initialization::Completed {
            objects: 1,
            duplicates: vec![duplicate.clone()],
        };
        counts.record("c", &Ok(done));
        assert!(counts.pending.is_empty() && counts.failing.is_empty());
        assert_eq!(counts.initialized, 1);
        assert_eq!(counts.duplicates.get("c"), Some(&duplicate.to_string()));
    }

    #[test]
    fn a_cluster_not_ours_is_dropped_without_counting_it_initialized() {
        let mut counts = pending("c");
        counts.record("c", &Ok(Initialization::NotOurs));
        assert_eq!(counts, Counts::default());
    }
}
