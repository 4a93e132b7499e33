//! GETs of child objects served from the shared watch caches.
//!
//! Every pass ensures each of its children (an installation has dozens of Certificates), and
//! ensuring starts with reading the child: from the API server that is one request per child
//! per pass. [`CachedGets`] answers those reads from the [`ReadCache`]'s stores instead, and
//! stays read-your-writes: an object written through it is read from the API server until the
//! store has seen that write (its resourceVersion), as is one whose write conflicted until the
//! store agrees with the server again. Other kinds, and every list and write, go to the server.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kcp_core::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectList, ObjectPatch, ObjectRef, PatchOptions,
    ResourceInfo, Subresource,
};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::typed::to_dynamic;
use kcp_core::{ObjectClient, Result};
use kube::Resource;
use kube::runtime::reflector::{self, Store};
use serde::Serialize;

/// One kind's store, seen as dynamic objects.
trait Lookup: Send + Sync {
    fn serves(&self, gvk: &GroupVersionKind) -> bool;
    fn get(&self, namespace: Option<&str>, name: &str) -> Result<Option<DynamicObject>>;
}

impl<K> Lookup for Store<K>
where
    K: Resource<DynamicType = ()> + Serialize + Clone + Send + Sync + 'static,
{
    fn serves(&self, gvk: &GroupVersionKind) -> bool {
        gvk.group == K::group(&()) && gvk.version == K::version(&()) && gvk.kind == K::kind(&())
    }

    fn get(&self, namespace: Option<&str>, name: &str) -> Result<Option<DynamicObject>> {
        let mut key = reflector::ObjectRef::<K>::new(name);
        if let Some(ns) = namespace {
            key = key.within(ns);
        }
        Store::get(self, &key)
            .map(|o| to_dynamic(o.as_ref()))
            .transpose()
    }
}

type Key = (String, String, Option<String>, String);

fn key(target: &ObjectRef) -> Key {
    (
        target.gvk.group.clone(),
        target.gvk.kind.clone(),
        target.namespace.clone(),
        target.name.clone(),
    )
}

fn version(object: Option<&DynamicObject>) -> Option<String> {
    object.and_then(|o| o.metadata.resource_version.clone())
}

/// The stores GETs are answered from, and what was written since they last caught up.
#[derive(Default)]
pub struct ReadCache {
    stores: Vec<Box<dyn Lookup>>,
    /// Objects written through [`CachedGets`] whose store has not shown that write yet: the
    /// resourceVersion written (`None` once deleted, or unknown after a conflict).
    pending: Mutex<HashMap<Key, Option<String>>>,
}

impl ReadCache {
    /// Answers GETs of `K` from `store`.
    pub fn serve<K>(&mut self, store: Store<K>)
    where
        K: Resource<DynamicType = ()> + Serialize + Clone + Send + Sync + 'static,
    {
        self.stores.push(Box::new(store));
    }

    fn lookup(&self, gvk: &GroupVersionKind) -> Option<&dyn Lookup> {
        self.stores
            .iter()
            .find(|s| s.serves(gvk))
            .map(|s| s.as_ref())
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Option<String>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wrote(&self, target: &ObjectRef, written: Option<String>) {
        if self.lookup(&target.gvk).is_some() {
            self.pending().insert(key(target), written);
        }
    }
}

/// An [`ObjectClient`] answering GETs of the kinds `cache` holds from it (when set).
pub struct CachedGets<'a> {
    /// Where everything else goes.
    pub inner: &'a dyn ObjectClient,
    /// The stores, once every cache synced.
    pub cache: Option<&'a ReadCache>,
}

impl CachedGets<'_> {
    async fn record<T>(
        &self,
        target: &ObjectRef,
        result: Result<T>,
        rv: impl Fn(&T) -> Option<String>,
    ) -> Result<T> {
        if let Some(cache) = self.cache {
            match &result {
                Ok(written) => cache.wrote(target, rv(written)),
                Err(e) if e.is_conflict() => cache.wrote(target, Some(String::new())),
                Err(_) => {}
            }
        }
        result
    }
}

#[async_trait::async_trait]
impl ObjectClient for CachedGets<'_> {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        self.inner.resolve(gvk).await
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        let Some((cache, store)) = self
            .cache
            .and_then(|c| c.lookup(&target.gvk).map(|s| (c, s)))
        else {
            return self.inner.get(target).await;
        };
        let cached = store.get(target.namespace.as_deref(), &target.name)?;
        let k = key(target);
        let Some(written) = cache.pending().get(&k).cloned() else {
            return Ok(cached);
        };
        if written.is_some() && written == version(cached.as_ref())
            || written.is_none() && cached.is_none()
        {
            cache.pending().remove(&k);
            return Ok(cached);
        }
        let live = self.inner.get(target).await?;
        if version(live.as_ref()) == version(cached.as_ref()) {
            cache.pending().remove(&k);
        }
        Ok(live)
    }

    async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList> {
        self.inner.list(gvk, namespace, options).await
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        let result = self.inner.create(obj).await;
        match ObjectRef::from_object(obj) {
            Ok(target) => self.record(&target, result, |o| version(Some(o))).await,
            Err(_) => result,
        }
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        let result = self.inner.replace(obj, subresource).await;
        match ObjectRef::from_object(obj) {
            Ok(target) => self.record(&target, result, |o| version(Some(o))).await,
            Err(_) => result,
        }
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        let result = self.inner.patch(target, subresource, patch, options).await;
        self.record(target, result, |o| version(Some(o))).await
    }

    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome> {
        let result = self.inner.delete(target, options).await;
        self.record(target, result, |_| None).await
    }
}
