//! What an update of a Workspace may change, as kcp's workspace admission judges it (a `403`:
//! only system privileged users may move a workspace; kcp-sim's clients never are, as
//! kcp-admin is not), after the `x-kubernetes-validations` of kcp's Workspace CRD, which its
//! recorded schema checks ([`super::recorded_schemas`]). Conformance case
//! kcp-workspaces/a-workspace-type-cannot-change.

use serde_json::Value;

use crate::status::ApiResult;

/// kcp's workspace admission of an update by a client (not a mount): where the workspace
/// lives is the system's to change.
pub fn admit(old: &Value, new: &Value, name: &str) -> ApiResult<()> {
    if old.pointer("/spec/mount").is_some() {
        return Ok(());
    }
    let text = |v: &Value, pointer: &str| {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let refuse = |why: &str| super::admission_forbidden("tenancy.kcp.io", "workspaces", name, why);
    let (old_cluster, cluster) = (text(old, "/spec/cluster"), text(new, "/spec/cluster"));
    if !old_cluster.is_empty() && cluster.is_empty() {
        return Err(refuse("spec.cluster cannot be unset"));
    }
    if old_cluster != cluster {
        return Err(refuse(
            "spec.cluster can only be changed by system privileged users",
        ));
    }
    if text(old, "/spec/URL") != text(new, "/spec/URL") {
        return Err(refuse(
            "spec.URL can only be changed by system privileged users",
        ));
    }
    Ok(())
}
