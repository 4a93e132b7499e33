//! The Secrets the built-in issuer wrote itself, so that the watch event of its own write does
//! not wake the Certificate again.
//!
//! Issuing writes the Certificate's Secret, and that Secret's event names the Certificate (by
//! its `cert-manager.io/certificate-name` annotation). Without this, every issuance is
//! followed by a pass that reads the Secret back only to find it up to date: a third of the
//! issuer's passes at scale. An event carrying any other resourceVersion (another writer's
//! edit, a deletion, which the API server gives a new resourceVersion) wakes the Certificate
//! as before.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectList, ObjectPatch, ObjectRef, PatchOptions,
    ResourceInfo, Subresource,
};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ObjectClient, Result};
use kube::api::ObjectMeta;

/// (namespace, name) of a Secret.
type Key = (String, String);

/// The resourceVersion of each Secret as this process last wrote it, until its event is seen.
#[derive(Debug, Default)]
pub struct OwnWrites {
    written: Mutex<HashMap<Key, String>>,
}

impl OwnWrites {
    fn written(&self) -> std::sync::MutexGuard<'_, HashMap<Key, String>> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wrote(&self, meta: &ObjectMeta) {
        let (Some(name), Some(rv)) = (&meta.name, &meta.resource_version) else {
            return;
        };
        let ns = meta.namespace.clone().unwrap_or_default();
        self.written().insert((ns, name.clone()), rv.clone());
    }

    /// Whether the event of the Secret `meta` is the echo of this process's last write of it
    /// (which is then forgotten). Any other version leaves the record alone: an older event
    /// still in flight is not the echo, and the echo may still come.
    pub fn is_echo(&self, meta: &ObjectMeta) -> bool {
        let (Some(name), Some(rv)) = (&meta.name, &meta.resource_version) else {
            return false;
        };
        let key = (meta.namespace.clone().unwrap_or_default(), name.clone());
        let mut written = self.written();
        if written.get(&key) == Some(rv) {
            written.remove(&key);
            return true;
        }
        false
    }
}

/// An [`ObjectClient`] recording in `own` every Secret it writes (create, replace, patch).
pub struct RecordingSecretWrites<'a> {
    /// Where every request goes.
    pub inner: &'a dyn ObjectClient,
    /// Where written Secrets are recorded.
    pub own: &'a OwnWrites,
}

impl RecordingSecretWrites<'_> {
    fn record(&self, secret: bool, result: Result<DynamicObject>) -> Result<DynamicObject> {
        if secret && let Ok(written) = &result {
            self.own.wrote(&written.metadata);
        }
        result
    }
}

fn is_secret(object: &DynamicObject) -> bool {
    object
        .types
        .as_ref()
        .is_some_and(|t| t.kind == Secret::KIND && t.api_version == Secret::API_VERSION)
}

#[async_trait::async_trait]
impl ObjectClient for RecordingSecretWrites<'_> {
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
        self.inner.list(gvk, namespace, options).await
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        self.record(is_secret(obj), self.inner.create(obj).await)
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        let secret = is_secret(obj) && subresource == Subresource::Main;
        self.record(secret, self.inner.replace(obj, subresource).await)
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        let secret = target.gvk.group.is_empty() && target.gvk.kind == Secret::KIND;
        self.record(
            secret,
            self.inner.patch(target, subresource, patch, options).await,
        )
    }

    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome> {
        self.inner.delete(target, options).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn meta(name: &str, rv: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("kcp".into()),
            resource_version: Some(rv.into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn the_event_of_our_own_write_is_an_echo_once() {
        let own = OwnWrites::default();
        own.wrote(&meta("tls", "7"));
        assert!(own.is_echo(&meta("tls", "7")));
        assert!(!own.is_echo(&meta("tls", "7")));
    }

    #[test]
    fn another_version_is_no_echo_and_keeps_waiting_for_ours() {
        let own = OwnWrites::default();
        own.wrote(&meta("tls", "7"));
        assert!(!own.is_echo(&meta("tls", "6")));
        assert!(!own.is_echo(&meta("other", "7")));
        assert!(own.is_echo(&meta("tls", "7")));
    }

    #[test]
    fn a_later_write_replaces_the_version_waited_for() {
        let own = OwnWrites::default();
        own.wrote(&meta("tls", "7"));
        own.wrote(&meta("tls", "9"));
        assert!(!own.is_echo(&meta("tls", "7")));
        assert!(own.is_echo(&meta("tls", "9")));
    }
}
