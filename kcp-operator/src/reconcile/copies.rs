//! Full copies of Secrets, answered while the metadata-only watch shows them current.
//!
//! The operator watches Secrets by metadata only (their data stays out of its memory unless
//! read), yet reads some Secrets in full on every pass: a Certificate's own Secret, its
//! issuer's CA Secret (once per Certificate it signs), the kubeconfig Secrets the config
//! controllers ensure. [`Copies`] keeps the last full copy of each Secret read or written
//! through the operator, and answers a read from it while the metadata store holds that
//! Secret at the copy's resourceVersion or an earlier one (the copy is then at least as new
//! as what the watch has shown). A Secret the store does not hold, one it holds at a later
//! version than its copy (another writer), or one with a copy the store does not show yet
//! (written a moment ago), is read from the API server and the copy replaced. A Secret the
//! store does not hold is not taken for absent: with cert-manager, every certificate Secret
//! is created by someone else, and the watch can run seconds behind.
//!
//! Copies of Secrets that are gone are dropped whenever the map has grown to twice the
//! store's size, so the map stays bounded by the Secrets that exist.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use k8s_openapi::api::core::v1::Secret;
use kcp_core::client::ObjectRef;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::typed::gvk_for;
use kcp_core::{ObjectClient, Result, resource_version};
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::Store;

use super::mounted::stored_version;

/// Namespace and name.
type Key = (String, String);

/// How many copies beyond twice the store's size are kept before the gone ones are dropped.
const SLACK: usize = 64;

/// The last full copy of each Secret read or written, checked against the metadata store.
pub struct Copies {
    metadata: Store<PartialObjectMeta<Secret>>,
    objects: Mutex<HashMap<Key, DynamicObject>>,
}

fn key(target: &ObjectRef) -> Key {
    (
        target.namespace.clone().unwrap_or_default(),
        target.name.clone(),
    )
}

fn version(object: &DynamicObject) -> Option<&str> {
    object.metadata.resource_version.as_deref()
}

impl Copies {
    /// Copies checked against `metadata`, the Secrets' metadata-only watch store.
    pub fn new(metadata: Store<PartialObjectMeta<Secret>>) -> Self {
        Copies {
            metadata,
            objects: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `gvk` is the kind kept here (core/v1 Secret).
    pub fn serves(gvk: &GroupVersionKind) -> bool {
        *gvk == gvk_for::<Secret>()
    }

    fn objects(&self) -> MutexGuard<'_, HashMap<Key, DynamicObject>> {
        self.objects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn seen_version(&self, target: &ObjectRef) -> Option<String> {
        let namespace = target.namespace.as_deref().unwrap_or_default();
        stored_version(&self.metadata, namespace, &target.name)
    }

    /// The copy of `target`, when the store shows it no newer than the copy (`None`: the server
    /// must be asked).
    fn current_copy(&self, target: &ObjectRef) -> Option<DynamicObject> {
        let seen = self.seen_version(target);
        let objects = self.objects();
        let copy = objects.get(&key(target));
        match (seen, copy) {
            (Some(seen), Some(copy)) => version(copy)
                .is_some_and(|v| resource_version::includes(v, &seen))
                .then(|| copy.clone()),
            _ => None,
        }
    }

    /// Reads `target`: from its copy when that is current, else from `server` (and keeps what
    /// the server answered).
    pub async fn get(
        &self,
        server: &dyn ObjectClient,
        target: &ObjectRef,
    ) -> Result<Option<DynamicObject>> {
        if let Some(copy) = self.current_copy(target) {
            return Ok(Some(copy));
        }
        let live = server.get(target).await?;
        self.keep(target, live.as_ref());
        Ok(live)
    }

    /// Keeps `object` as `target`'s copy (`None`: it is gone, or unknown after a conflict).
    pub fn keep(&self, target: &ObjectRef, object: Option<&DynamicObject>) {
        let mut objects = self.objects();
        match object {
            Some(o) => {
                objects.insert(key(target), o.clone());
            }
            None => {
                objects.remove(&key(target));
            }
        }
        if objects.len() > 2 * self.metadata.len() + SLACK {
            objects.retain(|(ns, name), _| stored_version(&self.metadata, ns, name).is_some());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use kcp_core::KubeObjectClient;
    use kcp_core::ObjectClientExt as _;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher;

    use crate::reconcile::reads::ReadCache;
    use crate::reconcile::reads::tests::{listed_store, synced_gets};

    use super::*;

    fn secret(value: &str) -> Secret {
        let mut s = Secret::default();
        s.metadata.name = Some("tls".into());
        s.metadata.namespace = Some("default".into());
        s.string_data = Some([("value".to_owned(), value.to_owned())].into());
        s
    }

    fn meta_of(s: &Secret) -> PartialObjectMeta<Secret> {
        PartialObjectMeta {
            types: None,
            metadata: s.metadata.clone(),
            _phantom: std::marker::PhantomData,
        }
    }

    fn value(s: &Secret) -> String {
        String::from_utf8(s.data.as_ref().unwrap()["value"].0.clone()).unwrap()
    }

    /// kcp-sim, a client reaching it over HTTP, and a read cache keeping copies of Secrets
    /// checked against a metadata store that has listed (nothing) and sees only the events
    /// the test applies.
    async fn setup() -> (
        kcp_sim::Server,
        KubeObjectClient,
        ReadCache,
        Writer<PartialObjectMeta<Secret>>,
    ) {
        let sim = kcp_sim::Server::start(kcp_sim::Config::default())
            .await
            .unwrap();
        let client = KubeObjectClient::new(sim.client("").unwrap());
        let (store, writer) = listed_store();
        let mut cache = ReadCache::default();
        cache.copy_secrets(store);
        (sim, client, cache, writer)
    }

    #[tokio::test]
    async fn a_secret_written_is_read_back_from_its_copy_while_the_store_shows_that_version() {
        let (sim, client, cache, mut writer) = setup().await;
        let gets = synced_gets(&client, &cache);
        let written = gets.create_typed(&secret("one")).await.unwrap();
        writer.apply_watcher_event(&watcher::Event::Apply(meta_of(&written)));
        sim.requests().reset();
        let read: Secret = gets
            .get_typed(Some("default"), "tls")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(value(&read), "one");
        assert_eq!(sim.requests().total().count, 0);
    }

    #[tokio::test]
    async fn a_secret_another_writer_changed_since_is_read_from_the_server() {
        let (_sim, client, cache, mut writer) = setup().await;
        let gets = synced_gets(&client, &cache);
        let mut written = gets.create_typed(&secret("one")).await.unwrap();
        written.data = None;
        written.string_data = Some([("value".to_owned(), "two".to_owned())].into());
        let theirs = client.replace_typed(&written).await.unwrap();
        writer.apply_watcher_event(&watcher::Event::Apply(meta_of(&theirs)));
        let read: Secret = gets
            .get_typed(Some("default"), "tls")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(value(&read), "two");
    }

    #[tokio::test]
    async fn a_secret_someone_else_created_that_the_store_does_not_show_yet_is_read_from_the_server()
     {
        let (_sim, client, cache, _writer) = setup().await;
        client.create_typed(&secret("theirs")).await.unwrap();
        let gets = synced_gets(&client, &cache);
        let read: Option<Secret> = gets.get_typed(Some("default"), "tls").await.unwrap();
        assert_eq!(value(&read.unwrap()), "theirs");
    }

    #[tokio::test]
    async fn a_secret_written_that_the_store_does_not_show_yet_is_read_from_the_server() {
        let (sim, client, cache, _writer) = setup().await;
        let gets = synced_gets(&client, &cache);
        gets.create_typed(&secret("one")).await.unwrap();
        sim.requests().reset();
        let read: Option<Secret> = gets.get_typed(Some("default"), "tls").await.unwrap();
        assert_eq!(value(&read.unwrap()), "one");
        assert_eq!(sim.requests().total().count, 1);
    }

    #[tokio::test]
    async fn copies_of_secrets_that_are_gone_are_dropped_once_the_map_outgrows_the_store() {
        let (store, _writer) = listed_store::<PartialObjectMeta<Secret>>();
        let copies = Copies::new(store);
        let object = |name: &str| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
            }))
            .unwrap()
        };
        for i in 0..=SLACK {
            let o = object(&format!("gone-{i}"));
            copies.keep(&ObjectRef::from_object(&o).unwrap(), Some(&o));
        }
        assert!(copies.objects().is_empty());
    }
}
