//! The RBAC objects kube-apiserver's bootstrap writes when it starts (its `rbac/bootstrap-roles`
//! post-start hook): 68 ClusterRoles, 49 ClusterRoleBindings, and the Roles and RoleBindings of
//! `kube-system` and `kube-public`, labelled `kubernetes.io/bootstrapping: rbac-defaults`.
//! kcp-sim's Kubernetes flavor starts with them, so `kubectl get clusterroles`, the
//! `cluster-admin` binding of `system:masters` and the roles every authenticated user is bound
//! to are there as on a real server.
//!
//! The objects are `data/kube-bootstrap-rbac.json`, recorded from kube-apiserver v1.34.2 (the
//! test bed's pin) by `data/record-bootstrap.sh`, which says how to record them again.
//! As on the test bed, where no aggregation controller runs, the aggregated roles (`admin`,
//! `edit`, `view`, ...) hold no rules.

use std::sync::LazyLock;

use serde_json::Value;

use crate::resource::GroupResource;
use crate::semantics::{self, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// The recorded objects, parsed once.
static OBJECTS: LazyLock<Result<Vec<Value>, String>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../data/kube-bootstrap-rbac.json"))
        .map_err(|e| format!("kcp-sim's recorded bootstrap RBAC does not parse: {e}"))
});

/// The field manager the bootstrap writes as.
const MANAGER: &str = "kube-apiserver";

/// Creates the bootstrap RBAC objects in `cluster` (their namespaces must exist).
pub fn seed(state: &mut State, cluster: &str) -> ApiResult<()> {
    let objects = OBJECTS
        .as_ref()
        .map_err(|e| ApiError::internal(e.clone()))?;
    let opts = WriteOptions {
        default_manager: MANAGER.into(),
        ..WriteOptions::default()
    };
    for object in objects {
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let plural = match kind {
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            "Role" => "roles",
            _ => "rolebindings",
        };
        let gr = GroupResource::new("rbac.authorization.k8s.io", plural);
        let rt = state.required_type(cluster, &gr)?;
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        semantics::create(state, cluster, &rt, "v1", namespace, object.clone(), &opts)?;
    }
    Ok(())
}

/// The rules the bootstrap ClusterRoleBindings that `binds` picks give, in binding-name order:
/// kube's recorded ones and, for kcp (`with_kcp`), kcp's `system:kcp:admin:cluster-admin`.
/// kcp evaluates this policy, kept shard-wide, in every workspace, where the objects
/// themselves are not stored.
pub fn cluster_rules(with_kcp: bool, binds: impl Fn(&Value) -> bool) -> Vec<Value> {
    let Ok(objects) = OBJECTS.as_ref() else {
        return Vec::new();
    };
    let kind = |o: &Value| {
        o.get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let name = |o: &Value| {
        o.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let kcp_admin = serde_json::json!({"kind": "ClusterRoleBinding",
        "metadata": {"name": "system:kcp:admin:cluster-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
            "name": "system:kcp:admin"}]});
    let mut bindings: Vec<&Value> = objects
        .iter()
        .filter(|o| kind(o) == "ClusterRoleBinding")
        .collect();
    if with_kcp {
        bindings.push(&kcp_admin);
    }
    bindings.sort_by_key(|b| name(b));
    bindings
        .into_iter()
        .filter(|b| binds(b))
        .filter_map(|b| {
            let role = b.pointer("/roleRef/name").and_then(Value::as_str)?;
            objects
                .iter()
                .find(|o| kind(o) == "ClusterRole" && name(o) == role)
        })
        .flat_map(crate::authorization::rules_of)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recording_holds_kube_apiservers_bootstrap_roles_and_bindings() {
        let objects = OBJECTS.as_ref().expect("the recording parses");
        let count = |kind: &str| objects.iter().filter(|o| o["kind"] == kind).count();
        assert_eq!(count("ClusterRole"), 68);
        assert_eq!(count("ClusterRoleBinding"), 49);
        let admin = objects
            .iter()
            .find(|o| o["kind"] == "ClusterRoleBinding" && o["metadata"]["name"] == "cluster-admin")
            .expect("system:masters is bound to cluster-admin");
        assert_eq!(admin["subjects"][0]["name"], "system:masters");
    }

    fn binds_group(group: &'static str) -> impl Fn(&Value) -> bool {
        move |binding: &Value| {
            binding["subjects"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["kind"] == "Group" && s["name"] == group))
        }
    }

    #[test]
    fn kcps_admin_group_gets_cluster_admin_only_from_kcps_own_binding() {
        let everything =
            serde_json::json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert!(cluster_rules(true, binds_group("system:kcp:admin")).contains(&everything));
        assert!(cluster_rules(false, binds_group("system:kcp:admin")).is_empty());
    }

    #[test]
    fn every_authenticated_user_may_review_itself() {
        let rules = cluster_rules(true, binds_group("system:authenticated"));
        assert!(rules.iter().any(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|r| r.contains(&serde_json::json!("selfsubjectaccessreviews")))
        }));
    }
}
