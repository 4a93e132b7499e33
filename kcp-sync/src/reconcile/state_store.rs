//! The last-known-state store on the service cluster: one Secret per primary (names and keys
//! in [`crate::state`]), holding the state of the primary and its related objects.
//!
//! Better than upstream: writes are merge patches of the one data key (two writers touching
//! different keys never conflict, and no full-Secret read-modify-write is lost), a create
//! that races with another falls back to the patch, and [`StateStore::delete`] removes the
//! Secret when its primary is released (upstream never deletes them).

use std::collections::BTreeMap;

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
        }
    }

    fn context(&self, what: &str) -> String {
        format!("{what} state Secret {}/{}", self.namespace, self.name)
    }

    /// The stored state under `key`; `None` when missing or unparseable.
    pub async fn get(&self, key: &str) -> Result<Option<Value>> {
        let secret: Option<Secret> = self
            .client
            .get_typed(Some(&self.namespace), &self.name)
            .await
            .map_err(|e| Error::core(self.context("reading"), e))?;
        Ok(secret
            .and_then(|s| s.data)
            .and_then(|d| d.get(key).cloned())
            .and_then(|v| parse_snapshot(&v.0)))
    }

    /// Stores `object` (metadata stripped, `subresources` removed) under `key`.
    pub async fn put(&self, key: &str, object: &Value, subresources: &[&str]) -> Result<()> {
        let value = ByteString(snapshot(object, subresources).into_bytes());
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(self.labels.clone()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(key.to_owned(), value.clone())])),
            ..Secret::default()
        };
        let exists = self
            .client
            .get(&object_ref_for::<Secret>(Some(&self.namespace), &self.name))
            .await
            .map_err(|e| Error::core(self.context("reading"), e))?
            .is_some();
        if !exists {
            let obj = to_dynamic(&secret).map_err(|e| Error::core(self.context("encoding"), e))?;
            match self.client.create(&obj).await {
                Ok(_) => return Ok(()),
                Err(e) if e.is_already_exists() => {}
                Err(e) => return Err(Error::core(self.context("creating"), e)),
            }
        }
        let patch = DataPatch {
            metadata: LabelsPatch {
                labels: &self.labels,
            },
            data: BTreeMap::from([(key, value)]),
        };
        let body = serde_json::to_value(&patch).map_err(|e| Error::Serialization {
            context: self.context("patching"),
            message: e.to_string(),
        })?;
        self.client
            .patch(
                &object_ref_for::<Secret>(Some(&self.namespace), &self.name),
                Subresource::Main,
                &ObjectPatch::Merge(body),
                &PatchOptions::default(),
            )
            .await
            .map_err(|e| Error::core(self.context("patching"), e))?;
        Ok(())
    }

    /// Deletes the Secret (its primary is gone); a missing Secret is fine.
    pub async fn delete(&self) -> Result<()> {
        self.client
            .delete(
                &object_ref_for::<Secret>(Some(&self.namespace), &self.name),
                &DeleteOptions::default(),
            )
            .await
            .map_err(|e| Error::core(self.context("deleting"), e))?;
        Ok(())
    }
}
