//! The agent's machinery: one supervisor watching InitTargets (and InitTemplates) in the config
//! workspace, and one runner per active InitTarget that watches every initializingworkspaces
//! URL of its WorkspaceType and initializes the clusters it finds there.
//!
//! - Creating, changing (`workspaceTypeRef`, labels leaving the selector) or deleting an
//!   InitTarget starts, restarts or stops its runner; a stopped runner leaves no task behind.
//! - Two InitTargets for one WorkspaceType: both get a `Conflict` condition and only the oldest
//!   runs.
//! - A runner follows the WorkspaceType's `status.virtualWorkspaces`: one LogicalCluster watch
//!   per URL (every shard), started and stopped as URLs come and go.
//! - Work is keyed by (URL, logical cluster): same-named objects of two workspaces never meet.
//!   Transient failures retry with capped exponential backoff; permanent ones are retried when
//!   a template changes (and every backoff cap, in case something else was fixed).
//! - A changed InitTemplate re-enqueues the pending clusters of the targets using it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kcp_core::apply::ApplierConfig;
use kcp_core::kcp::urls::{initializing_workspace_urls, strip_cluster_suffix};
use kcp_core::kcp::{CLUSTER_ANNOTATION, InitializerName, WorkspaceType};
use kcp_core::kube::api::{ApiResource, DynamicObject};
use kcp_core::kube::runtime::{WatchStreamExt, watcher};
use kcp_core::kube::{self, Api};
use kcp_core::{Backoff, KubeObjectClient, ObjectClient, TemplateEngine};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::api::{InitTarget, InitTemplate};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::reconcile::{
    ClusterOutcome, FIELD_MANAGER, InitContext, TemplateCache, initialize_cluster,
};
use kcp_core::cluster::ClusterClients;

/// How the agent runs.
#[derive(Clone)]
pub struct AgentConfig {
    /// Connection to kcp; any `/clusters/<x>` suffix of its URL is ignored.
    pub kube: kube::Config,
    /// Workspace path or logical cluster name holding the InitTargets and InitTemplates.
    pub config_workspace: String,
    /// Label selector choosing the InitTargets this agent serves (all when `None`).
    pub selector: Option<String>,
    /// Clusters initialized at the same time per InitTarget.
    pub workers: usize,
    /// Retry delays of transient failures (1 s doubling to 30 s by default).
    pub backoff: Backoff,
    /// Apply settings (field manager `kcp-init-agent`, concurrency, readiness timeouts).
    pub applier: ApplierConfig,
    /// Metrics, shared with whoever serves them.
    pub metrics: Arc<Metrics>,
    /// Set once the InitTarget and InitTemplate watches have synced.
    pub ready: Arc<AtomicBool>,
}

impl AgentConfig {
    /// Defaults for a kcp connection and config workspace.
    pub fn new(kube: kube::Config, config_workspace: impl Into<String>) -> Self {
        Self {
            kube,
            config_workspace: config_workspace.into(),
            selector: None,
            workers: 4,
            backoff: Backoff::default(),
            applier: ApplierConfig::new(FIELD_MANAGER),
            metrics: Arc::new(Metrics::new()),
            ready: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// What every runner shares.
struct Shared {
    base_url: String,
    clients: ClusterClients,
    config_workspace: String,
    config: Arc<KubeObjectClient>,
    config_kube: kube::Client,
    engine: TemplateEngine,
    applier: ApplierConfig,
    backoff: Backoff,
    workers: usize,
    metrics: Arc<Metrics>,
    templates: TemplateCache,
}

/// Runs the agent until `shutdown` completes, then lets in-flight initializations finish.
pub async fn run(
    config: AgentConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let base_url = strip_cluster_suffix(&config.kube.cluster_url.to_string()).to_string();
    let clients = ClusterClients::new(config.kube.clone());
    let config_kube = clients
        .cluster(&base_url, &config.config_workspace)
        .map_err(|source| Error::Core {
            context: "connecting to the config workspace".into(),
            source,
        })?;
    let shared = Shared {
        base_url: base_url.clone(),
        clients,
        config_workspace: config.config_workspace.clone(),
        config: Arc::new(KubeObjectClient::new(config_kube.clone())),
        config_kube,
        engine: TemplateEngine::new(),
        applier: config.applier.clone(),
        backoff: config.backoff,
        workers: config.workers.max(1),
        metrics: config.metrics.clone(),
        templates: TemplateCache::new(),
    };
    let shared = Arc::new(shared);
    tracing::info!(
        config_workspace = %config.config_workspace,
        selector = config.selector.as_deref().unwrap_or(""),
        "kcp-init-agent starting"
    );

    let targets_api: Api<InitTarget> = Api::all(shared.config_kube.clone());
    let mut target_watch = watcher::Config::default();
    if let Some(selector) = config.selector.as_deref().filter(|s| !s.is_empty()) {
        target_watch = target_watch.labels(selector);
    }
    let mut targets = watcher(targets_api, target_watch).default_backoff().boxed();
    let templates_api: Api<InitTemplate> = Api::all(shared.config_kube.clone());
    let mut templates = watcher(templates_api, watcher::Config::default())
        .default_backoff()
        .boxed();

    let mut supervisor = Supervisor::new(shared.clone());
    let mut targets_synced = false;
    let mut templates_synced = false;
    let mut initial: BTreeMap<String, InitTarget> = BTreeMap::new();
    let mut relisted_templates: BTreeMap<String, String> = BTreeMap::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            event = targets.try_next() => match event {
                Ok(Some(watcher::Event::Init)) => initial.clear(),
                Ok(Some(watcher::Event::InitApply(t))) => {
                    if let Some(name) = t.metadata.name.clone() {
                        initial.insert(name, t);
                    }
                }
                Ok(Some(watcher::Event::InitDone)) => {
                    supervisor.known = std::mem::take(&mut initial);
                    supervisor.sync().await;
                    targets_synced = true;
                }
                Ok(Some(watcher::Event::Apply(t))) => {
                    if let Some(name) = t.metadata.name.clone() {
                        supervisor.known.insert(name, t);
                        supervisor.sync().await;
                    }
                }
                Ok(Some(watcher::Event::Delete(t))) => {
                    if let Some(name) = t.metadata.name.as_deref() {
                        supervisor.known.remove(name);
                        supervisor.sync().await;
                    }
                }
                Ok(None) => break,
                Err(err) => tracing::warn!(error = %err, "InitTarget watch failed; retrying"),
            },
            event = templates.try_next() => match event {
                Ok(Some(watcher::Event::Init)) => relisted_templates.clear(),
                Ok(Some(watcher::Event::InitApply(t))) => {
                    if let Some(name) = t.metadata.name.clone() {
                        relisted_templates.insert(name, t.spec.template);
                    }
                }
                Ok(Some(watcher::Event::InitDone)) => {
                    shared.templates.replace_all(std::mem::take(&mut relisted_templates));
                    templates_synced = true;
                }
                Ok(Some(watcher::Event::Apply(t))) => {
                    if let Some(name) = t.metadata.name.as_deref() {
                        shared.templates.insert(name, &t.spec.template);
                        supervisor.template_changed(name);
                    }
                }
                Ok(Some(watcher::Event::Delete(t))) => {
                    if let Some(name) = t.metadata.name.as_deref() {
                        shared.templates.remove(name);
                        supervisor.template_changed(name);
                    }
                }
                Ok(None) => break,
                Err(err) => tracing::warn!(error = %err, "InitTemplate watch failed; retrying"),
            },
        }
        config
            .ready
            .store(targets_synced && templates_synced, Ordering::SeqCst);
    }
    config.ready.store(false, Ordering::SeqCst);
    tracing::info!("shutting down: draining in-flight initializations");
    supervisor.stop_all().await;
    Ok(())
}

/// A running InitTarget.
struct Runner {
    /// What the runner was started for; a different key restarts it.
    key: String,
    stop: watch::Sender<bool>,
    templates: watch::Sender<u64>,
    template_names: BTreeSet<String>,
    task: tokio::task::JoinHandle<()>,
}

struct Supervisor {
    shared: Arc<Shared>,
    known: BTreeMap<String, InitTarget>,
    running: BTreeMap<String, Runner>,
    conflicted: BTreeSet<String>,
}

impl Supervisor {
    fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            known: BTreeMap::new(),
            running: BTreeMap::new(),
            conflicted: BTreeSet::new(),
        }
    }

    /// The WorkspaceType an InitTarget points at, as (path, name).
    fn type_of(&self, target: &InitTarget) -> (String, String) {
        let r = &target.spec.workspace_type_ref;
        let path = if r.path.is_empty() {
            self.shared.config_workspace.clone()
        } else {
            r.path.clone()
        };
        (path, r.name.clone())
    }

    fn run_key(&self, target: &InitTarget) -> String {
        let (path, name) = self.type_of(target);
        format!(
            "{}|{path}|{name}",
            target.metadata.uid.as_deref().unwrap_or_default()
        )
    }

    /// Starts, restarts and stops runners to match the known InitTargets.
    async fn sync(&mut self) {
        // Group by WorkspaceType; the oldest target of a group acts.
        let mut groups: BTreeMap<(String, String), Vec<&InitTarget>> = BTreeMap::new();
        for target in self.known.values() {
            if target.metadata.deletion_timestamp.is_none() {
                groups.entry(self.type_of(target)).or_default().push(target);
            }
        }
        let mut active: BTreeMap<String, InitTarget> = BTreeMap::new();
        let mut conflicted = BTreeSet::new();
        for ((path, name), mut members) in groups {
            members.sort_by(|a, b| {
                let age = |t: &InitTarget| t.metadata.creation_timestamp.clone();
                age(a)
                    .cmp(&age(b))
                    .then(a.metadata.name.cmp(&b.metadata.name))
            });
            if members.len() > 1 {
                let names: Vec<String> = members
                    .iter()
                    .filter_map(|t| t.metadata.name.clone())
                    .collect();
                for t in &members {
                    if let Some(n) = &t.metadata.name {
                        conflicted.insert(n.clone());
                        let others: Vec<&String> = names.iter().filter(|x| *x != n).collect();
                        let message = format!(
                            "InitTargets {others:?} also initialize WorkspaceType {name:?} in {path:?}; only the oldest, {:?}, acts",
                            names.first().map(String::as_str).unwrap_or_default()
                        );
                        set_conflict(&self.shared, n, Some(&message)).await;
                    }
                }
            }
            if let Some(first) = members.first()
                && let Some(n) = &first.metadata.name
            {
                active.insert(n.clone(), (*first).clone());
            }
        }
        for name in self
            .conflicted
            .difference(&conflicted)
            .cloned()
            .collect::<Vec<_>>()
        {
            if self.known.contains_key(&name) {
                set_conflict(&self.shared, &name, None).await;
            }
        }
        self.conflicted = conflicted;

        let stale: Vec<String> = self
            .running
            .iter()
            .filter(|(name, runner)| {
                active
                    .get(*name)
                    .is_none_or(|t| self.run_key(t) != runner.key)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            if let Some(runner) = self.running.remove(&name) {
                tracing::info!(target = %name, "stopping InitTarget");
                stop_runner(runner).await;
            }
        }
        for (name, target) in active {
            let sources: BTreeSet<String> = target
                .spec
                .sources
                .iter()
                .filter_map(|s| s.template.as_ref().map(|t| t.name.clone()))
                .collect();
            if let Some(runner) = self.running.get_mut(&name) {
                // Same WorkspaceType: the runner reads the sources fresh on each attempt.
                if runner.template_names != sources {
                    runner.template_names = sources;
                    runner.templates.send_modify(|n| *n += 1);
                }
                continue;
            }
            let (path, type_name) = self.type_of(&target);
            tracing::info!(target = %name, workspace_type = %type_name, path = %path, "starting InitTarget");
            let (stop, stop_rx) = watch::channel(false);
            let (templates, templates_rx) = watch::channel(0u64);
            let task = tokio::spawn(run_target(
                self.shared.clone(),
                name.clone(),
                path,
                type_name,
                stop_rx,
                templates_rx,
            ));
            self.running.insert(
                name,
                Runner {
                    key: self.run_key(&target),
                    stop,
                    templates,
                    template_names: sources,
                    task,
                },
            );
        }
    }

    fn template_changed(&self, template: &str) {
        for runner in self.running.values() {
            if runner.template_names.contains(template) {
                runner.templates.send_modify(|n| *n += 1);
            }
        }
    }

    async fn stop_all(&mut self) {
        for (_, runner) in std::mem::take(&mut self.running) {
            stop_runner(runner).await;
        }
    }
}

/// Stops a runner and waits (bounded) for its in-flight initializations to finish.
async fn stop_runner(runner: Runner) {
    let _ = runner.stop.send(true);
    let mut task = runner.task;
    if tokio::time::timeout(Duration::from_secs(30), &mut task)
        .await
        .is_err()
    {
        task.abort();
    }
}

async fn set_conflict(shared: &Shared, target: &str, message: Option<&str>) {
    let condition = match message {
        Some(m) => {
            json!({"type": "Conflict", "status": "True", "reason": "SameWorkspaceType", "message": m})
        }
        None => {
            json!({"type": "Conflict", "status": "False", "reason": "NoConflict", "message": ""})
        }
    };
    patch_status(shared, target, json!({"conditions": [condition]})).await;
}

/// Merges conditions and fields into an InitTarget's status (conditions by type).
async fn patch_status(shared: &Shared, target: &str, update: serde_json::Value) {
    let api: Api<InitTarget> = Api::all(shared.config_kube.clone());
    let Ok(Some(current)) = api.get_opt(target).await else {
        return;
    };
    let mut status = current
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| json!({}));
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    if let Some(update) = update.as_object() {
        for (key, value) in update {
            if key != "conditions" {
                status[key] = value.clone();
                continue;
            }
            let mut conditions = status
                .get("conditions")
                .and_then(|c| c.as_array())
                .cloned()
                .unwrap_or_default();
            for new in value.as_array().into_iter().flatten() {
                let mut new = new.clone();
                match conditions.iter_mut().find(|c| c["type"] == new["type"]) {
                    Some(old) => {
                        let unchanged = old["status"] == new["status"];
                        new["lastTransitionTime"] = if unchanged {
                            old["lastTransitionTime"].clone()
                        } else {
                            json!(now)
                        };
                        *old = new;
                    }
                    None => {
                        new["lastTransitionTime"] = json!(now);
                        conditions.push(new);
                    }
                }
            }
            status["conditions"] = json!(conditions);
        }
    }
    status["observedGeneration"] = json!(current.metadata.generation);
    let before = current
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok());
    if before.as_ref() == Some(&status) {
        return;
    }
    let patch = kube::api::Patch::Merge(json!({"status": status}));
    let params = kube::api::PatchParams::default();
    if let Err(err) = api.patch_status(target, &params, &patch).await {
        tracing::debug!(target, error = %err, "could not update the InitTarget status");
    }
}

/// A unit of work: one logical cluster seen through one virtual workspace URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ClusterKey {
    url: String,
    cluster: String,
}

/// The work queue of one runner: deduplicated keys, delayed retries, failure counts.
#[derive(Default)]
struct QueueState {
    queued: BTreeSet<ClusterKey>,
    in_flight: BTreeSet<ClusterKey>,
    dirty: BTreeSet<ClusterKey>,
    failures: HashMap<ClusterKey, u32>,
    /// Clusters that carry the initializer, per URL.
    pending: BTreeSet<ClusterKey>,
    /// Clusters whose last attempt failed permanently, with the reason.
    failing: BTreeMap<ClusterKey, String>,
    /// The LogicalCluster of each pending cluster as its watch last delivered it.
    latest: BTreeMap<ClusterKey, DynamicObject>,
    initialized: u32,
}

struct Queue {
    state: Mutex<QueueState>,
    tx: mpsc::UnboundedSender<ClusterKey>,
    changed: watch::Sender<u64>,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn add(&self, key: ClusterKey) {
        let mut s = self.lock();
        s.pending.insert(key.clone());
        self.enqueue(&mut s, key);
    }

    /// Records the latest LogicalCluster of a cluster and queues it.
    fn seen(&self, key: ClusterKey, lc: DynamicObject) {
        let mut s = self.lock();
        s.pending.insert(key.clone());
        s.latest.insert(key.clone(), lc);
        self.enqueue(&mut s, key);
    }

    fn enqueue(&self, s: &mut QueueState, key: ClusterKey) {
        if s.in_flight.contains(&key) {
            s.dirty.insert(key);
        } else if s.queued.insert(key.clone()) {
            let _ = self.tx.send(key);
        }
        self.changed.send_modify(|n| *n += 1);
    }

    fn forget(&self, key: &ClusterKey) {
        let mut s = self.lock();
        s.pending.remove(key);
        s.failing.remove(key);
        s.failures.remove(key);
        s.latest.remove(key);
        drop(s);
        self.changed.send_modify(|n| *n += 1);
    }

    fn add_after(self: &Arc<Self>, key: ClusterKey, delay: Duration) {
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if queue.lock().pending.contains(&key) {
                queue.add(key);
            }
        });
    }
}

async fn run_target(
    shared: Arc<Shared>,
    target: String,
    type_path: String,
    type_name: String,
    mut stop: watch::Receiver<bool>,
    mut templates: watch::Receiver<u64>,
) {
    // Resolve the WorkspaceType and its initializer, retrying until it exists.
    let type_kube = match shared.clients.cluster(&shared.base_url, &type_path) {
        Ok(c) => c,
        Err(err) => {
            set_ready(
                &shared,
                &target,
                false,
                "InvalidWorkspaceTypeRef",
                &err.to_string(),
            )
            .await;
            return;
        }
    };
    let types: Api<WorkspaceType> = Api::all(type_kube);
    let mut failures = 0u32;
    let (initializer, urls) = loop {
        let attempt = types.get_opt(&type_name).await;
        let problem = match attempt {
            Ok(Some(wt)) => match InitializerName::from_workspace_type(&wt) {
                Ok(init) => break (init.as_str().to_string(), initializing_urls(&wt)),
                Err(err) => err.to_string(),
            },
            Ok(None) => format!("WorkspaceType {type_name:?} not found in {type_path:?}"),
            Err(err) => format!("reading WorkspaceType {type_name:?} in {type_path:?}: {err}"),
        };
        set_ready(&shared, &target, false, "WorkspaceTypeNotFound", &problem).await;
        let delay = shared.backoff.delay(failures);
        failures = failures.saturating_add(1);
        tokio::select! {
            _ = stopped(&mut stop) => return,
            _ = tokio::time::sleep(delay) => {}
        }
    };
    tracing::info!(target = %target, %initializer, "InitTarget resolved its initializer");

    let (tx, rx) = mpsc::unbounded_channel();
    let (changed, mut changed_rx) = watch::channel(0u64);
    let queue = Arc::new(Queue {
        state: Mutex::new(QueueState::default()),
        tx,
        changed,
    });
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let mut workers = JoinSet::new();
    for _ in 0..shared.workers {
        workers.spawn(worker(
            shared.clone(),
            queue.clone(),
            rx.clone(),
            target.clone(),
            type_name.clone(),
            type_path.clone(),
            initializer.clone(),
            stop.clone(),
        ));
    }
    // One LogicalCluster watch per virtual workspace URL, following the WorkspaceType.
    let mut watches: BTreeMap<String, tokio::task::JoinHandle<()>> = BTreeMap::new();
    let sync_urls =
        |urls: Vec<String>, watches: &mut BTreeMap<String, tokio::task::JoinHandle<()>>| {
            let wanted: BTreeSet<String> = urls.into_iter().collect();
            for (url, task) in std::mem::take(watches) {
                if wanted.contains(&url) {
                    watches.insert(url, task);
                } else {
                    task.abort();
                    let gone: Vec<ClusterKey> = queue
                        .lock()
                        .pending
                        .iter()
                        .filter(|k| k.url == url)
                        .cloned()
                        .collect();
                    for key in gone {
                        queue.forget(&key);
                    }
                }
            }
            for url in wanted {
                watches.entry(url.clone()).or_insert_with(|| {
                    tokio::spawn(watch_url(
                        shared.clone(),
                        queue.clone(),
                        url,
                        initializer.clone(),
                    ))
                });
            }
        };
    sync_urls(urls.clone(), &mut watches);
    let mut current_urls = urls;
    set_running(&shared, &target, &initializer, &current_urls).await;

    let type_watch = watcher(
        types.clone(),
        watcher::Config::default().fields(&format!("metadata.name={type_name}")),
    )
    .default_backoff()
    .applied_objects()
    .boxed();
    tokio::pin!(type_watch);
    let mut status_tick = tokio::time::interval(Duration::from_millis(250));
    let mut last_counts = None;
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            updated = type_watch.try_next() => {
                if let Ok(Some(wt)) = updated {
                    let urls = initializing_urls(&wt);
                    if urls != current_urls {
                        tracing::info!(target = %target, urls = ?urls, "virtual workspace URLs changed");
                        sync_urls(urls.clone(), &mut watches);
                        current_urls = urls;
                        set_running(&shared, &target, &initializer, &current_urls).await;
                    }
                }
            }
            changed = templates.changed() => {
                if changed.is_err() {
                    break;
                }
                // A template changed: every pending cluster gets a fresh attempt now.
                let keys: Vec<ClusterKey> = {
                    let mut s = queue.lock();
                    s.failures.clear();
                    s.pending.iter().cloned().collect()
                };
                for key in keys {
                    queue.add(key);
                }
            }
            _ = changed_rx.changed() => {}
            _ = status_tick.tick() => {
                let counts = {
                    let s = queue.lock();
                    (s.pending.len(), s.initialized, s.failing.clone())
                };
                if last_counts.as_ref() != Some(&counts) {
                    report_counts(&shared, &target, &counts).await;
                    last_counts = Some(counts);
                }
            }
        }
    }
    for (_, task) in watches {
        task.abort();
    }
    // Workers see the stop signal and finish their current cluster.
    while workers.join_next().await.is_some() {}
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

fn initializing_urls(wt: &WorkspaceType) -> Vec<String> {
    let mut urls: Vec<String> = initializing_workspace_urls(wt)
        .into_iter()
        .map(String::from)
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

/// Watches the LogicalClusters carrying the initializer through one virtual workspace URL.
async fn watch_url(shared: Arc<Shared>, queue: Arc<Queue>, url: String, initializer: String) {
    let kube = match shared.clients.cluster(&url, "*") {
        Ok(k) => k,
        Err(err) => {
            tracing::error!(%url, error = %err, "cannot watch virtual workspace");
            return;
        }
    };
    // Read as DynamicObject, so nothing this agent does not model is lost when the copy is
    // written back to remove the initializer.
    let resource = ApiResource {
        group: "core.kcp.io".into(),
        version: "v1alpha1".into(),
        api_version: "core.kcp.io/v1alpha1".into(),
        kind: "LogicalCluster".into(),
        plural: "logicalclusters".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(kube, &resource);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut seen: BTreeSet<ClusterKey> = BTreeSet::new();
    let mut relisted: BTreeSet<ClusterKey> = BTreeSet::new();
    let key_of = |lc: &DynamicObject| {
        lc.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CLUSTER_ANNOTATION))
            .map(|cluster| ClusterKey {
                url: url.clone(),
                cluster: cluster.clone(),
            })
    };
    let carries = |lc: &DynamicObject| {
        lc.data
            .pointer("/status/initializers")
            .and_then(|i| i.as_array())
            .is_some_and(|i| i.iter().any(|x| x.as_str() == Some(initializer.as_str())))
    };
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Init) => relisted.clear(),
            Ok(watcher::Event::InitApply(lc)) => {
                if let Some(key) = key_of(&lc)
                    && carries(&lc)
                {
                    relisted.insert(key.clone());
                    queue.seen(key, lc);
                }
            }
            Ok(watcher::Event::InitDone) => {
                for gone in seen.difference(&relisted) {
                    queue.forget(gone);
                }
                seen = std::mem::take(&mut relisted);
            }
            Ok(watcher::Event::Apply(lc)) => {
                if let Some(key) = key_of(&lc) {
                    if carries(&lc) {
                        seen.insert(key.clone());
                        queue.seen(key, lc);
                    } else {
                        seen.remove(&key);
                        queue.forget(&key);
                    }
                }
            }
            Ok(watcher::Event::Delete(lc)) => {
                if let Some(key) = key_of(&lc) {
                    seen.remove(&key);
                    queue.forget(&key);
                }
            }
            Err(err) => tracing::debug!(%url, error = %err, "LogicalCluster watch error; retrying"),
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    shared: Arc<Shared>,
    queue: Arc<Queue>,
    rx: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<ClusterKey>>>,
    target: String,
    type_name: String,
    type_path: String,
    initializer: String,
    mut stop: watch::Receiver<bool>,
) {
    let mut clients: HashMap<ClusterKey, Arc<KubeObjectClient>> = HashMap::new();
    loop {
        let key = tokio::select! {
            _ = stopped(&mut stop) => return,
            key = async { rx.lock().await.recv().await } => match key {
                Some(k) => k,
                None => return,
            },
        };
        let seen = {
            let mut s = queue.lock();
            s.queued.remove(&key);
            if !s.pending.contains(&key) {
                continue;
            }
            s.in_flight.insert(key.clone());
            // Only a first attempt uses the watched copy; retries read afresh.
            if s.failures.contains_key(&key) || s.failing.contains_key(&key) {
                None
            } else {
                s.latest.remove(&key)
            }
        };
        let client = match clients.get(&key) {
            Some(c) => c.clone(),
            None => match shared.clients.cluster(&key.url, &key.cluster) {
                Ok(k) => {
                    let c = Arc::new(KubeObjectClient::new(k));
                    clients.insert(key.clone(), c.clone());
                    c
                }
                Err(err) => {
                    tracing::error!(cluster = %key.cluster, error = %err, "cannot reach the cluster");
                    queue.lock().in_flight.remove(&key);
                    continue;
                }
            },
        };
        let span = tracing::info_span!("initialize", cluster = %key.cluster, target = %target, kind = "LogicalCluster", name = "cluster");
        let ctx = InitContext {
            config: shared.config.as_ref() as &dyn ObjectClient,
            target: &target,
            initializer: &initializer,
            workspace_type_name: &type_name,
            workspace_type_path: &type_path,
            engine: &shared.engine,
            applier: &shared.applier,
            templates: Some(&shared.templates),
        };
        let outcome = tracing::Instrument::instrument(
            initialize_cluster(&ctx, &key.cluster, client.as_ref(), seen),
            span,
        )
        .await;
        let retry = {
            let mut s = queue.lock();
            s.in_flight.remove(&key);
            let dirty = s.dirty.remove(&key);
            match outcome {
                ClusterOutcome::Initialized { took, .. } => {
                    shared.metrics.initialized(&target, took);
                    s.initialized += 1;
                    s.pending.remove(&key);
                    s.failing.remove(&key);
                    s.failures.remove(&key);
                    clients.remove(&key);
                    None
                }
                ClusterOutcome::NotOurs => {
                    s.pending.remove(&key);
                    s.failing.remove(&key);
                    s.failures.remove(&key);
                    clients.remove(&key);
                    None
                }
                ClusterOutcome::Pending(reason) => {
                    let n = s.failures.entry(key.clone()).or_insert(0);
                    let delay = shared.backoff.delay(*n);
                    *n = n.saturating_add(1);
                    tracing::debug!(cluster = %key.cluster, %reason, ?delay, "not done yet; retrying");
                    Some(if dirty { Duration::ZERO } else { delay })
                }
                ClusterOutcome::Failed(err) => {
                    shared.metrics.failed(&target);
                    tracing::warn!(cluster = %key.cluster, error = %err, "initialization failed");
                    s.failing.insert(key.clone(), err.to_string());
                    Some(if dirty {
                        Duration::ZERO
                    } else {
                        shared.backoff.max
                    })
                }
            }
        };
        queue.changed.send_modify(|n| *n += 1);
        if let Some(delay) = retry {
            queue.add_after(key, delay);
        }
    }
}

async fn set_ready(shared: &Shared, target: &str, ready: bool, reason: &str, message: &str) {
    patch_status(
        shared,
        target,
        json!({"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
            "reason": reason, "message": message}]}),
    )
    .await;
}

async fn set_running(shared: &Shared, target: &str, initializer: &str, urls: &[String]) {
    let message = if urls.is_empty() {
        "the WorkspaceType publishes no initializingworkspaces URL (is spec.initializer true?)"
            .to_string()
    } else {
        format!("watching {} virtual workspace URL(s)", urls.len())
    };
    patch_status(
        shared,
        target,
        json!({
            "initializer": initializer,
            "virtualWorkspaces": urls,
            "conditions": [{"type": "Ready", "status": if urls.is_empty() { "False" } else { "True" },
                "reason": if urls.is_empty() { "NoVirtualWorkspace" } else { "Running" }, "message": message}],
        }),
    )
    .await;
}

async fn report_counts(
    shared: &Shared,
    target: &str,
    (pending, initialized, failing): &(usize, u32, BTreeMap<ClusterKey, String>),
) {
    shared.metrics.set_pending(target, *pending as u64);
    let template_error = match failing.iter().next() {
        Some((key, reason)) => {
            json!({"type": "TemplateError", "status": "True", "reason": "InitializationFailed",
            "message": format!("cluster {}: {reason}", key.cluster)})
        }
        None => {
            json!({"type": "TemplateError", "status": "False", "reason": "NoErrors", "message": ""})
        }
    };
    patch_status(
        shared,
        target,
        json!({
            "clusters": {"pending": pending, "initialized": initialized, "failing": failing.len()},
            "conditions": [template_error],
        }),
    )
    .await;
}
