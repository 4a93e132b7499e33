//! kcp's API export machinery (`apis.kcp.io`): APIResourceSchemas, APIExports,
//! APIExportEndpointSlices, APIBindings that serve an export's resources in a consumer workspace
//! (exports and bindings are each served as v1alpha1 and v1alpha2 over one stored v1alpha2
//! object), and the apiexport virtual workspace at
//! `/services/apiexport/<export cluster>/<export name>/clusters/<consumer or *>`.
//!
//! What kcp's controllers do asynchronously happens here inside the write that sets it off (a
//! binding is Bound, an export has its identity, a slice lists its endpoints on the very next
//! request), as for workspaces in [`crate::kcp`].
//!
//! Visibility through the virtual workspace is decided per object: every object carries the keys
//! of the virtual workspaces that see it ([`crate::store::Audience`]), computed from the bindings
//! of its cluster ([`audience`]). kcp labels claimed objects for the same purpose.

pub mod audience;
pub mod binding;
pub mod binding_claims;
pub mod binding_conversion;
pub mod claim_labels;
pub mod conditions;
pub mod conversion;
pub mod endpoints;
pub mod export;
pub mod go_json;
pub mod hooks;
pub mod identity;
pub mod labels;
pub mod schema;
pub mod spec_schemas;
pub mod view;
pub mod view_cache;

use serde_json::Value;

use crate::resource::GroupResource;

/// The API group of the export machinery.
pub const GROUP: &str = "apis.kcp.io";

/// `apiexports.apis.kcp.io`.
pub fn exports() -> GroupResource {
    GroupResource::new(GROUP, "apiexports")
}

/// `apibindings.apis.kcp.io`.
pub fn bindings() -> GroupResource {
    GroupResource::new(GROUP, "apibindings")
}

/// `apiresourceschemas.apis.kcp.io`.
pub fn schemas() -> GroupResource {
    GroupResource::new(GROUP, "apiresourceschemas")
}

/// `apiexportendpointslices.apis.kcp.io`.
pub fn slices() -> GroupResource {
    GroupResource::new(GROUP, "apiexportendpointslices")
}

/// The key of an APIExport's virtual workspace: `<logical cluster>/<export name>`, as kcp keys
/// its API domains.
pub fn view_key(cluster: &str, export: &str) -> String {
    format!("{cluster}/{export}")
}

/// Whether an APIBinding is bound (or binding) to the APIExport `name` in logical cluster
/// `cluster`, judged from the binding alone, as kcp's virtual workspace judges it.
pub fn binds_export(binding: &Value, cluster: &str, name: &str) -> bool {
    let reference = str_at(binding, "/spec/reference/export/name");
    if reference != name {
        return false;
    }
    match str_at(binding, "/status/apiExportClusterName") {
        "" => str_at(binding, "/spec/reference/export/path") == cluster,
        bound => bound == cluster,
    }
}

/// The string at a JSON pointer, or `""`.
pub(crate) fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The objects of a resource in a cluster, decoded.
pub(crate) fn objects_of(
    state: &crate::store::State,
    cluster: &str,
    gr: &GroupResource,
) -> Vec<Value> {
    state
        .clusters
        .get(cluster)
        .and_then(|c| c.objects.get(gr))
        .map(|m| m.values().filter_map(|o| o.value().ok()).collect())
        .unwrap_or_default()
}
