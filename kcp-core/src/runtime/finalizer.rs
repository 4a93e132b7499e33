//! Finalizers over [`ObjectClient`]: add before creating anything that needs cleaning up,
//! remove once the cleanup is done.
//!
//! Both writes carry the object's resourceVersion, so they never undo a concurrent change of
//! the finalizer list (another controller's finalizer); a conflict is a transient error and the
//! reconcile runs again on the fresh object. Single-cluster controllers on `kube::runtime` may
//! use `kube::runtime::finalizer` instead; this is the same flow for code written against
//! `ObjectClient` (multi-cluster controllers, kcp-sim tests).

use kube::api::DynamicObject;

use crate::client::{ObjectClient, Subresource};
use crate::error::Result;

/// Where an object stands with respect to a finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalizerState {
    /// Live, without the finalizer: add it before doing anything that needs cleaning up.
    Missing,
    /// Live, with the finalizer: reconcile normally.
    Present,
    /// Being deleted with the finalizer: clean up, then remove it.
    CleanupDue,
    /// Being deleted without the finalizer: nothing of ours to do.
    Released,
}

/// Where `object` stands with respect to `finalizer`.
pub fn finalizer_state(object: &DynamicObject, finalizer: &str) -> FinalizerState {
    let has = has_finalizer(object, finalizer);
    match (object.metadata.deletion_timestamp.is_some(), has) {
        (false, false) => FinalizerState::Missing,
        (false, true) => FinalizerState::Present,
        (true, true) => FinalizerState::CleanupDue,
        (true, false) => FinalizerState::Released,
    }
}

/// Whether `object` carries `finalizer`.
pub fn has_finalizer(object: &DynamicObject, finalizer: &str) -> bool {
    object
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// Adds `finalizer` to `object` (an update with its resourceVersion). Returns the updated
/// object, or `None` when it already carried the finalizer or is being deleted (the API server
/// refuses new finalizers then).
pub async fn add_finalizer(
    client: &dyn ObjectClient,
    object: &DynamicObject,
    finalizer: &str,
) -> Result<Option<DynamicObject>> {
    if has_finalizer(object, finalizer) || object.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let mut updated = object.clone();
    updated
        .metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_string());
    client.replace(&updated, Subresource::Main).await.map(Some)
}

/// Removes `finalizer` from `object` (an update with its resourceVersion). Returns the updated
/// object (`None` when it did not carry the finalizer, or the object is gone because this was
/// its last finalizer).
pub async fn remove_finalizer(
    client: &dyn ObjectClient,
    object: &DynamicObject,
    finalizer: &str,
) -> Result<Option<DynamicObject>> {
    if !has_finalizer(object, finalizer) {
        return Ok(None);
    }
    let mut updated = object.clone();
    if let Some(list) = updated.metadata.finalizers.as_mut() {
        list.retain(|f| f != finalizer);
    }
    match client.replace(&updated, Subresource::Main).await {
        Ok(obj) => Ok(Some(obj)),
        Err(err) if err.is_not_found() => Ok(None),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(finalizers: &[&str], deleting: bool) -> DynamicObject {
        let mut value = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "d",
                "finalizers": finalizers},
        });
        if deleting {
            value["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_live_object_without_the_finalizer_needs_it() {
        assert_eq!(
            finalizer_state(&object(&["other"], false), "mine"),
            FinalizerState::Missing
        );
    }

    #[test]
    fn a_live_object_with_the_finalizer_reconciles_normally() {
        assert_eq!(
            finalizer_state(&object(&["mine"], false), "mine"),
            FinalizerState::Present
        );
    }

    #[test]
    fn a_deleted_object_with_the_finalizer_is_due_for_cleanup() {
        assert_eq!(
            finalizer_state(&object(&["mine"], true), "mine"),
            FinalizerState::CleanupDue
        );
    }

    #[test]
    fn a_deleted_object_without_the_finalizer_is_released() {
        assert_eq!(
            finalizer_state(&object(&["other"], true), "mine"),
            FinalizerState::Released
        );
    }
}
