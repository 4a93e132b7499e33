//! Wiring: one `kube::runtime::Controller` per kind (KINDCluster, KindCluster) sharing one
//! [`Context`]; creations wake their object through `reconcile_on`; a kcp-core [`Harness`]
//! per kind spans, counts and times each reconcile and decides retries.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use futures::channel::mpsc;
use kcp_core::runtime::{CacheSync, ControllerMetrics, ErrorPolicy, Harness, drain_controller};
use kcp_core::{Backoff, KubeObjectClient};
use kube::Api;
use kube::runtime::controller::{Action, Config as ControllerSettings};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use tokio_util::sync::CancellationToken;

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
    upstream: Harness,
    capi: Harness,
}

impl Shared {
    fn harness<K: KindObject>(&self) -> &Harness {
        if K::CAPI { &self.capi } else { &self.upstream }
    }
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
    let pass = reconcile(obj.as_ref(), &shared.context);
    shared.harness::<K>().reconcile(obj.as_ref(), pass).await
}

fn error_policy<K: KindObject>(obj: Arc<K>, err: &Error, shared: Arc<Shared>) -> Action {
    shared.harness::<K>().error_policy(obj.as_ref(), err)
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
    let (wake_upstream, upstream_wakeups) = waker::<KINDCluster>();
    let (wake_capi, capi_wakeups) = waker::<KindCluster>();
    context.wake_upstream = Some(wake_upstream);
    context.wake_capi = Some(wake_capi);
    // kube-runtime's controllers run without a concurrency limit here: 0 says so.
    let harness = |kind: &str| {
        Harness::new(kind, config.metrics.clone(), 0)
            .with_error_policy(ErrorPolicy::new(config.backoff))
    };
    let shared = Arc::new(Shared {
        context,
        upstream: harness(KINDCluster::KIND),
        capi: harness(KindCluster::KIND),
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
