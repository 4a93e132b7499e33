//! The finalizer write of the object sync, for kcp primaries ([`super::sync`]) and kcp
//! originals of related objects ([`super::related`]): a merge patch of the whole (sorted)
//! finalizer list carrying the object's resourceVersion, so a concurrent change of the list
//! is refused as a conflict rather than undone.

use std::collections::BTreeSet;

use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::metadata::finalizers;

/// The finalizer list of `object` with `add` added, then `remove` removed, sorted.
fn changed_finalizers(object: &Value, add: &[&str], remove: &[&str]) -> Vec<String> {
    let mut set: BTreeSet<String> = finalizers(object).into_iter().collect();
    set.extend(add.iter().map(|f| (*f).to_owned()));
    for finalizer in remove {
        set.remove(*finalizer);
    }
    set.into_iter().collect()
}

/// Adds the finalizers `add` to `object` (at `target`) and removes `remove`. Returns the
/// server's answer.
pub(crate) async fn patch_finalizers(
    client: &dyn ObjectClient,
    target: &ObjectRef,
    object: &Value,
    add: &[&str],
    remove: &[&str],
) -> Result<DynamicObject> {
    let patch = json!({"metadata": {
        "finalizers": changed_finalizers(object, add, remove),
        "resourceVersion": object.pointer("/metadata/resourceVersion"),
    }});
    client
        .patch(
            target,
            Subresource::Main,
            &ObjectPatch::Merge(patch),
            &PatchOptions::default(),
        )
        .await
        .map_err(|e| Error::core(format!("updating the finalizers of {target}"), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_with_additions_and_without_removals() {
        let object = json!({"metadata": {"finalizers": ["z", "old", "a"]}});
        assert_eq!(
            changed_finalizers(&object, &["mine"], &["old"]),
            ["a", "mine", "z"]
        );
    }

    #[test]
    fn removing_wins_over_adding_the_same_finalizer() {
        let object = json!({"metadata": {"finalizers": ["x"]}});
        assert_eq!(
            changed_finalizers(&object, &["x"], &["x"]),
            Vec::<String>::new()
        );
    }
}
