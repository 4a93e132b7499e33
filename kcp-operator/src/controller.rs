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

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::runtime::{CacheSync, Harness, Outcome, drain_controller};
use kcp_core::{KubeObjectClient, ObjectClient};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::addresser::{Addresser, InCluster};
use crate::api::*;
use crate::error::{Error, Result};
use crate::metrics::{CountedKind, Metrics, PhasedKind};
use crate::pki::{BuiltinPki, Pki};
use crate::reconcile::cached::{CachedShards, with_shards};
use crate::reconcile::reads::{CachedGets, ReadCache};
use crate::reconcile::retry::RetryingReads;
use crate::reconcile::{config, kubeconfig, virtualworkspace, workload, write_stopped};
use crate::render::certmanager::{Certificate, ClusterIssuer, Issuer};
use crate::render::names::KUBECONFIG_LABEL;
use crate::shared::{Hubs, Shared};
use crate::triggers::spec_fingerprint;

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
    /// Cancelled when the operator stops; controllers then drain.
    pub stop: CancellationToken,
}

impl kcp_core::runtime::Classify for Error {
    fn is_transient(&self) -> bool {
        Error::is_transient(self)
    }
    fn reason(&self) -> &str {
        Error::reason(self)
    }
}

/// A kind with a reconcile function.
pub trait Reconciled:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// One pass over `self`.
    fn reconcile<'a>(
        &'a self,
        client: &'a dyn ObjectClient,
        addresser: &'a dyn Addresser,
    ) -> BoxFuture<'a, Result<Outcome>>;

    /// Writes `err`, a pass's error about the object's input, into its status (for the kinds
    /// users write; the Compiled* kinds have nothing to report there).
    fn report<'a>(
        &'a self,
        _client: &'a dyn ObjectClient,
        _err: &'a Error,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

macro_rules! reconciled {
    ($kind:ty, $f:path) => {
        impl Reconciled for $kind {
            fn reconcile<'a>(
                &'a self,
                client: &'a dyn ObjectClient,
                _addresser: &'a dyn Addresser,
            ) -> BoxFuture<'a, Result<Outcome>> {
                Box::pin($f(client, self))
            }
        }
    };
    ($kind:ty, $f:path, reported) => {
        impl Reconciled for $kind {
            fn reconcile<'a>(
                &'a self,
                client: &'a dyn ObjectClient,
                _addresser: &'a dyn Addresser,
            ) -> BoxFuture<'a, Result<Outcome>> {
                Box::pin($f(client, self))
            }
            fn report<'a>(
                &'a self,
                client: &'a dyn ObjectClient,
                err: &'a Error,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(write_stopped(client, self, err))
            }
        }
    };
    ($kind:ty, $f:path, addresser, reported) => {
        impl Reconciled for $kind {
            fn reconcile<'a>(
                &'a self,
                client: &'a dyn ObjectClient,
                addresser: &'a dyn Addresser,
            ) -> BoxFuture<'a, Result<Outcome>> {
                Box::pin($f(client, addresser, self))
            }
            fn report<'a>(
                &'a self,
                client: &'a dyn ObjectClient,
                err: &'a Error,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(write_stopped(client, self, err))
            }
        }
    };
}

reconciled!(RootShard, config::reconcile_root_shard, reported);
reconciled!(Shard, config::reconcile_shard, addresser, reported);
reconciled!(FrontProxy, config::reconcile_front_proxy, reported);
reconciled!(CacheServer, config::reconcile_cache_server, reported);
reconciled!(
    Kubeconfig,
    kubeconfig::reconcile_kubeconfig,
    addresser,
    reported
);
reconciled!(CompiledRootShard, workload::reconcile_compiled_root_shard);
reconciled!(CompiledShard, workload::reconcile_compiled_shard);
reconciled!(CompiledFrontProxy, workload::reconcile_compiled_front_proxy);
reconciled!(
    CompiledCacheServer,
    workload::reconcile_compiled_cache_server
);
reconciled!(
    VirtualWorkspace,
    virtualworkspace::reconcile_virtual_workspace,
    reported
);
reconciled!(
    CompiledVirtualWorkspace,
    virtualworkspace::reconcile_compiled_virtual_workspace
);

/// A controller's context: the operator's, and the harness around its reconciles.
struct Driven {
    ctx: Arc<Context>,
    harness: Harness,
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

/// One pass over `obj` through the operator's client decorators; an error about the
/// object's input is written into its status.
async fn pass<K: Reconciled>(obj: &K, ctx: &Context) -> Result<Outcome> {
    let reads = RetryingReads(ctx.client.as_ref());
    let synced = ctx.caches.is_synced();
    let gets = CachedGets {
        inner: &reads,
        cache: ctx.reads.get().filter(|_| synced),
    };
    let client = CachedShards {
        inner: &gets,
        shards: ctx.shards.get().filter(|_| synced),
    };
    let shards = ctx.shards.get().filter(|_| synced).cloned();
    let result = with_shards(shards, obj.reconcile(&client, ctx.addresser.as_ref())).await;
    if let Err(err) = &result
        && err.is_about_input()
        && let Err(failed) = obj.report(&client, err).await
    {
        tracing::warn!(error = %failed, "writing why the pass stopped failed");
    }
    result
}

async fn reconcile<K: Reconciled>(obj: Arc<K>, driven: Arc<Driven>) -> Result<Action> {
    let ctx = driven.ctx.as_ref();
    let passed = timed(
        &ctx.metrics,
        driven.harness.controller(),
        pass(obj.as_ref(), ctx),
    );
    driven.harness.reconcile(obj.as_ref(), passed).await
}

fn error_policy<K: Reconciled>(obj: Arc<K>, err: &Error, driven: Arc<Driven>) -> Action {
    driven.harness.error_policy(obj.as_ref(), err)
}

/// Tracks the controller's cache for readiness at once, then runs the controller to
/// completion when polled (or stops it at once if it never synced, see [`drain_controller`]).
fn drive<K: Reconciled>(
    controller: Controller<K>,
    ctx: Arc<Context>,
) -> impl Future<Output = ()> + Send + 'static {
    let store = controller.store();
    ctx.caches.track(store.clone());
    let stop = ctx.stop.clone();
    // kube-runtime's controllers run without a concurrency limit here: 0 says so.
    let name = K::kind(&()).to_ascii_lowercase();
    let harness = Harness::new(name, ctx.metrics.controllers(), 0);
    let driven = Arc::new(Driven { ctx, harness });
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
        .state()
        .iter()
        .filter(|o| o.meta().namespace.as_deref() == namespace && pick(o))
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
    hub.changes(crate::triggers::certificate_fingerprint)
        .filter(move |event| futures::future::ready(worth_a_pass(&store, event)))
}

/// See [`certificates`].
fn worth_a_pass(store: &Store<Certificate>, event: &Result<Certificate, watcher::Error>) -> bool {
    let Ok(cert) = event else {
        return true;
    };
    let Some(current) = store.get(&ObjectRef::from_obj(cert)) else {
        return true;
    };
    let owner = |c: &Certificate| {
        c.metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map(|r| r.uid.clone())
    };
    let Some(uid) = owner(&current) else {
        return true;
    };
    store
        .state()
        .iter()
        .filter(|c| owner(c).as_ref() == Some(&uid))
        .all(|c| c.is_ready())
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
    let stores = Stores {
        root_shards: rs.store(),
        shards: shards.store(),
        front_proxies: fps.store(),
        cache_servers: caches.store(),
        kubeconfigs: kubeconfigs.store(),
        virtual_workspaces: vws.store(),
    };
    vec![
        Box::pin(refresh_metrics(
            stores,
            ctx.metrics.clone(),
            shutdown.clone(),
        )),
        Box::pin(drive(
            rs.graceful_shutdown_on(shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            shards.graceful_shutdown_on(shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            fps.graceful_shutdown_on(shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            caches.graceful_shutdown_on(shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            kubeconfigs.graceful_shutdown_on(shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(vws.graceful_shutdown_on(shutdown), ctx.clone())),
    ]
}

/// The config group's caches the count and condition metrics are computed from.
struct Stores {
    root_shards: Store<RootShard>,
    shards: Store<Shard>,
    front_proxies: Store<FrontProxy>,
    cache_servers: Store<CacheServer>,
    kubeconfigs: Store<Kubeconfig>,
    virtual_workspaces: Store<VirtualWorkspace>,
}

fn ns_name<K: Resource>(o: &K) -> (String, String) {
    let m = o.meta();
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

impl Stores {
    fn refresh(&self, m: &Metrics) {
        let rs = self.root_shards.state();
        let shards = self.shards.state();
        let fps = self.front_proxies.state();
        set_phases(m, PhasedKind::RootShard, &rs, |o| {
            o.status.as_ref().map(|s| s.phase.clone())
        });
        set_phases(m, PhasedKind::Shard, &shards, |o| {
            o.status.as_ref().map(|s| s.phase.clone())
        });
        set_phases(m, PhasedKind::FrontProxy, &fps, |o| {
            o.status.as_ref().map(|s| s.phase.clone())
        });
        set_counts(m, CountedKind::CacheServer, &self.cache_servers.state());
        set_counts(m, CountedKind::Kubeconfig, &self.kubeconfigs.state());
        set_counts(
            m,
            CountedKind::VirtualWorkspace,
            &self.virtual_workspaces.state(),
        );
        set_all_conditions(m, "RootShard", &rs, |o| {
            o.status.as_ref().map(|s| s.conditions.as_slice())
        });
        set_all_conditions(m, "Shard", &shards, |o| {
            o.status.as_ref().map(|s| s.conditions.as_slice())
        });
        set_all_conditions(m, "FrontProxy", &fps, |o| {
            o.status.as_ref().map(|s| s.conditions.as_slice())
        });
    }
}

/// The phase gauge of `kind` from `objects` (namespace and phase of each).
fn set_phases<K: Resource>(
    m: &Metrics,
    kind: PhasedKind,
    objects: &[Arc<K>],
    phase: impl Fn(&K) -> Option<String>,
) {
    let rows: Vec<(String, String)> = objects
        .iter()
        .map(|o| (ns_name(o.as_ref()).0, phase(o).unwrap_or_default()))
        .collect();
    m.set_phased(kind, rows.iter().map(|(a, b)| (a.as_str(), b.as_str())));
}

/// The count gauge of `kind` from `objects` (per namespace).
fn set_counts<K: Resource>(m: &Metrics, kind: CountedKind, objects: &[Arc<K>]) {
    let namespaces: Vec<String> = objects.iter().map(|o| ns_name(o.as_ref()).0).collect();
    m.set_counted(kind, namespaces.iter().map(String::as_str));
}

/// The condition gauges of every object of `kind`.
fn set_all_conditions<K: Resource>(
    m: &Metrics,
    kind: &str,
    objects: &[Arc<K>],
    conditions: impl Fn(&K) -> Option<&[Condition]>,
) {
    for o in objects {
        let (ns, name) = ns_name(o.as_ref());
        m.set_conditions(kind, &ns, &name, conditions(o).unwrap_or_default());
    }
}

/// Refreshes the count and condition metrics every [`Metrics::REFRESH`] until `shutdown`.
async fn refresh_metrics(stores: Stores, metrics: Metrics, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Metrics::REFRESH);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tick.tick() => stores.refresh(&metrics),
        }
    }
}

/// A Compiled* kind, and the installation (RootShard) its Deployment's Secrets belong to.
trait Compiled: Reconciled {
    /// The RootShard whose Secrets (labelled `operator.kcp.io/rootshard`) it mounts.
    fn root_shard(&self) -> Option<&str>;

    /// The Secrets its Deployment mounts (`spec.requiredSecrets`).
    fn required_secrets(&self) -> &[String];
}

impl Compiled for CompiledRootShard {
    fn root_shard(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

impl Compiled for CompiledCacheServer {
    fn root_shard(&self) -> Option<&str> {
        None
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

macro_rules! compiled_of_root_shard {
    ($($kind:ty),*) => {$(
        impl Compiled for $kind {
            fn root_shard(&self) -> Option<&str> {
                Some(&self.spec.root_shard.name)
            }

            fn required_secrets(&self) -> &[String] {
                &self.spec.required_secrets
            }
        }
    )*};
}

compiled_of_root_shard!(CompiledShard, CompiledFrontProxy, CompiledVirtualWorkspace);

/// Whether a Secret event may concern `o`'s Deployment:
/// * a Secret it lists in `spec.requiredSecrets` does (a VirtualWorkspace mounts Kubeconfig
///   Secrets, so their renewal must roll it);
/// * a Secret a Compiled* object controls (a proxy's dynamic kubeconfig) concerns only it;
/// * a Secret of an installation (labelled `operator.kcp.io/rootshard`) concerns only the
///   Compiled* objects of that RootShard;
/// * other Kubeconfig Secrets (a client certificate, labelled `operator.kcp.io/kubeconfig`, or an
///   output, controlled by the Kubeconfig) are not mounted;
/// * any other Secret (a CacheServer's, or one a user provides) may be mounted by any of them.
fn secret_concerns<K: Compiled>(o: &K, secret: &kube::api::ObjectMeta) -> bool {
    if let Some(name) = secret.name.as_ref()
        && o.required_secrets().contains(name)
    {
        return true;
    }
    let controller = secret
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    if let Some(owner) = controller {
        if owner.api_version.starts_with("deploy.operator.kcp.io/") {
            return owner.kind == K::kind(&()) && o.meta().name.as_deref() == Some(&owner.name);
        }
        if owner.api_version.starts_with("operator.kcp.io/") && owner.kind == "Kubeconfig" {
            return false;
        }
    }
    let labels = secret.labels.as_ref();
    match labels.and_then(|l| l.get(crate::render::names::ROOT_SHARD_LABEL)) {
        Some(rs) => o.root_shard() == Some(rs.as_str()),
        None => !labels.is_some_and(|l| l.contains_key(KUBECONFIG_LABEL)),
    }
}

/// A workload controller: owns Deployments, Services, ConfigMaps and PodDisruptionBudgets, and is woken by the
/// Secrets its Deployment may mount (see [`secret_concerns`]).
fn workload_controller<K: Compiled + Shared>(
    hubs: &mut Hubs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Controller<K> {
    let controller = controller::<K>(hubs)
        .owns_stream(hubs.meta::<Deployment>().metas_only())
        .owns_stream(hubs.meta::<Service>().metas_only())
        .owns_stream(hubs.meta::<ConfigMap>().metas_only())
        .owns_stream(hubs.meta::<PodDisruptionBudget>().metas_only());
    let store = controller.store();
    controller
        .watches_stream(hubs.meta::<Secret>().metas_only(), move |s| {
            refs(&store, s.metadata.namespace.as_deref(), |o: &K| {
                secret_concerns(o, &s.metadata)
            })
        })
        .graceful_shutdown_on(shutdown)
}

fn workload_controllers(
    hubs: &mut Hubs,
    ctx: &Arc<Context>,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) -> Vec<BoxFuture<'static, ()>> {
    vec![
        Box::pin(drive(
            workload_controller::<CompiledRootShard>(hubs, shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            workload_controller::<CompiledShard>(hubs, shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            workload_controller::<CompiledFrontProxy>(hubs, shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            workload_controller::<CompiledCacheServer>(hubs, shutdown.clone()),
            ctx.clone(),
        )),
        Box::pin(drive(
            workload_controller::<CompiledVirtualWorkspace>(hubs, shutdown),
            ctx.clone(),
        )),
    ]
}

/// The built-in issuer's context.
struct PkiContext {
    client: Arc<dyn ObjectClient>,
    harness: Harness,
    pki: BuiltinPki,
    metrics: Metrics,
}

async fn reconcile_certificate(cert: Arc<Certificate>, ctx: Arc<PkiContext>) -> Result<Action> {
    let client = RetryingReads(ctx.client.as_ref());
    let issue = crate::pki::reconcile::reconcile_certificate(&client, &ctx.pki, &cert);
    let passed = timed(&ctx.metrics, ctx.harness.controller(), issue);
    ctx.harness.reconcile(cert.as_ref(), passed).await
}

fn certificate_error_policy(cert: Arc<Certificate>, err: &Error, ctx: Arc<PkiContext>) -> Action {
    ctx.harness.error_policy(cert.as_ref(), err)
}

/// Certificates in `store` not ready yet that `pick` selects.
fn waiting_certificates(
    store: &Store<Certificate>,
    pick: impl Fn(&Certificate) -> bool,
) -> Vec<ObjectRef<Certificate>> {
    store
        .state()
        .iter()
        .filter(|c| !c.is_ready() && pick(c))
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

fn names_issuer(c: &Certificate, kind: &str, namespace: Option<&str>, name: &str) -> bool {
    let r = &c.spec.issuer_ref;
    let kind_matches = r.kind == kind || (r.kind.is_empty() && kind == "Issuer");
    kind_matches
        && r.name == name
        && (namespace.is_none() || c.metadata.namespace.as_deref() == namespace)
}

/// The built-in issuer: one controller over every Certificate, woken by changes of its spec or
/// metadata (not its status, see [`crate::triggers::spec_fingerprint`]), by its Secret (by the
/// `cert-manager.io/certificate-name` annotation), by its Issuer or ClusterIssuer, and, while
/// waiting, by the CA Secret of its issuer.
fn certificate_controller(hubs: &mut Hubs, pki: &BuiltinPki) -> Controller<Certificate> {
    let hub = hubs.of::<Certificate>();
    let changes = hub.changes(crate::triggers::spec_fingerprint::<Certificate>);
    let controller = Controller::for_stream(changes, hub.store());
    let issuers = hubs.of::<Issuer>().store();
    let cluster_issuers = hubs.of::<ClusterIssuer>().store();
    let certs = controller.store();
    let (by_issuer, by_cluster_issuer) = (certs.clone(), certs.clone());
    let resource_ns = pki.cluster_resource_namespace.clone();
    controller
        .watches_stream(hubs.of::<Issuer>().objects(), move |i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            waiting_certificates(&by_issuer, |c| {
                names_issuer(c, "Issuer", i.metadata.namespace.as_deref(), &name)
            })
        })
        .watches_stream(hubs.of::<ClusterIssuer>().objects(), move |i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            waiting_certificates(&by_cluster_issuer, |c| {
                names_issuer(c, "ClusterIssuer", None, &name)
            })
        })
        .watches_stream(hubs.meta::<Secret>().metas_only(), move |s| {
            let ns = s.metadata.namespace.clone().unwrap_or_default();
            let name = s.metadata.name.clone().unwrap_or_default();
            let own = s
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::pki::plan::CERTIFICATE_NAME_ANNOTATION))
                .map(|c| ObjectRef::new(c).within(&ns));
            let signing: Vec<(String, Option<String>)> = issuers
                .state()
                .iter()
                .filter(|i| i.metadata.namespace.as_deref() == Some(&ns))
                .filter(|i| i.spec.ca.as_ref().is_some_and(|ca| ca.secret_name == name))
                .map(|i| {
                    (
                        i.metadata.name.clone().unwrap_or_default(),
                        Some(ns.clone()),
                    )
                })
                .chain(
                    cluster_issuers
                        .state()
                        .iter()
                        .filter(|_| ns == resource_ns)
                        .filter(|i| i.spec.ca.as_ref().is_some_and(|ca| ca.secret_name == name))
                        .map(|i| (i.metadata.name.clone().unwrap_or_default(), None)),
                )
                .collect();
            let waiting = waiting_certificates(&certs, |c| {
                signing.iter().any(|(issuer, ns)| match ns {
                    Some(ns) => names_issuer(c, "Issuer", Some(ns), issuer),
                    None => names_issuer(c, "ClusterIssuer", None, issuer),
                })
            });
            own.into_iter().chain(waiting)
        })
}

fn pki_controllers(
    hubs: &mut Hubs,
    ctx: &Arc<Context>,
    pki: &BuiltinPki,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) -> Vec<BoxFuture<'static, ()>> {
    let controller = certificate_controller(hubs, pki).graceful_shutdown_on(shutdown);
    let store = controller.store();
    ctx.caches.track(store.clone());
    let stop = ctx.stop.clone();
    let pki_ctx = Arc::new(PkiContext {
        client: ctx.client.clone(),
        harness: Harness::new("certificate", ctx.metrics.controllers(), 0),
        pki: pki.clone(),
        metrics: ctx.metrics.clone(),
    });
    let run = async move {
        let run = controller
            .run(reconcile_certificate, certificate_error_policy, pki_ctx)
            .for_each(|_| async {});
        drain_controller(run, store, stop).await;
    };
    vec![Box::pin(run)]
}

/// The stores child GETs are answered from: the Compiled* kinds (both groups watch them) and,
/// with the config group, Certificates and Issuers.
fn read_cache(hubs: &mut Hubs, groups: &BTreeSet<ControllerGroup>) -> ReadCache {
    let mut cache = ReadCache::default();
    if groups.contains(&ControllerGroup::Config) {
        cache.serve(hubs.of::<Certificate>().store());
        cache.serve(hubs.of::<Issuer>().store());
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
        stop,
    });
    let mut hubs = Hubs::new(client, ctx.stop.clone());
    let mut tasks = Vec::new();
    // Every controller's controller-runtime series exist from the start: each controller's
    // harness creates them as the controller is set up.
    if groups.contains(&ControllerGroup::Config) {
        tasks.extend(config_controllers(&mut hubs, &ctx, shutdown.clone()));
        if let Pki::Builtin(builtin) = pki {
            tasks.extend(pki_controllers(&mut hubs, &ctx, builtin, shutdown.clone()));
        }
    }
    if groups.contains(&ControllerGroup::Workload) {
        tasks.extend(workload_controllers(&mut hubs, &ctx, shutdown));
    }
    let _ = ctx.reads.set(read_cache(&mut hubs, groups));
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

    fn secret(labels: &[(&str, &str)], owner: Option<(&str, &str, &str)>) -> kube::api::ObjectMeta {
        kube::api::ObjectMeta {
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            owner_references: owner.map(|(api_version, kind, name)| {
                vec![
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                        api_version: api_version.into(),
                        kind: kind.into(),
                        name: name.into(),
                        controller: Some(true),
                        ..Default::default()
                    },
                ]
            }),
            ..Default::default()
        }
    }

    #[test]
    fn an_installation_secret_wakes_only_the_compiled_objects_of_its_root_shard() {
        let mut shard = CompiledShard::new("s1", CompiledShardSpec::default());
        shard.spec.root_shard.name = "r1".into();
        let root = CompiledRootShard::new("r2", CompiledRootShardSpec::default());
        let of_r1 = secret(&[(crate::render::names::ROOT_SHARD_LABEL, "r1")], None);
        assert!(secret_concerns(&shard, &of_r1));
        assert!(!secret_concerns(&root, &of_r1));
        assert!(
            secret_concerns(&root, &secret(&[], None)),
            "an unlabelled Secret may be mounted by anyone"
        );
    }

    #[test]
    fn kubeconfig_secrets_wake_no_workload_and_a_compiled_objects_secret_only_it() {
        let root = CompiledRootShard::new("r1", CompiledRootShardSpec::default());
        let fp = CompiledFrontProxy::new("f1", CompiledFrontProxySpec::default());
        let cert = secret(&[(KUBECONFIG_LABEL, "admin")], None);
        let output = secret(
            &[],
            Some(("operator.kcp.io/v1alpha1", "Kubeconfig", "admin")),
        );
        assert!(!secret_concerns(&root, &cert) && !secret_concerns(&root, &output));
        let dynamic = secret(
            &[],
            Some((
                "deploy.operator.kcp.io/v1alpha1",
                "CompiledFrontProxy",
                "f1",
            )),
        );
        assert!(secret_concerns(&fp, &dynamic));
        assert!(!secret_concerns(&root, &dynamic));
    }

    #[test]
    fn a_kubeconfig_secret_a_virtual_workspace_mounts_wakes_it() {
        let mut vw = CompiledVirtualWorkspace::new("vw", CompiledVirtualWorkspaceSpec::default());
        vw.spec.required_secrets = vec!["vw-server-kubeconfig".into()];
        let mut output = secret(
            &[],
            Some(("operator.kcp.io/v1alpha1", "Kubeconfig", "vw-server")),
        );
        assert!(!secret_concerns(&vw, &output));
        output.name = Some("vw-server-kubeconfig".into());
        assert!(secret_concerns(&vw, &output));
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
