//! The status writer: one place that writes an object's status, only when it changed, with a
//! resourceVersion precondition, retrying on conflicts from a fresh read.
//!
//! Callers describe the change as a function of the current object (`mutate`), not as a
//! patch computed from a possibly stale copy: after a 409 the function runs again on the fresh
//! object, so a concurrent writer's fields (another condition type, counts) are never undone.

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{ObjectClient, Subresource};
use crate::error::{Error, Result};
use crate::typed::{from_dynamic, object_ref_for, to_dynamic};

/// How many conflicts a status write absorbs before giving up (the error is transient).
const CONFLICT_RETRIES: usize = 5;

/// What a status write did.
#[derive(Debug, Clone, PartialEq)]
pub enum StatusWrite<K> {
    /// The status was already as wanted; nothing was sent.
    Unchanged(K),
    /// The new status was written; the object as the server returned it.
    Written(K),
    /// The object does not exist.
    Gone,
}

/// Reads the object `name`, applies `mutate` to it, and writes its status if the status
/// changed (with the resourceVersion read as precondition); on a conflict, starts again from a
/// fresh read.
pub async fn write_status<K, F>(
    client: &dyn ObjectClient,
    namespace: Option<&str>,
    name: &str,
    mutate: F,
) -> Result<StatusWrite<K>>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync,
    F: Fn(&mut K) + Send + Sync,
{
    let target = object_ref_for::<K>(namespace, name);
    let mut last_conflict = None;
    for _ in 0..CONFLICT_RETRIES {
        let Some(current) = client.get(&target).await? else {
            return Ok(StatusWrite::Gone);
        };
        let before = current.data.get("status").cloned();
        let mut object: K = from_dynamic(current)?;
        mutate(&mut object);
        let mut desired = to_dynamic(&object)?;
        if desired.data.get("status") == before.as_ref() {
            return Ok(StatusWrite::Unchanged(object));
        }
        desired.metadata = object.meta().clone();
        match client.replace(&desired, Subresource::Status).await {
            Ok(written) => return Ok(StatusWrite::Written(from_dynamic(written)?)),
            Err(err) if err.is_conflict() => last_conflict = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_conflict
        .unwrap_or_else(|| Error::Config(format!("status of {target}: no attempt was made"))))
}
