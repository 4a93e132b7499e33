//! The agent's wiring: watches of InitTargets and InitTemplates in the config workspace feed
//! the [`Supervisor`](crate::supervisor), which runs one runner ([`crate::runner`]) per acting
//! InitTarget; InitTemplates go into the shared template cache.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::stream::BoxStream;
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
    let (shared, config_kube) = connect(&config)?;
    tracing::info!(config_workspace = %config.config_workspace, selector = config.selector.as_deref().unwrap_or(""), "kcp-init-agent starting");
    let mut targets = watch_targets(config_kube.clone(), config.selector.as_deref());
    let mut templates = watcher(
        Api::<InitTemplate>::all(config_kube),
        watcher::Config::default(),
    )
    .default_backoff()
    .boxed();
    let mut supervisor = Supervisor::new(shared.clone(), config.config_workspace.clone());
    let mut watches = ConfigWatches::default();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            event = targets.try_next() => match event {
                Ok(Some(event)) => watches.on_target(&mut supervisor, event).await,
                Ok(None) => break,
                Err(err) => tracing::warn!(error = %err, "InitTarget watch failed; retrying"),
            },
            event = templates.try_next() => match event {
                Ok(Some(event)) => watches.on_template(&shared.templates, &supervisor, event),
                Ok(None) => break,
                Err(err) => tracing::warn!(error = %err, "InitTemplate watch failed; retrying"),
            },
        }
        config.ready.store(watches.synced(), Ordering::SeqCst);
    }
    config.ready.store(false, Ordering::SeqCst);
    tracing::info!("shutting down: draining in-flight initializations");
    supervisor.shutdown(Duration::from_secs(30)).await;
    Ok(())
}

/// What every runner shares, and a client of the config workspace for the watches.
fn connect(config: &AgentConfig) -> Result<(Arc<Shared>, kube::Client), Error> {
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
    Ok((shared, config_kube))
}

/// The watch of the InitTargets `selector` chooses (all when `None` or empty).
fn watch_targets(
    config_kube: kube::Client,
    selector: Option<&str>,
) -> BoxStream<'static, Result<watcher::Event<InitTarget>, watcher::Error>> {
    let mut target_watch = watcher::Config::default();
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        target_watch = target_watch.labels(selector);
    }
    watcher(Api::<InitTarget>::all(config_kube), target_watch)
        .default_backoff()
        .boxed()
}

/// Where the two config-workspace watches stand: the objects of a relist in progress, and
/// whether each watch has listed everything once (the agent is ready when both have).
#[derive(Default)]
struct ConfigWatches {
    relisted_targets: BTreeMap<String, InitTarget>,
    relisted_templates: BTreeMap<String, TemplateSource>,
    targets_synced: bool,
    templates_synced: bool,
}

impl ConfigWatches {
    /// Hands an InitTarget change (or a completed relist) to the supervisor.
    async fn on_target(&mut self, supervisor: &mut Supervisor, event: watcher::Event<InitTarget>) {
        match event {
            watcher::Event::Init => self.relisted_targets.clear(),
            watcher::Event::InitApply(t) => {
                self.relisted_targets.insert(name_of(&t), t);
            }
            watcher::Event::InitDone => {
                let listed = std::mem::take(&mut self.relisted_targets);
                supervisor.replace_all(listed).await;
                self.targets_synced = true;
            }
            watcher::Event::Apply(t) => supervisor.applied(t).await,
            watcher::Event::Delete(t) => supervisor.deleted(&name_of(&t)).await,
        }
    }

    /// Keeps the template cache current and tells the supervisor which template changed.
    fn on_template(
        &mut self,
        cache: &TemplateCache,
        supervisor: &Supervisor,
        event: watcher::Event<InitTemplate>,
    ) {
        match event {
            watcher::Event::Init => self.relisted_templates.clear(),
            watcher::Event::InitApply(t) => {
                self.relisted_templates
                    .insert(name_of(&t), TemplateSource::of(&t));
            }
            watcher::Event::InitDone => {
                cache.replace_all(std::mem::take(&mut self.relisted_templates));
                self.templates_synced = true;
            }
            watcher::Event::Apply(t) => {
                cache.insert(&name_of(&t), TemplateSource::of(&t));
                supervisor.template_changed(&name_of(&t));
            }
            watcher::Event::Delete(t) => {
                cache.remove(&name_of(&t));
                supervisor.template_changed(&name_of(&t));
            }
        }
    }

    /// Whether both watches have listed everything once.
    fn synced(&self) -> bool {
        self.targets_synced && self.templates_synced
    }
}

fn name_of<K: kube::Resource>(obj: &K) -> String {
    obj.meta().name.clone().unwrap_or_default()
}
