//! Wiring: one `kube::runtime::Controller` per kind (KINDCluster, KindCluster) sharing one
//! [`Context`]; creations wake their object through `reconcile_on`; kcp-core's
//! [`ErrorPolicy`] decides retries.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use futures::channel::mpsc;
use kcp_core::runtime::{
    CacheSync, Classify as _, ControllerMetrics, ErrorPolicy, Outcome, ReconcileResult,
    drain_controller,
};
use kcp_core::{Backoff, KubeObjectClient};
use kube::runtime::controller::{Action, Config as ControllerSettings};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt as _};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::api::{KINDCluster, KindCluster};
use crate::error::Error;
use crate::kinds::KindObject;
use crate::provisioner::Provisioner;
use crate::reconcile::{Context, Settings, Waker, reconcile};

/// How the provider runs.
#[derive(Clone)]
pub struct ControllerConfig {
    /// The management cluster.
    pub client: kube::Client,
    /// Where kind clusters come from.
    pub provisioner: Arc<dyn Provisioner>,
    /// Creations running at the same time.
    pub max_concurrent_creates: usize,
    /// Watch only this namespace (all when `None`).
    pub namespace: Option<String>,
    /// Serve only objects labelled `cluster.x-k8s.io/watch-filter=<value>` (CAPI's way of
    /// running several instances); all objects when `None`.
    pub watch_filter: Option<String>,
    /// Timings.
    pub settings: Settings,
    /// Reconcile counts and durations (controller-runtime's series, per kind).
    pub metrics: ControllerMetrics,
    /// Retry delays of failed reconciles (1 s doubling to 30 s by default).
    pub backoff: Backoff,
    /// Set once both controllers' caches are synced.
    pub ready: Arc<AtomicBool>,
}

impl ControllerConfig {
    /// Defaults: 4 concurrent creates, every namespace.
    pub fn new(client: kube::Client, provisioner: Arc<dyn Provisioner>) -> Self {
        ControllerConfig {
            client,
            provisioner,
            max_concurrent_creates: 4,
            namespace: None,
            watch_filter: None,
            settings: Settings::default(),
            backoff: Backoff::default(),
            metrics: ControllerMetrics::unregistered(),
            ready: Arc::new(AtomicBool::new(false)),
        }
    }
}

struct Shared {
    context: Context,
    errors: ErrorPolicy,
    metrics: ControllerMetrics,
}

fn api<K>(config: &ControllerConfig) -> Api<K>
where
    K: KindObject + kube::Resource<Scope = kube::core::NamespaceResourceScope>,
{
    match &config.namespace {
        Some(ns) => Api::namespaced(config.client.clone(), ns),
        None => Api::all(config.client.clone()),
    }
}

fn waker<K: KindObject>() -> (Waker, mpsc::UnboundedReceiver<ObjectRef<K>>) {
    let (tx, rx) = mpsc::unbounded();
    let wake: Waker = Arc::new(move |namespace: String, name: String| {
        let _ = tx.unbounded_send(ObjectRef::new(&name).within(&namespace));
    });
    (wake, rx)
}

async fn reconcile_object<K: KindObject>(
    obj: Arc<K>,
    shared: Arc<Shared>,
) -> Result<Action, Error> {
    let span = tracing::info_span!(
        "reconcile",
        kind = K::KIND,
        namespace = obj.namespace().unwrap_or_default(),
        name = obj.name_any()
    );
    let started = Instant::now();
    let result = reconcile(obj.as_ref(), &shared.context)
        .instrument(span)
        .await;
    let counted = match &result {
        Ok(Outcome::Done) => ReconcileResult::Success,
        Ok(Outcome::RequeueAfter(_)) => ReconcileResult::Requeue,
        Err(_) => ReconcileResult::Error,
    };
    shared.metrics.observe(K::KIND, counted, started.elapsed());
    Ok(shared.errors.succeeded(obj.as_ref(), result?))
}

fn error_policy<K: KindObject>(obj: Arc<K>, err: &Error, shared: Arc<Shared>) -> Action {
    tracing::warn!(
        kind = K::KIND,
        namespace = obj.namespace().unwrap_or_default(),
        name = obj.name_any(),
        reason = err.reason(),
        error = %err,
        "reconcile failed"
    );
    shared.errors.failed(obj.as_ref(), err)
}

/// The watch of a kind: every object, or those carrying the watch-filter label.
pub fn watch_config(watch_filter: Option<&str>) -> watcher::Config {
    let config = watcher::Config::default().any_semantic();
    match watch_filter.filter(|v| !v.is_empty()) {
        Some(value) => config.labels(&format!("{WATCH_FILTER_LABEL}={value}")),
        None => config,
    }
}

/// CAPI's label selecting the objects of one provider instance.
pub const WATCH_FILTER_LABEL: &str = "cluster.x-k8s.io/watch-filter";

fn controller<K>(
    api: Api<K>,
    watch: watcher::Config,
    wakeups: mpsc::UnboundedReceiver<ObjectRef<K>>,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> (impl Future<Output = ()>, kube::runtime::reflector::Store<K>)
where
    K: KindObject + kube::Resource<Scope = kube::core::NamespaceResourceScope>,
{
    let controller = Controller::new(api, watch)
        .with_config(ControllerSettings::default().debounce(Duration::from_millis(100)))
        .reconcile_on(wakeups)
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    let store = controller.store();
    let run = controller
        .run(reconcile_object::<K>, error_policy::<K>, shared)
        .for_each(|_| async {});
    (drain_controller(run, store.clone(), stop), store)
}

/// Runs both controllers until `shutdown` completes.
pub async fn run(
    config: ControllerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let client: Arc<dyn kcp_core::ObjectClient> =
        Arc::new(KubeObjectClient::new(config.client.clone()));
    let mut context = Context::new(
        client,
        config.provisioner.clone(),
        config.max_concurrent_creates,
    );
    context.settings = config.settings;
    // kube-runtime's controllers run without a concurrency limit here: 0 says so.
    for kind in [KINDCluster::KIND, KindCluster::KIND] {
        config.metrics.init_controller(kind, 0);
    }
    let (wake_upstream, upstream_wakeups) = waker::<KINDCluster>();
    let (wake_capi, capi_wakeups) = waker::<KindCluster>();
    context.wake_upstream = Some(wake_upstream);
    context.wake_capi = Some(wake_capi);
    let shared = Arc::new(Shared {
        context,
        errors: ErrorPolicy::new(config.backoff),
        metrics: config.metrics.clone(),
    });
    let stop = CancellationToken::new();
    let trigger = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    let watch = watch_config(config.watch_filter.as_deref());
    let (upstream, upstream_store) = controller(
        api::<KINDCluster>(&config),
        watch.clone(),
        upstream_wakeups,
        shared.clone(),
        stop.clone(),
    );
    let (capi, capi_store) = controller(
        api::<KindCluster>(&config),
        watch,
        capi_wakeups,
        shared,
        stop,
    );
    let caches = CacheSync::new(config.ready.clone());
    caches.track(upstream_store);
    caches.track(capi_store);
    tracing::info!(
        namespace = config.namespace.as_deref().unwrap_or("(all)"),
        "capi-provider-kind starting"
    );
    futures::join!(upstream, capi);
    config.ready.store(false, Ordering::SeqCst);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_filter_selects_by_capis_label() {
        let filtered = watch_config(Some("team-a"));
        assert_eq!(
            filtered.label_selector.as_deref(),
            Some("cluster.x-k8s.io/watch-filter=team-a")
        );
        assert_eq!(watch_config(Some("")).label_selector, None);
        assert_eq!(watch_config(None).label_selector, None);
    }
}
