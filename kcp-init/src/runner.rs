//! One InitTarget's runner: resolve the WorkspaceType and its initializer, engage the clusters
//! waiting for it through kcp-core's [`InitializingWorkspaces`] provider, and initialize each
//! through the runtime's work queue and workers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ObjectReference;
use kcp_core::ObjectClient;
use kcp_core::cluster::{ClusterEvent, ClusterProvider, EngagedCluster, InitializingWorkspaces};
use kcp_core::kcp::{InitializerName, LOGICAL_CLUSTER_NAME, WorkspaceType};
use kcp_core::kube::Api;
use kcp_core::runtime::workers::WorkerConfig;
use kcp_core::runtime::{
    Classify, ConditionStatus, ConditionUpdate, EventType, ObjectKey, Outcome, Reconciler,
    RetryPolicy, WorkQueue, run_workers,
};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::controller::Shared;
use crate::error::Error;
use crate::reconcile::{ClusterOutcome, EVENT_REASON, InitContext, initialize_cluster};
use crate::status::{set_conditions, update_status};
use crate::targets::TypeRef;

/// Why an attempt did not initialize its cluster.
#[derive(Debug)]
pub enum AttemptError {
    /// Not done yet for a reason that passes; retried with backoff.
    Pending(String),
    /// Not possible as things are; recorded as a Warning and a `TemplateError` condition.
    Failed(Error),
}

impl fmt::Display for AttemptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptError::Pending(reason) => write!(f, "{reason}"),
            AttemptError::Failed(err) => write!(f, "{err}"),
        }
    }
}

impl Classify for AttemptError {
    fn is_transient(&self) -> bool {
        matches!(self, AttemptError::Pending(_))
    }

    fn reason(&self) -> &str {
        match self {
            AttemptError::Pending(_) => "Pending",
            AttemptError::Failed(err) => err.reason(),
        }
    }
}

/// What the runner's status report is made of.
#[derive(Debug, Default, Clone, PartialEq)]
struct Counts {
    pending: BTreeSet<String>,
    failing: BTreeMap<String, String>,
    duplicates: BTreeMap<String, String>,
    initialized: u32,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[async_trait]
impl Reconciler<ObjectKey> for TargetReconciler {
    type Error = AttemptError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, AttemptError> {
        // The announcing LogicalCluster is used once, by the first attempt; retries read afresh.
        let cluster = lock(&self.clusters).get(&key.cluster).cloned();
        let Some(mut cluster) = cluster else {
            return Ok(Outcome::Done);
        };
        let seen = lock(&self.clusters)
            .get_mut(&key.cluster)
            .and_then(|c| c.announced_by.take())
            .map(|lc| (*lc).clone());
        cluster.announced_by = None;
        let ctx = InitContext {
            config: self.shared.config.as_ref() as &dyn ObjectClient,
            target: &self.target,
            initializer: &self.initializer,
            workspace_type_name: &self.type_ref.name,
            workspace_type_path: &self.type_ref.path,
            engine: &self.shared.engine,
            applier: &self.shared.applier,
            templates: Some(&self.shared.templates),
        };
        let span = tracing::info_span!("reconcile", cluster = %key.cluster, kind = "LogicalCluster", namespace = "", name = LOGICAL_CLUSTER_NAME, target = %self.target);
        let outcome = tracing::Instrument::instrument(
            initialize_cluster(&ctx, &key.cluster, cluster.client.as_ref(), seen),
            span,
        )
        .await;
        let mut counts = lock(&self.counts);
        match outcome {
            ClusterOutcome::Initialized {
                took, duplicates, ..
            } => {
                self.shared.metrics.initialized(&self.target, took);
                counts.initialized += 1;
                counts.pending.remove(&key.cluster);
                counts.failing.remove(&key.cluster);
                match duplicates.first() {
                    Some(d) => counts.duplicates.insert(key.cluster.clone(), d.to_string()),
                    None => counts.duplicates.remove(&key.cluster),
                };
                Ok(Outcome::Done)
            }
            ClusterOutcome::NotOurs => {
                counts.pending.remove(&key.cluster);
                counts.failing.remove(&key.cluster);
                Ok(Outcome::Done)
            }
            ClusterOutcome::Pending(reason) => Err(AttemptError::Pending(reason)),
            ClusterOutcome::Failed(err) => {
                counts.failing.insert(key.cluster.clone(), err.to_string());
                Err(AttemptError::Failed(err))
            }
        }
    }

    async fn failed(&self, key: &ObjectKey, error: &AttemptError) {
        self.shared.metrics.failed(&self.target);
        tracing::warn!(cluster = %key.cluster, target = %self.target, error = %error, "initialization failed");
        // The Event goes to the InitTarget in the config workspace, not to the LogicalCluster:
        // a workspace still initializing has no namespace at all on kcp (not even `default`), so
        // an Event inside it cannot be written (upstream writes none: its recorder is nil).
        let regarding = ObjectReference {
            api_version: Some("initialization.kcp.io/v1alpha1".into()),
            kind: Some("InitTarget".into()),
            name: Some(self.target.clone()),
            ..ObjectReference::default()
        };
        let message = format!("Failed to initialize cluster {}: {error}.", key.cluster);
        let recorded = self
            .shared
            .events
            .record(
                self.shared.config.as_ref(),
                &regarding,
                EventType::Warning,
                EVENT_REASON,
                &message,
            )
            .await;
        if let Err(err) = recorded {
            tracing::debug!(cluster = %key.cluster, error = %err, "could not record the Warning event");
        }
    }
}

/// Runs the InitTarget `target` for `type_ref` until `stop` is cancelled; re-attempts every
/// pending cluster at once when `templates` changes.
pub(crate) async fn run_target(
    shared: Arc<Shared>,
    target: String,
    type_ref: TypeRef,
    mut templates: watch::Receiver<u64>,
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
    let mut urls = provider.urls();
    let mut failures = provider.failures();
    let (tx, mut clusters) = mpsc::channel(64);
    let provider_task = tokio::spawn(async move { provider.run(tx).await });

    let queue = WorkQueue::new(shared.backoff);
    let reconciler = Arc::new(TargetReconciler {
        shared: shared.clone(),
        target: target.clone(),
        initializer: initializer.clone(),
        type_ref,
        clusters: Mutex::new(HashMap::new()),
        counts: Mutex::new(Counts::default()),
    });
    let mut config = WorkerConfig::new(format!("inittarget/{target}"), shared.workers);
    config.retry = RetryPolicy::new(shared.backoff);
    config.metrics = shared.metrics.controllers().clone();
    let workers = tokio::spawn(run_workers(queue.clone(), reconciler.clone(), config));
    report_urls(&shared, &target, &initializer, &[], &BTreeMap::new()).await;

    let mut status_tick = tokio::time::interval(Duration::from_millis(250));
    let mut reported = None;
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            event = clusters.recv() => match event {
                Some(event) => engage(&reconciler, &queue, event),
                None => break,
            },
            Ok(()) = urls.changed() => {
                let current = urls.borrow_and_update().clone();
                let failing = failures.borrow_and_update().clone();
                report_urls(&shared, &target, &initializer, &current, &failing).await;
            }
            Ok(()) = failures.changed() => {
                let current = urls.borrow_and_update().clone();
                let failing = failures.borrow_and_update().clone();
                report_urls(&shared, &target, &initializer, &current, &failing).await;
            }
            changed = templates.changed() => {
                if changed.is_err() { break; }
                for cluster in lock(&reconciler.counts).pending.iter() {
                    let key = ObjectKey::cluster_scoped(cluster.clone(), LOGICAL_CLUSTER_NAME);
                    queue.forget(&key);
                    queue.add(key);
                }
            }
            _ = status_tick.tick() => {
                let counts = lock(&reconciler.counts).clone();
                if reported.as_ref() != Some(&counts) {
                    report_counts(&shared, &target, &counts).await;
                    reported = Some(counts);
                }
            }
        }
    }
    // Stop handing out work, cancel delayed retries, and let in-flight attempts finish.
    queue.shutdown();
    provider_task.abort();
    let _ = workers.await;
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
            let mut counts = lock(&reconciler.counts);
            counts.pending.remove(&name);
            counts.failing.remove(&name);
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
            let update = ConditionUpdate::new("Ready", false, "InvalidWorkspaceTypeRef")
                .message(err.to_string());
            set_conditions(config, target, vec![update]).await;
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
        let update = ConditionUpdate::new("Ready", false, "WorkspaceTypeNotFound").message(problem);
        set_conditions(config, target, vec![update]).await;
        failures = failures.saturating_add(1);
        tokio::select! {
            _ = stop.cancelled() => return None,
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
) {
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
    let update = ConditionUpdate::new("Ready", status, reason).message(message);
    update_status(shared.config.as_ref(), target, |s| {
        s.initializer = Some(initializer.to_string());
        s.virtual_workspaces = urls.to_vec();
        kcp_core::runtime::set_condition(
            &mut s.conditions,
            update.clone(),
            kcp_core::runtime::conditions::now(),
        );
    })
    .await;
}

async fn report_counts(shared: &Shared, target: &str, counts: &Counts) {
    shared
        .metrics
        .set_pending(target, counts.pending.len() as u64);
    let template_error = match counts.failing.iter().next() {
        Some((cluster, reason)) => {
            ConditionUpdate::new("TemplateError", true, "InitializationFailed")
                .message(format!("cluster {cluster}: {reason}"))
        }
        None => ConditionUpdate::new("TemplateError", false, "NoErrors"),
    };
    let duplicates = match counts.duplicates.iter().next() {
        Some((cluster, what)) => {
            ConditionUpdate::new("DuplicateObjects", true, "SameObjectInTwoSources")
                .message(format!("cluster {cluster}: {what}"))
        }
        None => ConditionUpdate::new("DuplicateObjects", false, "NoDuplicates"),
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
    .await;
}
