//! The resourceVersions of the Secrets and ConfigMaps a Deployment mounts, for its revision
//! labels (a changed Secret rolls the pods that mount it).
//!
//! A workload pass needs the version of every object its Deployments mount, a dozen per root
//! shard. Read with one GET each, that was the operator's most frequent request (22,000 of
//! the 28,000 Secret GETs while 100 installations converge), for one string per object. Once
//! the caches synced, the versions come from the metadata-only watches of Secrets and
//! ConfigMaps instead ([`MountStores`]); an object the store does not hold yet (created a
//! moment ago) is still read from the API server.
//!
//! A version from the store can only be older than the server's while the watch has not
//! delivered a write: that write's event then wakes the pass again (every Secret and
//! ConfigMap event wakes the Compiled* objects whose Deployments may mount it, and the hub
//! updates its store before it hands the event on), and that pass writes the new version.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kube::Resource;
use kube::api::{ObjectMeta, PartialObjectMeta};
use kube::runtime::reflector::{ObjectRef, Store};

use super::core;
use crate::error::Result;
use crate::render::revisions::{MountKind, referenced_objects};

/// The metadata-only watch stores of Secrets and ConfigMaps.
#[derive(Clone)]
pub struct MountStores {
    /// Secrets' metadata.
    pub secrets: Store<PartialObjectMeta<Secret>>,
    /// ConfigMaps' metadata.
    pub config_maps: Store<PartialObjectMeta<ConfigMap>>,
}

impl MountStores {
    /// The resourceVersion of `namespace/name` as the store holds it (`None`: not held).
    fn version(&self, kind: MountKind, namespace: &str, name: &str) -> Option<String> {
        match kind {
            MountKind::Secret => stored_version(&self.secrets, namespace, name),
            MountKind::ConfigMap => stored_version(&self.config_maps, namespace, name),
        }
    }
}

/// The resourceVersion of `namespace/name` as `store` holds it (`None`: not held).
pub(crate) fn stored_version<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<String>
where
    K: Resource<DynamicType = ()> + Clone,
{
    store
        .get(&ObjectRef::new(name).within(namespace))
        .and_then(|o| o.meta().resource_version.clone())
}

/// resourceVersions of the Secrets and ConfigMaps of a namespace, as one pass learns them.
#[derive(Clone, Default)]
pub struct Mounted {
    versions: BTreeMap<(MountKind, String), String>,
    stores: Option<MountStores>,
}

impl Mounted {
    /// Nothing known yet; versions are looked up in `stores` (when given) before the server.
    pub fn new(stores: Option<&MountStores>) -> Self {
        Mounted {
            versions: BTreeMap::new(),
            stores: stores.cloned(),
        }
    }

    /// Learns the resourceVersions of the objects `deployment` mounts that are not known yet:
    /// from the stores, else with one GET each.
    pub async fn fill(
        &mut self,
        client: &dyn ObjectClient,
        namespace: &str,
        deployment: &Deployment,
    ) -> Result<()> {
        for (kind, name) in referenced_objects(deployment) {
            if self.versions.contains_key(&(kind, name.clone())) {
                continue;
            }
            let stored = self
                .stores
                .as_ref()
                .and_then(|s| s.version(kind, namespace, &name));
            let rv = match stored {
                Some(rv) => Some(rv),
                None => read_version(client, kind, namespace, &name).await?,
            };
            if let Some(rv) = rv {
                self.versions.insert((kind, name), rv);
            }
        }
        Ok(())
    }

    /// Remembers the version of an object the pass itself just wrote.
    pub fn record(&mut self, kind: MountKind, meta: &ObjectMeta) {
        if let Some(name) = &meta.name {
            self.versions.insert(
                (kind, name.clone()),
                meta.resource_version.clone().unwrap_or_default(),
            );
        }
    }

    /// The version of `name`, if known.
    pub fn lookup(&self, kind: MountKind, name: &str) -> Option<String> {
        self.versions.get(&(kind, name.to_owned())).cloned()
    }
}

/// The resourceVersion of `namespace/name` read from the API server (`None`: no such object).
async fn read_version(
    client: &dyn ObjectClient,
    kind: MountKind,
    namespace: &str,
    name: &str,
) -> Result<Option<String>> {
    let context = || format!("reading {kind:?} {namespace}/{name}");
    let meta = match kind {
        MountKind::Secret => client
            .get_typed::<Secret>(Some(namespace), name)
            .await
            .map_err(core(context()))?
            .map(|s| s.metadata),
        MountKind::ConfigMap => client
            .get_typed::<ConfigMap>(Some(namespace), name)
            .await
            .map_err(core(context()))?
            .map(|c| c.metadata),
    };
    Ok(meta.map(|m| m.resource_version.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec, SecretVolumeSource, Volume};
    use kube::runtime::{reflector, watcher};

    use super::*;

    fn mounting(secret: &str) -> Deployment {
        Deployment {
            spec: Some(DeploymentSpec {
                template: PodTemplateSpec {
                    spec: Some(PodSpec {
                        volumes: Some(vec![Volume {
                            name: "v".into(),
                            secret: Some(SecretVolumeSource {
                                secret_name: Some(secret.into()),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn secret_meta(name: &str, rv: &str) -> PartialObjectMeta<Secret> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            _phantom: std::marker::PhantomData,
        }
    }

    fn stores_holding(secrets: Vec<PartialObjectMeta<Secret>>) -> MountStores {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        for s in secrets {
            writer.apply_watcher_event(&watcher::Event::InitApply(s));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let (config_maps, _) = reflector::store();
        MountStores {
            secrets: store,
            config_maps,
        }
    }

    /// kcp-sim, and a client that reaches it over HTTP (so its requests are counted).
    async fn sim() -> (kcp_sim::Server, kcp_core::KubeObjectClient) {
        let sim = kcp_sim::Server::start(kcp_sim::Config::default())
            .await
            .unwrap();
        let client = kcp_core::KubeObjectClient::new(sim.client("").unwrap());
        (sim, client)
    }

    #[tokio::test]
    async fn a_mounted_secrets_version_comes_from_the_store_without_a_request() {
        let (sim, client) = sim().await;
        let stores = stores_holding(vec![secret_meta("tls", "42")]);
        let mut mounted = Mounted::new(Some(&stores));
        sim.requests().reset();
        mounted
            .fill(&client, "default", &mounting("tls"))
            .await
            .unwrap();
        assert_eq!(
            mounted.lookup(MountKind::Secret, "tls").as_deref(),
            Some("42")
        );
        assert_eq!(sim.requests().total().count, 0);
    }

    #[tokio::test]
    async fn a_secret_the_store_does_not_hold_yet_is_read_from_the_server() {
        let (_sim, client) = sim().await;
        let secret: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "fresh", "namespace": "default"},
        }))
        .unwrap();
        let created = client.create(&secret).await.unwrap();
        let stores = stores_holding(vec![secret_meta("tls", "42")]);
        let mut mounted = Mounted::new(Some(&stores));
        mounted
            .fill(&client, "default", &mounting("fresh"))
            .await
            .unwrap();
        assert_eq!(
            mounted.lookup(MountKind::Secret, "fresh"),
            created.metadata.resource_version
        );
    }
}
