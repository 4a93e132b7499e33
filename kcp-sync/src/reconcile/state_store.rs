//! The last-known-state store on the service cluster: one Secret per primary (names and keys
//! in [`crate::state`]), holding the state of the primary and its related objects.
//!
//! Better than upstream: writes are merge patches of the one data key (two writers touching
//! different keys never conflict, and no full-Secret read-modify-write is lost), a create
//! that races with another falls back to the patch, and [`StateStore::delete`] removes the
//! Secret when its primary is released (upstream never deletes them). Under upstream's Helm
//! chart, which grants neither `patch` nor `delete` on Secrets, a refused patch becomes
//! upstream's read-and-update and a refused delete keeps the Secret, so swapping only the image
//! works.
//!
//! With a [`StateCache`] (one per sync controller), the store remembers what it read and
//! wrote: a read of a known Secret costs no request, an unchanged state is not written again,
//! and a new Secret is created without reading first. The agent is the Secrets' only writer
//! (leader election keeps it one process), so what it wrote is what the server holds; a
//! restarted controller starts with an empty cache and reads the Secrets again.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::typed::{object_ref_for, to_dynamic};
use kcp_core::{
    DeleteOptions, ObjectClient, ObjectClientExt as _, ObjectPatch, PatchOptions, Subresource,
};
use kube::api::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::state::{parse_snapshot, snapshot};

/// The state Secret of one primary object.
pub struct StateStore<'a> {
    client: &'a dyn ObjectClient,
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    cache: Option<&'a StateCache>,
}

/// The data of one state Secret, by key.
type SecretData = BTreeMap<String, Vec<u8>>;

/// The data of state Secrets as last read or written, by Secret name: `None` for a Secret
/// known not to exist.
#[derive(Debug, Default)]
pub struct StateCache {
    secrets: Mutex<HashMap<String, Option<SecretData>>>,
}

impl StateCache {
    /// What is known of Secret `name`: `None` when unknown, `Some(None)` when known absent.
    fn lookup(&self, name: &str) -> Option<Option<SecretData>> {
        self.secrets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Whether key `key` of Secret `name` is known to hold `value`.
    fn holds(&self, name: &str, key: &str, value: &[u8]) -> bool {
        let secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets
            .get(name)
            .and_then(Option::as_ref)
            .and_then(|d| d.get(key))
            .is_some_and(|v| v.as_slice() == value)
    }

    /// Whether Secret `name` is known to exist.
    fn exists(&self, name: &str) -> bool {
        let secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(secrets.get(name), Some(Some(_)))
    }

    fn set(&self, name: &str, data: Option<SecretData>) {
        let mut secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets.insert(name.to_owned(), data);
    }

    /// Records `key` = `value` in Secret `name` (known to exist now).
    fn set_key(&self, name: &str, key: &str, value: Vec<u8>) {
        let mut secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets
            .entry(name.to_owned())
            .or_insert_with(|| Some(BTreeMap::new()))
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_owned(), value);
    }

    fn forget(&self, name: &str) {
        let mut secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets.remove(name);
    }

    /// How many Secrets are known.
    pub fn len(&self) -> usize {
        self.secrets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no Secret is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Serialize)]
struct DataPatch<'a> {
    metadata: LabelsPatch<'a>,
    data: BTreeMap<&'a str, ByteString>,
}

#[derive(Serialize)]
struct LabelsPatch<'a> {
    labels: &'a BTreeMap<String, String>,
}

impl<'a> StateStore<'a> {
    /// The store of the Secret `name` in `namespace`, labelled `labels`.
    pub fn new(
        client: &'a dyn ObjectClient,
        namespace: &str,
        name: String,
        labels: BTreeMap<String, String>,
    ) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            name,
            labels,
            cache: None,
        }
    }

    /// The same store, remembering reads and writes in `cache`.
    pub fn cached(mut self, cache: Option<&'a StateCache>) -> Self {
        self.cache = cache;
        self
    }

    fn context(&self, what: &str) -> String {
        format!("{what} state Secret {}/{}", self.namespace, self.name)
    }

    /// The stored state under `key`; `None` when missing or unparseable.
    pub async fn get(&self, key: &str) -> Result<Option<Value>> {
        if let Some(known) = self.cache.and_then(|c| c.lookup(&self.name)) {
            return Ok(known.and_then(|d| d.get(key).and_then(|v| parse_snapshot(v))));
        }
        let secret: Option<Secret> = self
            .client
            .get_typed(Some(&self.namespace), &self.name)
            .await
            .map_err(|e| Error::core(self.context("reading"), e))?;
        let data = secret.map(|s| {
            s.data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect::<BTreeMap<_, _>>()
        });
        let value = data
            .as_ref()
            .and_then(|d| d.get(key))
            .and_then(|v| parse_snapshot(v));
        if let Some(cache) = self.cache {
            cache.set(&self.name, data);
        }
        Ok(value)
    }

    /// Stores `object` (metadata stripped, `subresources` removed) under `key`; nothing is
    /// sent when the cache knows the Secret already holds it.
    pub async fn put(&self, key: &str, object: &Value, subresources: &[&str]) -> Result<()> {
        let bytes = snapshot(object, subresources).into_bytes();
        if self.cache.is_some_and(|c| c.holds(&self.name, key, &bytes)) {
            return Ok(());
        }
        let known = self.cache.is_some_and(|c| c.exists(&self.name));
        let created = !known && self.create(key, &bytes).await?;
        if !created && !self.patch(key, &bytes).await? {
            // Deleted behind our back: create it again.
            self.create(key, &bytes).await?;
        }
        if let Some(cache) = self.cache {
            if created || known {
                cache.set_key(&self.name, key, bytes);
            } else {
                // It existed with keys we have not read.
                cache.forget(&self.name);
            }
        }
        Ok(())
    }

    /// Creates the Secret holding `key`; `false` when it exists already.
    async fn create(&self, key: &str, value: &[u8]) -> Result<bool> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(self.labels.clone()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                key.to_owned(),
                ByteString(value.to_vec()),
            )])),
            ..Secret::default()
        };
        let obj = to_dynamic(&secret).map_err(|e| Error::core(self.context("encoding"), e))?;
        match self.client.create(&obj).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_already_exists() => Ok(false),
            Err(e) => Err(Error::core(self.context("creating"), e)),
        }
    }

    /// Merge-patches `key` (and the labels) into the Secret; `false` when it does not exist.
    async fn patch(&self, key: &str, value: &[u8]) -> Result<bool> {
        let patch = DataPatch {
            metadata: LabelsPatch {
                labels: &self.labels,
            },
            data: BTreeMap::from([(key, ByteString(value.to_vec()))]),
        };
        let body = serde_json::to_value(&patch).map_err(|e| Error::Serialization {
            context: self.context("patching"),
            message: e.to_string(),
        })?;
        let result = self
            .client
            .patch(
                &object_ref_for::<Secret>(Some(&self.namespace), &self.name),
                Subresource::Main,
                &ObjectPatch::Merge(body),
                &PatchOptions::default(),
            )
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            // Upstream's Helm chart grants get/list/watch/create/update on Secrets, not patch:
            // under it, write the way upstream writes (read, set the key, update).
            Err(e) if e.is_status(403) => self.update(key, value).await,
            Err(e) => Err(Error::core(self.context("patching"), e)),
        }
    }

    /// Reads the Secret, sets `key` (and the labels) and updates it under its
    /// resourceVersion (a conflict is a transient error: the step runs again); `false` when
    /// the Secret does not exist.
    async fn update(&self, key: &str, value: &[u8]) -> Result<bool> {
        let current: Option<Secret> = self
            .client
            .get_typed(Some(&self.namespace), &self.name)
            .await
            .map_err(|e| Error::core(self.context("reading"), e))?;
        let Some(mut secret) = current else {
            return Ok(false);
        };
        secret
            .data
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_owned(), ByteString(value.to_vec()));
        let labels = secret.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.extend(self.labels.clone());
        match self.client.replace_typed(&secret).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(Error::core(self.context("updating"), e)),
        }
    }

    /// Deletes the Secret (its primary is gone); a missing Secret is fine.
    pub async fn delete(&self) -> Result<()> {
        if let Some(cache) = self.cache {
            cache.forget(&self.name);
        }
        let deleted = self
            .client
            .delete(
                &object_ref_for::<Secret>(Some(&self.namespace), &self.name),
                &DeleteOptions::default(),
            )
            .await;
        match deleted {
            Ok(_) => {}
            // Under upstream's Helm chart (no delete on Secrets) the Secret stays, as upstream
            // leaves every state Secret.
            Err(e) if e.is_status(403) => {
                tracing::debug!(secret = %self.name, "not allowed to delete the state Secret; kept");
            }
            Err(e) => return Err(Error::core(self.context("deleting"), e)),
        }
        if let Some(cache) = self.cache {
            cache.set(&self.name, None);
        }
        Ok(())
    }
}
