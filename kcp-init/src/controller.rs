//! The agent's wiring: watches of InitTargets and InitTemplates in the config workspace feed
//! the [`Supervisor`](crate::supervisor), which runs one runner ([`crate::runner`]) per acting
//! InitTarget; InitTemplates go into the shared template cache.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kcp_core::apply::ApplierConfig;
use kcp_core::cluster::ClusterClients;
use kcp_core::kcp::urls::strip_cluster_suffix;
use kcp_core::kube::runtime::{WatchStreamExt, watcher};
use kcp_core::kube::{self, Api};
use kcp_core::runtime::EventRecorder;
use kcp_core::{Backoff, KubeObjectClient, TemplateEngine};

use crate::api::{InitTarget, InitTemplate};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::reconcile::{FIELD_MANAGER, TemplateCache};
use crate::render::TemplateSource;
use crate::supervisor::Supervisor;

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
    /// Apply settings (field manager `kcp-init-agent`, no force, concurrency, readiness).
    pub applier: ApplierConfig,
    /// Metrics, shared with whoever serves them.
    pub metrics: Arc<Metrics>,
    /// Set once the InitTarget and InitTemplate watches have synced.
    pub ready: Arc<AtomicBool>,
}

impl AgentConfig {
    /// Defaults for a kcp connection and config workspace.
    pub fn new(kube: kube::Config, config_workspace: impl Into<String>) -> Self {
        let mut applier = ApplierConfig::new(FIELD_MANAGER);
        // Never take fields other initializers or controllers own in the new workspace.
        applier.force = false;
        Self {
            kube,
            config_workspace: config_workspace.into(),
            selector: None,
            workers: 4,
            backoff: Backoff::default(),
            applier,
            metrics: Arc::new(Metrics::new()),
            ready: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// What every runner shares.
pub(crate) struct Shared {
    pub base_url: String,
    pub clients: Arc<ClusterClients>,
    pub config: Arc<KubeObjectClient>,
    pub engine: TemplateEngine,
    pub applier: ApplierConfig,
    pub backoff: Backoff,
    pub workers: usize,
    pub metrics: Arc<Metrics>,
    pub templates: TemplateCache,
    pub events: EventRecorder,
}

/// Runs the agent until `shutdown` completes, then lets in-flight initializations finish.
pub async fn run(
    config: AgentConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let base_url = strip_cluster_suffix(&config.kube.cluster_url.to_string()).to_string();
    let clients = Arc::new(ClusterClients::new(config.kube.clone()));
    let config_kube = clients
        .cluster(&base_url, &config.config_workspace)
        .map_err(|source| Error::Core {
            context: "connecting to the config workspace".into(),
            source,
        })?;
    let shared = Arc::new(Shared {
        base_url,
        clients,
        config: Arc::new(KubeObjectClient::new(config_kube.clone())),
        engine: TemplateEngine::new(),
        applier: config.applier.clone(),
        backoff: config.backoff,
        workers: config.workers.max(1),
        metrics: config.metrics.clone(),
        templates: TemplateCache::new(),
        events: EventRecorder::new(FIELD_MANAGER),
    });
    tracing::info!(config_workspace = %config.config_workspace, selector = config.selector.as_deref().unwrap_or(""), "kcp-init-agent starting");
    let mut target_watch = watcher::Config::default();
    if let Some(selector) = config.selector.as_deref().filter(|s| !s.is_empty()) {
        target_watch = target_watch.labels(selector);
    }
    let mut targets = watcher(Api::<InitTarget>::all(config_kube.clone()), target_watch)
        .default_backoff()
        .boxed();
    let mut templates = watcher(
        Api::<InitTemplate>::all(config_kube),
        watcher::Config::default(),
    )
    .default_backoff()
    .boxed();
    let mut supervisor = Supervisor::new(shared.clone(), config.config_workspace.clone());
    let (mut targets_synced, mut templates_synced) = (false, false);
    let mut relisted_targets = BTreeMap::new();
    let mut relisted_templates = BTreeMap::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            event = targets.try_next() => match event {
                Ok(Some(watcher::Event::Init)) => relisted_targets.clear(),
                Ok(Some(watcher::Event::InitApply(t))) => { relisted_targets.insert(name_of(&t), t); }
                Ok(Some(watcher::Event::InitDone)) => {
                    supervisor.known = std::mem::take(&mut relisted_targets);
                    supervisor.sync().await;
                    targets_synced = true;
                }
                Ok(Some(watcher::Event::Apply(t))) => { supervisor.known.insert(name_of(&t), t); supervisor.sync().await; }
                Ok(Some(watcher::Event::Delete(t))) => { supervisor.known.remove(&name_of(&t)); supervisor.sync().await; }
                Ok(None) => break,
                Err(err) => tracing::warn!(error = %err, "InitTarget watch failed; retrying"),
            },
            event = templates.try_next() => match event {
                Ok(Some(watcher::Event::Init)) => relisted_templates.clear(),
                Ok(Some(watcher::Event::InitApply(t))) => { relisted_templates.insert(name_of(&t), TemplateSource::of(&t)); }
                Ok(Some(watcher::Event::InitDone)) => {
                    shared.templates.replace_all(std::mem::take(&mut relisted_templates));
                    templates_synced = true;
                }
                Ok(Some(watcher::Event::Apply(t))) => {
                    shared.templates.insert(&name_of(&t), TemplateSource::of(&t));
                    supervisor.template_changed(&name_of(&t));
                }
                Ok(Some(watcher::Event::Delete(t))) => {
                    shared.templates.remove(&name_of(&t));
                    supervisor.template_changed(&name_of(&t));
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
    supervisor.runners.shutdown(Duration::from_secs(30)).await;
    Ok(())
}

fn name_of<K: kube::Resource>(obj: &K) -> String {
    obj.meta().name.clone().unwrap_or_default()
}
