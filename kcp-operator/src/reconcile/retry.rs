//! In-place retries of idempotent reads: a pass over an installation makes dozens of reads,
//! and one transient failure (a 5xx, a timeout) should not throw the whole pass into the
//! error backoff. Writes are not retried here: [`super::ensure::ensure`] starts again from a
//! fresh read when a write fails transiently.

use kcp_core::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectList, ObjectPatch, ObjectRef, PatchOptions,
    ResourceInfo, Subresource,
};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ObjectClient, Result};

/// How often a transient read failure is retried at once.
pub const READ_ATTEMPTS: usize = 4;

/// An [`ObjectClient`] retrying transient failures of `resolve`, `get` and `list`.
pub struct RetryingReads<'a>(pub &'a dyn ObjectClient);

async fn attempt<T, F, Fut>(mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut last = None;
    for _ in 0..READ_ATTEMPTS {
        match call().await {
            Err(err) if err.is_transient() => last = Some(err),
            other => return other,
        }
    }
    match last {
        Some(err) => Err(err),
        None => call().await,
    }
}

#[async_trait::async_trait]
impl ObjectClient for RetryingReads<'_> {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        attempt(|| self.0.resolve(gvk)).await
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        attempt(|| self.0.get(target)).await
    }

    async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList> {
        attempt(|| self.0.list(gvk, namespace, options)).await
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        self.0.create(obj).await
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        self.0.replace(obj, subresource).await
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        self.0.patch(target, subresource, patch, options).await
    }

    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome> {
        self.0.delete(target, options).await
    }
}
