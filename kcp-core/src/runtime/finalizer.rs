//! Finalizers over [`ObjectClient`]: add before creating anything that needs cleaning up,
//! remove once the cleanup is done. Typed objects and [`DynamicObject`]s alike: the functions
//! take any serializable [`Resource`] and hand back the same type.
//!
//! Both writes carry the object's resourceVersion, so they never undo a concurrent change of
//! the finalizer list (another controller's finalizer); a conflict is a transient error and the
//! reconcile runs again on the fresh object. Single-cluster controllers on `kube::runtime` may
//! use `kube::runtime::finalizer` instead; this is the same flow for code written against
//! `ObjectClient` (multi-cluster controllers, kcp-sim tests).

use kube::Resource;
use kube::api::DynamicObject;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{ObjectClient, Subresource};
use crate::error::{Error, Result};

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
pub fn finalizer_state<K: Resource>(object: &K, finalizer: &str) -> FinalizerState {
    let has = has_finalizer(object, finalizer);
    match (object.meta().deletion_timestamp.is_some(), has) {
        (false, false) => FinalizerState::Missing,
        (false, true) => FinalizerState::Present,
        (true, true) => FinalizerState::CleanupDue,
        (true, false) => FinalizerState::Released,
    }
}

/// Whether `object` carries `finalizer`.
pub fn has_finalizer<K: Resource>(object: &K, finalizer: &str) -> bool {
    object
        .meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// Adds `finalizer` to `object` (an update with its resourceVersion). Returns the updated
/// object, or `None` when it already carried the finalizer or is being deleted (the API server
/// refuses new finalizers then).
pub async fn add_finalizer<K: Finalized>(
    client: &dyn ObjectClient,
    object: &K,
    finalizer: &str,
) -> Result<Option<K>> {
    if has_finalizer(object, finalizer) || object.meta().deletion_timestamp.is_some() {
        return Ok(None);
    }
    let mut updated = as_dynamic(object)?;
    updated
        .metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_string());
    let written = client.replace(&updated, Subresource::Main).await?;
    as_typed(written).map(Some)
}

/// Removes `finalizer` from `object` (an update with its resourceVersion). Returns the updated
/// object (`None` when it did not carry the finalizer, or the object is gone because this was
/// its last finalizer).
pub async fn remove_finalizer<K: Finalized>(
    client: &dyn ObjectClient,
    object: &K,
    finalizer: &str,
) -> Result<Option<K>> {
    if !has_finalizer(object, finalizer) {
        return Ok(None);
    }
    let mut updated = as_dynamic(object)?;
    if let Some(list) = updated.metadata.finalizers.as_mut() {
        list.retain(|f| f != finalizer);
    }
    match client.replace(&updated, Subresource::Main).await {
        Ok(written) => as_typed(written).map(Some),
        Err(err) if err.is_not_found() => Ok(None),
        Err(err) => Err(err),
    }
}

/// The finalizer list `current` with `add` added and then `remove` removed, sorted and without
/// repeats (the form Go's `sets.List` writes).
pub fn changed_finalizers(current: &[String], add: &[&str], remove: &[&str]) -> Vec<String> {
    let mut set: std::collections::BTreeSet<String> = current.iter().cloned().collect();
    set.extend(add.iter().map(|f| (*f).to_owned()));
    for finalizer in remove {
        set.remove(*finalizer);
    }
    set.into_iter().collect()
}

/// Adds `add` to and removes `remove` from the finalizers `current` of the object at `target`
/// in one write: a merge patch of the whole list ([`changed_finalizers`]) carrying
/// `resource_version`, so a concurrent change of the list is refused as a conflict rather
/// than undone. For code holding an object's JSON rather than a typed object (a sync agent
/// swapping one finalizer for another in a single write). Returns the server's answer.
pub async fn patch_finalizers(
    client: &dyn ObjectClient,
    target: &crate::client::ObjectRef,
    (current, resource_version): (&[String], Option<&str>),
    add: &[&str],
    remove: &[&str],
) -> Result<DynamicObject> {
    let patch = serde_json::json!({"metadata": {
        "finalizers": changed_finalizers(current, add, remove),
        "resourceVersion": resource_version,
    }});
    let merge = crate::client::ObjectPatch::Merge(patch);
    let options = crate::client::PatchOptions::default();
    client
        .patch(target, Subresource::Main, &merge, &options)
        .await
}

/// What [`add_finalizer`] and [`remove_finalizer`] write: a typed kind or a [`DynamicObject`]
/// that serializes with its `apiVersion` and `kind` (k8s-openapi's and kube's derived kinds
/// do).
pub trait Finalized: Resource + Serialize + DeserializeOwned + Send + Sync {}

impl<K: Resource + Serialize + DeserializeOwned + Send + Sync> Finalized for K {}

fn describe<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

fn as_dynamic<K: Finalized>(object: &K) -> Result<DynamicObject> {
    let encoding = |source| Error::Serialization {
        context: format!("encoding {} for a finalizer write", describe(object)),
        source,
    };
    let value = serde_json::to_value(object).map_err(encoding)?;
    let dynamic: DynamicObject = serde_json::from_value(value).map_err(encoding)?;
    if dynamic.types.is_none() {
        return Err(Error::Config(format!(
            "{}: serialized without apiVersion and kind, so its finalizers cannot be written",
            describe(object)
        )));
    }
    Ok(dynamic)
}

fn as_typed<K: Finalized>(written: DynamicObject) -> Result<K> {
    let name = written.metadata.name.clone().unwrap_or_default();
    let decoding = |source| Error::Serialization {
        context: format!("decoding {name} after a finalizer write"),
        source,
    };
    let value = serde_json::to_value(written).map_err(decoding)?;
    serde_json::from_value(value).map_err(decoding)
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
    fn a_changed_list_is_sorted_with_additions_and_without_removals() {
        let current = ["z".to_string(), "old".to_string(), "a".to_string()];
        assert_eq!(
            changed_finalizers(&current, &["mine"], &["old"]),
            ["a", "mine", "z"]
        );
    }

    #[test]
    fn removing_wins_over_adding_the_same_finalizer() {
        let current = ["x".to_string()];
        assert_eq!(
            changed_finalizers(&current, &["x"], &["x"]),
            Vec::<String>::new()
        );
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
