//! Objects as JSON: the reconcile functions work on [`serde_json::Value`]s (so that every field
//! the server returned survives a round trip), while [`ObjectClient`] speaks
//! [`DynamicObject`]s. These are the conversions, with kcp-sync's errors, and a GET as JSON.

use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectRef};
use serde_json::Value;

use crate::error::{Error, Result};

/// A `DynamicObject` as JSON.
pub fn to_json(obj: &DynamicObject) -> Result<Value> {
    serde_json::to_value(obj).map_err(|e| Error::Serialization {
        context: format!(
            "encoding {}",
            obj.metadata.name.as_deref().unwrap_or("an object")
        ),
        message: e.to_string(),
    })
}

/// JSON as a `DynamicObject`.
pub fn from_json(value: Value) -> Result<DynamicObject> {
    serde_json::from_value(value).map_err(|e| Error::Serialization {
        context: "decoding an object".into(),
        message: e.to_string(),
    })
}

/// GETs `target`, as JSON.
pub async fn get_json(client: &dyn ObjectClient, target: &ObjectRef) -> Result<Option<Value>> {
    let found = client
        .get(target)
        .await
        .map_err(|e| Error::core(format!("reading {target}"), e))?;
    found.as_ref().map(to_json).transpose()
}
