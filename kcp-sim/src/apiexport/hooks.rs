//! Where the export machinery joins the write path of [`crate::semantics`]: validation of new
//! objects, update rules, and what a stored or removed object sets off.

use serde_json::Value;

use super::{GROUP, binding, endpoints, exports, identity, schema, str_at};
use crate::resource::ResourceType;
use crate::schema::field::refuse_if_invalid;
use crate::status::ApiResult;
use crate::store::State;

fn kind(rt: &ResourceType) -> Option<&str> {
    (rt.group == GROUP).then_some(rt.kind.as_str())
}

/// Whether `rt` is APIBinding.
pub fn is_binding(rt: &ResourceType) -> bool {
    kind(rt) == Some("APIBinding")
}

/// Validates a new object of the export machinery (in its stored version). (An APIExport or
/// APIBinding written at v1alpha1 has the empty `status` of its conversion, see
/// [`super::conversion`].)
pub fn on_create(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    obj: &mut Value,
) -> ApiResult<()> {
    match kind(rt) {
        Some("APIResourceSchema") => schema::validate(obj),
        // kcp's admission finds the export, then the CRD's schema checks the binding, then
        // the admission's own checks of the claims.
        Some("APIBinding") => {
            binding::admit(state, cluster, obj)?;
            refuse_invalid("APIBinding", obj, None)?;
            super::binding_claims::admit(obj)
        }
        Some("APIExport") => refuse_invalid("APIExport", obj, None),
        _ => Ok(()),
    }
}

/// The `422` of kcp's CRD validation of an APIExport or APIBinding, if it finds anything.
fn refuse_invalid(kind: &str, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    refuse_if_invalid(
        GROUP,
        kind,
        obj,
        &super::spec_schemas::errors(kind, obj, old),
    )
}

/// The update rules: a schema's spec does not change; an export or a binding is checked as
/// when created, its CRD's rules against the stored object (a binding's reference and its
/// claims' selectors do not change).
pub fn check_update(rt: &ResourceType, old: &Value, new: &Value) -> ApiResult<()> {
    match kind(rt) {
        Some("APIResourceSchema") => schema::check_update(old, new),
        Some("APIBinding") => {
            refuse_invalid("APIBinding", new, Some(old))?;
            super::binding_claims::admit(new)
        }
        Some("APIExport") => refuse_invalid("APIExport", new, Some(old)),
        _ => Ok(()),
    }
}

/// What a stored write of the export machinery sets off.
pub fn after_write(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    old: Option<&Value>,
    new: &Value,
) -> ApiResult<()> {
    let name = str_at(new, "/metadata/name");
    match kind(rt) {
        Some("APIExport") => export_written(state, cluster, old, new),
        Some("APIBinding") => binding::reconcile(state, cluster, name),
        Some("APIExportEndpointSlice") => endpoints::refresh(state, cluster, name),
        Some("APIResourceSchema") if old.is_none() => schema_created(state, cluster, name),
        _ => Ok(()),
    }
}

/// An export got written: it gets its identity and endpoint slice, and its bindings follow a
/// change of its resources, claims or identity.
fn export_written(
    state: &mut State,
    cluster: &str,
    old: Option<&Value>,
    new: &Value,
) -> ApiResult<()> {
    if new.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    let name = str_at(new, "/metadata/name").to_string();
    let mut export = new.clone();
    identity::ensure(state, cluster, &mut export)?;
    if export != *new {
        crate::kcp::controller_write(
            state,
            cluster,
            &exports(),
            new,
            &mut export,
            &format!("{GROUP}/{}", super::conversion::STORAGE_VERSION),
        )?;
    }
    endpoints::ensure_default(state, cluster, &export)?;
    let changed = |pointer: &str| old.and_then(|o| o.pointer(pointer)) != export.pointer(pointer);
    if old.is_none() || changed("/spec") || changed("/status/identityHash") {
        binding::reconcile_bindings_of(state, cluster, &name)?;
    }
    if old.is_none() {
        endpoints::refresh_for_export(state, cluster, &name)?;
    }
    Ok(())
}

/// A new schema may be what bindings of an export in its cluster were waiting for.
fn schema_created(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let waiting: Vec<String> = super::objects_of(state, cluster, &exports())
        .iter()
        .filter(|e| {
            e.pointer("/spec/resources")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|r| str_at(r, "/schema") == name))
        })
        .map(|e| str_at(e, "/metadata/name").to_string())
        .collect();
    for export in waiting {
        binding::reconcile_bindings_of(state, cluster, &export)?;
    }
    Ok(())
}

/// What the removal of an object of the export machinery sets off.
pub fn removed(state: &mut State, cluster: &str, rt: &ResourceType, gone: &Value) -> ApiResult<()> {
    let name = str_at(gone, "/metadata/name");
    match kind(rt) {
        Some("APIExport") => {
            binding::reconcile_bindings_of(state, cluster, name)?;
            endpoints::refresh_for_export(state, cluster, name)
        }
        Some("APIBinding") => binding::removed(state, cluster, gone),
        _ => Ok(()),
    }
}

/// After logical clusters went away with their workspace: the endpoints of the exports their
/// bindings referred to follow.
pub fn clusters_removed(state: &mut State, bindings: &[Value]) -> ApiResult<()> {
    for b in bindings {
        let export_cluster = str_at(b, "/status/apiExportClusterName");
        if !export_cluster.is_empty() {
            let name = str_at(b, "/spec/reference/export/name");
            endpoints::refresh_for_export(state, export_cluster, name)?;
        }
    }
    Ok(())
}
