//! Objects read or written at a version other than the one they are stored at: kcp's
//! APIExports and APIBindings (v1alpha1 beside the stored v1alpha2, [`crate::apiexport::conversion`])
//! HorizontalPodAutoscalers (autoscaling/v1 beside the stored v2, [`crate::autoscaling`]) and
//! `events.k8s.io` Events (stored as core Events, [`crate::event_apis`]).
//! Custom resources of several versions are stored once and read under any (strategy `None`).

use serde_json::Value;

use crate::apiexport::conversion as apis;
use crate::event_apis;
use crate::managed_fields::{self, FieldManager};
use crate::resource::ResourceType;
use crate::status::ApiResult;

fn is_autoscaler(rt: &ResourceType, version: &str) -> bool {
    crate::autoscaling::converts(&rt.group, &rt.kind, version)
}

/// Whether objects of `rt` read or written at `version` need converting.
pub fn converts(rt: &ResourceType, version: &str) -> bool {
    is_autoscaler(rt, version) || event_apis::converts(rt) || apis::converts(rt, version)
}

/// Converts an object written at `version` to the stored version (with the defaults the
/// stored version's decoding gives it).
pub fn to_storage(rt: &ResourceType, version: &str, obj: &mut Value) -> ApiResult<()> {
    if is_autoscaler(rt, version) {
        crate::autoscaling::to_v2(obj);
        return Ok(());
    }
    if event_apis::converts(rt) {
        event_apis::to_core(obj);
        return Ok(());
    }
    apis::to_storage(rt, version, obj)
}

/// Converts a stored object to `version`.
pub fn to_version(rt: &ResourceType, version: &str, obj: &mut Value) {
    if is_autoscaler(rt, version) {
        crate::autoscaling::to_v1(obj);
        return;
    }
    if event_apis::converts(rt) {
        event_apis::to_events(obj);
        return;
    }
    apis::to_version(rt, version, obj);
}

/// Records the creator's managed fields of a new object, in the shape it was `written` in
/// when that was another version than the stored one.
pub fn record_created(
    rt: &ResourceType,
    written: Option<Value>,
    obj: &mut Value,
    who: &FieldManager,
) {
    match written {
        Some(mut written) if rt.group == "autoscaling" || event_apis::converts(rt) => {
            if let Some(root) = written.as_object_mut() {
                root.remove("status");
            }
            managed_fields::record_update(None, &mut written, who);
            if let (Some(entries), Some(meta)) = (
                written.pointer("/metadata/managedFields").cloned(),
                obj.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                meta.insert("managedFields".into(), entries);
            }
        }
        written => apis::record_created(written, obj, who),
    }
}
