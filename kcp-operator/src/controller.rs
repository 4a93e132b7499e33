//! Wiring: one `kube::runtime::Controller` per kind, grouped as upstream's controller groups
//! (`config`: RootShard, Shard, FrontProxy, CacheServer, Kubeconfig; `workload`: the Compiled*
//! kinds), with kcp-core's error policy, over one shared watch per kind ([`crate::shared`]),
//! wake-ups debounced by [`DEBOUNCE`]. Which watches wake which object:
//!
//! * a kind's own changes of spec or metadata (not its status writes, see [`crate::triggers`]);
//! * every kind owns what it creates (Certificates, Issuers, Compiled*, Deployments, Services,
//!   ConfigMaps, PodDisruptionBudgets): a Deployment becoming available re-runs its owner, and a
//!   Certificate change (readiness, revision, expiry, spec, deletion) does once every
//!   Certificate of that owner is ready (or when one is deleted);
//! * Shard spec changes wake their RootShard; RootShard spec changes wake its Shards and
//!   FrontProxies;
//! * a Shard appearing or changing wakes the VirtualWorkspaces naming it in `shardRef`;
//! * a RootShard, Shard or FrontProxy appearing or changing wakes the Kubeconfigs targeting it
//!   (a Kubeconfig applied before its target also retries with backoff);
//! * any Secret event wakes the Compiled* objects whose Deployment may mount it (those listing
//!   it in `spec.requiredSecrets` always, so a renewed Kubeconfig Secret rolls the
//!   VirtualWorkspace mounting it);
//! * a Secret labelled `operator.kcp.io/kubeconfig=<kc>` (the client certificate) wakes that
//!   Kubeconfig, so a renewal reaches the kubeconfig Secret at once.
//!
//! Child GETs of Certificates, Issuers and Compiled* objects are answered from the shared
//! stores ([`crate::reconcile::reads`]).
//!
//! Each kind reaches its reconcile function through a plain [`Reconciled`] impl, with a
//! [`PassContext`] built per pass (the client through the operator's decorators, the
//! addresser, the Shard store once every cache synced), inside kcp-core's [`Harness`] (span,
//! metrics, backoff). The metrics refresher, the built-in issuer's controller and the workload
//! group's wiring live in `refresh`, `pki` and `workload_wiring`.

mod own_writes;
mod pki;
mod refresh;
mod unready;
mod workload_wiring;

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::runtime::{CacheSync, Harness, Outcome, drain_controller};
use kcp_core::{KubeObjectClient, ObjectClient};
use kube::core::object::HasStatus;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::addresser::{Addresser, InCluster};
use crate::api::*;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::pki::Pki;
use crate::reconcile::mounted::MountStores;
use crate::reconcile::reads::{CachedGets, ReadCache};
use crate::reconcile::retry::RetryingReads;
use crate::reconcile::{
    PassContext, PhasedStatus, config, kubeconfig, virtualworkspace, workload, write_stopped,
};
use crate::render::certmanager::{Certificate, ClusterIssuer, Issuer};
use crate::render::names::KUBECONFIG_LABEL;
use crate::shared::{Hubs, Shared};
use crate::triggers::spec_fingerprint;
use unready::UnreadyByOwner;

/// A controller group of `--enabled-controller-groups`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControllerGroup {
    /// Sources -> PKI, Secrets, Compiled* objects.
    Config,
    /// Compiled* objects -> Deployments, Services, ConfigMaps.
    Workload,
}

/// Parses `--enabled-controller-groups`: comma-separated `config` and `workload`, whitespace
/// trimmed, duplicates collapsed; an unknown or empty value is an error.
pub fn parse_groups(value: &str) -> Result<BTreeSet<ControllerGroup>> {
    let mut groups = BTreeSet::new();
    for part in value.split(',').map(str::trim) {
        let group = match part {
            "config" => ControllerGroup::Config,
            "workload" => ControllerGroup::Workload,
            other => {
                return Err(Error::InvalidField {
                    object: "kcp-operator".into(),
                    field: "--enabled-controller-groups".into(),
                    reason: format!("unknown controller group {other:?} (known: config, workload)"),
                });
            }
        };
        groups.insert(group);
    }
    Ok(groups)
}

/// Everything a reconcile needs.
pub struct Context {
    /// The client reconcile functions write through.
    pub client: Arc<dyn ObjectClient>,
    /// How kcp endpoints are reached (Shard cleanup, Kubeconfig RBAC).
    pub addresser: Arc<dyn Addresser>,
    /// The `kcp_operator_*` metrics.
    pub metrics: Metrics,
    /// The controllers' caches, for `/readyz`.
    pub caches: CacheSync,
    /// The Shard controller's store, for the lists of a RootShard's Shards (config group).
    pub shards: std::sync::OnceLock<Store<Shard>>,
    /// The stores GETs of child objects are answered from (see [`CachedGets`]).
    pub reads: std::sync::OnceLock<ReadCache>,
    /// The metadata of Secrets and ConfigMaps, for the versions of mounted objects (workload
    /// group).
    pub mounts: std::sync::OnceLock<MountStores>,
    /// Cancelled when the operator stops; controllers then drain.
    pub stop: CancellationToken,
}

/// A kind with a reconcile function: one plain impl per kind below, each handing the pass to
/// its `reconcile_*` function in [`crate::reconcile`].
pub trait Reconciled:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// One pass over `self`.
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send;
}

/// Writes a pass's error about the object's input into its status: the kinds users write get
/// one ([`report_stopped`], wired by [`drive_until`]); the Compiled* kinds have nothing to
/// report there.
type Report<K> = for<'a> fn(&'a dyn ObjectClient, &'a K, &'a Error) -> BoxFuture<'a, Result<()>>;

/// The [`Report`] of the kinds users write: phase and `Ready` say why the pass stopped.
fn report_stopped<'a, K>(
    client: &'a dyn ObjectClient,
    obj: &'a K,
    err: &'a Error,
) -> BoxFuture<'a, Result<()>>
where
    K: Reconciled + HasStatus + serde::Serialize,
    K::Status: PhasedStatus,
{
    Box::pin(write_stopped(client, obj, err))
}

impl Reconciled for RootShard {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        config::reconcile_root_shard(ctx, self)
    }
}

impl Reconciled for Shard {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        config::reconcile_shard(ctx, self)
    }
}

impl Reconciled for FrontProxy {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        config::reconcile_front_proxy(ctx, self)
    }
}

impl Reconciled for CacheServer {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        config::reconcile_cache_server(ctx, self)
    }
}

impl Reconciled for Kubeconfig {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        kubeconfig::reconcile_kubeconfig(ctx, self)
    }
}

impl Reconciled for VirtualWorkspace {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        virtualworkspace::reconcile_virtual_workspace(ctx, self)
    }
}

impl Reconciled for CompiledRootShard {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        workload::reconcile_compiled_root_shard(ctx, self)
    }
}

impl Reconciled for CompiledShard {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        workload::reconcile_compiled_shard(ctx, self)
    }
}

impl Reconciled for CompiledFrontProxy {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        workload::reconcile_compiled_front_proxy(ctx, self)
    }
}

impl Reconciled for CompiledCacheServer {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        workload::reconcile_compiled_cache_server(ctx, self)
    }
}

impl Reconciled for CompiledVirtualWorkspace {
    fn reconcile(&self, ctx: &PassContext<'_>) -> impl Future<Output = Result<Outcome>> + Send {
        virtualworkspace::reconcile_compiled_virtual_workspace(ctx, self)
    }
}

/// A controller's context: the operator's, and the harness around its reconciles.
struct Driven<K> {
    ctx: Arc<Context>,
    harness: Harness,
    report: Option<Report<K>>,
}

/// Times `pass` into upstream's `kcp_operator_*` series of `controller`.
async fn timed(
    metrics: &Metrics,
    controller: &str,
    pass: impl Future<Output = Result<Outcome>>,
) -> Result<Outcome> {
    let started = std::time::Instant::now();
    let result = pass.await;
    metrics.observe(
        controller,
        started.elapsed(),
        result.as_ref().err().map(Error::reason),
    );
    result
}

/// One pass over `obj` through the operator's client decorators, with the Shard store once
/// every cache synced; an error about the object's input is written into its status.
async fn pass<K: Reconciled>(obj: &K, ctx: &Context, report: Option<Report<K>>) -> Result<Outcome> {
    let reads = RetryingReads(ctx.client.as_ref());
    let synced = ctx.caches.is_synced();
    let gets = CachedGets {
        inner: &reads,
        cache: ctx.reads.get(),
        synced,
    };
    let pass = PassContext {
        client: &gets,
        addresser: ctx.addresser.as_ref(),
        shards: ctx.shards.get().filter(|_| synced),
        mounts: ctx.mounts.get().filter(|_| synced),
    };
    let result = obj.reconcile(&pass).await;
    if let Err(err) = &result
        && err.is_about_input()
        && let Some(report) = report
        && let Err(failed) = report(&gets, obj, err).await
    {
        tracing::warn!(error = %failed, "writing why the pass stopped failed");
    }
    result
}

async fn reconcile<K: Reconciled>(obj: Arc<K>, driven: Arc<Driven<K>>) -> Result<Action> {
    let ctx = driven.ctx.as_ref();
    let passed = timed(
        &ctx.metrics,
        driven.harness.controller(),
        pass(obj.as_ref(), ctx, driven.report),
    );
    driven.harness.reconcile(obj.as_ref(), passed).await
}

fn error_policy<K: Reconciled>(obj: Arc<K>, err: &Error, driven: Arc<Driven<K>>) -> Action {
    driven.harness.error_policy(obj.as_ref(), err)
}

/// Tracks the controller's cache for readiness at once, then runs the controller to
/// completion when polled (or stops it at once if it never synced, see [`drain_controller`]).
fn drive<K: Reconciled>(
    controller: Controller<K>,
    ctx: Arc<Context>,
    report: Option<Report<K>>,
) -> impl Future<Output = ()> + Send + 'static {
    let store = controller.store();
    ctx.caches.track(store.clone());
    let stop = ctx.stop.clone();
    // kube-runtime's controllers run without a concurrency limit here: 0 says so.
    let name = K::kind(&()).to_ascii_lowercase();
    let harness = Harness::new(name, ctx.metrics.controllers(), 0);
    let driven = Arc::new(Driven {
        ctx,
        harness,
        report,
    });
    async move {
        let run = controller
            .run(reconcile::<K>, error_policy::<K>, driven)
            .for_each(|_| async {});
        drain_controller(run, store, stop).await;
    }
}

/// Objects in `store` in `namespace` for which `pick` holds.
fn refs<K: Reconciled>(
    store: &Store<K>,
    namespace: Option<&str>,
    pick: impl Fn(&K) -> bool,
) -> Vec<ObjectRef<K>> {
    store
        .state_filter(|o| o.meta().namespace.as_deref() == namespace && pick(o))
        .iter()
        .map(|o| ObjectRef::from_obj(o.as_ref()))
        .collect()
}

/// How long a controller waits after an object's last trigger before reconciling it: the
/// built-in issuer (or cert-manager) signs an installation's Certificates one by one, and the
/// owner's pass reads them all, so bursts of wake-ups are coalesced into one pass.
pub const DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(25);

/// A controller of `K` over its shared watch, woken by changes of its spec and metadata (see
/// [`crate::triggers`]), with [`DEBOUNCE`].
fn controller<K: Reconciled + Shared>(hubs: &mut Hubs) -> Controller<K> {
    let hub = hubs.of::<K>();
    Controller::for_stream(hub.changes(spec_fingerprint::<K>), hub.store())
        .with_config(kube::runtime::controller::Config::default().debounce(DEBOUNCE))
}

/// Certificates, passed on to their owner when deleted (the owner recreates it) or changed in
/// what the owner's pass reads (see [`crate::triggers`]) while every Certificate of that owner
/// is ready: before that the pass has nothing to render, and an installation's Certificates
/// are signed one by one.
fn certificates(
    hubs: &mut Hubs,
) -> impl futures::Stream<Item = Result<Certificate, watcher::Error>> + Send + 'static {
    let hub = hubs.of::<Certificate>();
    let store = hub.store();
    let mut unready = UnreadyByOwner::default();
    hub.changes(crate::triggers::certificate_fingerprint)
        .filter(move |event| futures::future::ready(worth_a_pass(&store, &mut unready, event)))
}

/// See [`certificates`].
fn worth_a_pass(
    store: &Store<Certificate>,
    unready: &mut UnreadyByOwner,
    event: &Result<Certificate, watcher::Error>,
) -> bool {
    let Ok(cert) = event else {
        return true;
    };
    let key = ObjectRef::from_obj(cert);
    let Some(current) = store.get(&key) else {
        unready.forget(&key);
        return true;
    };
    let Some(uid) = controller_uid(&current) else {
        unready.forget(&key);
        return true;
    };
    unready.note(&key, uid, current.is_ready());
    unready.all_ready(uid, store)
}

/// The uid of a Certificate's controller owner.
fn controller_uid(cert: &Certificate) -> Option<&str> {
    cert.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// The RootShard controller: woken by its Shards and by the VirtualWorkspace it names.
fn root_shard_controller(hubs: &mut Hubs) -> Controller<RootShard> {
    let controller = controller::<RootShard>(hubs)
        .owns_stream(certificates(hubs))
        .owns_stream(hubs.of::<CompiledRootShard>().metas());
    let store = controller.store();
    controller
        .watches_stream(hubs.of::<Shard>().changes(spec_fingerprint::<Shard>), |s| {
            let ns = s.metadata.namespace.clone().unwrap_or_default();
            s.spec
                .root_shard
                .name()
                .map(|n| ObjectRef::new(n).within(&ns))
        })
        .watches_stream(
            hubs.of::<VirtualWorkspace>()
                .changes(spec_fingerprint::<VirtualWorkspace>),
            move |vw| {
                let name = vw.metadata.name.clone();
                refs(&store, vw.metadata.namespace.as_deref(), |r: &RootShard| {
                    r.spec
                        .common
                        .kcp_virtual_workspace
                        .as_ref()
                        .map(|v| &v.name)
                        == name.as_ref()
                })
            },
        )
}

/// A controller of a kind pointing at a RootShard, woken when that RootShard changes.
fn follows_root_shard<K: Reconciled>(
    controller: Controller<K>,
    hubs: &mut Hubs,
    points_at: impl Fn(&K, &str) -> bool + Send + Sync + 'static,
) -> Controller<K> {
    let store = controller.store();
    controller.watches_stream(
        hubs.of::<RootShard>()
            .changes(spec_fingerprint::<RootShard>),
        move |rs| {
            let name = rs.metadata.name.clone().unwrap_or_default();
            refs(&store, rs.metadata.namespace.as_deref(), |o: &K| {
                points_at(o, &name)
            })
        },
    )
}

/// The Kubeconfig controller: woken by its client certificate's Secret (labelled
/// `operator.kcp.io/kubeconfig`), and by its target (a RootShard, Shard or FrontProxy) appearing
/// or changing, so a Kubeconfig applied before its target does not wait for its backoff.
fn kubeconfig_controller(hubs: &mut Hubs) -> Controller<Kubeconfig> {
    let controller = controller::<Kubeconfig>(hubs)
        .owns_stream(certificates(hubs))
        .watches_stream(hubs.meta::<Secret>().metas_only(), |s| {
            let ns = s.metadata.namespace.clone().unwrap_or_default();
            s.metadata
                .labels
                .and_then(|l| l.get(KUBECONFIG_LABEL).cloned())
                .map(|n| ObjectRef::new(&n).within(&ns))
        });
    let controller = wakes_kubeconfigs::<RootShard>(controller, hubs, |t, name| match t {
        TargetRef::RootShard(n) => n == name,
        // A Shard or FrontProxy target is reached through its RootShard.
        TargetRef::Shard(_) | TargetRef::FrontProxy(_) => true,
    });
    let controller = wakes_kubeconfigs::<Shard>(
        controller,
        hubs,
        |t, name| matches!(t, TargetRef::Shard(n) if n == name),
    );
    wakes_kubeconfigs::<FrontProxy>(
        controller,
        hubs,
        |t, name| matches!(t, TargetRef::FrontProxy(n) if n == name),
    )
}

/// Wakes the Kubeconfigs whose target `is_target` says a changed `T` named `name` is.
fn wakes_kubeconfigs<T: Reconciled + Shared>(
    controller: Controller<Kubeconfig>,
    hubs: &mut Hubs,
    is_target: impl Fn(TargetRef<'_>, &str) -> bool + Send + Sync + 'static,
) -> Controller<Kubeconfig> {
    let store = controller.store();
    controller.watches_stream(hubs.of::<T>().changes(spec_fingerprint::<T>), move |t| {
        let name = t.meta().name.clone().unwrap_or_default();
        refs(&store, t.meta().namespace.as_deref(), |kc: &Kubeconfig| {
            kc.spec
                .target
                .resolve()
                .is_some_and(|r| is_target(r, &name))
        })
    })
}

/// The VirtualWorkspace controller: woken by the RootShard it serves, and by the Shard it
/// names appearing or changing (a VirtualWorkspace may be applied before its Shard).
fn virtual_workspace_controller(hubs: &mut Hubs) -> Controller<VirtualWorkspace> {
    let vws = controller::<VirtualWorkspace>(hubs)
        .owns_stream(certificates(hubs))
        .owns_stream(hubs.of::<CompiledVirtualWorkspace>().metas());
    let vws = follows_root_shard(vws, hubs, |v: &VirtualWorkspace, rs| {
        v.spec
            .target
            .root_shard_ref
            .as_ref()
            .is_some_and(|r| r.name == rs)
            || v.spec.target.shard_ref.is_some()
    });
    let store = vws.store();
    vws.watches_stream(
        hubs.of::<Shard>().changes(spec_fingerprint::<Shard>),
        move |shard| {
            let name = shard.metadata.name.clone();
            refs(
                &store,
                shard.metadata.namespace.as_deref(),
                |v: &VirtualWorkspace| {
                    v.spec.target.shard_ref.as_ref().map(|r| &r.name) == name.as_ref()
                },
            )
        },
    )
}

fn config_controllers(
    hubs: &mut Hubs,
    ctx: &Arc<Context>,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) -> Vec<BoxFuture<'static, ()>> {
    let rs = root_shard_controller(hubs);
    let vws = virtual_workspace_controller(hubs);
    let shards = controller::<Shard>(hubs)
        .owns_stream(certificates(hubs))
        .owns_stream(hubs.of::<CompiledShard>().metas());
    let shards = follows_root_shard(shards, hubs, |s: &Shard, rs| {
        s.spec.root_shard.name() == Some(rs)
    });
    let fps = controller::<FrontProxy>(hubs)
        .owns_stream(certificates(hubs))
        .owns_stream(hubs.of::<CompiledFrontProxy>().metas());
    let fps = follows_root_shard(fps, hubs, |f: &FrontProxy, rs| {
        f.spec.root_shard.name() == Some(rs)
    });
    let caches = controller::<CacheServer>(hubs)
        .owns_stream(certificates(hubs))
        .owns_stream(hubs.of::<Issuer>().metas())
        .owns_stream(hubs.of::<CompiledCacheServer>().metas());
    let kubeconfigs = kubeconfig_controller(hubs);
    let _ = ctx.shards.set(shards.store());
    let stores = refresh::Stores {
        root_shards: rs.store(),
        shards: shards.store(),
        front_proxies: fps.store(),
        cache_servers: caches.store(),
        kubeconfigs: kubeconfigs.store(),
        virtual_workspaces: vws.store(),
    };
    vec![
        Box::pin(refresh::refresh_metrics(
            stores,
            ctx.metrics.clone(),
            shutdown.clone(),
        )),
        drive_until(rs, shutdown.clone(), ctx),
        drive_until(shards, shutdown.clone(), ctx),
        drive_until(fps, shutdown.clone(), ctx),
        drive_until(caches, shutdown.clone(), ctx),
        drive_until(kubeconfigs, shutdown.clone(), ctx),
        drive_until(vws, shutdown, ctx),
    ]
}

/// [`drive`] of a controller of a kind users write, reporting input errors in its status, that
/// shuts down gracefully when its `shutdown` completes.
fn drive_until<K>(
    controller: Controller<K>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ctx: &Arc<Context>,
) -> BoxFuture<'static, ()>
where
    K: Reconciled + HasStatus + serde::Serialize,
    K::Status: PhasedStatus,
{
    let report: Report<K> = report_stopped::<K>;
    Box::pin(drive(
        controller.graceful_shutdown_on(shutdown),
        ctx.clone(),
        Some(report),
    ))
}

/// The stores GETs are answered from: the Compiled* kinds (both groups watch them) and, with
/// the config group, its own kinds (for their status writes), Certificates and Issuers (and
/// ClusterIssuers for the built-in issuer).
/// One cache for every controller, so that a write by one (the issuer's status write of a
/// Certificate) is known to the others' reads (the config controllers' of that Certificate).
/// With the config group, Secrets are read from copies checked against their metadata watch
/// (tracked in `caches`).
fn read_cache(
    hubs: &mut Hubs,
    groups: &BTreeSet<ControllerGroup>,
    pki: &Pki,
    caches: &CacheSync,
) -> ReadCache {
    let mut cache = ReadCache::default();
    if groups.contains(&ControllerGroup::Config) {
        cache.serve(hubs.of::<RootShard>().store());
        cache.serve(hubs.of::<Shard>().store());
        cache.serve(hubs.of::<FrontProxy>().store());
        cache.serve(hubs.of::<CacheServer>().store());
        cache.serve(hubs.of::<Kubeconfig>().store());
        cache.serve(hubs.of::<VirtualWorkspace>().store());
        cache.serve(hubs.of::<Certificate>().store());
        cache.serve(hubs.of::<Issuer>().store());
        if let Pki::Builtin(_) = pki {
            cache.serve(hubs.of::<ClusterIssuer>().store());
        }
        let secrets = hubs.meta::<Secret>().store();
        caches.track(secrets.clone());
        cache.copy_secrets(secrets);
    }
    cache.serve(hubs.of::<CompiledRootShard>().store());
    cache.serve(hubs.of::<CompiledShard>().store());
    cache.serve(hubs.of::<CompiledFrontProxy>().store());
    cache.serve(hubs.of::<CompiledCacheServer>().store());
    cache.serve(hubs.of::<CompiledVirtualWorkspace>().store());
    cache
}

/// Runs the enabled controller groups against `client` until `shutdown` completes, then lets
/// in-flight reconciles finish; kcp is reached through in-cluster Service URLs.
pub async fn run(
    client: Client,
    groups: &BTreeSet<ControllerGroup>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    run_with(
        client,
        groups,
        &Pki::CertManager,
        Arc::new(InCluster),
        Metrics::unregistered(),
        Arc::new(AtomicBool::new(false)),
        shutdown,
    )
    .await;
}

/// [`run`] with the issuer of the operator's Certificates (`pki`: with [`Pki::Builtin`] the
/// config group also runs the built-in issuer), a custom [`Addresser`], metrics registered by
/// the caller, and `synced`, set once every controller's cache has synced (for `/readyz`).
pub async fn run_with(
    client: Client,
    groups: &BTreeSet<ControllerGroup>,
    pki: &Pki,
    addresser: Arc<dyn Addresser>,
    metrics: Metrics,
    synced: Arc<AtomicBool>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    use futures::FutureExt as _;
    let stop = CancellationToken::new();
    let trigger = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    let shutdown = stop.clone().cancelled_owned().shared();
    let ctx = Arc::new(Context {
        client: Arc::new(KubeObjectClient::new(client.clone())),
        addresser,
        metrics,
        caches: CacheSync::new(synced),
        shards: std::sync::OnceLock::new(),
        reads: std::sync::OnceLock::new(),
        mounts: std::sync::OnceLock::new(),
        stop,
    });
    let mut hubs = Hubs::new(client, ctx.stop.clone());
    let mut tasks = Vec::new();
    // Every controller's controller-runtime series exist from the start: each controller's
    // harness creates them as the controller is set up.
    if groups.contains(&ControllerGroup::Config) {
        tasks.extend(config_controllers(&mut hubs, &ctx, shutdown.clone()));
        if let Pki::Builtin(builtin) = pki {
            tasks.extend(pki::pki_controllers(
                &mut hubs,
                &ctx,
                builtin,
                shutdown.clone(),
            ));
        }
    }
    if groups.contains(&ControllerGroup::Workload) {
        tasks.extend(workload_wiring::workload_controllers(
            &mut hubs, &ctx, shutdown,
        ));
    }
    let _ = ctx
        .reads
        .set(read_cache(&mut hubs, groups, pki, &ctx.caches));
    tasks.extend(hubs.into_tasks());
    tracing::info!(
        ?groups,
        controllers = tasks.len(),
        "kcp-operator controllers starting"
    );
    futures::future::join_all(tasks).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_groups_are_trimmed_and_deduplicated() {
        let groups = parse_groups(" config , workload,config").unwrap();
        assert_eq!(
            groups.into_iter().collect::<Vec<_>>(),
            [ControllerGroup::Config, ControllerGroup::Workload]
        );
    }

    #[tokio::test]
    async fn with_the_config_group_every_kind_a_pass_reads_or_writes_the_status_of_is_cached() {
        let sim = kcp_sim::Server::start(kcp_sim::Config::default())
            .await
            .unwrap();
        let mut hubs = Hubs::new(sim.client("").unwrap(), CancellationToken::new());
        let caches = CacheSync::new(Arc::new(AtomicBool::new(false)));
        let groups = [ControllerGroup::Config].into();
        let cache = read_cache(
            &mut hubs,
            &groups,
            &Pki::Builtin(Default::default()),
            &caches,
        );
        let kinds = [
            kcp_core::typed::gvk_for::<RootShard>(),
            kcp_core::typed::gvk_for::<Shard>(),
            kcp_core::typed::gvk_for::<FrontProxy>(),
            kcp_core::typed::gvk_for::<CacheServer>(),
            kcp_core::typed::gvk_for::<Kubeconfig>(),
            kcp_core::typed::gvk_for::<VirtualWorkspace>(),
            kcp_core::typed::gvk_for::<CompiledRootShard>(),
            kcp_core::typed::gvk_for::<CompiledShard>(),
            kcp_core::typed::gvk_for::<CompiledFrontProxy>(),
            kcp_core::typed::gvk_for::<Certificate>(),
            kcp_core::typed::gvk_for::<Issuer>(),
            kcp_core::typed::gvk_for::<ClusterIssuer>(),
            kcp_core::typed::gvk_for::<Secret>(),
        ];
        for gvk in kinds {
            assert!(cache.serves(&gvk), "{} is read from the server", gvk.kind);
        }
    }

    #[test]
    fn unknown_or_empty_controller_groups_are_rejected() {
        assert!(
            parse_groups("config,bogus")
                .unwrap_err()
                .to_string()
                .contains("bogus")
        );
        assert!(parse_groups("").is_err());
    }
}
