//! What an update of a Workspace may change, as kcp judges it: first the
//! `x-kubernetes-validations` of kcp's Workspace CRD (a `422` naming the field, with the
//! schema type as the value, as kube's CEL validator words it), then kcp's workspace admission
//! (a `403`: only system privileged users may move a workspace; kcp-sim's clients never are,
//! as kcp-admin is not). Conformance case kcp-workspaces/a-workspace-type-cannot-change.

use serde_json::Value;

use crate::schema::field::FieldError;
use crate::status::ApiResult;

/// The CRD's transition rules of a Workspace update (empty when they all hold).
pub fn validation_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let (Some(old_spec), Some(spec)) = (old.get("spec"), new.get("spec")) else {
        return Vec::new();
    };
    let rule = |field: &str, schema_type: &str, message: &str| {
        FieldError::invalid(field, Value::from(schema_type), message)
    };
    let mut errors = Vec::new();
    for (key, message) in [
        ("URL", "URL cannot be unset"),
        ("cluster", "cluster cannot be unset"),
    ] {
        if old_spec.get(key).is_some() && spec.get(key).is_none() {
            errors.push(rule("spec", "object", message));
        }
    }
    if changed(old_spec.get("cluster"), spec.get("cluster")) {
        errors.push(rule("spec.cluster", "string", "cluster is immutable"));
    }
    if changed(old_spec.get("mount"), spec.get("mount")) {
        errors.push(rule("spec.mount", "object", "mount is immutable"));
    }
    if let (Some(old_type), Some(new_type)) = (old_spec.get("type"), spec.get("type")) {
        if old_type.get("name") != new_type.get("name") {
            errors.push(rule("spec.type", "object", "name is immutable"));
        }
        let (old_path, new_path) = (old_type.get("path"), new_type.get("path"));
        if old_path.is_some() != new_path.is_some() {
            errors.push(rule("spec.type", "object", "path is immutable"));
        }
        if changed(old_path, new_path) {
            errors.push(rule("spec.type", "object", "path is immutable"));
        }
    }
    errors
}

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

/// A transition rule's `self == oldSelf`, which holds when either side is absent.
fn changed(old: Option<&Value>, new: Option<&Value>) -> bool {
    matches!((old, new), (Some(a), Some(b)) if a != b)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_type_path_set_where_there_was_none_breaks_the_rule_once() {
        let old = json!({"spec": {"type": {"name": "a"}}});
        let new = json!({"spec": {"type": {"name": "a", "path": "root"}}});
        let errors = validation_errors(&old, &new);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.type");
    }

    #[test]
    fn setting_a_cluster_for_the_first_time_is_no_transition() {
        let old = json!({"spec": {"type": {"name": "a"}}});
        let new = json!({"spec": {"type": {"name": "a"}, "cluster": "c"}});
        assert!(validation_errors(&old, &new).is_empty());
    }
}
