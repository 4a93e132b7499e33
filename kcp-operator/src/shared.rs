//! One watch per kind, shared by every controller that needs it.
//!
//! Eleven controllers and the built-in issuer each watching every kind they own or follow
//! would open some fifty watches, each decoding every object of its kind again (a Secret
//! written by the issuer was decoded seven times). A [`Hub`] runs one watch of a kind, keeps
//! a [`Store`] of it when asked (for the controllers whose main kind it is, and lookups), and
//! hands every change to its subscribers: [`Hub::objects`] (whole objects, for a controller's
//! main stream and mappers reading specs), [`Hub::metas`] (owner-reference triggers) and
//! [`Hub::changes`] (filtered by a fingerprint, see [`crate::triggers`]).
//! Kinds only used to find owners (Secrets, Deployments, Services, ConfigMaps) are watched
//! metadata-only ([`Hub::metadata`]); of Secrets and ConfigMaps that metadata is also kept, for
//! the versions of mounted objects ([`crate::reconcile::mounted`]). Objects are kept and passed on with only the operator's own server-side apply entry of
//! `managedFields` (the rest is large and read by no pass; that entry tells a pass whether a
//! child still holds a field it no longer renders, see [`crate::reconcile::ensure`]).

use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::{Stream, StreamExt as _};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api::*;
use crate::render::certmanager::{Certificate, ClusterIssuer, Issuer};

/// A change a subscriber sees.
#[derive(Debug)]
pub enum Change<K> {
    /// Created, updated, or listed.
    Applied(Arc<K>),
    /// Deleted.
    Deleted(Arc<K>),
}

impl<K> Change<K> {
    fn object(&self) -> &Arc<K> {
        match self {
            Change::Applied(o) | Change::Deleted(o) => o,
        }
    }
}

type Subscribers<K> = Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<Change<K>>>>>>;

/// One shared watch of `K` (see the module docs).
pub struct Hub<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    subscribers: Subscribers<K>,
}

impl<K> Hub<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A hub over a full watch of `api`; with `keep` a [`Store`] of it is kept. The returned
    /// task runs the watch until `shutdown` completes.
    pub fn watch(
        api: Api<K>,
        config: watcher::Config,
        keep: bool,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Self, BoxFuture<'static, ()>) {
        Self::over(watcher(api, config).default_backoff(), keep, shutdown)
    }

    /// A hub over `events` (see [`Hub::watch`]). A hub keeping a store hands on the objects
    /// of a list (the first, and each one after the watch expired, as after an API server
    /// restart) only once the list is complete and the store holds them: the store shows the
    /// previous list until then, and a controller woken for an object its store does not hold
    /// drops the request (`ObjectNotFound`), so an object created while the watch was down
    /// would never be reconciled.
    pub fn over(
        events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
        keep: bool,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Self, BoxFuture<'static, ()>) {
        let (reader, mut writer) = reflector::store::<K>();
        let subscribers: Subscribers<K> = Arc::default();
        let fan_out = subscribers.clone();
        let kind = K::kind(&()).into_owned();
        let task = async move {
            let mut events = std::pin::pin!(events);
            let mut shutdown = std::pin::pin!(shutdown);
            // The objects of a (re)list, handed on once the store holds them (see
            // [`Hub::over`]).
            let mut listed: Vec<ObjectRef<K>> = Vec::new();
            loop {
                let event = tokio::select! {
                    e = events.next() => e,
                    () = &mut shutdown => None,
                };
                match event {
                    None => break,
                    Some(Err(e)) => tracing::warn!(%kind, error = %e, "watch failed; retrying"),
                    Some(Ok(event)) if keep => {
                        keep_and_hand_on(&mut writer, &mut listed, &fan_out, event)
                    }
                    Some(Ok(mut event)) => {
                        strip(&mut event);
                        if let Some(change) = change(event) {
                            broadcast(&fan_out, change);
                        }
                    }
                }
            }
            fan_out
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        };
        (
            Hub {
                store: reader,
                subscribers,
            },
            Box::pin(task),
        )
    }

    /// The store of the kind (empty, never ready, when the hub keeps none).
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    fn subscribe(&self) -> impl Stream<Item = Arc<Change<K>>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        tokio_stream_from(rx)
    }

    /// Every change, as whole objects.
    pub fn objects(&self) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        self.subscribe().map(|c| Ok(K::clone(c.object()))).boxed()
    }

    /// Every change, as the object's metadata (enough to find owners).
    pub fn metas(
        &self,
    ) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static {
        self.subscribe()
            .map(|c| Ok(meta_of(c.object().as_ref())))
            .boxed()
    }

    /// New and deleted objects, and those whose `fingerprint` changed (see
    /// [`crate::triggers::changes`]).
    pub fn changes(
        &self,
        fingerprint: fn(&K) -> u64,
    ) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        let events = self.subscribe().map(|c| {
            Ok(match c.as_ref() {
                Change::Applied(o) => watcher::Event::Apply(K::clone(o)),
                Change::Deleted(o) => watcher::Event::Delete(K::clone(o)),
            })
        });
        crate::triggers::changes(events, fingerprint)
    }
}

impl<K> Hub<PartialObjectMeta<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    PartialObjectMeta<K>: Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    /// A hub over a metadata-only watch of `api`; with `keep` a [`Store`] of the metadata is
    /// kept.
    pub fn metadata(
        api: Api<K>,
        config: watcher::Config,
        keep: bool,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Self, BoxFuture<'static, ()>) {
        let api: Api<PartialObjectMeta<K>> = Api::all(api.into_client());
        Self::watch(api, config, keep, shutdown)
    }

    /// Every change of a metadata-only hub.
    pub fn metas_only(
        &self,
    ) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static {
        self.subscribe()
            .map(|c| Ok(PartialObjectMeta::clone(c.object())))
            .boxed()
    }
}

/// A kind with a shared, stored watch in [`Hubs`].
pub trait Shared:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// The hub of the kind in `hubs`, started on first use.
    fn hub(hubs: &mut Hubs) -> &Hub<Self>;
}

/// A metadata-only kind with a shared watch in [`Hubs`].
pub trait SharedMeta:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// The hub of the kind in `hubs`, started on first use.
    fn hub(hubs: &mut Hubs) -> &Hub<PartialObjectMeta<Self>>;
}

macro_rules! hubs {
    (full: $($field:ident: $kind:ty),*; meta: $($mfield:ident: $mkind:ty => $keep:expr),*) => {
        #[derive(Default)]
        struct HubSet {
            $($field: Option<Hub<$kind>>,)*
            $($mfield: Option<Hub<PartialObjectMeta<$mkind>>>,)*
        }
        $(impl Shared for $kind {
            fn hub(hubs: &mut Hubs) -> &Hub<Self> {
                let (client, stop, tasks) = (&hubs.client, &hubs.stop, &mut hubs.tasks);
                hubs.set.$field.get_or_insert_with(|| {
                    let api = Api::all(client.clone());
                    let (hub, task) = Hub::watch(api, watcher::Config::default(), true, stop.clone().cancelled_owned());
                    tasks.push(task);
                    hub
                })
            }
        })*
        $(impl SharedMeta for $mkind {
            fn hub(hubs: &mut Hubs) -> &Hub<PartialObjectMeta<Self>> {
                let (client, stop, tasks) = (&hubs.client, &hubs.stop, &mut hubs.tasks);
                hubs.set.$mfield.get_or_insert_with(|| {
                    let api = Api::<$mkind>::all(client.clone());
                    let (hub, task) = Hub::metadata(api, watcher::Config::default(), $keep, stop.clone().cancelled_owned());
                    tasks.push(task);
                    hub
                })
            }
        })*
    };
}

hubs!(
    full: root_shards: RootShard, shards: Shard, front_proxies: FrontProxy,
    cache_servers: CacheServer, kubeconfigs: Kubeconfig, virtual_workspaces: VirtualWorkspace,
    certificates: Certificate, issuers: Issuer, cluster_issuers: ClusterIssuer,
    compiled_root_shards: CompiledRootShard, compiled_shards: CompiledShard,
    compiled_front_proxies: CompiledFrontProxy, compiled_cache_servers: CompiledCacheServer,
    compiled_virtual_workspaces: CompiledVirtualWorkspace;
    meta: secrets: Secret => true, deployments: Deployment => false, services: Service => false,
    config_maps: ConfigMap => true, pod_disruption_budgets: PodDisruptionBudget => false
);

/// The shared watches of one run of the operator, each started when first asked for.
pub struct Hubs {
    client: Client,
    stop: CancellationToken,
    set: HubSet,
    tasks: Vec<BoxFuture<'static, ()>>,
}

impl Hubs {
    /// No hub yet; every hub's watch runs until `stop` is cancelled.
    pub fn new(client: Client, stop: CancellationToken) -> Self {
        Hubs {
            client,
            stop,
            set: HubSet::default(),
            tasks: Vec::new(),
        }
    }

    /// The hub of `K`.
    pub fn of<K: Shared>(&mut self) -> &Hub<K> {
        K::hub(self)
    }

    /// The metadata-only hub of `K`.
    pub fn meta<K: SharedMeta>(&mut self) -> &Hub<PartialObjectMeta<K>> {
        K::hub(self)
    }

    /// The watch tasks of the hubs started so far (to run with the controllers).
    pub fn into_tasks(self) -> Vec<BoxFuture<'static, ()>> {
        self.tasks
    }
}

fn meta_of<K: Resource>(o: &K) -> PartialObjectMeta<K> {
    PartialObjectMeta {
        types: None,
        metadata: o.meta().clone(),
        _phantom: std::marker::PhantomData,
    }
}

/// Drops every `managedFields` entry but the operator's own apply of the object itself from the
/// objects of `event`.
fn strip<K: Resource>(event: &mut watcher::Event<K>) {
    match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o) => {
            let meta = o.meta_mut();
            if let Some(entries) = meta.managed_fields.as_mut() {
                entries.retain(|e| {
                    e.manager.as_deref() == Some(crate::reconcile::FIELD_MANAGER)
                        && e.operation.as_deref() == Some("Apply")
                        && e.subresource.as_deref().is_none_or(str::is_empty)
                });
            }
            if meta.managed_fields.as_ref().is_some_and(Vec::is_empty) {
                meta.managed_fields = None;
            }
        }
        watcher::Event::Init | watcher::Event::InitDone => {}
    }
}

fn change<K>(event: watcher::Event<K>) -> Option<Change<K>> {
    match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
            Some(Change::Applied(Arc::new(o)))
        }
        watcher::Event::Delete(o) => Some(Change::Deleted(Arc::new(o))),
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// The change of `event`, sharing the store's copy of an applied object.
fn stored_change<K>(store: &Store<K>, event: watcher::Event<K>) -> Option<Change<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
            let stored = store.get(&ObjectRef::from_obj(&o));
            Some(Change::Applied(stored.unwrap_or_else(|| Arc::new(o))))
        }
        other => change(other),
    }
}

/// Applies `event` to the store `writer` keeps and hands on what changed: the objects of a
/// (re)list, collected in `listed`, once it is complete (see [`Hub::over`]).
fn keep_and_hand_on<K>(
    writer: &mut reflector::store::Writer<K>,
    listed: &mut Vec<ObjectRef<K>>,
    fan_out: &Subscribers<K>,
    mut event: watcher::Event<K>,
) where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    strip(&mut event);
    writer.apply_watcher_event(&event);
    let store = writer.as_reader();
    match event {
        watcher::Event::Init => listed.clear(),
        watcher::Event::InitApply(o) => listed.push(ObjectRef::from_obj(&o)),
        watcher::Event::InitDone => {
            for listed in listed.drain(..) {
                if let Some(o) = store.get(&listed) {
                    broadcast(fan_out, Change::Applied(o));
                }
            }
        }
        event => {
            if let Some(change) = stored_change(&store, event) {
                broadcast(fan_out, change);
            }
        }
    }
}

fn broadcast<K>(subscribers: &Subscribers<K>, change: Change<K>) {
    let change = Arc::new(change);
    subscribers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|tx| tx.send(change.clone()).is_ok());
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
) -> impl Stream<Item = T> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(name: &str, value: &str) -> ConfigMap {
        ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                namespace: Some("kcp".into()),
                ..Default::default()
            },
            data: Some([("k".to_owned(), value.to_owned())].into()),
            ..ConfigMap::default()
        }
    }

    /// After the watch expired (an API server restart), the relist finds `b`, created while the
    /// watch was down. A controller woken for `b` before its store holds `b` drops the request
    /// and is never woken for `b` again, so `b` is handed on only once the list completed.
    #[tokio::test]
    async fn objects_of_a_relist_are_handed_on_once_the_store_holds_them() {
        let (tx, rx) = mpsc::unbounded_channel();
        let (hub, task) =
            Hub::<ConfigMap>::over(tokio_stream_from(rx), true, futures::future::pending());
        let store = hub.store();
        let mut objects = hub.objects();
        let task = tokio::spawn(task);
        let send = |event| tx.send(Ok(event)).unwrap();
        let held = |o: &ConfigMap| store.get(&ObjectRef::from_obj(o)).is_some();

        send(watcher::Event::Init);
        send(watcher::Event::InitApply(cm("a", "1")));
        send(watcher::Event::InitDone);
        let a = objects.next().await.unwrap().unwrap();
        assert!(held(&a), "the first list's object is in the store");

        send(watcher::Event::Init);
        send(watcher::Event::InitApply(cm("a", "1")));
        send(watcher::Event::InitApply(cm("b", "1")));
        let early = std::time::Duration::from_millis(300);
        while let Ok(Some(Ok(o))) = tokio::time::timeout(early, objects.next()).await {
            assert!(
                held(&o),
                "{:?} handed on before the store holds it",
                o.metadata.name
            );
        }
        send(watcher::Event::InitDone);
        loop {
            let o = objects.next().await.unwrap().unwrap();
            assert!(
                held(&o),
                "{:?} handed on before the store holds it",
                o.metadata.name
            );
            if o.metadata.name.as_deref() == Some("b") {
                break;
            }
        }
        task.abort();
    }

    #[tokio::test]
    async fn every_subscriber_sees_every_change_and_the_store_follows_the_watch() {
        let events = futures::stream::iter(vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(cm("a", "1"))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(cm("a", "2"))),
            Ok(watcher::Event::Delete(cm("a", "2"))),
        ]);
        let (hub, task) = Hub::<ConfigMap>::over(events, true, futures::future::pending());
        let (objects, metas) = (hub.objects(), hub.metas());
        task.await;
        let values: Vec<_> = objects
            .map(|o| o.map(|c| c.data.unwrap_or_default()["k"].clone()).ok())
            .collect()
            .await;
        assert_eq!(
            values,
            [Some("1".into()), Some("2".into()), Some("2".into())]
        );
        assert_eq!(metas.count().await, 3);
        assert_eq!(
            hub.store().state().len(),
            0,
            "the deleted ConfigMap left the store"
        );
    }
}
