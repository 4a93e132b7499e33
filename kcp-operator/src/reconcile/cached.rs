//! Lists served from a controller's watch cache: the RootShard, Shard and FrontProxy passes
//! each need the names of a RootShard's Shards, and listing every Shard of a namespace holding
//! many installations on every pass costs the API server O(installations) each time. Once the
//! caches synced, [`CachedShards`] answers that list from the Shard controller's store (a
//! stale answer is harmless: every Shard event wakes its RootShard and FrontProxies again);
//! everything else goes to the API server.
//!
//! Converting every Shard of the store to a dynamic object and back on every pass still costs
//! O(installations) per pass, so the controller also hands the store to the pass
//! ([`super::PassContext::shards`]), and [`shard_names_in`] reads the names straight from it.

use kcp_core::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectList, ObjectPatch, ObjectRef, PatchOptions,
    ResourceInfo, Subresource,
};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::typed::to_dynamic;
use kcp_core::{ObjectClient, Result};
use kube::Resource as _;
use kube::runtime::reflector::Store;

use crate::api::Shard;

/// The sorted names of the Shards of root shard `rs` in `namespace`, from `store`.
pub fn shard_names_in(store: &Store<Shard>, namespace: &str, rs: &str) -> Vec<String> {
    let mut names: Vec<String> = store
        .state()
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(namespace))
        .filter(|s| s.spec.root_shard.name() == Some(rs))
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    names.sort();
    names
}

/// An [`ObjectClient`] answering unfiltered lists of Shards from `shards` when it is set.
pub struct CachedShards<'a> {
    /// Where everything else goes.
    pub inner: &'a dyn ObjectClient,
    /// The Shard controller's store, once every cache synced.
    pub shards: Option<&'a Store<Shard>>,
}

fn is_shard(gvk: &GroupVersionKind) -> bool {
    gvk.group == Shard::group(&()) && gvk.version == Shard::version(&()) && gvk.kind == "Shard"
}

fn unfiltered(options: &ListOptions) -> bool {
    options == &ListOptions::default()
}

#[async_trait::async_trait]
impl ObjectClient for CachedShards<'_> {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        self.inner.resolve(gvk).await
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        self.inner.get(target).await
    }

    async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList> {
        let Some(store) = self.shards.filter(|_| is_shard(gvk) && unfiltered(options)) else {
            return self.inner.list(gvk, namespace, options).await;
        };
        let items = store
            .state()
            .iter()
            .filter(|s| namespace.is_none() || s.metadata.namespace.as_deref() == namespace)
            .map(|s| to_dynamic(s.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        Ok(ObjectList {
            items,
            resource_version: None,
            continue_token: None,
        })
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        self.inner.create(obj).await
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        self.inner.replace(obj, subresource).await
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        self.inner.patch(target, subresource, patch, options).await
    }

    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome> {
        self.inner.delete(target, options).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use kcp_core::ObjectClientExt as _;
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::api::ShardSpec;

    fn shard(name: &str) -> Shard {
        let mut s = Shard::new(name, ShardSpec::default());
        s.metadata.namespace = Some("kcp".into());
        s
    }

    #[tokio::test]
    async fn shard_names_come_from_the_store() {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        let mut alpha = shard("alpha");
        alpha.spec.root_shard.reference = Some(k8s_openapi::api::core::v1::LocalObjectReference {
            name: "root".into(),
        });
        writer.apply_watcher_event(&watcher::Event::InitApply(alpha));
        writer.apply_watcher_event(&watcher::Event::InitApply(shard("beta")));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert_eq!(
            shard_names_in(&store, "kcp", "root"),
            vec!["alpha".to_owned()]
        );
    }

    #[tokio::test]
    async fn shard_lists_come_from_the_store_and_everything_else_from_the_server() {
        let sim = kcp_sim::Server::start(kcp_sim::Config::default())
            .await
            .unwrap();
        let server = sim.object_client("");
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(shard("alpha")));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let cached = CachedShards {
            inner: &server,
            shards: Some(&store),
        };
        let listed: Vec<Shard> = cached
            .list_typed(Some("kcp"), &ListOptions::default())
            .await
            .unwrap();
        assert_eq!(
            listed.len(),
            1,
            "the store's Shard, which the server does not have"
        );
        let namespaces: Vec<k8s_openapi::api::core::v1::Namespace> = cached
            .list_typed(None, &ListOptions::default())
            .await
            .unwrap();
        assert!(
            !namespaces.is_empty(),
            "other kinds are listed by the server"
        );
        let uncached = CachedShards {
            inner: &server,
            shards: None,
        };
        let answer = uncached
            .list_typed::<Shard>(Some("kcp"), &ListOptions::default())
            .await;
        assert!(
            answer.is_err(),
            "without a store the server answers (it serves no Shards)"
        );
    }
}
