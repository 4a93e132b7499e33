//! Reconcile functions over [`ObjectClient`]s, one per controller of upstream §3 and §4:
//! [`schema`] (PublishedResource + CRD -> APIResourceSchema in kcp), [`export`] (schemas and
//! claims into the APIExport) and [`sync`] (one kcp object and its local copy).
//!
//! They are plain async functions of their inputs: the controllers decide when to call them,
//! and tests call them directly against kcp-sim.

pub mod caches;
pub mod discovery;
pub mod export;
pub mod kcp_events;
pub mod local_index;
pub mod object_cache;
pub mod related;
pub mod schema;
pub mod state_store;
pub mod sync;

use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ObjectClient, ObjectRef};
use serde_json::Value;

use crate::error::{Error, Result};

/// The GVK of CustomResourceDefinitions.
pub fn crd_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
}

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
