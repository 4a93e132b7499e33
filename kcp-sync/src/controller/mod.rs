//! Wiring: which watches trigger which reconcile, on kcp-core's runtime.
//!
//! * PublishedResources and CRDs on the service cluster enqueue PublishedResource names; the
//!   publish reconcile ensures the schema ([`crate::reconcile::schema`]), then starts, keeps or
//!   stops the PublishedResource's sync controller and enqueues the export.
//! * The export reconcile ([`crate::reconcile::export`]) runs on one key and sets the
//!   `sync_agent_published_resource` gauge.
//! * Sync controllers ([`sync`]) are keyed by PublishedResource name in a [`TaskSet`] with the
//!   fingerprint `uid/generation/schema`: a spec or CRD change replaces the controller (the
//!   old one is cancelled, upstream #182), a status-only update restarts nothing.
//! * Consumer clusters come from any [`ClusterProvider`] (the APIExportEndpointSlice provider
//!   in the binary), through the shared [`sync::Clusters`] registry.

mod binding_watch;
mod claims_report;
mod kcp_watches;
pub mod progress;
pub mod publish_trigger;
pub mod related_watch;
pub mod sync;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use kcp_core::cluster::{ClusterEvent, ClusterProvider};
use kcp_core::kube::api::{ApiResource, DynamicObject};
use kcp_core::kube::runtime::{WatchStreamExt as _, watcher};
use kcp_core::runtime::metrics::ControllerMetrics;
use kcp_core::runtime::{
    ConditionUpdate, EventRecorder, Outcome, Reconciler, TaskSet, WorkQueue, WorkerConfig,
    run_workers,
};
use kcp_core::{Backoff, ListOptions, ObjectClient, ObjectClientExt as _, TemplateEngine};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::{CONDITION_READY, CONDITION_SYNCING, PublishedResource};
use crate::clash;
use crate::error::{Error, Result};
use crate::reconcile::discovery::ApiDocuments;
use crate::reconcile::export::reconcile_export;
use crate::reconcile::published_status::{self, StatusChange};
use crate::reconcile::schema::{Projected, project, reconcile_schema};
use crate::reconcile::sync::{PrimarySync, SyncConfig};
use sync::{Clusters, SyncShared, run_sync_controller};

/// The three controllers, for `--disabled-controllers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControllerName {
    /// `apiexport`.
    ApiExport,
    /// `apiresourceschema`.
    ApiResourceSchema,
    /// `sync`.
    Sync,
}

impl std::str::FromStr for ControllerName {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "apiexport" => Ok(Self::ApiExport),
            "apiresourceschema" => Ok(Self::ApiResourceSchema),
            "sync" => Ok(Self::Sync),
            other => Err(format!(
                "unknown controller {other:?} (apiexport, apiresourceschema, sync)"
            )),
        }
    }
}

/// Labels of `sync_agent_objects`: the PublishedResource and the objects' sync state
/// (`synced`, `failing` or `pending`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectLabels {
    /// The PublishedResource's name.
    pub published_resource: String,
    /// `synced`, `failing` or `pending`.
    pub state: String,
}

impl ObjectLabels {
    /// The labels of `state` for `published_resource`.
    pub fn new(published_resource: &str, state: &str) -> Self {
        Self {
            published_resource: published_resource.to_owned(),
            state: state.to_owned(),
        }
    }
}

/// The sync states counted per PublishedResource.
pub const OBJECT_STATES: [&str; 3] = ["synced", "failing", "pending"];

/// The agent's metrics.
#[derive(Clone, Default)]
pub struct Metrics {
    /// `sync_agent_published_resource`: PublishedResources matching the selector.
    pub published_resources: Gauge,
    /// `sync_agent_sync_controllers`: sync controllers running.
    pub sync_controllers: Gauge,
    /// `sync_agent_sync_controller_starts_total`: sync controllers started (a restart counts).
    pub sync_controller_starts: Counter,
    /// `sync_agent_objects{published_resource, state}`: kcp objects of each PublishedResource
    /// by their last sync result (the same counts as the status's `objects`).
    pub objects: Family<ObjectLabels, Gauge>,
    /// controller-runtime's series of the publish and sync controllers.
    pub controllers: ControllerMetrics,
}

impl Metrics {
    /// Sets the object counts of `published_resource`.
    pub fn set_objects(&self, published_resource: &str, counts: &crate::api::ObjectCounts) {
        for (state, count) in
            OBJECT_STATES
                .iter()
                .zip([counts.synced, counts.failing, counts.pending])
        {
            self.objects
                .get_or_create(&ObjectLabels::new(published_resource, state))
                .set(i64::from(count));
        }
    }

    /// Drops the object counts of a PublishedResource no longer synced.
    pub fn remove_objects(&self, published_resource: &str) {
        for state in OBJECT_STATES {
            self.objects
                .remove(&ObjectLabels::new(published_resource, state));
        }
    }
}

impl Metrics {
    /// Registers the metrics in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            controllers: ControllerMetrics::register(registry),
            ..Self::default()
        };
        registry.register(
            "sync_agent_published_resource",
            "Number of PublishedResources handled by this agent",
            metrics.published_resources.clone(),
        );
        registry.register(
            "sync_agent_sync_controllers",
            "Number of running sync controllers (one per PublishedResource)",
            metrics.sync_controllers.clone(),
        );
        registry.register(
            "sync_agent_sync_controller_starts",
            "Sync controllers started, restarts included",
            metrics.sync_controller_starts.clone(),
        );
        registry.register(
            "sync_agent_objects",
            "kcp objects of each PublishedResource by sync state (synced, failing, pending)",
            metrics.objects.clone(),
        );
        metrics
    }
}

/// Everything the agent runs with.
pub struct Agent {
    /// Object sync settings (agent name, state namespace, finalizer).
    pub sync: SyncConfig,
    /// Name of the APIExport in the export workspace.
    pub export_name: String,
    /// Label selector limiting the PublishedResources handled (empty: all).
    pub selector: String,
    /// Controllers not to run.
    pub disabled: BTreeSet<ControllerName>,
    /// The service cluster.
    pub service: Arc<dyn ObjectClient>,
    /// The service cluster for watches, discovery and OpenAPI documents (`None`: no watches,
    /// periodic resync only, and no builtin kinds).
    pub service_kube: Option<kube::Client>,
    /// The APIExport's workspace in kcp.
    pub kcp: Arc<dyn ObjectClient>,
    /// The APIExport's workspace for watches: an edit of the APIExport by someone else is
    /// repaired at once (`None`: at the next resync).
    pub kcp_kube: Option<kube::Client>,
    /// The consumer clusters.
    pub provider: Arc<dyn ClusterProvider>,
    /// How often every PublishedResource is reconciled without a trigger.
    pub resync: Duration,
    /// Workers per sync controller.
    pub workers: usize,
    /// Metrics.
    pub metrics: Metrics,
    /// Set once the first export reconcile succeeded (`/readyz`).
    pub ready: Arc<AtomicBool>,
    /// How often object counts are written to PublishedResource statuses (when changed).
    pub status_interval: Duration,
}

struct Publisher {
    agent: Arc<Agent>,
    shared: SyncShared,
    controllers: Mutex<TaskSet<String>>,
    /// The publish queue: PublishedResources and the export.
    queue: WorkQueue<PublishKey>,
    /// Events on PublishedResources (upstream's apiresourceschema controller writes them).
    recorder: EventRecorder,
    /// Events on the APIExport (upstream's apiexport controller writes them).
    export_recorder: EventRecorder,
}

/// What the publish controller reconciles: one PublishedResource, or the agent's APIExport.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum PublishKey {
    /// The PublishedResource of this name: its schema and its sync controller.
    PublishedResource(String),
    /// The APIExport: the schemas and claims of every PublishedResource.
    Export,
}

impl std::fmt::Display for PublishKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PublishKey::PublishedResource(name) => f.write_str(name),
            PublishKey::Export => f.write_str("APIExport"),
        }
    }
}

impl Publisher {
    async fn handled(&self, name: &str) -> Result<Option<PublishedResource>> {
        let pr: Option<PublishedResource> = self
            .agent
            .service
            .get_typed(None, name)
            .await
            .map_err(|e| Error::core(format!("reading PublishedResource {name:?}"), e))?;
        let selector =
            kcp_core::selector::LabelSelector::parse(&self.agent.selector).map_err(|e| {
                Error::InvalidSpec {
                    published_resource: name.to_owned(),
                    field: "--published-resource-selector".into(),
                    reason: e.to_string(),
                }
            })?;
        Ok(pr.filter(|pr| {
            let labels = serde_json::to_value(&pr.metadata.labels).unwrap_or(Value::Null);
            pr.metadata.deletion_timestamp.is_none() && selector.matches(labels.as_object())
        }))
    }

    fn stop(&self, name: &str) {
        let mut controllers = self
            .controllers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        controllers.stop(&name.to_owned());
        self.count_controllers(&controllers);
        drop(controllers);
        self.agent.metrics.remove_objects(name);
    }

    fn count_controllers(&self, controllers: &TaskSet<String>) {
        let running = controllers.keys().count();
        self.agent
            .metrics
            .sync_controllers
            .set(i64::try_from(running).unwrap_or(i64::MAX));
    }

    /// Starts (or keeps) the sync controller of `pr`.
    async fn ensure_controller(
        &self,
        pr: &PublishedResource,
        projected: &Projected,
    ) -> Result<bool> {
        let mut target = PrimarySync::new(pr, projected)?;
        let docs = self
            .agent
            .service_kube
            .as_ref()
            .map(|c| c as &dyn ApiDocuments);
        target
            .resolve_related(self.agent.service.as_ref(), docs)
            .await?;
        let fingerprint = format!(
            "{}/{}/{}",
            pr.metadata.uid.as_deref().unwrap_or_default(),
            pr.metadata.generation.unwrap_or_default(),
            projected.schema_name
        );
        let remote = api_resource(&projected.projected, &target.remote_gvk);
        let local = api_resource(&projected.source, &target.local_gvk);
        let shared = self.shared.clone();
        let mut controllers = self
            .controllers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let started = controllers.ensure(pr.name().to_owned(), &fingerprint, move |token| {
            run_sync_controller(shared, target, remote, local, token)
        });
        if started {
            self.agent.metrics.sync_controller_starts.inc();
        }
        self.count_controllers(&controllers);
        Ok(started)
    }
}

fn api_resource(crd: &Value, gvk: &kcp_core::kube::api::GroupVersionKind) -> ApiResource {
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ApiResource::from_gvk_with_plural(gvk, plural)
}

#[async_trait]
impl Reconciler<PublishKey> for Publisher {
    type Error = Error;

    /// A Warning `ReconcilingError` on the PublishedResource (service cluster), as upstream, and
    /// its `Syncing` condition False with the error's reason and message (naming the field), so
    /// the refusal stays visible until the object is fixed (the next good pass sets it True).
    async fn failed(&self, key: &PublishKey, error: &Error) {
        tracing::warn!(error = %error, key = %key, "publish reconcile failed");
        let PublishKey::PublishedResource(name) = key else {
            return;
        };
        let update = ConditionUpdate::new(CONDITION_SYNCING, false, error.reason())
            .message(error.to_string());
        self.write_syncing(name, update.clone()).await;
        if !error.is_transient() {
            // Nothing of it is served (its controller stopped or never started): not Ready
            // either, until a good pass starts its controller again.
            self.write_ready(name, update).await;
        }
        // Only the name is known here.
        let warning = kcp_core::runtime::EventType::Warning;
        let message = error.to_string();
        let service = self.agent.service.as_ref();
        self.recorder
            .publish_named::<PublishedResource>(
                service,
                None,
                name,
                warning,
                "ReconcilingError",
                &message,
            )
            .await;
    }

    async fn reconcile(&self, key: &PublishKey) -> Result<Outcome> {
        match key {
            PublishKey::PublishedResource(name) => self.reconcile_published(name).await,
            PublishKey::Export => self.reconcile_export().await,
        }
    }
}

impl Publisher {
    /// Ensures the schema of PublishedResource `name` and starts, keeps or stops its sync
    /// controller; the export is enqueued.
    async fn reconcile_published(&self, name: &str) -> Result<Outcome> {
        let Some(pr) = self.handled(name).await? else {
            self.stop(name);
            self.queue.add(PublishKey::Export);
            self.retry_refused().await?;
            return Ok(Outcome::Done);
        };
        let agent = &self.agent;
        let docs = agent.service_kube.as_ref().map(|c| c as &dyn ApiDocuments);
        let projected = if agent.disabled.contains(&ControllerName::ApiResourceSchema) {
            Some(project(agent.service.as_ref(), docs, &pr).await?)
        } else {
            reconcile_schema(
                agent.service.as_ref(),
                docs,
                agent.kcp.as_ref(),
                &agent.sync.agent,
                &pr,
            )
            .await?
        };
        self.queue.add(PublishKey::Export);
        let Some(projected) = projected else {
            return Ok(Outcome::Done);
        };
        if let Err(refused) = self.first_to_publish(&pr, &projected).await {
            self.stop(name);
            return Err(refused);
        }
        let syncing = !agent.disabled.contains(&ControllerName::Sync) && pr.sync_enabled();
        if syncing {
            self.ensure_controller(&pr, &projected).await?;
        } else {
            self.stop(name);
        }
        self.set_syncing(&pr, syncing).await;
        Ok(Outcome::Done)
    }

    /// Refuses `pr` when an earlier PublishedResource publishes the same resource (see
    /// [`crate::clash`]); later ones publishing it are looked at again, to be refused.
    async fn first_to_publish(&self, pr: &PublishedResource, projected: &Projected) -> Result<()> {
        let prs: Vec<PublishedResource> = self
            .agent
            .service
            .list_typed(None, &ListOptions::labels(self.agent.selector.clone()))
            .await
            .map_err(|e| Error::core("listing PublishedResources", e))?;
        let (before, after) = clash::sharing(&prs, pr, &projected.schema_name);
        if let Some(first) = before.first() {
            return Err(clash::refusal(pr, &projected.schema_name, first));
        }
        for later in after {
            self.enqueue(later);
        }
        Ok(())
    }

    /// Enqueues the PublishedResources whose `Syncing` is False: one that gave way to a
    /// PublishedResource now gone may publish its resource now.
    async fn retry_refused(&self) -> Result<()> {
        let prs: Vec<PublishedResource> = self
            .agent
            .service
            .list_typed(None, &ListOptions::labels(self.agent.selector.clone()))
            .await
            .map_err(|e| Error::core("listing PublishedResources", e))?;
        let refused = prs.iter().filter(|pr| {
            let status = pr.status.as_ref();
            let syncing = status.and_then(|s| s.condition(CONDITION_SYNCING));
            syncing.is_some_and(|c| c.status == "False")
        });
        for pr in refused {
            self.enqueue(pr);
        }
        Ok(())
    }

    /// Enqueues the PublishedResource `pr`.
    fn enqueue(&self, pr: &PublishedResource) {
        let key = PublishKey::PublishedResource(pr.name().to_owned());
        self.queue.add(key);
    }

    async fn set_syncing(&self, pr: &PublishedResource, syncing: bool) {
        let reason = if syncing {
            "ControllerRunning"
        } else {
            "SynchronizationDisabled"
        };
        let update = ConditionUpdate::new(CONDITION_SYNCING, syncing, reason)
            .generation(pr.metadata.generation);
        self.write_syncing(pr.name(), update).await;
    }

    /// The one writer of the `Syncing` condition.
    async fn write_syncing(&self, name: &str, update: ConditionUpdate) {
        self.write_condition(name, update).await;
    }

    /// `update`, of the `Syncing` condition, as the `Ready` condition: the writer of `Ready`
    /// is otherwise the PublishedResource's running sync controller.
    async fn write_ready(&self, name: &str, update: ConditionUpdate) {
        let ready = ConditionUpdate {
            type_: CONDITION_READY.into(),
            ..update
        };
        self.write_condition(name, ready).await;
    }

    /// Sets one condition of a PublishedResource's status (a failed write is logged).
    async fn write_condition(&self, name: &str, update: ConditionUpdate) {
        let change = StatusChange::Condition(update);
        published_status::write_or_warn(self.agent.service.as_ref(), name, &change).await;
    }

    async fn reconcile_export(&self) -> Result<Outcome> {
        let agent = &self.agent;
        let prs: Vec<PublishedResource> = agent
            .service
            .list_typed(None, &ListOptions::labels(agent.selector.clone()))
            .await
            .map_err(|e| Error::core("listing PublishedResources", e))?;
        let prs: Vec<PublishedResource> = prs
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        agent
            .metrics
            .published_resources
            .set(i64::try_from(prs.len()).unwrap_or(i64::MAX));
        if agent.disabled.contains(&ControllerName::ApiExport) {
            agent.ready.store(true, Ordering::Relaxed);
            return Ok(Outcome::Done);
        }
        let ready: BTreeSet<String> = clash::exported(&prs);
        let report = reconcile_export(
            agent.kcp.as_ref(),
            Some(&self.export_recorder),
            &agent.sync.agent,
            &agent.export_name,
            &prs,
            &ready,
            &ready,
        )
        .await?;
        agent.ready.store(true, Ordering::Relaxed);
        if report.found {
            self.report_claims(&prs, &report.claims).await;
        }
        Ok(Outcome::RequeueAfter(agent.resync))
    }
}

/// Runs the agent until `shutdown` completes.
pub async fn run(agent: Agent, shutdown: impl std::future::Future<Output = ()>) -> Result<()> {
    let agent = Arc::new(agent);
    let clusters = Clusters::default();
    let shared = SyncShared {
        config: Arc::new(agent.sync.clone()),
        service: agent.service.clone(),
        service_kube: agent.service_kube.clone(),
        clusters: clusters.clone(),
        engine: Arc::new(TemplateEngine::new()),
        workers: agent.workers,
        recorder: EventRecorder::new(crate::reconcile::kcp_events::SYNC_COMPONENT),
        status_interval: agent.status_interval,
        metrics: agent.metrics.clone(),
    };
    let queue: WorkQueue<PublishKey> = WorkQueue::new(Backoff::default());
    let publisher = Arc::new(Publisher {
        agent: agent.clone(),
        shared,
        controllers: Mutex::new(TaskSet::new()),
        queue: queue.clone(),
        recorder: EventRecorder::new("syncagent-apiresourceschema"),
        export_recorder: EventRecorder::new("syncagent-apiexport"),
    });
    let (tx, mut rx) = mpsc::channel::<ClusterEvent>(256);
    let provider = agent.provider.clone();
    let provider_task = tokio::spawn(async move { provider.run(tx).await });
    // A consumer engaged has its APIBinding read at the next export reconcile: whether it
    // accepted the claims is reported without waiting for the resync.
    let export_queue = queue.clone();
    let bindings = tokio::spawn(binding_watch::watch_bindings(
        clusters.clone(),
        queue.clone(),
    ));
    let pump = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            let engaged = matches!(event, ClusterEvent::Engaged(_));
            clusters.apply(event);
            if engaged {
                export_queue.add(PublishKey::Export);
            }
        }
    });
    let triggers = tokio::spawn(triggers(agent.clone(), queue.clone()));
    let mut publish = WorkerConfig::new("publish", 4);
    publish.metrics = publisher.shared.metrics.controllers.clone();
    let workers = tokio::spawn(run_workers(queue.clone(), publisher.clone(), publish));
    shutdown.await;
    triggers.abort();
    provider_task.abort();
    pump.abort();
    bindings.abort();
    queue.shutdown();
    let _ = workers.await;
    let mut controllers = publisher
        .controllers
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    controllers.retain(|_| false);
    Ok(())
}

/// The watch of the agent's APIExport, or nothing without a kcp client for watches.
fn export_events(
    agent: &Agent,
) -> futures::stream::BoxStream<
    'static,
    std::result::Result<watcher::Event<DynamicObject>, watcher::Error>,
> {
    let Some(kube) = agent.kcp_kube.clone() else {
        return futures::stream::pending().boxed();
    };
    let resource = ApiResource::from_gvk(&crate::reconcile::export::export_gvk());
    let api = kube::Api::<DynamicObject>::all_with(kube, &resource);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", agent.export_name));
    watcher(api, config).default_backoff().boxed()
}

/// Enqueues PublishedResources on changes (watches) and every `resync`, and the export when
/// the APIExport was changed by someone else.
async fn triggers(agent: Arc<Agent>, queue: WorkQueue<PublishKey>) {
    let enqueue_all = || {
        let (agent, queue) = (agent.clone(), queue.clone());
        async move {
            match agent
                .service
                .list_typed::<PublishedResource>(None, &ListOptions::labels(agent.selector.clone()))
                .await
            {
                Ok(prs) => prs
                    .iter()
                    .for_each(|p| queue.add(PublishKey::PublishedResource(p.name().to_owned()))),
                Err(e) => tracing::warn!(error = %e, "listing PublishedResources failed"),
            }
            queue.add(PublishKey::Export);
        }
    };
    let Some(kube) = agent.service_kube.clone() else {
        loop {
            enqueue_all().await;
            tokio::time::sleep(agent.resync).await;
        }
    };
    let prs = kube::Api::<PublishedResource>::all(kube.clone());
    let crds = kube::Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(kube);
    let pr_events =
        watcher(prs, watcher::Config::default().labels(&agent.selector)).default_backoff();
    let crd_events = watcher(crds, watcher::Config::default()).default_backoff();
    let export_events = export_events(&agent);
    futures::pin_mut!(pr_events, crd_events, export_events);
    let mut tick = tokio::time::interval(agent.resync);
    let mut admitted = publish_trigger::PublishTriggers::default();
    let mut export = publish_trigger::ExportTrigger::default();
    loop {
        tokio::select! {
            Some(event) = export_events.next() => {
                if event.is_ok_and(|e| export.admit(&e)) {
                    queue.add(PublishKey::Export);
                }
            }
            Some(event) = pr_events.next() => {
                if let Some(name) = event.ok().and_then(|e| admitted.admit(&e)) {
                    queue.add(PublishKey::PublishedResource(name));
                }
            }
            Some(event) = crd_events.next() => {
                for name in event.map(|e| admitted.admit_crd(&e)).unwrap_or_default() {
                    queue.add(PublishKey::PublishedResource(name));
                }
            }
            _ = tick.tick() => enqueue_all().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectCounts;

    fn encoded(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap_or_default();
        text
    }

    #[test]
    fn object_counts_are_exported_per_published_resource_and_state() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        let counts = ObjectCounts {
            synced: 3,
            failing: 1,
            pending: 2,
        };
        metrics.set_objects("things", &counts);
        let text = encoded(&registry);
        for line in [
            r#"sync_agent_objects{published_resource="things",state="synced"} 3"#,
            r#"sync_agent_objects{published_resource="things",state="failing"} 1"#,
            r#"sync_agent_objects{published_resource="things",state="pending"} 2"#,
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn a_published_resource_no_longer_synced_leaves_no_object_counts() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        metrics.set_objects("things", &ObjectCounts::default());
        metrics.remove_objects("things");
        assert!(!encoded(&registry).contains("published_resource=\"things\""));
    }
}
