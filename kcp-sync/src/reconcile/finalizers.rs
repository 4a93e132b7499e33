//! The finalizer write of the object sync, for kcp primaries ([`super::sync`]) and kcp
//! originals of related objects ([`super::related`]): kcp-core's
//! [`patch_finalizers`](kcp_core::runtime::finalizer::patch_finalizers) (one merge patch of the
//! whole sorted list carrying the object's resourceVersion) over the object's JSON.

use kcp_core::kube::api::DynamicObject;
use kcp_core::runtime::finalizer;
use kcp_core::{ObjectClient, ObjectRef};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metadata::finalizers;

/// Adds the finalizers `add` to `object` (at `target`) and removes `remove`. Returns the
/// server's answer.
pub(crate) async fn patch_finalizers(
    client: &dyn ObjectClient,
    target: &ObjectRef,
    object: &Value,
    add: &[&str],
    remove: &[&str],
) -> Result<DynamicObject> {
    let current = finalizers(object);
    let resource_version = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    finalizer::patch_finalizers(client, target, (&current, resource_version), add, remove)
        .await
        .map_err(|e| Error::core(format!("updating the finalizers of {target}"), e))
}
