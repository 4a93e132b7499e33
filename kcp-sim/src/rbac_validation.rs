//! kube-apiserver's RBAC strategy: the defaults a binding gets when decoded, and what it
//! refuses in Roles, ClusterRoles and their bindings, in kube's order and words.
//!
//! - A rule has verbs, and either non-resource URLs (never in a Role, never beside groups,
//!   resources or names) or API groups and resources.
//! - A binding references a Role or ClusterRole (only a ClusterRole from a
//!   ClusterRoleBinding) of `rbac.authorization.k8s.io` by a path-segment name, which never
//!   changes.
//! - A subject is a User or Group of `rbac.authorization.k8s.io`, or a ServiceAccount of the
//!   core group named as a DNS subdomain (with its namespace in a ClusterRoleBinding); its
//!   group defaults by kind.

use kcp_core::name_validation::dns1123_subdomain_errors;
use serde_json::{Value, json};

use crate::object_meta::path_segment_errors;
use crate::schema::field::{FieldError, go_json};

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// `SetDefaults_RoleBinding`/`_ClusterRoleBinding` and `SetDefaults_Subject`: the role
/// reference's group, and a subject's group by its kind.
pub fn binding_defaults(binding: &mut Value) {
    if let Some(role_ref) = binding.get_mut("roleRef").and_then(Value::as_object_mut)
        && text(role_ref.get("apiGroup")).is_empty()
    {
        role_ref.insert("apiGroup".into(), json!(GROUP));
    }
    let subjects = binding.get_mut("subjects").and_then(Value::as_array_mut);
    for subject in subjects
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        // A ServiceAccount's group is the core one, `""`, which Go's encoder omits.
        let names_a_person = matches!(text(subject.get("kind")), "User" | "Group");
        if names_a_person && text(subject.get("apiGroup")).is_empty() {
            subject.insert("apiGroup".into(), json!(GROUP));
        }
    }
}

/// What is wrong with a Role's (`namespaced`) or ClusterRole's rules.
pub fn role_errors(role: &Value, namespaced: bool) -> Vec<FieldError> {
    let rules = role.get("rules").and_then(Value::as_array);
    rules
        .into_iter()
        .flatten()
        .enumerate()
        .flat_map(|(i, rule)| rule_errors(rule, namespaced, &format!("rules[{i}]")))
        .collect()
}

/// kube's `ValidatePolicyRule`.
fn rule_errors(rule: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let filled = |key: &str| {
        rule.get(key)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    };
    if !filled("verbs") {
        errors.push(FieldError::required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if filled("nonResourceURLs") {
        let urls = rule.get("nonResourceURLs").cloned().unwrap_or(Value::Null);
        let invalid = |detail: &str| {
            FieldError::invalid(format!("{path}.nonResourceURLs"), urls.clone(), detail)
        };
        if namespaced {
            errors.push(invalid(
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if filled("apiGroups") || filled("resources") || filled("resourceNames") {
            errors.push(invalid(
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errors;
    }
    if !filled("apiGroups") {
        errors.push(FieldError::required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if !filled("resources") {
        errors.push(FieldError::required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errors
}

/// What is wrong with a RoleBinding's (`namespaced`) or ClusterRoleBinding's role reference
/// and subjects.
pub fn binding_errors(binding: &Value, namespaced: bool) -> Vec<FieldError> {
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let field = |key: &str| text(role_ref.get(key));
    let mut errors = Vec::new();
    if field("apiGroup") != GROUP {
        errors.push(FieldError::not_supported(
            "roleRef.apiGroup",
            json!(field("apiGroup")),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&field("kind")) {
        errors.push(FieldError::not_supported(
            "roleRef.kind",
            json!(field("kind")),
            kinds,
        ));
    }
    match field("name") {
        "" => errors.push(FieldError::required("roleRef.name", "")),
        name => errors.extend(
            path_segment_errors(name, false)
                .into_iter()
                .map(|m| FieldError::invalid("roleRef.name", json!(name), m)),
        ),
    }
    let subjects = binding.get("subjects").and_then(Value::as_array);
    for (i, subject) in subjects.into_iter().flatten().enumerate() {
        errors.extend(subject_errors(
            subject,
            namespaced,
            &format!("subjects[{i}]"),
        ));
    }
    errors
}

/// kube's `ValidateRoleBindingSubject`.
fn subject_errors(subject: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let field = |key: &str| text(subject.get(key));
    let (name, group) = (field("name"), field("apiGroup"));
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(FieldError::required(format!("{path}.name"), ""));
    }
    match field("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                errors.extend(
                    dns1123_subdomain_errors(name)
                        .into_iter()
                        .map(|m| FieldError::invalid(format!("{path}.name"), json!(name), m)),
                );
            }
            if !group.is_empty() {
                errors.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    json!(group),
                    &[""],
                ));
            }
            if !namespaced && field("namespace").is_empty() {
                errors.push(FieldError::required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" if group != GROUP => {
            errors.push(FieldError::not_supported(
                format!("{path}.apiGroup"),
                json!(group),
                &[GROUP],
            ));
        }
        "User" | "Group" => {}
        other => errors.push(FieldError::not_supported(
            format!("{path}.kind"),
            json!(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errors
}

/// A binding's role reference, changed by an update: `cannot change roleRef`, the new one
/// shown as kube's internal Go struct encodes it (its field names, in their order).
pub fn role_ref_change_error(old: &Value, new: &Value) -> Option<FieldError> {
    fn part<'v>(binding: &'v Value, key: &str) -> &'v str {
        text(binding.pointer(&format!("/roleRef/{key}")))
    }
    let changed = ["apiGroup", "kind", "name"]
        .iter()
        .any(|key| part(old, key) != part(new, key));
    changed.then(|| {
        let shown = format!(
            "{{\"APIGroup\":{},\"Kind\":{},\"Name\":{}}}",
            go_json(&json!(part(new, "apiGroup"))),
            go_json(&json!(part(new, "kind"))),
            go_json(&json!(part(new, "name"))),
        );
        FieldError::invalid_struct("roleRef", shown, "cannot change roleRef")
    })
}

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn a_users_group_defaults_to_rbac_and_a_service_accounts_stays_core() {
        let mut binding = json!({"roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s"},
                {"kind": "Robot", "name": "r"}]});
        binding_defaults(&mut binding);
        assert_eq!(binding["roleRef"]["apiGroup"], GROUP);
        assert_eq!(binding["subjects"][0]["apiGroup"], GROUP);
        assert!(binding["subjects"][1].get("apiGroup").is_none());
        assert!(binding["subjects"][2].get("apiGroup").is_none());
    }

    #[test]
    fn a_rule_with_urls_is_checked_only_for_where_urls_may_be() {
        let rule = json!({"nonResourceURLs": ["/metrics"], "resources": ["pods"]});
        assert_eq!(
            messages(rule_errors(&rule, false, "rules[0]")),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].nonResourceURLs: Invalid value: [\"/metrics\"]: rules cannot apply to \
                 both regular resources and non-resource URLs",
            ]
        );
    }

    #[test]
    fn a_cluster_role_binding_references_only_cluster_roles() {
        let binding = json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"}});
        assert_eq!(
            messages(binding_errors(&binding, false)),
            ["roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\""]
        );
    }

    #[test]
    fn an_unchanged_role_reference_is_no_error() {
        let binding = json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"}});
        assert!(role_ref_change_error(&binding, &binding).is_none());
    }
}
